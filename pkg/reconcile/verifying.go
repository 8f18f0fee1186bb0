package reconcile

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// A round sends its actions and waits for them at most VerifyInRound: the
// annotated pods (a remount is verified within seconds) are waited for as
// the engine waits for them, while the restarts and evictions not verified
// by then are handed over (refresh.Config.HandOver) and the round returns
// its worker. Later rounds of the namespace verify them (refresh.Recheck:
// the rollout's status, then its new pods), never send them again, report
// how they ended as the round would have (current, unverifiable, or a
// timeout once --timeout has passed since the send, which the recheck
// path takes from there) and write their records once verified. The gate
// counts them as restarts under way until their rollouts complete.

// DefaultVerifyInRound is how long a round waits for its restarts and
// evictions to be verified before it hands them over to later rounds.
const DefaultVerifyInRound = 5 * time.Second

// verification is what one round handed over: the results of its actions
// not yet verified, with what reporting and recording them needs.
type verification struct {
	results []refresh.Result
	// changes are the changes they answer, as the round took them
	changes map[inspect.ObjectKey]*pending
	// kept are the round's uses of their workloads
	kept []inspect.Use
	// records are the subjects recorded once their action is verified,
	// with the objects (record keys) and the digests the round read
	records map[subject][]string
	digests map[subject]Record
	// sent is when the round handed them over, on Clock
	sent time.Time
	// again are the objects edited since (guarded by Loop.mu): a new pod
	// stale only for one of them read it after the restart was sent;
	// since are those edits, merged
	again map[inspect.ObjectKey]bool
	since map[inspect.ObjectKey]Change
	// round is the round that sent them, for Round (guarded by
	// Loop.emitMu): told with the round that sees them end (joinRound)
	round *Round
}

// recheckFloor is the shortest time between two checks of a handed-over
// action: the longest pause of the engine's own polls (8 times their first
// interval of 250 ms), so that a verification in later rounds never polls
// faster than the round's wait did.
const recheckFloor = 2 * time.Second

// recheckPendingAfter is how long after a check a handed-over action
// waits for the next one, sent since ago: a sixteenth of that, at least
// recheckFloor, at most MaxRecheck. A rollout of a minute is seen
// complete within a few seconds; one stuck for --timeout costs a few dozen
// checks.
func recheckPendingAfter(since time.Duration) time.Duration {
	return min(max(since/16, recheckFloor), MaxRecheck)
}

// handOver keeps the pending results among results for later rounds of
// the round's namespace and returns the others. now are the digests the
// round would record (nil: none are recorded).
func (l *Loop) handOver(rd *roundRead, results []refresh.Result, held []refresh.Action, now func() map[subject]Record) []refresh.Result {
	var pend []refresh.Result
	rest := slices.DeleteFunc(slices.Clone(results), func(r refresh.Result) bool {
		if r.Pending {
			pend = append(pend, r)
		}
		return r.Pending
	})
	if len(pend) == 0 {
		return results
	}
	v := &verification{results: pend, changes: map[inspect.ObjectKey]*pending{}, sent: l.Clock(), again: map[inspect.ObjectKey]bool{},
		since: map[inspect.ObjectKey]Change{}}
	workloads := map[string]bool{}
	for _, r := range pend {
		workloads[r.Target.Kind+"/"+r.Target.Name] = true
		for _, k := range consumedObjects(r.Action, rd.changes) {
			p := *rd.changes[k]
			v.changes[k] = &p
		}
	}
	for _, it := range rd.kept {
		if workloads[onlyKey(it.Workload)] {
			v.kept = append(v.kept, it)
		}
	}
	if now != nil {
		v.records, v.digests = recordedLater(rd.kept, sync.OnceValue(func() []inspect.Use { return l.allItems(rd.snap) }), append(results, heldResults(held)...), workloads, now())
	}
	l.mu.Lock()
	// an edit made while the round sent and waited is a change again: the
	// pods of the restart answer the data planned, not the newer data
	for k := range v.changes {
		if p := l.pending[k]; p != nil && !p.retry {
			v.again[k], v.since[k] = true, p.change
		}
	}
	l.verifying[rd.ns] = append(l.verifying[rd.ns], v)
	l.bounce.After(rd.ns, v.sent.Add(recheckPendingAfter(0)))
	l.mu.Unlock()
	if l.Round != nil {
		l.emitMu.Lock()
		l.handing[rd.ns] = v
		l.emitMu.Unlock()
	}
	return rest
}

