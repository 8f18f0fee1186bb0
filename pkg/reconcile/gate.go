package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// HoldKind is what holds a restart back: a deferral's event and
// cmsync_deferred_total say it.
type HoldKind string

const (
	// HoldWindow: outside the workload's restart window, until it opens.
	HoldWindow HoldKind = "window"
	// HoldPausePeriod: within Reloader's pause period of the workload's
	// last restart, until it ends.
	HoldPausePeriod HoldKind = "pause-period"
	// HoldInterval: within --min-restart-interval of the workload's last
	// restart, until it ends.
	HoldInterval HoldKind = "interval"
	// HoldRate: the --restart-rate bucket is empty, until it has a token
	// (a time that moves on while the burst is spent).
	HoldRate HoldKind = "rate"
	// HoldLimit: --max-concurrent-restarts restarts are under way.
	HoldLimit HoldKind = "limit"
	// HoldRollout: the workload's previous rollout is not complete (or
	// stuck: Stuck); it counts against --rollout-wait.
	HoldRollout HoldKind = "rollout"
	// HoldUnreadable: the workload's annotations could not be read (for
	// good, Stuck, when the cause will not pass).
	HoldUnreadable HoldKind = "unreadable"
	// HoldInvalid: an annotation of the workload does not parse (a
	// restart window, a pause period): held for good (Stuck), which is
	// said as an error, never as a deferral.
	HoldInvalid HoldKind = "invalid"
)

// DeferredHolds are the kinds a deferred event may carry.
var DeferredHolds = []HoldKind{HoldWindow, HoldPausePeriod, HoldInterval, HoldRate, HoldLimit, HoldRollout, HoldUnreadable}

// Hold is why a restart is held back this round (Reason "" to send it):
// its kind, and until when where that is known.
type Hold struct {
	Reason string
	Kind   HoldKind
	// Stuck: waiting is pointless (a rollout whose progress deadline
	// passed, an annotation that cannot be read): reported and dropped.
	Stuck bool
	// Until is when a paced hold ends (paced).
	Until time.Time
	// Window is the restart window (its annotation) that holds the
	// restart until Until: the event carries it.
	Window string
}

// rollout: held for a rollout under way (not for the limit): it counts
// against RolloutWait.
func (h Hold) rollout() bool { return h.Kind == HoldRollout }

// paced: held until a time known now (Until): a window, a pause period,
// the interval or the rate.
func (h Hold) paced() bool {
	return h.Kind == HoldWindow || h.Kind == HoldPausePeriod || h.Kind == HoldInterval || h.Kind == HoldRate
}

// Gate decides, action by action, which restarts and evictions go ahead:
// with busy under way already, at most limit in all (0: no limit), none
// that rollout holds back (a workload whose previous rollout is not
// complete) and none that schedule holds back (a restart window, the
// pace). A restart over the limit is held for its workload's own rollout
// when one is under way (the hold that starts the --rollout-wait clock),
// else for the limit; its schedule is not asked, so that a restart the
// limit holds spends nothing of the pace. Annotations always go ahead.
func Gate(actions []refresh.Action, limit, busy int, rollout, schedule func(refresh.Target) Hold) (send []refresh.Action, held map[int]Hold) {
	held = map[int]Hold{}
	restarts := busy
	for i, a := range actions {
		if !isRestart(a) {
			send = append(send, a)
			continue
		}
		h := rollout(a.Target)
		switch {
		case limit > 0 && restarts >= limit && !h.rollout():
			held[i] = Hold{Reason: fmt.Sprintf("%d restarts are under way (--max-concurrent-restarts)", limit), Kind: HoldLimit}
			continue
		case h.Reason == "":
			h = schedule(a.Target)
		}
		if h.Reason != "" {
			held[i] = h
			continue
		}
		restarts++
		send = append(send, a)
	}
	return send, held
}

