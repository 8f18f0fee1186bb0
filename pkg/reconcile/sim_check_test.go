package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The checker of the simulator: the promises of the loop, checked on what
// a run did (the world's rollouts and evictions, the loop's events).
//   (a) every edit of a read key ends, once the faults stop, with every
//       consumer current or with a line that says why not;
//   (b) no workload is restarted twice for one change;
//   (c) no restart outside its window, within its interval or pause, above
//       the limit or beyond the rate; a held or failed restart spends
//       nothing (a hold for the rate or the limit is true when it is said);
//   (d) every deferral to a time says when;
//   (e) nothing is restarted that reads no changed key, unless Reloader's
//       semantics (restart on every change) ask for it;
//   (f) a new leader restarts nothing current and loses nothing owed: (a),
//       (b) and (e) hold across leader changes;
//   (g) an unreadable consumer is given up only after its retries had
//       their time (about four minutes), counted from its last edit;
//   (h) between two steps, no restart is still sending and none was moved
//       out of order (inflight.go's nextFlight); none is counted against
//       the rate (c).

// simRestart is one restart cmsync sent: a rollout, or the evictions of
// one workload in one round.
type simRestart struct {
	w     string // ns/name
	at    time.Time
	stamp time.Time // a rollout's restartedAt: its first attempt, in whole seconds
	index int
	// evicted are an eviction round's evictions (index -1): each pod's
	// eviction is a restart of that pod, owed to an edit made since it
	// started
	evicted []simEviction
}

// restarts are cmsync's restarts in the order sent.
func (r *simRun) restarts() []simRestart {
	var out []simRestart
	for i, ro := range r.world.rollouts {
		if ro.byCmsync {
			out = append(out, simRestart{w: ro.w.ns + "/" + ro.w.name, at: ro.sent, stamp: ro.stamp, index: i})
		}
	}
	// one round's evictions of a workload evict the pods it had when the
	// first was sent, within --timeout: an eviction of a replacement one
	// of them started, or of a pod a rollout started since, is the next
	// round's (a restart of its own, however soon after)
	last := map[string]time.Time{}
	repls := map[string]map[string]bool{}
	round := map[string]int{} // the index in out of each workload's last round of evictions
	for _, e := range r.world.evictions {
		if at, ok := last[e.w]; ok && e.at.Sub(at) < r.plan.settings.timeout && !repls[e.w][e.pod] && !e.podStarted.After(at) {
			repls[e.w][e.repl] = true
			x := &out[round[e.w]]
			x.evicted = append(x.evicted, e)
			continue // the same round's evictions
		}
		last[e.w], repls[e.w], round[e.w] = e.at, map[string]bool{e.repl: true}, len(out)
		out = append(out, simRestart{w: e.w, at: e.at, index: -1, evicted: []simEviction{e}})
	}
	slices.SortStableFunc(out, func(a, b simRestart) int { return a.at.Compare(b.at) })
	return out
}

// annAt are the workload's annotations and uses at t.
func (r *simRun) annAt(w string, t time.Time) simAnn {
	hist := r.anns[w]
	cur := hist[0]
	for _, h := range hist {
		if !h.at.After(t) {
			cur = h
		}
	}
	return cur
}

// restartsOnAnyChange tells whether the workload's annotations ask for a
// restart at every change of an object it references (Reloader's
// semantics, or on-change=restart).
func restartsOnAnyChange(ann map[string]string) bool {
	p, _ := OnChange(ann, nil, inspect.KindConfigMap)
	return p == OnChangeRestart
}

// reasonFor tells whether an edit in (from, to] gives workload w a reason
// to be restarted. Across a leader change from is the start of its
// second: the new leader knows the restart by the template's restartedAt,
// in whole seconds, and takes an edit of that same second for one made
// after it (the order is unknown).
func (r *simRun) reasonFor(w string, from, to time.Time) bool {
	ns, _, _ := strings.Cut(w, "/")
	if r.leaderStart(to).After(from) {
		from = from.Truncate(time.Second).Add(-time.Nanosecond)
	}
	for _, e := range r.edits {
		if e.ns != ns || !e.at.After(from) || e.at.After(to) {
			continue
		}
		for _, a := range r.annsIn(w, e.at, to) {
			if editConcerns(a, e) {
				return true
			}
		}
	}
	return false
}

