package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Scope is what the loop handles at all, beyond the namespace it watches
// and the names it was given: namespaces by their labels and names,
// ConfigMaps and Secrets by their labels, workloads by their kind. What is
// out of scope is reported as such (EventIgnored, EventSkip), never acted
// on, and never taken for missing.
type Scope struct {
	// Namespaces selects the namespaces by their labels (nil: every one).
	Namespaces labels.Selector
	// IgnoreNamespaces are never handled, whatever their labels.
	IgnoreNamespaces []string
	// Objects selects the ConfigMaps and Secrets by their labels (nil:
	// every one); the informers cache only those it selects.
	Objects labels.Selector
	// IgnoreKinds are the kinds of workload (as WorkloadKinds spells them)
	// whose uses are neither restarted nor annotated.
	IgnoreKinds []string
}

// NamespaceOutOfScope says why namespace ns is not handled ("" when it
// is). known tells whether its labels are known (the namespace seen by the
// namespace informer): an unknown namespace is out of scope of a selector,
// as one that is gone or not yet seen.
func (s Scope) NamespaceOutOfScope(ns string, nsLabels map[string]string, known bool) string {
	switch {
	case slices.Contains(s.IgnoreNamespaces, ns):
		return fmt.Sprintf("namespace %s is out of scope (--ignore-namespaces)", ns)
	case s.Namespaces == nil:
		return ""
	case !known:
		return fmt.Sprintf("namespace %s is out of scope (not seen with labels matching --namespace-selector %q)", ns, s.Namespaces.String())
	case !s.Namespaces.Matches(labels.Set(nsLabels)):
		return fmt.Sprintf("namespace %s is out of scope (its labels do not match --namespace-selector %q)", ns, s.Namespaces.String())
	}
	return ""
}

// ObjectOutOfScope says why an existing ConfigMap or Secret with these
// labels is not handled ("" when it is).
func (s Scope) ObjectOutOfScope(kind string, objLabels map[string]string) string {
	if s.Objects == nil || s.Objects.Matches(labels.Set(objLabels)) {
		return ""
	}
	return fmt.Sprintf("out of scope: the %s's labels do not match --resource-label-selector %q", kind, s.Objects.String())
}

// WorkloadOutOfScope says why the uses through workload w are neither
// restarted nor annotated ("" when they may be). Only the built-in kinds
// are matched: a controller of another group is never taken for one.
func (s Scope) WorkloadOutOfScope(w inspect.WorkloadRef) string {
	kind := w.Kind
	switch {
	case refresh.IsRollout(w.GroupKind()):
		kind = refresh.RolloutKind // matched by group and kind
	case w.APIVersion != "":
		return ""
	}
	if !slices.Contains(s.IgnoreKinds, kind) {
		return ""
	}
	return "out of scope: its kind is ignored (--ignore-workload-kinds " + strings.ToLower(w.Kind) + "s)"
}

// workloadKinds are the kinds --ignore-workload-kinds accepts, by every
// spelling accepted: the resource (plural), the kind (singular) and
// kubectl's short name, case-insensitive.
var workloadKinds = map[string]string{
	"deployments": "Deployment", "deployment": "Deployment", "deploy": "Deployment",
	"statefulsets": "StatefulSet", "statefulset": "StatefulSet", "sts": "StatefulSet",
	"daemonsets": "DaemonSet", "daemonset": "DaemonSet", "ds": "DaemonSet",
	"replicasets": "ReplicaSet", "replicaset": "ReplicaSet", "rs": "ReplicaSet",
	"jobs": "Job", "job": "Job",
	"cronjobs": "CronJob", "cronjob": "CronJob", "cj": "CronJob",
	"pods": "Pod", "pod": "Pod", "po": "Pod",
	"rollouts": refresh.RolloutKind, "rollout": refresh.RolloutKind, "ro": refresh.RolloutKind,
}

// plural is the resource of a workload kind: "deployments", "rollouts" for
// an Argo Rollout.
func plural(kind string) string {
	k, _, _ := strings.Cut(kind, ".")
	return strings.ToLower(k) + "s"
}

// WorkloadKindNames are the kinds --ignore-workload-kinds accepts, as
// resources, in the order an error lists them.
func WorkloadKindNames() []string {
	var out []string
	for k, kind := range workloadKinds {
		if plural(kind) == k {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// WorkloadKinds turns the names of --ignore-workload-kinds into kinds
// (Deployment, ...), each once, sorted; an empty name is skipped. An
// unknown name is an error that lists the valid ones.
func WorkloadKinds(names []string) ([]string, error) {
	set := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		kind, ok := workloadKinds[strings.ToLower(n)]
		if !ok {
			return nil, fmt.Errorf("unknown workload kind %q; valid kinds are %s", n, strings.Join(WorkloadKindNames(), ", "))
		}
		set[kind] = true
	}
	return slices.Sorted(maps.Keys(set)), nil
}