// gate holds back the restarts Gate refuses. Their changes are checked
// again after a backoff (recheckAfter) or when the pace allows, for those
// workloads only; a rollout that is stuck, or still under way RolloutWait
// after the first hold, is reported and dropped. A dry run changes
// nothing, so nothing is held: every restart is shown. It returns the
// actions held back. A shadow (Shadow) holds as the acting loop would:
// its deferrals are reported and tried again, nothing is sent either way.
func (l *Loop) gate(ctx context.Context, plan *refresh.Plan, changes map[inspect.ObjectKey]*pending, meta map[inspect.WorkloadRef]subjectMeta) []refresh.Action {
	if l.dryRun() && !l.Shadow {
		return nil
	}
	rollouts := map[refresh.Target]Hold{} // read before the limit's lock is taken
	schedules := map[refresh.Target]subjectMeta{}
	for _, a := range plan.Actions {
		if isRestart(a) {
			rollouts[a.Target] = l.rolloutHold(ctx, a.Target)
			schedules[a.Target] = l.metaOf(ctx, a.Target, meta)
		}
	}
	actions, idx, windowed := plan.Actions, []int(nil), map[int]Hold{}
	if l.Shadow {
		actions, idx, windowed = windowFirst(plan.Actions, func(t refresh.Target) Hold {
			if m := schedules[t]; m.err == nil {
				return windowHold(t, m, l.Now())
			}
			return Hold{}
		})
	}
	underWay := map[refresh.Target]bool{} // a restart sent earlier whose rollout goes on counts, held again or not
	for t, h := range rollouts {
		underWay[t] = h.rollout()
		if h.Stuck { // seen stuck: no longer counted, though its workload rolls again later
			l.restarts.forget(t, l.Now())
		}
	}
	send, gated := l.restarts.gate(ctx, l, actions, underWay, func(t refresh.Target) Hold { return rollouts[t] },
		func(t refresh.Target) Hold { return l.scheduleHold(t, schedules[t]) })
	for _, a := range send {
		if isRestart(a) {
			l.restarts.owe(a.Target, moveRelease, Hold{}, l.Now())
		}
	}
	held := windowed
	for i, h := range gated {
		if idx != nil {
			i = idx[i]
		}
		held[i] = h
	}
	now := l.Now()
	retry := map[inspect.ObjectKey]map[string]bool{}
	until := map[inspect.ObjectKey]time.Time{} // when the held restarts are checked again
	var out []refresh.Action
	for _, i := range slices.Sorted(maps.Keys(held)) {
		a, h := plan.Actions[i], held[i]
		said := h         // as the event says it: on the API server's clock
		var at *time.Time // said's Until, when it has one
		if h.paced() {
			u := h.Until
			at = &u
			h.Until = l.Clock().Add(max(h.Until.Sub(now), time.Second)) // the debounce runs on Clock
		}
		out = append(out, a)
		objs := consumedObjects(a, changes)
		drop, tell := h.Stuck, false
		for _, k := range objs {
			waited := l.waitedOn(changes[k], h, now)
			drop = drop || waited
			tell = changes[k].firstDeferral(a.Target.Kind+"/"+a.Target.Name, said, now) || tell
		}
		if drop {
			l.restarts.owe(a.Target, moveDrop, said, now)
			finish := fmt.Sprintf("`kubectl cmsync refresh` of %s", objectList(objs))
			if a.Named() { // refresh does not read Reloader's reload lists
				finish = fmt.Sprintf("`kubectl rollout restart %s -n %s`", a.Target, a.Target.Namespace)
			}
			l.emit(Event{Kind: EventError, Action: &a, Message: fmt.Sprintf("%s: not restarted; once that is resolved, %s finishes it", h.Reason, finish)})
			continue
		}
		for _, k := range objs {
			if retry[k] == nil {
				retry[k] = map[string]bool{}
			}
			retry[k][a.Target.Kind+"/"+a.Target.Name] = true
			if !h.paced() { // checked again after a backoff that grows with the hold
				h.Until = l.Clock().Add(l.recheckAfter(changes[k], now))
			}
			until[k] = laterRetry(until[k], h, len(retry[k]) == 1)
		}
		// said once per edit and reason, not at every retry; again once
		// held anew (let through and failed since, or held once more
		// after a round that did not hold it): what was said last of it
		// (tried again, sent) no longer holds
		tell = l.restarts.owe(a.Target, moveHold, said, now) || tell
		if tell {
			l.emit(Event{Kind: EventDeferred, Action: &a, Until: at, Window: h.Window, Hold: h.Kind, Message: h.Reason + "; " + retryWhen(h)})
		}
	}
	for k, only := range retry {
		p := *changes[k]
		p.only = only
		l.requeueAt(p, until[k])
	}
	for i, a := range send {
		if isRestart(a) { // its patch, or its evictions, stop when its window closes
			send[i].NotAfter = windowCloses(schedules[a.Target], now)
		}
	}
	plan.Actions = send
	return out
}