// annsIn are w's annotations and uses in effect at some time in [from,
// to]: the loop reads them when its round runs, not when the edit was
// made, as Reloader does (a reload list that names the object once the
// edit is made, before the round, asks for the restart).
func (r *simRun) annsIn(w string, from, to time.Time) []simAnn {
	out := []simAnn{r.annAt(w, from)}
	for _, h := range r.anns[w] {
		if h.at.After(from) && !h.at.After(to) {
			out = append(out, h)
		}
	}
	return out
}

// editConcerns tells whether edit e gives a workload of annotations and
// uses a a reason to be restarted.
func editConcerns(a simAnn, e simEdit) bool {
	for _, u := range a.uses {
		if u.cm == e.cm && (u.key == "" || slices.Contains(e.keys, u.key) || restartsOnAnyChange(a.ann)) {
			return true
		}
	}
	return a.ann[ReloaderConfigMapReload] == e.cm
}

// check returns the violations of the run.
func (r *simRun) check() []string {
	var v []string
	v = append(v, r.checkRestarts()...)
	v = append(v, r.checkHolds()...)
	v = append(v, r.checkStale()...)
	v = append(v, r.checkGiveUps()...)
	return append(v, r.flights...)
}

// checkFlights: (h) the states of the restarts under way, between two
// steps (the loop settled, no round running): none is still sending (a
// round that ended without saying how its restart ended holds a slot of
// --max-concurrent-restarts for good), and nextFlight refused no move
// (the loop moved a restart out of order).
func (r *simRun) checkFlights() {
	phases, illegal := r.loop.restarts.phases()
	var v []string
	for t, p := range phases {
		if p == FlightSending {
			v = append(v, fmt.Sprintf("(h) %s/%s still sending once its round ended", t.Namespace, t.Name))
		}
	}
	for _, m := range illegal {
		v = append(v, "(h) a move out of order: "+m)
	}
	v = append(v, r.checkLetThrough()...)
	v = append(v, r.checkOwed()...)
	slices.Sort(v)
	for _, s := range v {
		if !r.flightSeen[s] {
			if r.flightSeen == nil {
				r.flightSeen = map[string]bool{}
			}
			r.flightSeen[s] = true
			r.flights = append(r.flights, fmt.Sprintf("%s (at %s, leader %d)", s, r.rel(r.clock.Now()), r.leader))
		}
	}
}

// checkLetThrough: (c) a held or unsent restart spends nothing of the
// rate. The pacer counts a restart it let through against the bucket until
// its round says how it ended (pacer.sent); once the round is over, one
// still counted is a restart held by something the pacer was not asked
// about (the limit), or one that was never sent, and each costs the other
// restarts a token until its workload is checked again.
func (r *simRun) checkLetThrough() []string {
	r.loop.pace.mu.Lock()
	defer r.loop.pace.mu.Unlock()
	var v []string
	for t := range r.loop.pace.letThrough {
		v = append(v, fmt.Sprintf("(c) %s/%s counted against the rate once its round ended, and not sent", t.Namespace, t.Name))
	}
	return v
}

// checkOwed: (h) every restart owed (held, or failed and tried again) is
// one the queue will decide again: a change of its namespace is pending
// for it (for every workload, or for it among those retried). One owed
// with none is lost: nothing takes it up again, and its hold or retry
// says a time that never comes.
func (r *simRun) checkOwed() []string {
	owed := r.loop.restarts.owedNow()
	r.loop.mu.Lock()
	defer r.loop.mu.Unlock()
	var v []string
	for t, o := range owed {
		covered := false
		for k, p := range r.loop.pending {
			if k.Namespace == t.Namespace && (p.only == nil || p.only[t.Kind+"/"+t.Name]) {
				covered = true
			}
		}
		if !covered {
			v = append(v, fmt.Sprintf("(h) %s/%s owed (%s since %s: %s) with no change pending for it", t.Namespace, t.Name, o.phase, r.rel(o.since), o.hold.Kind))
		}
		if o.phase == OwedHeld && !r.saidHold(t, o) {
			v = append(v, fmt.Sprintf("(d) %s/%s held (%s) since %s, and no deferral said so since", t.Namespace, t.Name, o.hold.Kind, r.rel(o.since)))
		}
		if said := r.lastSaidUntil(t); o.phase == OwedHeld && o.hold.paced() && o.hold.Kind != HoldRate && said != nil && said.After(r.clock.Now()) && !said.Equal(o.hold.Until) {
			v = append(v, fmt.Sprintf("(d) %s/%s held (%s) until %s, and the last deferral said until %s", t.Namespace, t.Name, o.hold.Kind, r.rel(o.hold.Until), r.rel(*said)))
		}
	}
	return v
}

