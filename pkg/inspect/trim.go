package inspect

import (
	"bytes"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LastAppliedAnnotation is kubectl apply's copy of the whole object: large,
// and never read by the core (the dashboard's informers drop it too).
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Trim keeps of an object what cmsync reads, so that memory stays small
// with many pods; status, diff and refresh keep pods through it, and the
// dashboard's informers every object they cache (it is their transform
// function: it may modify obj). A pod keeps what TrimPod keeps (its
// deletionTimestamp included: a terminating pod is told from the others);
// a ConfigMap or Secret drops kubectl's last-applied copy and keeps of its
// managedFields only the times of the entries that touched its data (its
// last-change time is read from them); a ReplicaSet or Job keeps its owner
// metadata. Other objects are returned as they are.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		*o = TrimPod(*o)
	case *corev1.ConfigMap:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, LastAppliedAnnotation)
	case *corev1.Secret:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, LastAppliedAnnotation)
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	case *batchv1.Job:
		return &batchv1.Job{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	}
	return obj, nil
}

// ownerMeta keeps what the owner walk and a cache need.
func ownerMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp}
}

// dataFieldTimes keeps, of the managedFields entries, only the time of those
// that set data, binaryData or stringData (without the field sets).
func dataFieldTimes(in []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range in {
		if e.FieldsV1 == nil || e.Time == nil {
			continue
		}
		raw := e.FieldsV1.Raw
		if bytes.Contains(raw, []byte(`"f:data"`)) || bytes.Contains(raw, []byte(`"f:binaryData"`)) || bytes.Contains(raw, []byte(`"f:stringData"`)) {
			out = append(out, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, Time: e.Time})
		}
	}
	return out
}

// TrimPod keeps of a pod what the readers of a snapshot use (the uses, the
// owner walk, exec, the comparison, the refresh plan) and drops what is
// large at scale and never read: managedFields, kubectl's last-applied
// copy, the containers' images, commands, probes and resources, every pod
// condition but Ready (the eviction order puts pods that are not Ready
// first), the container statuses' images and messages. It keeps the
// metadata (deletionTimestamp included) but managedFields. The
// result shares p's metadata maps (labels; annotations unless the
// last-applied copy was dropped) and the slices it keeps whole.
func TrimPod(p corev1.Pod) corev1.Pod {
	out := corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta}
	out.ManagedFields = nil
	if _, ok := p.Annotations[LastAppliedAnnotation]; ok {
		a := make(map[string]string, len(p.Annotations)-1)
		for k, v := range p.Annotations {
			if k != LastAppliedAnnotation {
				a[k] = v
			}
		}
		out.Annotations = a
	}
	out.Spec = trimPodSpec(p.Spec)
	st := p.Status
	out.Status = corev1.PodStatus{Phase: st.Phase, PodIP: st.PodIP, HostIP: st.HostIP,
		ContainerStatuses:          trimStatuses(st.ContainerStatuses),
		InitContainerStatuses:      trimStatuses(st.InitContainerStatuses),
		EphemeralContainerStatuses: trimStatuses(st.EphemeralContainerStatuses)}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
			break
		}
	}
	return out
}

func trimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState,
			Ready: s.Ready, RestartCount: s.RestartCount, ContainerID: s.ContainerID}
	}
	return out
}

// trimPodSpec keeps what the uses, the owner walk, exec and the comparison
// read: the containers' names, env, envFrom, volume mounts, restart
// policy (sidecars) and named ports (reload hooks), the volumes, the node,
// hostNetwork (no reload hook to the node's address), the fsGroup, the
// service links and the service account.
func trimPodSpec(in corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		Volumes:            in.Volumes,
		InitContainers:     trimContainers(in.InitContainers),
		Containers:         trimContainers(in.Containers),
		RestartPolicy:      in.RestartPolicy,
		NodeName:           in.NodeName,
		HostNetwork:        in.HostNetwork,
		ServiceAccountName: in.ServiceAccountName,
		EnableServiceLinks: in.EnableServiceLinks,
	}
	if in.SecurityContext != nil && in.SecurityContext.FSGroup != nil {
		out.SecurityContext = &corev1.PodSecurityContext{FSGroup: in.SecurityContext.FSGroup}
	}
	if in.EphemeralContainers != nil {
		out.EphemeralContainers = make([]corev1.EphemeralContainer, len(in.EphemeralContainers))
		for i, c := range in.EphemeralContainers {
			out.EphemeralContainers[i] = corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon(trimContainer(corev1.Container(c.EphemeralContainerCommon))),
				TargetContainerName:      c.TargetContainerName,
			}
		}
	}
	return out
}

func trimContainers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = trimContainer(c)
	}
	return out
}

func trimContainer(c corev1.Container) corev1.Container {
	return corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts, RestartPolicy: c.RestartPolicy, Ports: namedPorts(c.Ports)}
}

// namedPorts keeps the name and number of the named ports (a reload hook
// may name one), nil when there are none.
func namedPorts(in []corev1.ContainerPort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range in {
		if p.Name != "" {
			out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort})
		}
	}
	return out
}
