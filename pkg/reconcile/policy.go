package reconcile

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// OnChange is what a change of an object of kind (ConfigMap or Secret)
// that the workload consumes does to it, and why: OnChangeRemount for a
// workload with a reload hook (refresh.ReloadHookAnnotation, valid or
// not), whatever its other annotations: its volumes are remounted and the
// application told, which is what the hook is for; its
// AnnotationOnChange when set (on the workload, else its pod template); OnChangeRestart for a
// workload opted in for that kind through Reloader's annotations, which
// restart on every change (many applications read their configuration
// only at startup); OnChangeRemount otherwise, the least disruptive
// action: volumes remounted, env and subPath uses restarted.
func OnChange(workload, template map[string]string, kind string) (policy, why string) {
	return OnChangeFor(workload, template, kind, OnChangeRestart)
}

// PolicyRestartReason begins the reason of a restart that only the
// on-change policy asks for (no consumer is stale that a remount cannot
// make current): with OnChangeRemount its workload would be remounted.
const PolicyRestartReason = "on-change: restart: "

// OnChangeFor is OnChange where reloaderDefault (OnChangeRestart or
// OnChangeRemount, the controller's --reloader-on-change) is the policy of
// a workload opted in through Reloader's annotations; its own
// AnnotationOnChange still wins.
func OnChangeFor(workload, template map[string]string, kind, reloaderDefault string) (policy, why string) {
	for _, ann := range []map[string]string{workload, template} {
		if _, ok := ann[refresh.ReloadHookAnnotation]; ok {
			return OnChangeRemount, refresh.ReloadHookAnnotation + " is set: volumes are remounted and the application told, never restarted for them (" +
				AnnotationOnChange + " and Reloader's annotations do not apply to volume uses); env and subPath uses still restart"
		}
	}
	for _, ann := range []map[string]string{workload, template} {
		switch v := ann[AnnotationOnChange]; v {
		case OnChangeRestart, OnChangeRemount:
			return v, AnnotationOnChange + "=" + v
		}
	}
	keys := []string{ReloaderAuto, ReloaderSearch, typed(kind, ReloaderConfigMapAuto, ReloaderSecretAuto), typed(kind, ReloaderConfigMapReload, ReloaderSecretReload)}
	for _, ann := range []map[string]string{workload, template} {
		for _, k := range keys {
			switch v := ann[k]; {
			case v == "" || v == "false":
			case reloaderDefault == OnChangeRemount:
				return OnChangeRemount, "opted in through " + k + ", remounted as --reloader-on-change=" + OnChangeRemount + " says; " + AnnotationOnChange + "=" + OnChangeRestart + " restarts instead"
			default:
				return OnChangeRestart, "opted in through " + k + ", which restarts on every change; " + AnnotationOnChange + "=" + OnChangeRemount + " remounts instead"
			}
		}
	}
	return OnChangeRemount, "volumes are remounted without a restart; " + AnnotationOnChange + "=" + OnChangeRestart + " restarts instead"
}

// RestartsOnRollout tells whether a rollout restart applies to w: a built-in
// Deployment, StatefulSet or DaemonSet, or an Argo Rollout (by group and
// kind, as GroupKind names it).
func RestartsOnRollout(w inspect.WorkloadRef) bool {
	return refresh.Restartable[w.GroupKind()] && (w.Builtin() || refresh.IsRollout(w.GroupKind()))
}

// restartsOnChange are the workloads among meta whose policy is
// OnChangeRestart for some kind of object, with why, by kind;
// reloaderDefault is the policy of Reloader's opt-ins (OnChangeFor).
func restartsOnChange(meta map[inspect.WorkloadRef]subjectMeta, ns, reloaderDefault string) map[refresh.WorkloadKey]map[string]string {
	out := map[refresh.WorkloadKey]map[string]string{}
	for w, m := range meta {
		if !RestartsOnRollout(w) {
			continue
		}
		for _, kind := range []string{inspect.KindConfigMap, inspect.KindSecret} {
			if p, why := OnChangeFor(m.workload, m.template, kind, reloaderDefault); p == OnChangeRestart {
				wk := refresh.WorkloadKey{Kind: w.GroupKind(), Namespace: ns, Name: w.Name}
				if out[wk] == nil {
					out[wk] = map[string]string{}
				}
				out[wk][kind] = why
			}
		}
	}
	return out
}