// lastSaidUntil is the time the last deferral of t the leader now said
// named (nil: none, or one that named no time). A paced hold other than
// the rate's (whose time moves on with every check) says its time again
// whenever it changes: a line that names another, still ahead, is wrong.
func (r *simRun) lastSaidUntil(t refresh.Target) *time.Time {
	for i := len(r.events) - 1; i >= 0; i-- {
		if e := r.events[i]; e.Kind == EventDeferred && e.leader == r.leader && e.Action != nil && e.Action.Target == t {
			return e.Until
		}
	}
	return nil
}

// saidHold tells whether the leader now said, since the restart of t
// was first held, that it is held for what holds it now.
func (r *simRun) saidHold(t refresh.Target, o owed) bool {
	for _, e := range r.events {
		if e.Kind == EventDeferred && e.leader == r.leader && e.Action != nil && e.Action.Target == t && e.Hold == o.hold.Kind && !e.Time.Before(o.since) {
			return true
		}
	}
	return false
}

// checkRestarts: (b), (c) and (e) for every restart sent.
func (r *simRun) checkRestarts() []string {
	var v []string
	s := r.plan.settings
	prev, rolled := map[string]time.Time{}, map[string]time.Time{}
	rs := r.restarts()
	for i, x := range rs {
		from, had := prev[x.w]
		if !had {
			from = simStart.Add(-time.Hour)
		}
		switch {
		case x.index < 0:
			v = append(v, r.checkEvicted(x, rolled)...)
		case !r.reasonFor(x.w, from, x.at):
			v = append(v, fmt.Sprintf("(b/e) %s restarted at %s with no edit of a key it reads since %s", x.w, r.rel(x.at), r.relOr(from, had)))
		}
		if x.index >= 0 {
			rolled[x.w] = x.at
		}
		a := r.annAt(x.w, x.at)
		if win := a.ann[restartwindow.Annotation]; win != "" {
			if sch, err := restartwindow.Parse(win); err == nil {
				if open, _ := sch.Open(x.at); !open {
					v = append(v, fmt.Sprintf("(c) %s restarted at %s outside its window %q", x.w, r.rel(x.at), win))
				}
			}
		}
		interval := s.minInterval
		if d, err := time.ParseDuration(a.ann[ReloaderPausePeriod]); err == nil {
			interval = max(interval, d)
		}
		if known, ok := r.lastKnown(rs, i); ok && x.at.Sub(known) < interval {
			v = append(v, fmt.Sprintf("(c) %s restarted at %s and %s: less than its interval %s apart", x.w, r.rel(known), r.rel(x.at), interval))
		}
		prev[x.w] = x.at
		if s.maxConcurrent > 0 {
			if n := r.underWayAt(x.at, x.index); n >= s.maxConcurrent {
				v = append(v, fmt.Sprintf("(c) %s restarted at %s with %d restarts under way (--max-concurrent-restarts %d)", x.w, r.rel(x.at), n, s.maxConcurrent))
			}
		}
	}
	return append(v, r.checkRate(rs)...)
}

// checkEvicted: (b/e) for an eviction round: each pod it evicted follows
// an edit of a key the workload reads made since the pod started and since
// the workload's last rollout restart (rolled). An eviction restarts one
// pod: a pod an earlier round left alone may be evicted later. The check
// does not know which edit a round acted on, so a pod an earlier round
// judged current and a later round evicts with no edit since passes when
// an edit made before the earlier round followed its start: a replacement
// evicted twice, the double restart an eviction can make, is caught.
func (r *simRun) checkEvicted(x simRestart, rolled map[string]time.Time) []string {
	var v []string
	for _, e := range x.evicted {
		from := e.podStarted.Add(-time.Nanosecond) // an edit the world made in the instant the pod started, after it
		if at, ok := rolled[x.w]; ok && at.After(from) {
			from = at
		}
		if !r.reasonFor(x.w, from, e.at) {
			v = append(v, fmt.Sprintf("(b/e) %s: pod %s evicted at %s with no edit of a key it reads since %s", x.w, e.pod, r.rel(e.at), r.rel(from)))
		}
	}
	return v
}