// workloadsOf are the workloads (onlyKey) of v's actions not verified yet
// that answer a change of k.
func (v *verification) workloadsOf(k inspect.ObjectKey) []string {
	workloadOf := workloadsByPod(v.kept)
	var out []string
	for _, r := range v.results {
		for _, c := range r.Consumers {
			if c.Object.Kind != k.Kind || c.Object.Name != k.Name || c.Object.Namespace != k.Namespace {
				continue
			}
			out = append(out, workloadOfConsumer(r, c, workloadOf))
		}
	}
	return out
}

// joinRound puts the events of the round that sent v before those of the
// round under way in its namespace, which sees v's actions end.
func (l *Loop) joinRound(ns string, v *verification) {
	l.emitMu.Lock()
	defer l.emitMu.Unlock()
	if v.round == nil || l.rounds[ns] == nil {
		return
	}
	l.rounds[ns] = append(v.round.Events, l.rounds[ns]...)
	if from, ok := l.roundFrom[ns]; !ok || v.round.Started.Before(from) {
		l.roundFrom[ns] = v.round.Started
	}
	v.round = nil
}

// recordedLater are the subjects of workloads that completed but for
// their pending actions, with their objects and digests: recorded once
// those are verified.
func recordedLater(kept []inspect.Use, all func() []inspect.Use, results []refresh.Result, workloads map[string]bool, now map[subject]Record) (map[subject][]string, map[subject]Record) {
	asDone := slices.Clone(results)
	for i := range asDone {
		asDone[i].Pending = false
	}
	later := recordable(withRestarted(kept, all, asDone), asDone)
	for s := range recordable(withRestarted(kept, all, results), results) {
		delete(later, s)
	}
	digests := map[subject]Record{}
	for s := range later {
		if !workloads[onlyKey(s.workload)] {
			delete(later, s)
			continue
		}
		digests[s] = now[s]
	}
	return later, digests
}

// verifyHandedOver checks once each action handed over in namespace ns
// and reports those that ended; the others are checked again later.
func (l *Loop) verifyHandedOver(ctx context.Context, ns string) {
	l.mu.Lock()
	vs := l.verifying[ns]
	l.mu.Unlock()
	if len(vs) == 0 {
		return
	}
	var still []*verification
	for _, v := range vs {
		if l.recheck(ctx, ns, v) {
			still = append(still, v)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(still) == 0 {
		delete(l.verifying, ns)
		return
	}
	l.verifying[ns] = still
	next := time.Time{}
	for _, v := range still {
		next = earliest(next, l.Clock().Add(recheckPendingAfter(l.Clock().Sub(v.sent))))
	}
	l.bounce.After(ns, next)
}

// recheck verifies v's actions once, reports and records those that
// ended, and tells whether any is still pending.
func (l *Loop) recheck(ctx context.Context, ns string, v *verification) bool {
	o := refresh.WaitOptions{Now: l.Refresh.Now, ChangedAgain: func(k inspect.ObjectKey) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return v.again[k]
	}}
	results := refresh.Recheck(ctx, v.results, l.Cluster.Verifier, l.Cluster.Rollouts, o)
	var ended []refresh.Result
	v.results = slices.DeleteFunc(results, func(r refresh.Result) bool {
		if !r.Pending {
			ended = append(ended, r)
		}
		return !r.Pending
	})
	if len(ended) > 0 {
		l.keepSent(v, ended)
		l.restarts.verified(ended, l.Now())
		l.results(ended, v.changes, nil)
		if ctx.Err() == nil { // interrupted at the loop's end: said once, and a new leader checks it again
			l.recheckTimedOut(ns, v.changes, v.kept, ended, l.actedOnSince(v))
		}
		l.recordVerified(ctx, v, ended)
	}
	if len(v.results) == 0 {
		l.joinRound(ns, v)
	}
	return len(v.results) > 0
}

// keepSent keeps, of v's restarts and evictions that timed out unverified
// (ended), the digests their round read for the objects it would have
// recorded (restartingWith): their new pods read those once the rollouts
// end, and the manual step the recheck says covers them.
func (l *Loop) keepSent(v *verification, ended []refresh.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range ended {
		if r.Outcome != refresh.OutcomeTimeout || !isRestart(r.Action) {
			continue
		}
		for s, keys := range v.records {
			if onlyKey(s.workload) != r.Target.Kind+"/"+r.Target.Name {
				continue
			}
			kept := Record{}
			for _, k := range keys {
				if d, ok := v.digests[s][k]; ok {
					kept[k] = d
				}
			}
			l.sentWith[s] = kept
		}
	}
}

// actedOnSince tells, of v's timed-out workloads, those that a change of
// the object made since its actions were sent concerns (it edited a key
// they read; or they have no use of it in the round: a named restart):
// that newer change is acted on (or held) on its own, and the old
// change's recheck must not turn its restart into a manual action. Where
// the workload has a use of the object that only a restart makes current
// (env, subPath), the newer change must concern one of those: one that
// concerns only its volume is a remount, and leaves the restart's uses
// alone. A workload the edits since do not concern (they changed only
// keys it does not read, or only keys its volume reads) is verified again
// for the old change: no newer change acts on those uses, and nothing else
// would say they are still not current.
func (l *Loop) actedOnSince(v *verification) func(inspect.ObjectKey, string) bool {
	l.mu.Lock()
	again, since := maps.Clone(v.again), maps.Clone(v.since)
	l.mu.Unlock()
	return func(k inspect.ObjectKey, w string) bool {
		if !again[k] {
			return false
		}
		reads, restarts, concernsAny := false, false, false
		for _, it := range v.kept {
			if it.Key() != k || onlyKey(it.Workload) != w {
				continue
			}
			reads = true
			needs := it.Verdict == inspect.VerdictRestartNeeded
			restarts = restarts || needs
			if _, concerned := Concerns(it, since[k]); concerned {
				if needs {
					return true
				}
				concernsAny = true
			}
		}
		return !reads || (concernsAny && !restarts)
	}
}

// recordVerified writes the records of the subjects whose handed-over
// action completed, with the digests of the round that sent it; an object
// edited since is left to the round that acts on that edit.
func (l *Loop) recordVerified(ctx context.Context, v *verification, ended []refresh.Result) {
	if !l.recording(ctx) || len(v.records) == 0 {
		return
	}
	done := map[string]bool{}
	for _, r := range ended {
		if completed(r) {
			done[r.Target.Kind+"/"+r.Target.Name] = true
		}
	}
	replaced := replacedBy(ended)
	bySubject := map[subject][]string{}
	for s, keys := range v.records {
		if done[onlyKey(s.workload)] {
			var held Record // an edit since that the restart's new pods read is no edit since
			if replaced[onlyKey(s.workload)] {
				held = v.digests[s]
			}
			l.mu.Lock()
			bySubject[s] = slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
				o := recordObject(s.Namespace, k)
				return v.again[o] && !heldBy(held, k, v.since[o].Version)
			})
			l.mu.Unlock()
		}
	}
	// the record as it is now: another round may have written it since
	l.writeRecords(ctx, bySubject, v.digests, replaced, func(s subject) (string, bool) {
		if r, ok := l.notWritten(s); ok {
			return r, true
		}
		m := l.metaOf(ctx, refresh.Target{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}, nil)
		return m.workload[AnnotationApplied], m.err == nil
	})
}

