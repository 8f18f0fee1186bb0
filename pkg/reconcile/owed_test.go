package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestNextOwedMovesEachPhaseAsItMay: every move from every phase of a
// restart owed, and what it leads to ("none": not owed, sent or given up;
// "": refused, the restart left as it was).
func TestNextOwedMovesEachPhaseAsItMay(t *testing.T) {
	first := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	now := first.Add(time.Minute)
	retry := now.Add(5 * time.Second)
	limit := Hold{Reason: "1 restarts are under way (--max-concurrent-restarts)", Kind: HoldLimit}
	from := map[string]*owed{
		"due":    nil,
		"held":   {phase: OwedHeld, hold: Hold{Reason: "rollout", Kind: HoldRollout}, since: first},
		"failed": {phase: OwedFailed, since: first, retryAt: now},
	}
	cases := []struct {
		from  string
		move  owedMove
		want  string
		since time.Time // of the phase it leads to
	}{
		{"due", moveHold, "held", now},
		{"due", moveRelease, "none", time.Time{}},
		{"due", moveFail, "failed", now},
		{"due", moveDrop, "none", time.Time{}},
		{"due", moveSettle, "", time.Time{}},
		{"held", moveHold, "held", first}, // held since its first hold, whatever holds it now
		{"held", moveRelease, "none", time.Time{}},
		{"held", moveFail, "", time.Time{}}, // only a restart let through fails
		{"held", moveDrop, "none", time.Time{}},
		{"held", moveSettle, "none", time.Time{}},
		{"failed", moveHold, "held", now},
		{"failed", moveRelease, "none", time.Time{}},
		{"failed", moveFail, "", time.Time{}}, // sent again only once let through again
		{"failed", moveDrop, "none", time.Time{}},
		{"failed", moveSettle, "none", time.Time{}},
	}
	for _, tc := range cases {
		o := from[tc.from]
		h := limit
		if tc.move == moveFail {
			h = Hold{Until: retry}
		}
		got, err := nextOwed(o, tc.move, h, now)
		switch {
		case tc.want == "" && (err == nil || got != o):
			t.Errorf("%s by %s: %+v, %v; want it refused and left as it was", tc.from, tc.move, got, err)
		case tc.want == "none" && (err != nil || got != nil):
			t.Errorf("%s by %s: %+v, %v; want none", tc.from, tc.move, got, err)
		case tc.want != "" && tc.want != "none" && (err != nil || got == nil || string(got.phase) != tc.want || !got.since.Equal(tc.since)):
			t.Errorf("%s by %s: %+v, %v; want %s since %s", tc.from, tc.move, got, err, tc.want, tc.since)
		case tc.want == "held" && got.hold != limit, tc.want == "failed" && !got.retryAt.Equal(retry):
			t.Errorf("%s by %s: %+v; want the hold or retry time it was moved with", tc.from, tc.move, got)
		}
	}
	if got, err := nextOwed(nil, moveHold, Hold{}, now); err == nil || got != nil {
		t.Errorf("held for no reason: %+v, %v; want it refused", got, err)
	}
}

// TestARoundSettlesTheRestartsOwedItDidNotDecide: a round of a namespace
// takes every change pending there, so a restart owed there that it
// neither held, let through nor saw fail is owed no more; one of another
// namespace, or moved by the round, stays.
func TestARoundSettlesTheRestartsOwedItDidNotDecide(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	api := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "api"}
	other := refresh.Target{Kind: "Deployment", Namespace: "other", Name: "web"}
	limit := Hold{Reason: "limit", Kind: HoldLimit}
	f := inFlight{targets: map[refresh.Target]*flight{}}
	f.beginRound("ns")
	f.owe(web, moveHold, limit, now)
	f.owe(api, moveHold, limit, now)
	f.beginRound("other")
	f.owe(other, moveHold, limit, now)
	f.beginRound("ns")
	f.owe(web, moveHold, limit, now.Add(time.Minute))
	f.settle("ns", now.Add(time.Minute))
	got := f.owedNow()
	if _, ok := got[api]; ok || len(got) != 2 || got[web].phase != OwedHeld || !got[web].since.Equal(now) || got[other].phase != OwedHeld {
		t.Errorf("after the second round of ns: %+v; want web held since its first hold and other's kept, api settled", got)
	}
	f.beginRound("ns") // a round after it that decides nothing of web
	f.settle("ns", now.Add(2*time.Minute))
	if _, ok := f.owedNow()[web]; ok {
		t.Errorf("web still owed after a round that did not decide it")
	}
	if _, illegal := f.phases(); len(illegal) != 0 {
		t.Errorf("moves refused: %q", illegal)
	}
}

