package shadow

import (
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Owners names the workload that owns a pod (the pod itself when it has
// none that restarts).
type Owners interface {
	Owner(namespace, pod string) Workload
}

// Sizes tells how many pods a workload runs by its spec (a Deployment's or
// StatefulSet's replicas, a DaemonSet's desired pods), where known. While
// a rollout is under way the workload has more pods than that (the old
// revision's and the new one's): a change is counted in the pods the
// workload runs, not in those it ran for a moment.
type Sizes interface {
	Desired(w Workload) (int, bool)
}

// Collector turns the loop's events into one Decision per change. Not
// safe for concurrent use: the caller serializes.
type Collector struct {
	// Open are the changes seen, latest last.
	Open []*Decision
}

// unreadMessage is the loop's reason to ignore a change no consumer reads.
const unreadMessage = "no consumer reads the changed keys"

// Handle adds one event: a change opens a decision (at first, its first
// edit; zero: the event's time), the others add to the latest decision of
// the objects they concern. owners and sizes may be nil.
func (c *Collector) Handle(e reconcile.Event, owners Owners, sizes Sizes) {
	switch e.Kind {
	case reconcile.EventChange:
		if e.Object == nil {
			return
		}
		at := e.Time
		if e.FirstEdit != nil {
			at = *e.FirstEdit
		}
		c.Open = append(c.Open, &Decision{Object: objectOf(e.Object.Kind, e.Object.Namespace, e.Object.Name), Keys: e.Keys, At: at})
	case reconcile.EventIgnored:
		if e.Object == nil {
			return
		}
		if d := c.latest(e.Object.Kind, e.Object.Namespace, e.Object.Name); d != nil {
			d.Ignored, d.Unread = e.Message, e.Message == unreadMessage
		}
	case reconcile.EventSkip:
		if e.Object != nil && e.Target != nil {
			if d := c.latest(e.Object.Kind, e.Object.Namespace, e.Object.Name); d != nil {
				d.set(WorkloadDecision{Workload: Workload{Kind: e.Target.Kind, Namespace: e.Target.Namespace, Name: e.Target.Name}, Action: ActSkip, Reason: e.Message})
			}
		}
	case reconcile.EventAction, reconcile.EventDeferred:
		if e.Action != nil {
			c.action(e, owners, sizes)
		}
	case reconcile.EventResult:
		if e.Action != nil && e.Action.Action == refresh.ActionNone {
			c.alreadyCurrent(e.Action, owners, sizes)
		}
	}
}

// alreadyCurrent notes a pod the round found already reading the change:
// an env or subPath use current (its container started after the edit:
// a restart came first, the peer's most often, for cmsync acts a debounce
// after the edit) or a mounted volume in-sync. What cmsync would have done
// had it come first is a restart or a remount; Pair keeps it only where a
// peer did restart the workload (otherwise neither had anything to do).
func (c *Collector) alreadyCurrent(a *refresh.Action, owners Owners, sizes Sizes) {
	if a.Target.Kind != "Pod" || owners == nil {
		return
	}
	wl := owners.Owner(a.Target.Namespace, a.Target.Name)
	if wl.Kind == "Pod" {
		return // a bare pod: no restart made it current
	}
	for _, co := range a.Consumers {
		act := ActRestart
		switch {
		case a.Reason == refresh.AlreadyReason(inspect.StateInSync) && co.Mode.HotUpdating():
			act = ActRemount
		case a.Reason != refresh.AlreadyReason(inspect.StateCurrent) || co.Mode.HotUpdating():
			continue
		}
		d := c.latest(co.Object.Kind, co.Object.Namespace, co.Object.Name)
		if d == nil {
			continue
		}
		wd := WorkloadDecision{Workload: wl, Action: act, Pods: 1, AlreadyCurrent: true,
			Reason: "its pods already read the change when cmsync's round came (a restart came first)"}
		if sizes != nil {
			wd.Desired, _ = sizes.Desired(wl)
		}
		if act == ActRestart && wd.Desired > 0 {
			wd.Pods = wd.Desired // a restart replaces them all
		}
		d.set(wd)
	}
}

// action adds an action (sent, or held back) to the decisions of the
// objects its consumers read.
func (c *Collector) action(e reconcile.Event, owners Owners, sizes Sizes) {
	a := e.Action
	wd := WorkloadDecision{Workload: Workload{Kind: a.Target.Kind, Namespace: a.Target.Namespace, Name: a.Target.Name}, Reason: a.Reason, Pods: len(a.Pods)}
	switch a.Action {
	case refresh.ActionAnnotate:
		wd.Action = ActRemount
		if a.Hook != nil {
			wd.Action = ActHook
		}
		if owners != nil {
			wd.Workload = owners.Owner(a.Target.Namespace, a.Target.Name)
		}
	case refresh.ActionRestart:
		wd.Action = ActRestart
	case refresh.ActionEvict:
		wd.Action = ActEvict
	case refresh.ActionManual:
		wd.Action = ActManual
	default:
		return
	}
	if a.Action == refresh.ActionRestart && strings.HasPrefix(a.Reason, reconcile.PolicyRestartReason) {
		wd.RemountPolicy, wd.RemountPods = ActRemount, hotPods(a.Consumers)
	}
	if e.Kind == reconcile.EventDeferred {
		wd.Action, wd.Reason = deferral(e), e.Message
	}
	if sizes != nil {
		wd.Desired, _ = sizes.Desired(wd.Workload)
	}
	var done []*Decision
	for _, co := range a.Consumers {
		d := c.latest(co.Object.Kind, co.Object.Namespace, co.Object.Name)
		if d == nil || slices.Contains(done, d) {
			continue
		}
		done = append(done, d)
		d.set(wd)
	}
}

// hotPods counts the pods of the consumers a remount makes current: the
// pods a restart made only by the on-change policy would remount instead.
func hotPods(cs []refresh.Consumer) int {
	pods := map[string]bool{}
	for _, c := range cs {
		if c.Mode.HotUpdating() {
			pods[c.Pod] = true
		}
	}
	return len(pods)
}

// deferral is the kind of hold a deferred event reports.
func deferral(e reconcile.Event) Action {
	switch {
	case e.Window != "":
		return ActWindow
	case e.Until != nil:
		return ActPaced
	}
	return ActDeferred
}

// set records cmsync's action on a workload: a deferral by window or pace
// is kept (the peer's restart is compared with it, not with the restart
// that follows once it may go); remounts of several pods add up.
func (d *Decision) set(wd WorkloadDecision) {
	for i := range d.Workloads {
		cur := &d.Workloads[i]
		if cur.Workload != wd.Workload {
			continue
		}
		switch {
		case wd.AlreadyCurrent && !cur.AlreadyCurrent:
			// what cmsync does for the workload's other pods decides
		case wd.AlreadyCurrent && (wd.Action == ActRestart || cur.Action == ActRestart):
			cur.Action, cur.Pods = ActRestart, max(cur.Pods, wd.Pods)
		case wd.AlreadyCurrent:
			cur.Pods += wd.Pods
		case cur.AlreadyCurrent:
			*cur = wd
		case cur.Action == ActWindow || cur.Action == ActPaced:
		case cur.Action == wd.Action && (wd.Action == ActRemount || wd.Action == ActHook):
			cur.Pods += wd.Pods
		case cur.Action == ActRemount || cur.Action == ActHook || cur.Action == ActSkip || cur.Action == ActDeferred:
			*cur = wd
		}
		return
	}
	d.Workloads = append(d.Workloads, wd)
}

// latest is the latest decision of an object.
func (c *Collector) latest(kind, ns, name string) *Decision {
	o := objectOf(kind, ns, name)
	for i := len(c.Open) - 1; i >= 0; i-- {
		if c.Open[i].Object == o {
			return c.Open[i]
		}
	}
	return nil
}

// Due takes the decisions whose window has passed at now and pairs each
// with markers; a later change of the same object ends an earlier one's
// window.
func (c *Collector) Due(now time.Time, window time.Duration, markers []Marker) []Row {
	var rows []Row
	var keep []*Decision
	for i, d := range c.Open {
		if now.Before(d.At.Add(window)) {
			keep = append(keep, d)
			continue
		}
		var until time.Time
		for _, n := range c.Open[i+1:] {
			if n.Object == d.Object {
				until = n.At
				break
			}
		}
		rows = append(rows, Pair(*d, markers, window, until))
	}
	c.Open = keep
	return rows
}

func objectOf(kind, ns, name string) Object { return Object{Kind: kind, Namespace: ns, Name: name} }
