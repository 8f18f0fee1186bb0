package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// NamedWorkloads lists the Deployments, StatefulSets and DaemonSets of a
// namespace that carry one of keys (refresh.ClientWorkloads implements it).
type NamedWorkloads interface {
	Annotated(ctx context.Context, namespace string, keys ...string) ([]refresh.AnnotatedWorkload, error)
}

// namedRestarts are the restarts Reloader's reload annotation asks for: a
// workload that names an edited object there although its pod spec does
// not read it (the application reads it some other way, through the API
// say) is restarted, as Reloader does. A workload whose pod spec reads the
// object is refreshed through its uses instead, key by key. A named
// workload that is paused, opted out or excluded is reported skipped.
// Only edits count (Reloader's default): not a creation, a deletion or the
// state found at start, which no record can tell current. A workload whose
// every pod started after the object's last write (startedSince) is not
// restarted: an edit that reached the loop late, when a cut watch listed
// again, was read by those pods when they started (the restart that
// replaced them came after it).
func (l *Loop) namedRestarts(ctx context.Context, ns string, snap *inspect.Snapshot, changes map[inspect.ObjectKey]*pending) ([]refresh.Action, error) {
	if l.Named == nil || !anyEdited(changes) {
		return nil, nil
	}
	ws, err := l.Named.Annotated(ctx, ns, ReloaderConfigMapReload, ReloaderSecretReload)
	if err != nil || len(ws) == 0 {
		return nil, err
	}
	pods, err := labels.Parse(l.PodSelector)
	if err != nil {
		return nil, err
	}
	var out []refresh.Action
	for _, w := range ws {
		if !pods.Matches(labels.Set(w.Labels)) {
			continue // -l selects pods, and the workload's are not among them
		}
		target := refresh.Target{Kind: w.Kind, Namespace: ns, Name: w.Name}
		read := templateReads(w, ns)
		var a *refresh.Action
		for _, k := range slices.SortedFunc(maps.Keys(changes), compareKeys) {
			p := changes[k]
			s := Subject{Annotations: w.Annotations, TemplateAnnotations: w.Template}
			o := Changed{Kind: k.Kind, Name: k.Name, Annotations: objectAnnotations(snap, k)}
			if !edited(p) || p.checked[w.Kind+"/"+w.Name] || !Named(s, o) || read[k] || (p.only != nil && !p.only[w.Kind+"/"+w.Name]) {
				continue
			}
			d := Select(l.RequireOptIn, s, o)
			if why := l.Scope.WorkloadOutOfScope(inspect.WorkloadRef{Kind: w.Kind, Name: w.Name}); why != "" {
				d = Decision{Skip, why}
			}
			if d.Selection != Restart {
				if !p.retry {
					l.emit(Event{Kind: EventSkip, Object: &k, Target: &target, Message: d.Reason})
				}
				continue
			}
			if why := l.startedSince(snap, ns, w, k, p.change); why != "" {
				if !p.retry || p.only != nil { // once, or at the retry of a restart held for it (the hold's line is answered)
					l.emit(sparedResult(target, k, why))
				}
				continue
			}
			if a == nil {
				a = &refresh.Action{Action: refresh.ActionRestart, Target: target, Reason: d.Reason}
			}
			a.Consumers = append(a.Consumers, refresh.Consumer{Mode: refresh.ModeNamed,
				Object: inspect.ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Exists: true}})
		}
		if a != nil {
			out = append(out, restartable(*a, w))
		}
	}
	return out, nil
}

