package reconcile

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// onChange is what a change of an object the workload consumes does to it,
// and why: its AnnotationOnChange when set (on the workload, else its pod
// template); OnChangeRestart for a workload opted in through Reloader's
// annotations, which restart on every change (many applications read
// their configuration only at startup); OnChangeRemount otherwise, the
// least disruptive action: volumes remounted, env and subPath uses
// restarted.
func onChange(workload, template map[string]string) (policy, why string) {
	for _, ann := range []map[string]string{workload, template} {
		switch v := ann[AnnotationOnChange]; v {
		case OnChangeRestart, OnChangeRemount:
			return v, AnnotationOnChange + "=" + v
		}
	}
	for _, ann := range []map[string]string{workload, template} {
		for _, k := range []string{ReloaderAuto, ReloaderConfigMapAuto, ReloaderSecretAuto, ReloaderSearch, ReloaderConfigMapReload, ReloaderSecretReload} {
			if v := ann[k]; v != "" && v != "false" {
				return OnChangeRestart, "opted in through " + k + ", which restarts on every change; " + AnnotationOnChange + "=" + OnChangeRemount + " remounts instead"
			}
		}
	}
	return OnChangeRemount, "volumes are remounted without a restart; " + AnnotationOnChange + "=" + OnChangeRestart + " restarts instead"
}

// restartsOnChange are the workloads among meta whose policy is
// OnChangeRestart, with why.
func restartsOnChange(meta map[inspect.WorkloadRef]subjectMeta, ns string) map[refresh.WorkloadKey]string {
	out := map[refresh.WorkloadKey]string{}
	for w, m := range meta {
		if p, why := onChange(m.workload, m.template); p == OnChangeRestart && w.Builtin() && refresh.Restartable[w.Kind] {
			out[refresh.WorkloadKey{Kind: w.Kind, Namespace: ns, Name: w.Name}] = why
		}
	}
	return out
}

// policyRestarts turns the annotations of the pods of a workload whose
// policy is OnChangeRestart into one restart of it (merged into the
// restart the plan already makes of it, if any), where an annotation is
// for an edit of an object (not its creation, its deletion, or a check of
// the state found at start, which would restart every such workload at
// once). A workload a restart would not roll (paused, OnDelete, a
// partition) or whose pods the plan evicts keeps its annotations: a
// remount is what can be done.
func (l *Loop) policyRestarts(ctx context.Context, actions []refresh.Action, restart map[refresh.WorkloadKey]string, items []inspect.Use, changes map[inspect.ObjectKey]*pending) []refresh.Action {
	for _, wk := range slices.SortedFunc(maps.Keys(restart), func(a, b refresh.WorkloadKey) int {
		return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	}) {
		why := restart[wk]
		t := refresh.Target{Kind: wk.Kind, Namespace: wk.Namespace, Name: wk.Name}
		pods := podsOf(items, t)
		if !slices.ContainsFunc(actions, func(a refresh.Action) bool { return annotates(a, t.Namespace, pods) && forEdit(a, changes) }) {
			continue // no edit of what its volumes read this round
		}
		i := slices.IndexFunc(actions, func(a refresh.Action) bool {
			return (a.Action == refresh.ActionRestart || a.Action == refresh.ActionEvict) && a.Target == t
		})
		switch {
		case i >= 0 && actions[i].Action == refresh.ActionRestart:
			r := actions[i]
			actions = slices.Delete(actions, i, i+1)
			r.Consumers = foldAnnotations(&actions, r, pods)
			actions = append(actions, r)
		case i >= 0:
			// evicting its stale pods: the others are remounted
		default:
			r, ok := l.restartOf(ctx, wk, "on-change: restart: "+why)
			if !ok {
				continue
			}
			r.Consumers = foldAnnotations(&actions, r, pods)
			actions = append(actions, r)
		}
	}
	return actions
}

// annotates tells whether a is the annotation of one of pods.
func annotates(a refresh.Action, ns string, pods map[string]bool) bool {
	return a.Action == refresh.ActionAnnotate && a.Target.Kind == "Pod" && a.Target.Namespace == ns && pods[a.Target.Name]
}

// forEdit tells whether one of a's consumers reads an edited object.
func forEdit(a refresh.Action, changes map[inspect.ObjectKey]*pending) bool {
	return slices.ContainsFunc(a.Consumers, func(c refresh.Consumer) bool {
		p := changes[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}]
		return p != nil && edited(p)
	})
}

// restartOf is a restart of wk replacing its live pods; false when a
// restart would replace none or not all of them, or it cannot be read.
func (l *Loop) restartOf(ctx context.Context, wk refresh.WorkloadKey, reason string) (refresh.Action, bool) {
	if l.Cluster.Workloads == nil {
		return refresh.Action{}, false
	}
	info, err := l.Cluster.Workloads.Workload(ctx, wk)
	if err != nil || !info.Exists || info.Paused || info.OnDelete || info.Partition > 0 {
		return refresh.Action{}, false
	}
	a := refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: wk.Kind, Namespace: wk.Namespace, Name: wk.Name}, Reason: reason}
	for _, p := range info.Pods {
		if !p.Terminating {
			a.AddPod(p.Name, p.UID)
		}
	}
	return a, true
}
