package inspect

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// builtinOwners are the controllers whose kind alone names them.
var builtinOwners = map[string]string{
	"ReplicaSet":            "apps/v1",
	"Deployment":            "apps/v1",
	"StatefulSet":           "apps/v1",
	"DaemonSet":             "apps/v1",
	"Job":                   "batch/v1",
	"CronJob":               "batch/v1",
	"ReplicationController": "v1",
}

// Owner returns the top-level workload that runs the pod: Pod -> ReplicaSet
// -> Deployment, Pod -> Job -> CronJob, StatefulSet, DaemonSet, any other
// controller by kind and name (with its apiVersion), or the Pod itself.
// The ReplicaSets and Jobs come from the snapshot; an owner missing from it
// (deleted, or not listed) ends the walk at the last known step.
func Owner(pod *corev1.Pod, snap *Snapshot) WorkloadRef {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return WorkloadRef{Kind: "Pod", Name: pod.Name}
	}
	w := refOf(ref)
	switch ref.Kind {
	case "ReplicaSet":
		if rs, ok := snap.ReplicaSets[NamespacedName{pod.Namespace, ref.Name}]; ok {
			if up := metav1.GetControllerOf(rs); up != nil {
				return refOf(up)
			}
		}
	case "Job":
		if j, ok := snap.Jobs[NamespacedName{pod.Namespace, ref.Name}]; ok {
			if up := metav1.GetControllerOf(j); up != nil {
				return refOf(up)
			}
		}
	}
	return w
}

func refOf(ref *metav1.OwnerReference) WorkloadRef {
	w := WorkloadRef{Kind: ref.Kind, Name: ref.Name}
	if api, ok := builtinOwners[ref.Kind]; !ok || api != ref.APIVersion {
		w.APIVersion = ref.APIVersion
	}
	return w
}
