package tui

import (
	"bytes"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Transform trims objects before the informers cache them, so that memory
// stays small with many pods: managedFields go (a ConfigMap or Secret keeps
// the times of the entries that touched its data, which is what its
// last-change time is read from), and so does everything the core never
// reads (pod conditions, ReplicaSet and Job specs). It is an informer
// transform function: it may modify obj.
func Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.ManagedFields = nil
		delete(o.Annotations, inspect.LastAppliedAnnotation)
		o.Spec = trimPodSpec(o.Spec)
		st := o.Status
		o.Status = corev1.PodStatus{Phase: st.Phase, PodIP: st.PodIP, HostIP: st.HostIP,
			ContainerStatuses:          trimStatuses(st.ContainerStatuses),
			InitContainerStatuses:      trimStatuses(st.InitContainerStatuses),
			EphemeralContainerStatuses: trimStatuses(st.EphemeralContainerStatuses)}
	case *corev1.ConfigMap:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, inspect.LastAppliedAnnotation)
	case *corev1.Secret:
		o.ManagedFields = dataFieldTimes(o.ManagedFields)
		delete(o.Annotations, inspect.LastAppliedAnnotation)
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	case *batchv1.Job:
		return &batchv1.Job{TypeMeta: o.TypeMeta, ObjectMeta: ownerMeta(o.ObjectMeta)}, nil
	}
	return obj, nil
}

// ownerMeta keeps what the owner walk and the cache need.
func ownerMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp}
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

// trimPodSpec keeps what the uses, the owner walk, exec and the comparison
// read: the containers' names, env, envFrom, volume mounts and restart
// policy (sidecars), the volumes, the node, the fsGroup, the service links
// switch and the service account. Images, commands, probes, resources,
// scheduling constraints and the like go: on real pods they are most of the
// spec.
func trimPodSpec(in corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		Volumes:            in.Volumes,
		InitContainers:     trimContainers(in.InitContainers),
		Containers:         trimContainers(in.Containers),
		RestartPolicy:      in.RestartPolicy,
		NodeName:           in.NodeName,
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
	return corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom, VolumeMounts: c.VolumeMounts, RestartPolicy: c.RestartPolicy}
}