// editedAgain marks c's object edited, by c, for the verifications of its
// namespace that answer a change of it. Called with l.mu held.
func (l *Loop) editedAgain(c Change) {
	k := c.Object
	for _, v := range l.verifying[k.Namespace] {
		if v.changes[k] != nil {
			v.again[k], v.since[k] = true, merge(v.since[k], c)
		}
	}
}

// dropVerifications reports the actions still pending when the loop
// ends: not verified, and not recorded (a restarted controller checks
// them again).
func (l *Loop) dropVerifications() {
	l.mu.Lock()
	left := l.verifying
	l.verifying = map[string][]*verification{}
	l.mu.Unlock()
	for _, ns := range slices.Sorted(maps.Keys(left)) {
		for _, v := range left[ns] {
			var evs []Event
			for i := range v.results {
				r := v.results[i]
				e := Event{Time: l.Clock(), Kind: EventResult, Action: &r.Action, Outcome: refresh.OutcomeTimeout, Message: "interrupted before it was verified: " + resultMessage(r)}
				l.emitIn(e, false)
				evs = append(evs, e)
			}
			l.emitMu.Lock()
			round := v.round
			l.emitMu.Unlock()
			if round != nil { // the round that sent them ends with them, as it did when it waited
				round.Events = append(round.Events, evs...)
				round.Ended = l.Clock()
				l.Round(*round)
			}
		}
	}
}

// verified forgets the restarts whose handed-over verification ended
// current or unverifiable: their rollouts are complete. One that timed
// out stays under way until a prune sees it complete.
func (f *inFlight) verified(results []refresh.Result, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range results {
		if fl := f.targets[r.Target]; fl != nil && fl.phase == FlightRolling && isRestart(r.Action) && r.Outcome != refresh.OutcomeTimeout {
			f.move(r.Target, moveEnded, now)
		}
	}
}