// policyRestarts turns the annotations of the pods of a workload whose
// policy is OnChangeRestart, and its manual steps for consumers whose
// state could not be read, into one restart of it (merged into the
// restart the plan already makes of it, if any), where an annotation is
// for an edit of an object (not its creation, its deletion, or a check of
// the state found at start with no record, which would restart every such
// workload at once; a record that differs is an edit, editedFor). A
// workload a restart would not roll (paused, OnDelete, a partition) or
// whose pods the plan evicts keeps its annotations: a remount is what can
// be done.
func (l *Loop) policyRestarts(ctx context.Context, actions []refresh.Action, restart map[refresh.WorkloadKey]map[string]string, items []inspect.Use,
	changes map[inspect.ObjectKey]*pending, current func(w string, k inspect.ObjectKey) bool) []refresh.Action {
	for _, wk := range slices.SortedFunc(maps.Keys(restart), func(a, b refresh.WorkloadKey) int {
		return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	}) {
		t := refresh.Target{Kind: wk.Kind, Namespace: wk.Namespace, Name: wk.Name}
		pods := podsOf(items, t)
		var why string
		for _, a := range actions {
			if annotates(a, t.Namespace, pods) || unknownState(a, t) {
				why = cmp.Or(why, forEdit(a, changes, wk.Kind+"/"+wk.Name, restart[wk], current))
			}
		}
		if why == "" {
			continue // no edit this round of what its volumes read, of a kind it restarts for
		}
		i := slices.IndexFunc(actions, func(a refresh.Action) bool {
			return (a.Action == refresh.ActionRestart || a.Action == refresh.ActionEvict) && a.Target == t
		})
		switch {
		case i >= 0 && actions[i].Action == refresh.ActionRestart:
			r := actions[i]
			actions = slices.Delete(actions, i, i+1)
			r.Consumers = append(foldAnnotations(&actions, r, pods), foldUnknown(&actions, t)...)
			actions = append(actions, r)
		case i >= 0:
			// evicting its stale pods: the others are remounted
		default:
			r, ok := l.restartOf(ctx, wk, PolicyRestartReason+why)
			if !ok {
				continue
			}
			r.Consumers = append(foldAnnotations(&actions, r, pods), foldUnknown(&actions, t)...)
			actions = append(actions, r)
		}
	}
	return actions
}

// unknownState tells whether a is the manual step of workload t for
// consumers whose state could not be read (an exec timed out, a pod not
// running yet): a workload that restarts on every change is restarted
// without knowing it, as Reloader does.
func unknownState(a refresh.Action, t refresh.Target) bool {
	if a.Action != refresh.ActionManual || a.Target != t || len(a.Consumers) == 0 {
		return false
	}
	for _, c := range a.Consumers {
		if c.State != inspect.StateUnverifiable {
			return false
		}
	}
	return true
}

// foldUnknown removes the manual steps of t for consumers of unknown state
// (unknownState) and returns their consumers, for t's restart.
func foldUnknown(actions *[]refresh.Action, t refresh.Target) []refresh.Consumer {
	var cs []refresh.Consumer
	*actions = slices.DeleteFunc(*actions, func(a refresh.Action) bool {
		fold := unknownState(a, t)
		if fold {
			cs = append(cs, a.Consumers...)
		}
		return fold
	})
	return cs
}

// annotates tells whether a is the annotation of one of pods.
func annotates(a refresh.Action, ns string, pods map[string]bool) bool {
	return a.Action == refresh.ActionAnnotate && a.Target.Kind == "Pod" && a.Target.Namespace == ns && pods[a.Target.Name]
}

// forEdit is why a's consumers restart their workload w (by Kind/Name):
// the policy of the kind of an object edited for w one of them reads
// (kinds), or "". An object w was made current with as it is now
// (current) is no edit for w: the change is one delivered again (a watch
// that relisted after a cut) whose data w's last restart already read.
func forEdit(a refresh.Action, changes map[inspect.ObjectKey]*pending, w string, kinds map[string]string, current func(string, inspect.ObjectKey) bool) string {
	for _, c := range a.Consumers {
		k := inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
		if why, p := kinds[c.Object.Kind], changes[k]; p != nil && editedFor(p, w) && why != "" && !current(w, k) {
			return why
		}
	}
	return ""
}

// madeCurrent tells whether workload w (by Kind/Name) is recorded as made
// current with object k as it is now: its record's entry of k is the one
// its consumers' reads of k make now, of the same version (nothing written
// since the record), or a restart of w handed over and not verified yet
// was sent with that entry (restartingWith). False without records.
func (l *Loop) madeCurrent(rd *roundRead, now func() map[subject]Record) func(w string, k inspect.ObjectKey) bool {
	return func(w string, k inspect.ObjectKey) bool {
		if len(l.DigestKey) == 0 {
			return false
		}
		for _, it := range rd.items {
			if it.Key() != k || it.Pod.Name == "" || onlyKey(it.Workload) != w {
				continue
			}
			s := subjectOf(it)
			e, ok := now()[s][recordKey(k)]
			return ok && (ParseRecord(l.recordOf(s, rd.meta, rd.snap))[recordKey(k)] == e || l.restartingWith(rd.ns, s, recordKey(k), e))
		}
		return false
	}
}

// restartingWith tells whether a restart or eviction of s's workload,
// handed over by a round of ns and not verified yet, or one that timed out
// unverified since (sentWith), was sent with entry e as s's record of rk:
// its new pods read the object as it is now (an edit delivered late, after
// a cut of the watch, that the round's list held). Restarting again for it
// would restart twice for one edit.
func (l *Loop) restartingWith(ns string, s subject, rk, e string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.sentWith[s][rk]; ok && d == e {
		return true
	}
	for _, v := range l.verifying[ns] {
		if slices.Contains(v.records[s], rk) && v.digests[s][rk] == e {
			return true
		}
	}
	return false
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
