package reconcile

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// OwedPhase is where a workload's restart stands before it is sent. A
// restart decided by a round is due: the gate lets it through (the flight
// takes it over: sending, then rolling) or holds it. A held one waits with
// its hold (kind, reason, end); one let through that failed for a cause
// that may pass waits for its retry. The workload's change stays queued
// meanwhile, for that workload: the round that takes it decides again.
type OwedPhase string

const (
	// OwedHeld: the gate held it (Hold: what, and until when if known).
	OwedHeld OwedPhase = "held"
	// OwedFailed: sent and failed for a cause that may pass (a 429, a
	// cut connection, a window that closed before it was sent); tried
	// again at retryAt, on the loop's Clock.
	OwedFailed OwedPhase = "failed"
)

// owed is a workload's restart decided and not sent yet.
type owed struct {
	phase OwedPhase
	// hold is what holds it (held), as its deferred event says it
	hold Hold
	// since is when it entered its phase (held: its first hold since it
	// was last let through, whatever held it since)
	since time.Time
	// retryAt is when a failed one is tried again (Clock)
	retryAt time.Time
	// round is the round of its namespace that moved it last: a round
	// that decides its namespace's restarts settles those it did not
	// move (settle)
	round uint64
}

// owedMove is what moves a restart owed.
type owedMove string

const (
	// moveHold: the gate held it (due, held or failed, to held).
	moveHold owedMove = "hold"
	// moveRelease: the gate let it through (to none: the flight takes
	// it over).
	moveRelease owedMove = "release"
	// moveFail: let through and failed for a cause that may pass (none
	// to failed; the flight ended not sent).
	moveFail owedMove = "fail"
	// moveDrop: held for good (stuck, --rollout-wait passed, an
	// annotation that does not parse), reported (to none).
	moveDrop owedMove = "drop"
	// moveSettle: the round that took its change decided no restart
	// of it (current by now, no longer concerned, opted out, gone: held
	// or failed to none).
	moveSettle owedMove = "settle"
)

// nextOwed is the one function that moves a restart owed: from o (nil:
// none, or due within a round) by m at at, with the hold of a moveHold
// and the retry time of a moveFail. A move its phase does not allow is an
// error, and o stays as it was.
func nextOwed(o *owed, m owedMove, h Hold, at time.Time) (*owed, error) {
	switch {
	case m == moveHold && h.Reason == "":
		return o, fmt.Errorf("a restart cannot be held for no reason")
	case m == moveHold && o != nil && o.phase == OwedHeld:
		return &owed{phase: OwedHeld, hold: h, since: o.since}, nil
	case m == moveHold:
		return &owed{phase: OwedHeld, hold: h, since: at}, nil
	case m == moveFail && o == nil:
		return &owed{phase: OwedFailed, since: at, retryAt: h.Until}, nil
	case m == moveRelease, m == moveDrop:
		return nil, nil
	case m == moveSettle && o != nil:
		return nil, nil
	}
	phase := OwedPhase("due")
	if o != nil {
		phase = o.phase
	}
	return o, fmt.Errorf("a restart %s cannot be moved by %q", phase, m)
}

// owe moves the restart owed of t by m at at (see nextOwed) in the round
// of its namespace under way, and tells whether it entered its phase
// (held: from due, or failed; no longer held since the last line said so).
func (f *inFlight) owe(t refresh.Target, m owedMove, h Hold, at time.Time) (entered bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.owed[t]
	next, err := nextOwed(prev, m, h, at)
	if err != nil {
		f.refuse(t, at, err)
		return false
	}
	if next == nil {
		delete(f.owed, t)
		return prev != nil
	}
	if f.owed == nil {
		f.owed = map[refresh.Target]*owed{}
	}
	next.round = f.rounds[t.Namespace]
	f.owed[t] = next
	return prev == nil || prev.phase != next.phase
}

// beginRound starts a round of ns: what it moves is its own.
func (f *inFlight) beginRound(ns string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rounds == nil {
		f.rounds = map[string]uint64{}
	}
	f.rounds[ns]++
}

// settle ends, once a round of ns decided its restarts, the restarts owed
// in ns it did not move: it took their changes (a round takes every
// change of its namespace) and decided no restart of them.
func (f *inFlight) settle(ns string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range slices.SortedFunc(maps.Keys(f.owed), compareTargets) {
		if o := f.owed[t]; t.Namespace == ns && o.round != f.rounds[ns] {
			if _, err := nextOwed(o, moveSettle, Hold{}, at); err != nil {
				f.refuse(t, at, err)
				continue
			}
			delete(f.owed, t)
		}
	}
}

// undecided keeps the restart owed of t, if any, as it is through the
// round under way, which could not decide it (its consumers could not be
// read, and are read again at its retry): a round that cannot tell
// whether a restart is needed does not settle it.
func (f *inFlight) undecided(t refresh.Target) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.owed[t]; o != nil {
		o.round = f.rounds[t.Namespace]
	}
}

// owedNow are the restarts owed by phase: what the simulator checks
// between steps.
func (f *inFlight) owedNow() map[refresh.Target]owed {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[refresh.Target]owed{}
	for t, o := range f.owed {
		out[t] = *o
	}
	return out
}

// compareTargets orders workloads by namespace, kind and name: what is
// said of several comes in one order.
func compareTargets(a, b refresh.Target) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
}

// RestartState is one restart owed or under way, as the controller's
// gauge shows it.
type RestartState struct {
	Target refresh.Target
	// State is the restart's phase: held or failed (owed), sending or
	// rolling (under way). A workload may have one of each: its next
	// restart held while the rollout of the one before goes on.
	State string
	// Hold is what holds a held one.
	Hold  HoldKind
	Since time.Time
}

// Restarts are the restarts owed and under way now, in every namespace.
func (l *Loop) Restarts() []RestartState {
	f := &l.restarts
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []RestartState
	for t, fl := range f.targets {
		out = append(out, RestartState{Target: t, State: string(fl.phase), Since: fl.since})
	}
	for t, o := range f.owed {
		out = append(out, RestartState{Target: t, State: string(o.phase), Hold: o.hold.Kind, Since: o.since})
	}
	return out
}
