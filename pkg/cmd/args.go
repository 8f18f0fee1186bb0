package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Targets are what the arguments of status, refresh, diff and the
// dashboard name: ConfigMaps and Secrets, and workloads whose pods' uses
// are shown. Both: the named workloads' uses of the named objects.
type Targets struct {
	Objects   []inspect.ObjectKey
	Workloads []inspect.WorkloadKey
}

// argKind is one kind an argument may name: its resource, API group and
// kind, and the names kubectl get takes for it (singular, plural, short).
// The table is fixed, not discovered: cmsync knows how to walk these kinds
// and no other, their names are the API's own, and parsing the arguments
// costs no discovery round trip (an Argo Rollout's CRD is checked by the
// GET that reads it).
type argKind struct {
	group, version, resource string
	workload                 inspect.WorkloadRef // Kind "" for ConfigMap and Secret
	object                   string              // inspect.KindConfigMap or KindSecret
	names                    []string
}

var argKinds = []argKind{
	{"", "v1", "configmaps", inspect.WorkloadRef{}, inspect.KindConfigMap, []string{"configmap", "configmaps", "cm"}},
	{"", "v1", "secrets", inspect.WorkloadRef{}, inspect.KindSecret, []string{"secret", "secrets"}},
	{"apps", "v1", "deployments", inspect.WorkloadRef{Kind: "Deployment"}, "", []string{"deployment", "deployments", "deploy"}},
	{"apps", "v1", "statefulsets", inspect.WorkloadRef{Kind: "StatefulSet"}, "", []string{"statefulset", "statefulsets", "sts"}},
	{"apps", "v1", "daemonsets", inspect.WorkloadRef{Kind: "DaemonSet"}, "", []string{"daemonset", "daemonsets", "ds"}},
	{"apps", "v1", "replicasets", inspect.WorkloadRef{Kind: "ReplicaSet"}, "", []string{"replicaset", "replicasets", "rs"}},
	{"batch", "v1", "jobs", inspect.WorkloadRef{Kind: "Job"}, "", []string{"job", "jobs"}},
	{"batch", "v1", "cronjobs", inspect.WorkloadRef{Kind: "CronJob"}, "", []string{"cronjob", "cronjobs", "cj"}},
	{"", "v1", "pods", inspect.WorkloadRef{Kind: "Pod"}, "", []string{"pod", "pods", "po"}},
	{"argoproj.io", "v1alpha1", "rollouts", inspect.WorkloadRef{Kind: "Rollout", APIVersion: "argoproj.io/v1alpha1"}, "", []string{"rollout", "rollouts", "ro"}},
}

// typeHint says what an argument may be.
func typeHint() string {
	return "use NAME (a ConfigMap) or TYPE/NAME, TYPE one of " + acceptedKinds() + ", or their plurals"
}