// TestARestartOwedIsHeldFailedAndReleased: a restart held by
// --max-concurrent-restarts is owed, held, until the limit lets it
// through; one whose PATCH fails on a cut connection is owed, failed,
// with the time of its retry, until that retry sends it.
func TestARestartOwedIsHeldFailedAndReleased(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 1, 3*time.Hour
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	owed := f.loop.restarts.owedNow()
	if len(owed) != 1 || owed[web].phase != OwedHeld || owed[web].hold.Kind != HoldLimit {
		t.Fatalf("api let through, web held by the limit: owed %+v", owed)
	}
	states := map[string]string{}
	for _, s := range f.loop.Restarts() {
		states[s.Target.Name] = s.State + " " + string(s.Hold)
	}
	if len(states) != 2 || states["web"] != "held limit" || states["api"] != "rolling " {
		t.Errorf("restarts as the gauge reads them: %v; want api rolling, web held by the limit", states)
	}
	f.failRestarts("web", 1)
	f.setGeneration("api", false) // api's rollout complete: the limit lets web through
	f.step(MaxRecheck)
	owed = f.loop.restarts.owedNow()
	if len(owed) != 1 || owed[web].phase != OwedFailed || !owed[web].retryAt.After(f.now.Add(-MaxRecheck)) {
		t.Fatalf("web let through, its PATCH cut: owed %+v; want web failed, with its retry", owed)
	}
	f.step(2 * RetryBase)
	f.step(2 * RetryBase)
	if owed = f.loop.restarts.owedNow(); len(owed) != 0 || f.restartedAt() == "" {
		t.Errorf("after web's retry: owed %+v, web restarted at %q; want it sent, nothing owed", owed, f.restartedAt())
	}
	if _, illegal := f.loop.restarts.phases(); len(illegal) != 0 {
		t.Errorf("moves refused: %s", strings.Join(illegal, "; "))
	}
}

// TestARestartHeldAgainAfterItFailedIsSaidHeldAgain: web, held for the
// limit (said), let through, its PATCH cut ("tried again"), is held for
// the limit once more at its retry: that is said again, though the limit
// was said for this edit before, since the line said last of web (tried
// again in a second) no longer holds.
func TestARestartHeldAgainAfterItFailedIsSaidHeldAgain(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 1, 3*time.Hour
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	f.failRestarts("web", 1)
	f.setGeneration("api", false)
	f.step(MaxRecheck) // web let through, its PATCH cut
	failed := f.now
	if o := f.loop.restarts.owedNow()[refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}]; o.phase != OwedFailed {
		t.Fatalf("web after its PATCH was cut: %+v, want failed", o)
	}
	api := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "api"}
	f.setGeneration("api", true)
	f.loop.restarts.mu.Lock()
	f.loop.restarts.targets[api] = &flight{phase: FlightRolling, since: f.now} // api restarted again meanwhile: under way
	f.loop.restarts.mu.Unlock()
	f.step(2 * RetryBase)
	var again []string
	for _, e := range f.events {
		if e.Kind == EventDeferred && e.Action != nil && e.Action.Target.Name == "web" && !e.Time.Before(failed) {
			again = append(again, string(e.Hold))
		}
	}
	if len(again) != 1 || again[0] != string(HoldLimit) {
		t.Errorf("deferrals of web since its PATCH failed: %q; want it said held for the limit once", again)
	}
}

// TestARoundThatDropsItsChangesSettlesTheirRestarts: web, held for the
// limit, is owed no more once a round of its namespace drops the change
// for good (its pods cannot be listed: forbidden), reported and not put
// back; a round that puts it back (a failure that may pass) keeps it.
func TestARoundThatDropsItsChangesSettlesTheirRestarts(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 1, 3*time.Hour
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	f.failPodLists(1, apierrors.NewServiceUnavailable("the API server is restarting"))
	f.step(MaxRecheck)
	if o := f.loop.restarts.owedNow()[web]; o.phase != OwedHeld {
		t.Fatalf("web after a round put back for a failure that may pass: %+v, want still held", o)
	}
	f.failPodLists(-1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")))
	f.step(MaxRecheck)
	if owed := f.loop.restarts.owedNow(); len(owed) != 0 {
		t.Errorf("after a round dropped the change for good: owed %+v, want nothing", owed)
	}
}