// startedSince says why the pods of w read object k as it is now, or "":
// w has pods, and each was created after the object's last data write,
// both the API server's times in whole seconds, the creation strictly
// later. Not when the write's time is unknown (no managedFields time), nor
// when the change removed a key (the entry of a manager whose only field
// was removed goes with it, and its time too), nor with -l (the snapshot
// may hold some of w's pods only). A Deployment whose ReplicaSets the
// snapshot lacks has no pods found: it is restarted.
func (l *Loop) startedSince(snap *inspect.Snapshot, ns string, w refresh.AnnotatedWorkload, k inspect.ObjectKey, c Change) string {
	written, ok := lastDataWrite(snap, k)
	if !ok || l.PodSelector != "" {
		return ""
	}
	data := snap.Object(k).Data
	for _, key := range c.Keys {
		if _, kept := data[key]; !kept {
			return ""
		}
	}
	n := 0
	for i := range snap.Pods {
		p := &snap.Pods[i]
		if p.Namespace != ns {
			continue
		}
		if o := inspect.Owner(p, snap); o.GroupKind() != w.Kind || o.Name != w.Name {
			continue
		}
		if !p.CreationTimestamp.Truncate(time.Second).After(written) {
			return ""
		}
		n++
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("every pod of %s/%s (%d) was created after the last write of %s %s at %s, and read it when it started; nothing to do",
		strings.ToLower(w.Kind), w.Name, n, k.Kind, k.Name, written.UTC().Format(time.RFC3339))
}

// lastDataWrite is when k was last written, in whole seconds: the newest
// time of its managedFields (kept for the entries that own its data);
// false when none has a time.
func lastDataWrite(snap *inspect.Snapshot, k inspect.ObjectKey) (time.Time, bool) {
	var fields []metav1.ManagedFieldsEntry
	if cm := snap.ConfigMaps[k]; cm != nil {
		fields = cm.ManagedFields
	} else if s := snap.Secrets[k]; s != nil {
		fields = s.ManagedFields
	}
	var t time.Time
	for _, f := range fields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t.Truncate(time.Second), !t.IsZero()
}

// sparedResult is the line of a named workload not restarted for an edit
// its pods read already.
func sparedResult(t refresh.Target, k inspect.ObjectKey, why string) Event {
	a := refresh.Action{Action: refresh.ActionNone, Target: t, Reason: "named in " + typed(k.Kind, ReloaderConfigMapReload, ReloaderSecretReload),
		Consumers: []refresh.Consumer{{Mode: refresh.ModeNamed, State: inspect.StateCurrent,
			Object: inspect.ObjectRef{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, Exists: true}}}}
	return Event{Kind: EventResult, Action: &a, Outcome: refresh.OutcomeCurrent, Message: a.Reason + ": " + why}
}

// restartable turns a named restart into a manual action where a restart
// would replace no pod or not all of them, as the planner does for a
// consumer: a paused Deployment, the OnDelete strategy, a partition.
func restartable(a refresh.Action, w refresh.AnnotatedWorkload) refresh.Action {
	t := a.Target
	why := ""
	switch {
	case w.Paused:
		why = fmt.Sprintf("%s is paused: a restart replaces no pod; resume it (kubectl rollout resume %s -n %s)", t, t, t.Namespace)
	case w.OnDelete:
		why = fmt.Sprintf("%s uses the OnDelete update strategy: a restart replaces no pod; delete its pods to replace them", t)
	case w.Partition > 0:
		why = fmt.Sprintf("%s has a rolling update partition (%d): a restart spares the pods below it; delete them, or lower the partition", t, w.Partition)
	default:
		return a
	}
	a.Action, a.Reason = refresh.ActionManual, a.Reason+"; "+why
	return a
}

// edited: the change is an edit of keys (not a creation or deletion, not
// the state found at start, which has no keys; an edit merged into a check
// of that state is an edit).
func edited(p *pending) bool {
	return len(p.change.Keys) > 0 && !p.change.Created && !p.change.Deleted
}

// editedFor: the change is an edit (edited), or workload w (by Kind/Name)
// found its record of the object different from what it reads now: an
// edit it has not been acted on for, made while no leader acted (a leader
// change, a restart deferred to a window by the leader before). A workload
// a check brought into an edit's change after its round (checked) is
// checked, not edited.
func editedFor(p *pending, w string) bool {
	return (edited(p) && !p.checked[w]) || p.recordEdits[w]
}

func anyEdited(changes map[inspect.ObjectKey]*pending) bool {
	for _, p := range changes {
		if edited(p) {
			return true
		}
	}
	return false
}

// templateReads are the objects the workload's pod template reads.
func templateReads(w refresh.AnnotatedWorkload, ns string) map[inspect.ObjectKey]bool {
	out := map[inspect.ObjectKey]bool{}
	for _, it := range inspect.Uses(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: w.Spec}) {
		out[it.Key()] = true
	}
	return out
}

// withNamed adds the named restarts to a plan's actions. A workload the plan
// restarts already gets the named objects as consumers of that restart (one
// restart makes it read everything anew); the annotations of the pods a
// named restart replaces are folded into it, as the planner folds them into
// a consumer's restart. Where the plan evicts some of the workload's pods
// (--restart-via=evict), the named object is left to a manual restart.
func withNamed(actions, named []refresh.Action, items []inspect.Use) []refresh.Action {
	for _, n := range named {
		n.Consumers = slices.Clone(n.Consumers)
		i := slices.IndexFunc(actions, func(a refresh.Action) bool {
			return (a.Action == refresh.ActionRestart || a.Action == refresh.ActionEvict) && a.Target == n.Target
		})
		switch {
		case n.Action != refresh.ActionRestart:
		case i >= 0 && actions[i].Action == refresh.ActionRestart:
			actions[i].Consumers = append(slices.Clone(actions[i].Consumers), n.Consumers...)
			continue
		case i >= 0:
			n.Action = refresh.ActionManual
			n.Reason += fmt.Sprintf("; --restart-via=evict evicts only the pods with a stale use: restart it for the named object (kubectl rollout restart %s -n %s)", n.Target, n.Target.Namespace)
		default:
			n.Consumers = foldAnnotations(&actions, n, podsOf(items, n.Target))
		}
		actions = append(actions, n)
	}
	return actions
}

// foldAnnotations removes the annotations of pods from actions and returns
// the named restart's consumers with theirs.
func foldAnnotations(actions *[]refresh.Action, n refresh.Action, pods map[string]bool) []refresh.Consumer {
	cs := n.Consumers
	*actions = slices.DeleteFunc(*actions, func(a refresh.Action) bool {
		fold := a.Action == refresh.ActionAnnotate && a.Target.Kind == "Pod" && a.Target.Namespace == n.Target.Namespace && pods[a.Target.Name]
		if fold {
			cs = append(cs, a.Consumers...)
		}
		return fold
	})
	return cs
}

// restarting are the workloads of the named restarts.
func restarting(named []refresh.Action) map[refresh.WorkloadKey]bool {
	out := map[refresh.WorkloadKey]bool{}
	for _, a := range named {
		if a.Action == refresh.ActionRestart {
			out[refresh.WorkloadKey{Kind: a.Target.Kind, Namespace: a.Target.Namespace, Name: a.Target.Name}] = true
		}
	}
	return out
}

// podsOf are the names of the workload's pods among the items.
func podsOf(items []inspect.Use, t refresh.Target) map[string]bool {
	out := map[string]bool{}
	for _, it := range items {
		if it.Pod.Name != "" && it.Object.Namespace == t.Namespace && it.Workload.Name == t.Name && it.Workload.GroupKind() == t.Kind {
			out[it.Pod.Name] = true
		}
	}
	return out
}
