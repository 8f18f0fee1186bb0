package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// WorkloadAnnotations reads the annotations of a Deployment, StatefulSet or
// DaemonSet and of its pod template (where Reloader's may be);
// refresh.ClientWorkloads implements it with the engine's one workload read.
type WorkloadAnnotations interface {
	Annotations(ctx context.Context, kind, namespace, name string) (workload, template map[string]string, err error)
}

type subjectKey struct {
	workload inspect.WorkloadRef
	object   inspect.ObjectKey
}

// selected keeps the uses of the workloads a change may be acted on
// (Select), and hands emit each workload left alone, once per
// object (a skip, or an error where its annotations could not be read).
// It returns the annotations it read, by workload.
func (l *Loop) selected(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use, emit func(Event)) ([]inspect.Use, map[inspect.WorkloadRef]subjectMeta) {
	decisions := map[subjectKey]Decision{}
	meta := map[inspect.WorkloadRef]subjectMeta{}
	var kept []inspect.Use
	for _, it := range items {
		sk := subjectKey{workload: it.Workload, object: it.Key()}
		d, seen := decisions[sk]
		if !seen {
			m, ok := meta[it.Workload]
			if !ok {
				m = l.subjectAnnotations(ctx, snap, it)
				meta[it.Workload] = m
			}
			var e *Event
			d, e = l.decide(m, it, snap)
			if e != nil {
				emit(*e)
			}
			decisions[sk] = d
		}
		if d.Selection != Skip {
			kept = append(kept, it)
		}
	}
	return kept, meta
}

// transientMeta is the first failure that may pass among the reads of the
// workloads' annotations (in the order of their names): a round that could
// not tell whether a workload may be acted on is tried again, as one that
// could not read its namespace.
func transientMeta(meta map[inspect.WorkloadRef]subjectMeta) error {
	for _, w := range slices.SortedFunc(maps.Keys(meta), func(a, b inspect.WorkloadRef) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) }) {
		if err := meta[w].err; err != nil && refresh.Transient(err) {
			return fmt.Errorf("reading the annotations of %s %s: %w", strings.ToLower(w.Kind), w.Name, err)
		}
	}
	return nil
}

type subjectMeta struct {
	workload, template map[string]string
	err                error
}

// decide selects one workload for one object, with the event that reports
// a skip.
func (l *Loop) decide(m subjectMeta, it inspect.Use, snap *inspect.Snapshot) (Decision, *Event) {
	k := it.Key()
	target := &refresh.Target{Kind: it.Workload.GroupKind(), Namespace: k.Namespace, Name: it.Workload.Name}
	if m.err != nil && refresh.Transient(m.err) {
		return Decision{Selection: Skip}, nil // the round is tried again (transientMeta)
	}
	if m.err != nil {
		// its pause or opt-out annotations are unknown: not acted on
		return Decision{Selection: Skip},
			&Event{Kind: EventError, Object: &k, Target: target, Message: fmt.Sprintf("cannot read its annotations: %v; not acted on", m.err)}
	}
	if why := l.Scope.WorkloadOutOfScope(it.Workload); why != "" {
		return Decision{Skip, why}, &Event{Kind: EventSkip, Object: &k, Target: target, Message: why}
	}
	d := Select(l.RequireOptIn, Subject{Annotations: m.workload, TemplateAnnotations: m.template, Consumes: true, OptIn: optInHint(it.Workload)},
		Changed{Kind: k.Kind, Name: k.Name, Annotations: objectAnnotations(snap, k)})
	if d.Selection == Skip {
		return d, &Event{Kind: EventSkip, Object: &k, Target: target, Message: d.Reason}
	}
	return d, nil
}

// subjectAnnotations are the annotations of the item's workload and its
// pod template: a workload's own (Deployment, StatefulSet, DaemonSet, Argo
// Rollout), read once a round; a Job's from the snapshot, which lists the
// Jobs that own its pods (Reloader reads its annotations on the Job's own
// metadata); for a bare pod, or an owner whose annotations cmsync does
// not read (a CronJob, a custom controller), the pod's.
func (l *Loop) subjectAnnotations(ctx context.Context, snap *inspect.Snapshot, it inspect.Use) subjectMeta {
	if recordedOnWorkload(it.Workload) && l.Annotations != nil {
		w, t, err := l.Annotations.Annotations(ctx, it.Workload.GroupKind(), it.Object.Namespace, it.Workload.Name)
		return subjectMeta{workload: w, template: t, err: err}
	}
	if it.Workload.Builtin() && it.Workload.Kind == "Job" {
		if j := snap.Jobs[inspect.NamespacedName{Namespace: it.Object.Namespace, Name: it.Workload.Name}]; j != nil {
			return subjectMeta{workload: j.Annotations, template: j.Spec.Template.Annotations}
		}
	}
	for i := range snap.Pods {
		if p := &snap.Pods[i]; p.Name == it.Pod.Name && p.Namespace == it.Object.Namespace {
			return subjectMeta{workload: p.Annotations, template: p.Annotations}
		}
	}
	return subjectMeta{}
}

func objectAnnotations(snap *inspect.Snapshot, k inspect.ObjectKey) map[string]string {
	if cm := snap.ConfigMaps[k]; cm != nil {
		return cm.Annotations
	}
	if s := snap.Secrets[k]; s != nil {
		return s.Annotations
	}
	return nil
}

// readAnnotations answers the refresh engine's reads of workload
// annotations (for the reload hooks) from those the round's selection
// read already, and reads the others through next (nil: none).
type readAnnotations struct {
	meta map[inspect.WorkloadRef]subjectMeta
	next refresh.AnnotationReader
}

// Annotations implements refresh.AnnotationReader.
func (r readAnnotations) Annotations(ctx context.Context, kind, namespace, name string) (map[string]string, map[string]string, error) {
	if m, ok := metaFor(r.meta, kind, name); ok {
		return m.workload, m.template, m.err
	}
	if r.next == nil {
		return nil, nil, nil
	}
	return r.next.Annotations(ctx, kind, namespace, name)
}

// metaFor is the annotations the round read of the workload of kind (as
// an action's target names it: group-qualified where it is not built in)
// and name.
func metaFor(meta map[inspect.WorkloadRef]subjectMeta, kind, name string) (subjectMeta, bool) {
	for w, m := range meta {
		if w.GroupKind() == kind && w.Name == name {
			return m, true
		}
	}
	return subjectMeta{}, false
}

// optInHint is where an annotation opts the workload in, as the skip of
// one that is not opted in says it: on its own metadata where cmsync reads
// it there, else on the pod (its owner's template only reaches the pods
// it creates next).
func optInHint(w inspect.WorkloadRef) string {
	if recordedOnWorkload(w) || (w.Builtin() && w.Kind == "Job") {
		return fmt.Sprintf("annotate the %s with %s=true", w.Kind, AnnotationWatch)
	}
	return fmt.Sprintf("annotate the pod with %s=true (its owner's pod template, for the pods it creates next)", AnnotationWatch)
}