// acceptedKinds lists the kinds for an error: each by its name and its
// short name.
func acceptedKinds() string {
	var out []string
	for _, k := range argKinds {
		s := k.names[0]
		if len(k.names) > 2 {
			s += " (" + k.names[2] + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// lookupKind resolves the type of TYPE/NAME as kubectl get does: a name,
// plural or short name, optionally qualified by its API group
// (deployment.apps) or by version and group (deployments.v1.apps).
func lookupKind(typ string) (argKind, bool) {
	typ = strings.ToLower(typ)
	gvr, gr := schema.ParseResourceArg(typ)
	// an unqualified name is any group's; a qualified one its group's only
	match := func(resource, group string, version *string) (argKind, bool) {
		for _, k := range argKinds {
			if slices.Contains(k.names, resource) && (k.group == group || (group == "" && !strings.Contains(typ, "."))) && (version == nil || *version == k.version) {
				return k, true
			}
		}
		return argKind{}, false
	}
	if gvr != nil {
		if k, ok := match(gvr.Resource, gvr.Group, &gvr.Version); ok {
			return k, true
		}
	}
	return match(gr.Resource, gr.Group, nil)
}

// parseTargets turns the arguments into Targets in namespace ns: NAME (a
// ConfigMap), configmap/NAME, secret/NAME, and TYPE/NAME for a workload,
// each once in the order given. An unknown type is a usage error that
// lists the accepted ones.
func parseTargets(args []string, ns string) (Targets, error) {
	var t Targets
	for _, a := range args {
		typ, name, found := strings.Cut(a, "/")
		if !found {
			typ, name = "configmap", a
		}
		k, ok := lookupKind(typ)
		if !ok {
			return Targets{}, usageError("unsupported resource type %q in %q: %s", typ, a, typeHint())
		}
		if name == "" || strings.ContainsAny(name, "/ ") {
			return Targets{}, usageError("invalid name %q: %s", a, typeHint())
		}
		if k.object != "" {
			key := inspect.ObjectKey{Kind: k.object, Namespace: ns, Name: name}
			if !slices.Contains(t.Objects, key) {
				t.Objects = append(t.Objects, key)
			}
			continue
		}
		w := k.workload
		w.Name = name
		key := inspect.WorkloadKey{Namespace: ns, Workload: w}
		if !slices.Contains(t.Workloads, key) {
			t.Workloads = append(t.Workloads, key)
		}
	}
	return t, nil
}

// resourceOf is the resource and group of a workload's kind, as the API
// names them in errors (deployments.apps).
func resourceOf(w inspect.WorkloadRef) schema.GroupResource {
	for _, k := range argKinds {
		if k.workload.GroupKind() == w.GroupKind() && k.object == "" {
			return schema.GroupResource{Group: k.group, Resource: k.resource}
		}
	}
	return schema.GroupResource{Resource: strings.ToLower(w.Kind) + "s"}
}

// resolveWorkloads reads each workload by group, kind and name (one GET
// each): it must exist, and its pod template says what it would read with
// no pod running. A workload that does not exist is kubectl's NotFound; a
// kind whose API the server does not serve (Argo Rollouts not installed)
// says so.
func resolveWorkloads(ctx context.Context, r inspect.TemplateReader, keys []inspect.WorkloadKey, server string) ([]inspect.SelectedWorkload, error) {
	out := make([]inspect.SelectedWorkload, 0, len(keys))
	for _, k := range keys {
		t, err := r.Template(ctx, k)
		if err != nil {
			return nil, workloadError(k, err, server)
		}
		out = append(out, inspect.SelectedWorkload{Key: k, Template: &t})
	}
	return out, nil
}

// workloadError is a failed read of workload k in kubectl's terms.
func workloadError(k inspect.WorkloadKey, err error, server string) error {
	gr := resourceOf(k.Workload)
	if apierrors.IsNotFound(err) {
		// a custom kind's API may be missing; the built-in ones are served
		if !k.Workload.Builtin() && apiMessage(err) == "the server could not find the requested resource" {
			return fmt.Errorf("the server doesn't have a resource type %q (%s): is its CRD installed? Check with 'kubectl api-resources --api-group=%s'", gr.Resource, gr, gr.Group)
		}
		return fmt.Errorf("%s %q not found in namespace %q: check the name and the namespace (-n), or list them with 'kubectl get %s -n %s'", gr, k.Workload.Name, k.Namespace, gr.Resource, k.Namespace)
	}
	var ce *refresh.CallError
	if !errors.As(err, &ce) {
		err = &refresh.CallError{Verb: "get", Resource: gr.Resource, Namespace: k.Namespace, Name: k.Workload.Name, Err: err}
	}
	return explainAPIError(err, server, k.Namespace)
}

// workloadList names the workloads as kubectl does, comma-separated.
func workloadList(keys []inspect.WorkloadKey) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
	}
	return strings.Join(names, ", ")
}

// noteIdle says of each named workload that runs no pod now what its pod
// template reads (the rows from it, shown above): not an error.
func noteIdle(w io.Writer, idle []inspect.SelectedWorkload, items []inspect.Use) {
	for _, s := range idle {
		var objects []string
		for _, it := range items {
			if it.Pod.Name == "" && it.Workload == s.Key.Workload {
				what := strings.ToLower(it.Object.Kind) + "/" + it.Object.Name
				if !it.Object.Exists {
					what += " (missing)"
				}
				if !slices.Contains(objects, what) {
					objects = append(objects, what)
				}
			}
		}
		state := ""
		if s.Template != nil && s.Template.State != "" {
			state = " (" + s.Template.State + ")"
		}
		reads := "reads none of the selected ConfigMaps or Secrets"
		if len(objects) > 0 {
			reads = "would read " + strings.Join(objects, ", ")
		}
		fmt.Fprintf(w, "%s runs no pod now%s: its pod template %s.\n", s.Key, state, reads)
	}
}

// printWarnings prints each warning once, kubectl style, on stderr: the
// rows of its uses say "see warning N".
func printWarnings(w io.Writer, warnings []inspect.Warning) {
	for i, wa := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", wa.String(i+1))
	}
}

// groupResultWarnings is inspect.GroupWarnings over diff's results: each
// result of a grouped use gets its warning's number; the causes are
// redacted as diff's lines are.
func groupResultWarnings(results []inspect.VerifiedUse, redact *inspect.Redactor) []inspect.Warning {
	items := make([]inspect.Use, len(results))
	for i, r := range results {
		items[i] = r.Use
		items[i].State, items[i].StateReason, items[i].StateCause, items[i].StateFix = r.Comparison.State, r.Comparison.Reason, r.Comparison.Cause, r.Comparison.Fix
	}
	warnings := inspect.GroupWarnings(items)
	for i := range results {
		results[i].Use.Warning = items[i].Warning
	}
	for i := range warnings {
		warnings[i].Cause = redact.String(warnings[i].Cause)
	}
	return warnings
}