// windowFirst holds the restarts whose restart window is closed (window)
// before the limit and the rollouts are asked: a shadow reports what cmsync
// would have held them for, not the peer's rollout under way or the other
// restarts of the round. It returns the other actions, the index in
// actions of each, and the held by their index.
func windowFirst(actions []refresh.Action, window func(refresh.Target) Hold) ([]refresh.Action, []int, map[int]Hold) {
	var rest []refresh.Action
	idx := []int{}
	held := map[int]Hold{}
	for i, a := range actions {
		if isRestart(a) {
			if h := window(a.Target); h.Reason != "" {
				held[i] = h
				continue
			}
		}
		rest = append(rest, a)
		idx = append(idx, i)
	}
	return rest, idx, held
}

func (l *Loop) dryRun() bool { return l.Refresh.DryRun != refresh.DryRunNone && l.Refresh.DryRun != "" }

// waitedOn starts the clock of a change held for a rollout (at its first
// hold) and tells whether it has waited RolloutWait already.
func (l *Loop) waitedOn(p *pending, h Hold, now time.Time) bool {
	if !h.rollout() {
		return false
	}
	if p.deferredSince.IsZero() {
		p.deferredSince = now
	}
	return now.Sub(p.deferredSince) >= l.RolloutWait
}

// laterRetry is when an object's held restarts are tried again: the
// earliest of their holds' Until (first: h is the object's first hold
// this round).
func laterRetry(at time.Time, h Hold, first bool) time.Time {
	if first || h.Until.Before(at) {
		return h.Until
	}
	return at
}

// MaxRecheck is the longest a held restart waits before it is checked
// again.
const MaxRecheck = 30 * time.Second

// recheckAfter is how long a held restart waits before it is checked
// again: half the time it has been held, at least the debounce (and a
// second), at most MaxRecheck. A rollout of ten minutes then costs a few
// dozen checks of its namespace, not one every debounce.
func (l *Loop) recheckAfter(p *pending, now time.Time) time.Duration {
	if p.heldSince.IsZero() {
		p.heldSince = now
	}
	return min(max(now.Sub(p.heldSince)/2, l.Debounce, time.Second), MaxRecheck)
}

