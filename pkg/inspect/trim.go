package inspect

import (
	corev1 "k8s.io/api/core/v1"
)

// LastAppliedAnnotation is kubectl apply's copy of the whole object: large,
// and never read by the core (the dashboard's informers drop it too).
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TrimPod keeps of a pod what the readers of a snapshot use (the uses, the
// owner walk, exec, the comparison, the refresh plan) and drops what is
// large at scale and never read: managedFields, kubectl's last-applied
// copy, the containers' images, commands, probes and resources, every pod
// condition but Ready (the eviction order puts pods that are not Ready
// first), the container statuses' images and messages. status, diff,
// refresh and the dashboard's informers all keep pods through it. The
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
// read: the containers' names, env, envFrom, volume mounts and restart
// policy (sidecars), the volumes, the node, the fsGroup, the service links
// and the service account.
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
