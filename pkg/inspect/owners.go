package inspect

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinOwners are the built-in controllers, by kind: the API group that
// makes an owner of that kind the built-in one. An owner of the same kind in
// another group (an OpenKruise Advanced StatefulSet is a StatefulSet of
// apps.kruise.io) is another controller.
var builtinOwners = map[string]string{
	"ReplicaSet":            "apps",
	"Deployment":            "apps",
	"StatefulSet":           "apps",
	"DaemonSet":             "apps",
	"Job":                   "batch",
	"CronJob":               "batch",
	"ReplicationController": "",
}

// builtin tells whether an owner reference names the built-in controller of
// its kind: kind and API group both match (any version of the group).
func builtin(apiVersion, kind string) bool {
	group, ok := builtinOwners[kind]
	if !ok {
		return false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == group
}

// Owner returns the top-level workload that runs the pod: Pod -> ReplicaSet
// -> Deployment, Pod -> Job -> CronJob, StatefulSet, DaemonSet, any other
// controller by kind and name (with its apiVersion), or the Pod itself.
// Owners are matched by API group and kind: a ReplicaSet or Job of another
// group is not looked up among the built-in ones. The ReplicaSets and Jobs
// come from the snapshot; an owner missing from it (deleted, not listed, or
// another object of the same name) ends the walk at the last known step.
func Owner(pod *corev1.Pod, snap *Snapshot) WorkloadRef {
	chain, n := ownerChain(pod, snap)
	return chain[n-1]
}

// OwnerChain is every step of Owner's walk, from the pod up: the Pod, its
// controller (a ReplicaSet, a Job, a StatefulSet...) and that one's
// controller (a Deployment, a CronJob, an Argo Rollout), as far as Owner
// walks; the last is Owner's answer.
func OwnerChain(pod *corev1.Pod, snap *Snapshot) []WorkloadRef {
	chain, n := ownerChain(pod, snap)
	return chain[:n]
}

// ownerChain is OwnerChain in an array: Owner runs once per pod of a
// report and allocates nothing.
func ownerChain(pod *corev1.Pod, snap *Snapshot) ([3]WorkloadRef, int) {
	chain := [3]WorkloadRef{{Kind: "Pod", Name: pod.Name}}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return chain, 1
	}
	w := refOf(ref)
	chain[1] = w
	if w.APIVersion != "" {
		return chain, 2 // not a built-in controller: cmsync does not walk it
	}
	var owner metav1.Object
	switch ref.Kind {
	case "ReplicaSet":
		if rs, ok := snap.ReplicaSets[NamespacedName{pod.Namespace, ref.Name}]; ok {
			owner = rs
		}
	case "Job":
		if j, ok := snap.Jobs[NamespacedName{pod.Namespace, ref.Name}]; ok {
			owner = j
		}
	}
	if owner == nil || (ref.UID != "" && owner.GetUID() != "" && owner.GetUID() != ref.UID) {
		return chain, 2 // a same-named object that is not this owner is not walked
	}
	if up := metav1.GetControllerOf(owner); up != nil {
		chain[2] = refOf(up)
		return chain, 3
	}
	return chain, 2
}

// OwnerRef is the workload an owner reference names, its APIVersion kept
// only for a controller that is not a built-in one (see GroupKind).
func OwnerRef(ref *metav1.OwnerReference) WorkloadRef { return refOf(ref) }

func refOf(ref *metav1.OwnerReference) WorkloadRef {
	w := WorkloadRef{Kind: ref.Kind, Name: ref.Name}
	if !builtin(ref.APIVersion, ref.Kind) {
		w.APIVersion = ref.APIVersion
	}
	return w
}

// Builtin tells whether the workload is a Pod or one of the built-in
// controllers (kind and group): only those are ever patched or evicted.
func (w WorkloadRef) Builtin() bool { return w.APIVersion == "" }

// GroupKind is the workload's kind qualified by its API group when it is
// not a built-in controller, as Kubernetes writes one (GroupKind.String):
// "Deployment", but "StatefulSet.apps.kruise.io" for an Advanced
// StatefulSet (".core" for a custom kind of the core group), so that it
// is never taken for the built-in kind of the same name.
func (w WorkloadRef) GroupKind() string {
	if w.Builtin() || w.Kind == "" {
		return w.Kind
	}
	gv, err := schema.ParseGroupVersion(w.APIVersion)
	if err != nil || gv.Group == "" {
		return w.Kind + ".core"
	}
	return w.Kind + "." + gv.Group
}

// String is kind/name as kubectl accepts it: lower-case kind, qualified by
// its group for a controller that is not a built-in one
// ("statefulset.apps.kruise.io/web").
func (w WorkloadRef) String() string {
	return strings.ToLower(w.GroupKind()) + "/" + w.Name
}