// lastKnown is the last restart of rs[i]'s workload before it that the
// leader of rs[i] can know of: a rollout (its template's restartedAt says
// when, to any leader), or an eviction that leader sent. An eviction
// writes nothing on the workload, so the interval is measured from the
// evictions of the leader that sent them only: a new leader cannot know
// those of the one before (docs/controller.md, "Restarts, paced"). A
// rollout of a leader before is known by restartedAt alone, in whole
// seconds, stamped at the patch's first attempt (its retries send the
// same patch): the interval is measured from that second.
func (r *simRun) lastKnown(rs []simRestart, i int) (time.Time, bool) {
	x := rs[i]
	from := r.leaderStart(x.at)
	for j := i - 1; j >= 0; j-- {
		switch y := rs[j]; {
		case y.w != x.w:
		case !y.at.Before(from):
			return y.at, true
		case y.index >= 0:
			return y.stamp, true
		}
	}
	return time.Time{}, false
}

// underWayAt counts the workloads with a rollout of cmsync's sent before
// the one of index before (-1: all) under way at t: the limit counts
// workloads, and a workload restarted again (its earlier rollout
// superseded) is one.
func (r *simRun) underWayAt(t time.Time, before int) int {
	w := map[*simWorkload]bool{}
	for i, ro := range r.world.rollouts {
		if (before >= 0 && i >= before) || !ro.byCmsync || ro.sent.After(t) {
			continue
		}
		if ro.underWayAt(t, r.plan.settings.rolloutWait) {
			w[ro.w] = true
		}
	}
	return len(w)
}

// countedAt counts the workloads a hold for the limit at t may count: those
// underWayAt counts, and those cmsync restarted less than rolloutWait
// before t that roll out at t for another reason (a deploy after the
// restart, whose rollout superseded it or began once it was complete), or
// whose rollout ended before t while a fault answers the gets of
// Deployments at t (unreadAt): the look at its rollout, made at the hold,
// failed. The loop counts a restart until it sees its workload's
// rollout complete, which it reads only at its rounds, and a new leader
// counts a workload rolling out whose template has cmsync's restartedAt
// (docs/controller.md, "Restarts, safely"): neither can tell whose
// rollout a workload's is, nor whether the restart's own completed
// between two looks or while its workload could not be read.
func (r *simRun) countedAt(t time.Time) int {
	wait := r.plan.settings.rolloutWait
	w := map[*simWorkload]bool{}
	for _, ro := range r.world.rollouts {
		if !ro.byCmsync || ro.sent.After(t) || t.Sub(ro.sent) >= wait {
			continue
		}
		if end := cmp.Or(ro.done, ro.deadline); !end.IsZero() && end.Before(t) && r.unreadAt(t) {
			w[ro.w] = true
		}
		for _, other := range r.world.rollouts {
			if other.w == ro.w && other.underWayAt(t, wait) {
				w[ro.w] = true
			}
		}
	}
	return len(w)
}

// unreadAt tells whether a fault answered the gets of Deployments at t,
// as it was applied (faultLog).
func (r *simRun) unreadAt(t time.Time) bool {
	for _, f := range r.faultLog {
		if (f.verb == "get" || f.verb == "*") && (f.resource == "deployments" || f.resource == "*") && !t.Before(f.from) && t.Before(f.to) {
			return true
		}
	}
	return false
}

// tokens replays the rate's bucket over the restarts sent before t (and
// sentAt, at t) since from, when the leader whose bucket it is started:
// what is left at t.
func (r *simRun) tokens(rs []simRestart, from, t time.Time, sentAt int) float64 {
	s := r.plan.settings
	tok, last := float64(max(s.burst, 1)), from
	for _, x := range rs {
		if x.at.Before(from) || !x.at.Before(t) {
			continue
		}
		tok = min(float64(max(s.burst, 1)), tok+s.rate*x.at.Sub(last).Seconds()) - 1
		last = x.at
	}
	return min(float64(max(s.burst, 1)), tok+s.rate*t.Sub(last).Seconds()) - float64(sentAt)
}

