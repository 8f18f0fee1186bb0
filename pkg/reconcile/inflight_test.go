package reconcile

import (
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestNextFlightMovesEachPhaseAsItMay: every move from every phase of a
// restart under way, and what it leads to ("none": not under way; "":
// refused, the restart left as it was).
func TestNextFlightMovesEachPhaseAsItMay(t *testing.T) {
	let := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	now := let.Add(time.Minute)
	from := map[string]*flight{
		"none":    nil,
		"sending": {phase: FlightSending, since: let},
		"rolling": {phase: FlightRolling, since: let},
	}
	cases := []struct {
		from string
		move flightMove
		want string
	}{
		{"none", moveLet, "sending"},
		{"none", moveAccepted, ""},
		{"none", moveNotSent, ""},
		{"none", moveEnded, ""},
		{"none", moveForget, "none"},
		{"none", moveSeen, "rolling"},
		{"sending", moveLet, ""},
		{"sending", moveAccepted, "rolling"},
		{"sending", moveNotSent, "none"},
		{"sending", moveEnded, ""},
		{"sending", moveForget, "none"},
		{"sending", moveSeen, ""},
		{"rolling", moveLet, "sending"},
		{"rolling", moveAccepted, ""},
		{"rolling", moveNotSent, ""},
		{"rolling", moveEnded, "none"},
		{"rolling", moveForget, "none"},
		{"rolling", moveSeen, ""},
	}
	for _, tc := range cases {
		f := from[tc.from]
		got, err := nextFlight(f, tc.move, now)
		switch {
		case tc.want == "" && (err == nil || got != f):
			t.Errorf("%s by %s: %+v, %v; want it refused and left as it was", tc.from, tc.move, got, err)
		case tc.want == "none" && (err != nil || got != nil):
			t.Errorf("%s by %s: %+v, %v; want none", tc.from, tc.move, got, err)
		case tc.want != "" && tc.want != "none" && (err != nil || got == nil || string(got.phase) != tc.want || !got.since.Equal(now)):
			t.Errorf("%s by %s: %+v, %v; want %s since %s", tc.from, tc.move, got, err, tc.want, now)
		}
	}
}

// TestAFlightAcceptedWithNoTimeCountsFromItsLetThrough: --rollout-wait
// counts from the API server's acceptance, or, when the result has no
// time of it, from when the gate let the restart through.
func TestAFlightAcceptedWithNoTimeCountsFromItsLetThrough(t *testing.T) {
	let := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	got, err := nextFlight(&flight{phase: FlightSending, since: let}, moveAccepted, time.Time{})
	if err != nil || got.phase != FlightRolling || !got.since.Equal(let) {
		t.Errorf("accepted with no time: %+v, %v; want rolling since %s", got, err, let)
	}
}

// TestInFlightKeepsTheMovesItRefused: a refused move leaves the restart
// as it was and is kept, for the simulator to report.
func TestInFlightKeepsTheMovesItRefused(t *testing.T) {
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	f := inFlight{targets: map[refresh.Target]*flight{}}
	f.mu.Lock()
	f.move(web, moveLet, now)
	f.move(web, moveLet, now.Add(time.Second))
	f.mu.Unlock()
	phases, illegal := f.phases()
	if phases[web] != FlightSending || f.targets[web].since != now || len(illegal) != 1 {
		t.Errorf("let twice: %v, since %s, refused %q; want sending since %s, one move refused", phases, f.targets[web].since, illegal, now)
	}
}
