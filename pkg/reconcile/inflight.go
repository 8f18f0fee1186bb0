package reconcile

import (
	"fmt"
	"sync"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// FlightPhase is where a restart of cmsync's stands once the gate let it
// through, until its rollout is no longer counted against
// --max-concurrent-restarts. A workload with none has no restart of
// cmsync's under way: its next is held (Hold, said by a deferred event),
// failed and retried (a retry event), or due at its next change.
type FlightPhase string

const (
	// FlightSending: let through by the gate; its round sends it and
	// waits for its answer.
	FlightSending FlightPhase = "sending"
	// FlightRolling: accepted by the API server (applied, or its wait
	// timed out); its rollout not seen complete yet.
	FlightRolling FlightPhase = "rolling"
)

// flight is one restart under way: its phase, and since when (sending:
// when the gate let it through; rolling: when the API server accepted
// it, from which --rollout-wait counts).
type flight struct {
	phase FlightPhase
	since time.Time
}

// flightMove is what moves a restart under way.
type flightMove string

const (
	// moveLet: the gate let it through (none, or the rollout of an
	// earlier restart going on, to sending).
	moveLet flightMove = "let"
	// moveAccepted: the API server accepted it and its rollout goes on
	// (sending to rolling).
	moveAccepted flightMove = "accepted"
	// moveNotSent: refused, failed, not sent, or a pod's (sending to
	// none): it spent no slot.
	moveNotSent flightMove = "not-sent"
	// moveEnded: seen complete, verified current, stuck, gone, or
	// --rollout-wait passed (rolling to none).
	moveEnded flightMove = "ended"
	// moveForget: its rollout seen stuck by a round (any to none).
	moveForget flightMove = "forget"
	// moveSeen: a new leader found it rolling, restarted by cmsync less
	// than --rollout-wait ago (none to rolling).
	moveSeen flightMove = "seen"
)

// nextFlight is the one function that moves a restart under way: from f
// (nil: none) by m at at. A move its phase does not allow is an error,
// and f stays as it was.
func nextFlight(f *flight, m flightMove, at time.Time) (*flight, error) {
	phase := FlightPhase("none")
	if f != nil {
		phase = f.phase
	}
	switch {
	case m == moveLet && phase != FlightSending:
		return &flight{phase: FlightSending, since: at}, nil
	case m == moveAccepted && phase == FlightSending:
		if at.IsZero() { // no time of acceptance: from when it was let through
			at = f.since
		}
		return &flight{phase: FlightRolling, since: at}, nil
	case m == moveNotSent && phase == FlightSending, m == moveEnded && phase == FlightRolling, m == moveForget:
		return nil, nil
	case m == moveSeen && f == nil:
		return &flight{phase: FlightRolling, since: at}, nil
	}
	return f, fmt.Errorf("a restart %s cannot be moved by %q", phase, m)
}

// inFlight are the restarts sent and not yet seen complete, in every
// namespace: --max-concurrent-restarts counts them all. Every change of
// one goes through move.
type inFlight struct {
	mu      sync.Mutex
	targets map[refresh.Target]*flight
	// owed are the restarts decided and not sent (owed.go): held, or
	// failed and tried again; rounds numbers each namespace's rounds
	owed   map[refresh.Target]*owed
	rounds map[string]uint64
	// illegal are the first moves nextFlight or nextOwed refused (none,
	// unless the loop moves a restart out of order; at most maxIllegal):
	// the simulator reports them
	illegal []string
}

// reset forgets every restart under way and owed.
func (f *inFlight) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.targets, f.owed, f.rounds, f.illegal = map[refresh.Target]*flight{}, nil, nil, nil
}

// maxIllegal bounds the refused moves kept.
const maxIllegal = 16

// move moves the restart of t by m at at (f.mu held).
func (f *inFlight) move(t refresh.Target, m flightMove, at time.Time) {
	next, err := nextFlight(f.targets[t], m, at)
	if err != nil {
		f.refuse(t, at, err)
		return
	}
	if next == nil {
		delete(f.targets, t)
		return
	}
	f.targets[t] = next
}

// refuse keeps a move refused (f.mu held).
func (f *inFlight) refuse(t refresh.Target, at time.Time, err error) {
	if len(f.illegal) < maxIllegal {
		f.illegal = append(f.illegal, fmt.Sprintf("%s/%s at %s: %v", t.Namespace, t, at.UTC().Format(time.RFC3339), err))
	}
}

// phases are the restarts under way by phase, and the moves refused so
// far: what the simulator checks between steps.
func (f *inFlight) phases() (map[refresh.Target]FlightPhase, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[refresh.Target]FlightPhase{}
	for t, fl := range f.targets {
		out[t] = fl.phase
	}
	return out, append([]string(nil), f.illegal...)
}
