package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The tests of this file hold the loop to what Reloader's own scenarios
// expect of it where cmsync does not differ on purpose.

// execTimesOut makes every read of web's container end as an exec that did
// not finish within --exec-timeout.
func (f *roundFixture) execTimesOut() {
	f.ex.Containers["ns/web-1-a/app"].Err = context.DeadlineExceeded
}

// TestReloaderOptInRestartsWhenTheConsumerCannotBeRead: a workload opted
// in through Reloader's annotation (on-change: restart) is restarted for
// an edit of an object its pod spec reads even when its env consumer
// cannot be read (the exec timed out), as Reloader does, instead of a
// manual action that nothing retries.
func TestReloaderOptInRestartsWhenTheConsumerCannotBeRead(t *testing.T) {
	f := newRoundFixture(t)
	f.annotateWeb(map[string]string{ReloaderAuto: "true"})
	f.execTimesOut()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("actions %q, want one restart of deployment/web", got)
	}
	if f.restartedAt() == "" {
		t.Error("deployment/web has no restartedAt: the restart was not sent")
	}
}

// TestUnreadableConsumerIsRetried: without Reloader's opt-in, a consumer
// whose read failed for a cause that may pass (an exec timeout) is tried
// again after the namespace's backoff, not reported manual and dropped;
// once it can be read, the stale consumer is restarted.
func TestUnreadableConsumerIsRetried(t *testing.T) {
	f := newRoundFixture(t)
	f.execTimesOut()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	var retries, manual []string
	for _, e := range f.events {
		switch {
		case e.Kind == EventRetry:
			retries = append(retries, e.Message)
		case e.Kind == EventAction && e.Action.Action == refresh.ActionManual:
			manual = append(manual, e.Message)
		}
	}
	f.events = nil
	if len(manual) != 0 || len(retries) != 1 || !strings.Contains(retries[0], "timeout") || !strings.Contains(retries[0], "(attempt 1)") {
		t.Fatalf("manual %q, retries %q: want no manual action and one retry for the timeout", manual, retries)
	}
	f.ex.Containers["ns/web-1-a/app"].Err = nil // it answers now, with the old K: stale
	f.step(2 * RetryBase)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("once the consumer can be read: actions %q, want one restart of deployment/web", got)
	}
}