func (r *simRun) leaderStart(t time.Time) time.Time {
	from := simStart
	for _, l := range r.leaders {
		if !l.After(t) {
			from = l
		}
	}
	return from
}

// checkRate: (c) no restart beyond the rate (each leader's bucket).
func (r *simRun) checkRate(rs []simRestart) []string {
	if r.plan.settings.rate <= 0 {
		return nil
	}
	for _, x := range rs {
		if tok := r.tokens(rs, r.leaderStart(x.at), x.at, 0); tok < 1-1e-6 {
			return []string{fmt.Sprintf("(c) %s restarted at %s beyond the rate (%.2f tokens left)", x.w, r.rel(x.at), tok)}
		}
	}
	return nil
}

// sentInRound counts the restarts the round of leader at t let through
// (its action lines at t).
func (r *simRun) sentInRound(t time.Time, leader int) int {
	n := 0
	for _, e := range r.events {
		if e.Kind == EventAction && e.Time.Equal(t) && e.leader == leader && isRestart(*e.Action) {
			n++
		}
	}
	return n
}

// checkHolds: (c) a restart held for the rate or the limit is held when
// the rate or the limit says so; (d) a deferral to a time says when.
func (r *simRun) checkHolds() []string {
	var v []string
	s := r.plan.settings
	rs := r.restarts()
	for _, e := range r.events {
		if e.Kind != EventDeferred {
			continue
		}
		t := e.Target
		if e.Action != nil {
			t = &e.Action.Target
		}
		w := t.Namespace + "/" + t.Name
		switch {
		case e.Hold == HoldRate:
			// the bucket of the leader that said it, whatever leader
			// follows at the same instant (the driver applies an
			// operation once the loop settled: a leader change at the
			// time of a round comes after it, with a full bucket); the
			// pacer takes an eviction's token when the API server
			// accepted it, the replay at its first eviction: a few
			// hundredths of a token apart at the rates drawn
			if tok := r.tokens(rs, r.leaders[e.leader], e.Time, r.sentInRound(e.Time, e.leader)); tok >= 1.05 {
				v = append(v, fmt.Sprintf("(c) %s held for the rate at %s with %.2f tokens free", w, r.rel(e.Time), tok))
			}
		case e.Hold == HoldLimit:
			if n := r.countedAt(e.Time) + r.sentInRound(e.Time, e.leader); n < s.maxConcurrent {
				v = append(v, fmt.Sprintf("(c) %s held for the limit at %s with %d under way (limit %d)", w, r.rel(e.Time), n, s.maxConcurrent))
			}
		}
		switch {
		case e.Hold == "":
			v = append(v, fmt.Sprintf("(d) %s deferred at %s without saying what holds it: %s", w, r.rel(e.Time), e.Message))
		case (Hold{Kind: e.Hold}).paced() && e.Until == nil:
			v = append(v, fmt.Sprintf("(d) %s deferred at %s without saying until when: %s", w, r.rel(e.Time), e.Message))
		}
	}
	return v
}

// said tells whether a line after from says why the consumers of cm by
// workload w are not current: an error, a skip, an ignored change, a
// manual step, or a deferral to a time the run ended before (a restart
// window, or the restart rate: a bucket that earns a token an hour owes
// its restarts beyond the horizon, and says until when), or a hold for the
// limit that still stands at the loop's last step (heldAtHorizon), or a
// restart whose verification such a horizon cut (verifyingAtHorizon).
func (r *simRun) said(w, cm string, from time.Time) bool {
	ns, name, _ := strings.Cut(w, "/")
	for i, e := range r.events {
		// a workload skipped (not opted in, paused) is skipped for every
		// later edit while its annotations stay: a new leader's resume,
		// which does not say it again, leaves that line standing
		standing := e.Kind == EventSkip && e.Target != nil && maps.Equal(r.annAt(w, e.Time).ann, r.annAt(w, r.end).ann)
		if e.Time.Before(from) && !standing {
			continue
		}
		about := (e.Object != nil && e.Object.Namespace == ns && e.Object.Name == cm) ||
			(e.Action != nil && e.Action.Target.Namespace == ns && e.Action.Target.Name == name) ||
			(e.Target != nil && e.Target.Namespace == ns && e.Target.Name == name)
		if !about {
			continue
		}
		switch {
		case e.Kind == EventError, e.Kind == EventSkip, e.Kind == EventIgnored:
			return true
		case e.Kind == EventAction && e.Action.Action == refresh.ActionManual:
			return true
		case e.Kind == EventDeferred && e.Until != nil && e.Until.After(r.end.Add(-3*time.Minute)):
			return true
		case e.Kind == EventDeferred && r.heldAtHorizon(i, name):
			return true
		case e.Kind == EventAction && isRestart(*e.Action) && e.Action.Target.Namespace == ns && e.Action.Target.Name == name && r.verifyingAtHorizon(i):
			return true
		}
	}
	return false
}

