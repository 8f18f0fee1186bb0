package refresh

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// builtinKinds are the kinds refresh may change or read, with their API
// group: pods (annotate, evict) and the built-in workloads (restart, evict,
// the workload reads).
var builtinKinds = map[string]schema.GroupKind{
	"Pod":         {Group: "", Kind: "Pod"},
	"Deployment":  {Group: "apps", Kind: "Deployment"},
	"StatefulSet": {Group: "apps", Kind: "StatefulSet"},
	"DaemonSet":   {Group: "apps", Kind: "DaemonSet"},
	"ReplicaSet":  {Group: "apps", Kind: "ReplicaSet"},
}

// BuiltinKind resolves the kind of a Target or WorkloadKey to the API group
// and kind it names, and tells whether it is one refresh may act on. A plan
// names the built-in kinds unqualified ("StatefulSet") and any other
// controller's kind with its group ("StatefulSet.apps.kruise.io", see
// inspect.WorkloadRef.GroupKind), so a controller of another group is never
// taken for the built-in kind of the same name.
func BuiltinKind(kind string) (schema.GroupKind, bool) {
	gk := schema.ParseGroupKind(kind)
	want, ok := builtinKinds[gk.Kind]
	switch {
	case !ok:
		return gk, false
	case !strings.Contains(kind, "."):
		return want, true
	}
	return gk, gk == want
}

// workloadKey is the key of the workload that runs the use's pod, its kind
// qualified by group unless built-in.
func workloadKey(it inspect.Use) WorkloadKey {
	return WorkloadKey{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name}
}

// workloadTarget is that workload as the target of an action.
func workloadTarget(it inspect.Use) Target {
	return Target{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name}
}

// foreignOwnerReason is the manual step for a pod whose owner is not a
// built-in controller (matched by group and kind): cmsync neither patches
// nor evicts it, whatever its kind is called, and names it by apiVersion,
// kind and name.
func foreignOwnerReason(it inspect.Use) string {
	w := it.Workload
	return fmt.Sprintf("owner %s %s %q is not a built-in workload (only apps/v1 Deployments, StatefulSets, DaemonSets and ReplicaSets, and argoproj.io Rollouts, are restarted or evicted): cmsync does not change it; restart its pods with its own controller's tooling",
		w.APIVersion, w.Kind, w.Name)
}

// RolloutKind is the key of an Argo Rollout (argoproj.io/v1alpha1
// Rollout): its kind qualified by its group, as inspect.WorkloadRef's
// GroupKind names it. It is the one workload of another group that refresh
// restarts; it is matched by group and kind, never by kind alone.
const RolloutKind = "Rollout.argoproj.io"

// RolloutGroupKind is RolloutKind parsed.
var RolloutGroupKind = schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}

// RolloutResource is the resource of Argo Rollouts, in the version
// its CRD serves (the one inspect reads templates from).
var RolloutResource = inspect.RolloutResource

// IsRollout tells whether kind names an Argo Rollout by group and kind.
func IsRollout(kind string) bool {
	return strings.Contains(kind, ".") && schema.ParseGroupKind(kind) == RolloutGroupKind
}

// Rollout strategies: how a Rollout is restarted, from Reloader's
// reloader.stakater.com/rollout-strategy annotation on the Rollout.
const (
	// RolloutStrategyRestart sets spec.restartAt: the Argo Rollouts
	// controller evicts the pods older than it (honouring
	// PodDisruptionBudgets), no new revision, no canary or blue-green steps.
	RolloutStrategyRestart = "restart"
	// RolloutStrategyRollout changes the pod template (the restartedAt
	// annotation, as for a Deployment): a new revision that goes through
	// the Rollout's canary or blue-green steps.
	RolloutStrategyRollout = "rollout"
	// RolloutStrategyAnnotation is Reloader's annotation that chooses one.
	RolloutStrategyAnnotation = "reloader.stakater.com/rollout-strategy"
)