// retryWhen says when a held restart is tried again.
func retryWhen(h Hold) string {
	if h.Window != "" {
		return "restarted then (with the values of that time)"
	}
	if h.paced() {
		return "tried again at " + h.Until.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("checked again with a backoff (at most every %s)", MaxRecheck)
}

// firstDeferral tells whether this is the first time since the change's
// last edit that the workload's restart is held for this kind of hold
// (Kind: a rollout under way, the restart limit...) and, for a hold until a time
// (paced, a restart window), until that time, and remembers it: a
// deferral to a new time (the window's next opening, once a rollout held
// the restart through the window) is said again, with that time. A hold
// by the rate is said once while the line said last names a time ahead
// (now, on the clock of h.Until): its time moves on with every check while
// the burst is spent. Once the time the last line named has passed, the
// restart held again (another restart took the token, or the limit is
// reached) is said again, whatever holds it; and a hold until a time after
// a line that named none (held for the limit, then by the rate) is said,
// with its time.
func (p *pending) firstDeferral(workload string, h Hold, now time.Time) bool {
	key := fmt.Sprintf("%s %s", workload, cmp.Or(h.Kind, "held"))
	switch {
	case h.Kind == HoldRate:
		key += " paced by the rate"
	case h.paced(): // a deferral to a new time is said again
		key += " paced until " + h.Until.UTC().Format(time.RFC3339)
	}
	if h.Window != "" {
		key += " window"
	}
	last := workload + " until" // the time the last line said of the workload named, if it named one
	until, timed := p.told[last]
	_, said := p.told[key]
	if said && (timed && now.Before(until) || !timed && h.Until.IsZero()) {
		return false
	}
	if p.told == nil {
		p.told = map[string]time.Time{}
	}
	p.told[key] = h.Until
	if h.Until.IsZero() {
		delete(p.told, last)
	} else {
		p.told[last] = h.Until
	}
	return true
}

// consumedObjects are the changed objects an action's consumers read.
func consumedObjects(a refresh.Action, changes map[inspect.ObjectKey]*pending) []inspect.ObjectKey {
	var out []inspect.ObjectKey
	for _, c := range a.Consumers {
		k := inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
		if changes[k] != nil && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func objectList(keys []inspect.ObjectKey) string {
	var s []string
	for _, k := range keys {
		s = append(s, strings.ToLower(k.Kind)+"/"+k.Name+" -n "+k.Namespace)
	}
	return strings.Join(s, ", ")
}

func isDeadlineExceeded(err error) bool {
	return strings.Contains(err.Error(), "exceeded its progress deadline")
}

// rolloutHold holds a restart of a workload whose rollout is under way.
func (l *Loop) rolloutHold(ctx context.Context, t refresh.Target) Hold {
	if l.Cluster.Rollouts == nil {
		return Hold{}
	}
	done, msg, err := l.Cluster.Rollouts.RolloutDone(ctx, t.Kind, t.Namespace, t.Name)
	switch {
	case err != nil:
		// kubectl's status viewer answers a passed progress deadline with
		// an error; any other error is the restart's to meet
		if isDeadlineExceeded(err) {
			return Hold{Reason: fmt.Sprintf("the rollout of %s is stuck: %v", t, err), Kind: HoldRollout, Stuck: true}
		}
		return Hold{}
	case !done:
		return Hold{Reason: fmt.Sprintf("the previous rollout of %s is not complete (%s)", t, strings.TrimSpace(msg)), Kind: HoldRollout}
	}
	return Hold{}
}

func isRestart(a refresh.Action) bool {
	return a.Action == refresh.ActionRestart || a.Action == refresh.ActionEvict
}

// gate is Gate with the restarts under way in every namespace counted:
// those a round is sending now, and those sent whose rollout was not yet
// seen complete (a restart of this round's actions counts once: as the
// one sent before while the round sees its rollout under way, underWay,
// else as the one it sends; not RolloutWait after it was sent). The
// restarts it lets through are under way from then on. With no limit,
// nothing is counted.
func (f *inFlight) gate(ctx context.Context, l *Loop, actions []refresh.Action, underWay map[refresh.Target]bool, rollout, schedule func(refresh.Target) Hold) ([]refresh.Action, map[int]Hold) {
	limit := l.MaxConcurrentRestarts
	if limit <= 0 {
		return Gate(actions, 0, 0, rollout, schedule)
	}
	own := map[refresh.Target]bool{} // the round reads their rollouts itself (rolloutHold)
	for _, a := range actions {
		if isRestart(a) {
			own[a.Target] = true
		}
	}
	f.prune(ctx, l, own)
	f.mu.Lock()
	defer f.mu.Unlock()
	busy := 0
	for t, fl := range f.targets {
		// the round's own (not pruned) count while their rollout goes on,
		// up to RolloutWait after they were sent, as prune counts the others
		if !own[t] || underWay[t] && (fl.phase == FlightSending || l.Now().Sub(fl.since) < l.RolloutWait) {
			busy++
		}
	}
	send, held := Gate(actions, limit, busy, rollout, schedule)
	for _, a := range send {
		if isRestart(a) {
			f.move(a.Target, moveLet, l.Now())
		}
	}
	return send, held
}

// prune forgets the restarts sent by rounds that ended whose rollout is
// complete now, or will not complete by itself (its progress deadline
// passed: reported, with the command that shows it), or is gone or has no
// rollout status (an error that will not pass), one GET each, made without
// the lock (not for skip: the round's own, whose rollouts it reads
// itself); and those not complete after RolloutWait, reported: a rollout
// that never ends (a crash-looping StatefulSet has no progress deadline)
// must not hold every other restart for good.
func (f *inFlight) prune(ctx context.Context, l *Loop, skip map[refresh.Target]bool) {
	f.mu.Lock()
	var sent []refresh.Target
	for t, fl := range f.targets {
		if fl.phase == FlightRolling && !skip[t] {
			sent = append(sent, t)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(sent, compareTargets) // what is said of several comes in one order
	for _, t := range sent {
		done, _, err := true, "", error(nil)
		if l.Cluster.Rollouts != nil {
			done, _, err = l.Cluster.Rollouts.RolloutDone(ctx, t.Kind, t.Namespace, t.Name)
		}
		stuck := err != nil && isDeadlineExceeded(err)
		f.mu.Lock()
		fl := f.targets[t]
		expired := fl != nil && fl.phase == FlightRolling && l.Now().Sub(fl.since) >= l.RolloutWait
		forget := fl != nil && fl.phase == FlightRolling && (done || stuck || (err != nil && !refresh.Transient(err)) || expired)
		if forget {
			f.move(t, moveEnded, l.Now())
		}
		f.mu.Unlock()
		switch {
		case forget && stuck: // forgotten here once: said once
			l.emit(Event{Kind: EventError, Target: &t, Message: fmt.Sprintf("the rollout of %s is stuck: %v; no longer counted against --max-concurrent-restarts: see `%s`",
				t, err, rolloutStatusCommand(t))})
		case expired && !done && err == nil: // a workload gone, or unreadable, is no rollout to report
			l.emit(Event{Kind: EventError, Target: &t, Message: fmt.Sprintf("the rollout of %s restarted more than %s ago is not complete (--rollout-wait); no longer counted against --max-concurrent-restarts: see `%s`",
				t, l.RolloutWait, rolloutStatusCommand(t))})
		}
	}
}

// forget stops counting the restart of t: the round saw its rollout
// stuck (and reports it), which frees its slot at once.
func (f *inFlight) forget(t refresh.Target, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.move(t, moveForget, now)
}

// sent records how the round's restarts ended: one whose rollout may go
// on (patched and not verified: applied without a wait, or the wait timed
// out) stays under way until a later prune sees it complete.
func (f *inFlight) sent(results []refresh.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range results {
		fl := f.targets[r.Target]
		if !isRestart(r.Action) || fl == nil || fl.phase != FlightSending {
			continue
		}
		if (r.Outcome == refresh.OutcomeApplied || r.Outcome == refresh.OutcomeTimeout) && r.Target.Kind != "Pod" {
			var at time.Time // --rollout-wait counts from the API server's acceptance, not the gate's
			if r.AppliedAt != nil {
				at = r.AppliedAt.Time
			}
			f.move(r.Target, moveAccepted, at)
		} else {
			f.move(r.Target, moveNotSent, fl.since)
		}
	}
}

// rolloutStatusCommand is the command that shows how the rollout of t is
// going: kubectl's, or the Argo Rollouts plugin's for a Rollout.
func rolloutStatusCommand(t refresh.Target) string {
	if refresh.IsRollout(t.Kind) {
		return fmt.Sprintf("kubectl argo rollouts status %s -n %s", t.Name, t.Namespace)
	}
	return fmt.Sprintf("kubectl rollout status %s -n %s", t, t.Namespace)
}