// heldAtHorizon tells whether event i, a deferral of workload name with
// no time (for the limit, or for a rollout under way), still stands when
// the loop's last step ran (the horizon cut the run, not the loop): the
// last event about the workload, and the limit still reached then; or
// said less than a recheck (MaxRecheck) before a horizon that cut the
// loop's work and the check that follows it (a restart that took the
// slot may have completed meanwhile: the check would hold it for the rate
// that restart spent, beyond the horizon); or, a wait for a rollout that
// does not complete, said less than --rollout-wait before it (the loop
// says such a rollout stuck only then). The restart is owed beyond the
// horizon, as one held by a rate that earns a token an hour is, and the
// line says why; these holds name no time, as there is none to name.
func (r *simRun) heldAtHorizon(i int, name string) bool {
	e := r.events[i]
	t := e.Target
	if e.Action != nil {
		t = &e.Action.Target
	}
	limit, rollout := e.Hold == HoldLimit, e.Hold == HoldRollout
	if e.Until != nil || t == nil || !limit && !rollout {
		return false
	}
	if !r.lastAbout(i, t.Namespace, name) {
		return false
	}
	switch {
	case r.horizonCut && limit && r.horizon.Sub(e.Time) <= MaxRecheck:
		return true
	case r.horizonCut && rollout && r.horizon.Sub(e.Time) <= r.plan.settings.rolloutWait:
		return true
	}
	return limit && r.underWayAt(r.end.Add(-3*time.Minute), -1) >= r.plan.settings.maxConcurrent
}

// lastAbout tells whether event i is the last about workload ns/name.
func (r *simRun) lastAbout(i int, ns, name string) bool {
	for _, later := range r.events[i+1:] {
		lt := later.Target
		if later.Action != nil {
			lt = &later.Action.Target
		}
		if lt != nil && lt.Namespace == ns && lt.Name == name {
			return false
		}
	}
	return true
}

// verifyingAtHorizon tells whether event i, a restart sent, is still
// verified when a horizon that cut the loop's work came: the last event
// about the workload, and the loop verifies its restart then. Its result,
// current or stuck, is said beyond the horizon.
func (r *simRun) verifyingAtHorizon(i int) bool {
	t := r.events[i].Action.Target
	return r.horizonCut && r.lastAbout(i, t.Namespace, t.Name) && r.verifying[t.Namespace+"/"+t.Name]
}

// checkStale: (a) and (f) at the end of the run.
func (r *simRun) checkStale() []string {
	var v []string
	stale := r.world.stale()
	keys := mapsKeys(stale)
	slices.Sort(keys)
	for _, w := range keys {
		for _, use := range stale[w] {
			cm, key, _ := strings.Cut(use, "/")
			ns, _, _ := strings.Cut(w, "/")
			last := r.lastEditOf(w, ns, cm, key)
			if !r.said(w, cm, last) {
				v = append(v, fmt.Sprintf("(a) %s is stale for %s (last edit %s) and no line says why", w, use, r.rel(last)))
			}
		}
	}
	return v
}

// lastEditOf is the last edit that gives workload w's stale use of key of
// ns/cm (key "*": a volume) a reason to act: an edit of that key, or, where
// the workload restarts on every change of cm, of any key it reads of cm
// (its restart would make every use current). A later edit of another key
// is no reason to act on this use, and the loop rightly says nothing of it
// (only the uses that read a changed key are acted on): the line that says
// why was said at the edit of the stale key.
func (r *simRun) lastEditOf(w, ns, cm, key string) time.Time {
	last := simStart
	for _, e := range r.edits {
		if e.ns != ns || e.cm != cm {
			continue
		}
		if key == "*" || slices.Contains(e.keys, key) || r.restartsFor(w, e) {
			last = e.at
		}
	}
	return last
}

// restartsFor tells whether edit e is a reason to restart workload w on
// its on-change policy: w restarts on every change of e's object (not a
// reload list naming others) and a use of one of its pods running then
// reads a key e changed. A key only its template reads, whose rollout
// started no pod yet, is read by that rollout's pods when they start.
// The loop reads the annotations when it decides, not when the edit was
// made: where they stop asking for a restart on every change before the
// loop decided about w (a deferral is no decision), no restart is owed for
// a key the stale use does not read.
func (r *simRun) restartsFor(w string, e simEdit) bool {
	for _, a := range r.annsIn(w, e.at, r.decidedAbout(w, e.at)) {
		if list := a.ann[ReloaderConfigMapReload]; !restartsOnAnyChange(a.ann) || (list != "" && list != e.cm) {
			return false
		}
	}
	return slices.ContainsFunc(r.world.podLog, func(p *simPod) bool {
		return p.ns+"/"+p.workload == w && !p.started.After(e.at) && (p.ended.IsZero() || p.ended.After(e.at)) &&
			slices.ContainsFunc(p.uses, func(u simUse) bool {
				return u.cm == e.cm && (u.key == "" || slices.Contains(e.keys, u.key))
			})
	})
}

// decidedAbout is when the loop first decided about workload w or one of
// its pods at or after from (an action, a skip, an error), or the end of
// the run.
func (r *simRun) decidedAbout(w string, from time.Time) time.Time {
	ns, name, _ := strings.Cut(w, "/")
	for _, e := range r.events {
		if e.Time.Before(from) || (e.Kind != EventAction && e.Kind != EventSkip && e.Kind != EventError) {
			continue
		}
		t := e.Target
		if e.Action != nil {
			t = &e.Action.Target
		}
		if t != nil && t.Namespace == ns && (t.Name == name || r.world.isPodOf(t.Name, w)) {
			return e.Time
		}
	}
	return r.end
}

func (r *simRun) lastEditBefore(ns, cm string, t time.Time) time.Time {
	last := simStart
	for _, e := range r.edits {
		if e.ns == ns && e.cm == cm && !e.at.After(t) {
			last = e.at
		}
	}
	return last
}

// lastSeenBefore is when the last edit of ns/cm that reached the loop
// before its event i was made (an edit at the same instant as a round but
// after it is not before it).
func (r *simRun) lastSeenBefore(ns, cm string, i int) time.Time {
	last := simStart
	for _, e := range r.edits {
		if e.ns == ns && e.cm == cm && e.seen >= 0 && e.seen <= i {
			last = e.at
		}
	}
	return last
}

// simGiveUpAfter is the shortest time from an edit to giving up on reading
// its consumers: the namespace's backoff over eight attempts takes about
// four minutes, and at least this long.
const simGiveUpAfter = 100 * time.Second

// checkGiveUps: (g) a consumer that cannot be read is given up (a manual
// step of a Deployment with an unverifiable consumer) only after its
// retries had their time since the last edit of what it reads.
func (r *simRun) checkGiveUps() []string {
	var v []string
	for i, e := range r.events {
		if e.Kind != EventAction || e.Action.Action != refresh.ActionManual || e.Action.Target.Kind != "Deployment" {
			continue
		}
		for _, c := range e.Action.Consumers {
			if c.State != inspect.StateUnverifiable {
				continue
			}
			last := r.lastSeenBefore(c.Object.Namespace, c.Object.Name, i)
			if e.Time.Sub(last) < simGiveUpAfter {
				v = append(v, fmt.Sprintf("(g) %s given up at %s, %s after the last edit of %s", e.Action.Target, r.rel(e.Time), e.Time.Sub(last), c.Object.Name))
			}
			break
		}
	}
	return v
}

func (r *simRun) rel(t time.Time) string { return "+" + t.Sub(simStart).String() }

func (r *simRun) relOr(t time.Time, ok bool) string {
	if !ok {
		return "the start"
	}
	return r.rel(t)
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
