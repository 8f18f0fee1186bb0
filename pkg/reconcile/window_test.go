package reconcile

import (
	"context"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// annotateWeb sets annotations on the Deployment web of the fixture.
func (f *roundFixture) annotateWeb(ann map[string]string) {
	f.t.Helper()
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Annotations = ann
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestRestartWindowDefersUntilItOpens: outside its window a restart is
// deferred (said once per edit, with when the window opens), a remount of
// another workload with the same window is not, and the edits made while
// it waits make one restart when the window opens.
func TestRestartWindowDefersUntilItOpens(t *testing.T) {
	f := newRoundFixture(t) // 2026-01-02 03:00 UTC, a Friday
	f.annotateWeb(map[string]string{restartwindow.Annotation: "Fri 03:10-04:00"})
	f.addVolumeWorkload("vol", map[string]string{restartwindow.Annotation: "Fri 03:10-04:00"})
	f.edit("a", map[string]string{"K": "2", "X": "changed"})
	f.step(3 * time.Second)
	var deferred []Event
	for _, e := range f.events {
		if e.Kind == EventDeferred {
			deferred = append(deferred, e)
		}
	}
	if got := f.took(EventResult); strings.Join(got, "; ") != "annotate pod/vol-1-a" { // annotated early: a result, no action line
		t.Errorf("results outside the window %q, want the remount only", got)
	}
	if len(deferred) != 1 || !strings.Contains(deferred[0].Message, `restarts only in its kubectl-cmsync.io/restart-window "Fri 03:10-04:00", which opens at 2026-01-02T03:10:00Z`) ||
		deferred[0].Until == nil || !deferred[0].Until.Equal(time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC)) || deferred[0].Window != "Fri 03:10-04:00" {
		t.Fatalf("deferred events %+v, want one saying the window and when it opens", deferred)
	}
	for range 4 { // edited again while it waits, a minute apart
		f.step(time.Minute)
		f.edit("a", map[string]string{"K": "3", "X": "changed"})
		f.step(3 * time.Second)
		if got := f.took(EventAction); len(got) != 0 {
			t.Fatalf("actions at %s, before the window opens: %q", f.now.Format(time.TimeOnly), got)
		}
	}
	restarts := 0
	for f.now.Before(time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC)) {
		f.step(10 * time.Second)
		for _, a := range f.took(EventAction) {
			if a != "restart deployment/web" {
				t.Errorf("action %q at %s", a, f.now.Format(time.TimeOnly))
			}
			if f.now.Before(time.Date(2026, 1, 2, 3, 10, 0, 0, time.UTC)) {
				t.Errorf("restarted at %s, before the window opens", f.now.Format(time.TimeOnly))
			}
			restarts++
		}
	}
	if restarts != 1 {
		t.Errorf("%d restarts once the window opened, want 1 for the five edits", restarts)
	}
}

// TestInvalidRestartWindowRestartsNothing: a window that cannot be read
// holds the restart for good, with an error that says what to write.
func TestInvalidRestartWindowRestartsNothing(t *testing.T) {
	f := newRoundFixture(t)
	f.annotateWeb(map[string]string{restartwindow.Annotation: "weekdays 2-5"})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	errs := strings.Join(f.messages(EventError), "\n")
	if !strings.Contains(errs, `unknown day "weekdays"`) || !strings.Contains(errs, `write it as "Mon-Fri 02:00-05:00 Europe/Berlin"`) || !strings.Contains(errs, "not restarted") {
		t.Errorf("errors %q, want the annotation's error and that it was not restarted", errs)
	}
	f.step(time.Hour)
	if f.restartedAt() != "" {
		t.Error("restarted with a restart window that cannot be read")
	}
}

// TestPausePeriodSpacesRestarts: Reloader's pause period on a Deployment
// holds its next restart until the period since the last one ends, and
// the edits meanwhile make one restart then.
func TestPausePeriodSpacesRestarts(t *testing.T) {
	f := newRoundFixture(t)
	f.annotateWeb(map[string]string{ReloaderPausePeriod: "10m"})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("first change: %q, want a restart", got)
	}
	first := f.now
	f.step(time.Minute)
	f.edit("a", map[string]string{"K": "3", "X": "x"})
	f.step(3 * time.Second)
	deferred := strings.Join(f.messages(EventDeferred), "\n")
	if !strings.Contains(deferred, "less than its deployment.reloader.stakater.com/pause-period 10m0s") {
		t.Errorf("deferred %q, want the pause period named", deferred)
	}
	restarts := 0
	for f.now.Before(first.Add(15 * time.Minute)) {
		f.step(10 * time.Second)
		for range f.took(EventAction) {
			if f.now.Before(first.Add(10 * time.Minute)) {
				t.Errorf("restarted again at +%s, within the pause period", f.now.Sub(first))
			}
			restarts++
		}
	}
	if restarts != 1 {
		t.Errorf("%d restarts after the period, want 1", restarts)
	}
}

// messages are the messages of the events of kind since the last call,
// which forgets every event.
func (f *roundFixture) messages(kind EventKind) []string {
	var out []string
	for _, e := range f.events {
		if e.Kind == kind {
			out = append(out, e.Message)
		}
	}
	f.events = nil
	return out
}

// TestUnreadScheduleHoldsTheRestart: a workload named in Reloader's reload
// list (its annotations read with one more GET, for the gate) whose
// schedule cannot be read is not restarted at once: the restart is held
// and checked again with a backoff, and once its annotations are read it
// waits for the restart window they set.
func TestUnreadScheduleHoldsTheRestart(t *testing.T) {
	f := newRoundFixture(t) // 2026-01-02 03:00 UTC, a Friday
	for _, o := range deploymentObjects("named", map[string]string{ReloaderConfigMapReload: "a", restartwindow.Annotation: "Fri 03:10-04:00"}, corev1.Container{}) {
		if err := f.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	fails := 2
	f.client.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() != "named" || fails == 0 {
			return false, nil, nil
		}
		fails--
		return true, nil, &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}
	})
	f.edit("a", map[string]string{"K": "1", "X": "changed"}) // X: nobody reads it; named names a
	f.step(3 * time.Second)
	for range 4 {
		f.step(RetryBase * 4)
	}
	if fails != 0 {
		t.Fatalf("the gate read named's annotations %d times fewer than the test staged", fails)
	}
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "named", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]; v != "" {
		t.Fatalf("named restarted at %s, before its restart window opens (03:10)", v)
	}
	var window bool
	for _, e := range f.events {
		window = window || (e.Kind == EventDeferred && e.Window == "Fri 03:10-04:00")
	}
	if !window {
		t.Errorf("no deferral to the window once its annotations were read: %q", f.took(EventDeferred))
	}
}

// TestWaitForTheNextWindowIsSaid: a restart deferred to its window, held
// when the window opens by a rollout under way that outlasts the window,
// waits for the next day's opening: that deferral is said too, with its
// time and window (what the controller's gauge is fed from), and nothing
// is restarted meanwhile.
func TestWaitForTheNextWindowIsSaid(t *testing.T) {
	f := newRoundFixture(t) // 2026-01-02 03:00 UTC
	f.annotateWeb(map[string]string{restartwindow.Annotation: "03:10-03:20"})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Generation = 2 // a rollout under way from 03:00 to 03:25
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for f.now.Before(time.Date(2026, 1, 2, 3, 25, 0, 0, time.UTC)) {
		f.step(10 * time.Second)
	}
	d, _ = deps.Get(context.Background(), "web", metav1.GetOptions{})
	d.Status.ObservedGeneration = 2
	if _, err := deps.UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for f.now.Before(time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC)) {
		f.step(10 * time.Second)
	}
	var windows []string
	for _, e := range f.events {
		if e.Kind == EventAction {
			t.Errorf("%s %s at %s, outside the window", e.Action.Action, e.Action.Target, f.now.Format(time.TimeOnly))
		}
		if e.Kind == EventDeferred && e.Window != "" && e.Until != nil {
			windows = append(windows, e.Window+" until "+e.Until.UTC().Format(time.RFC3339))
		}
	}
	want := []string{"03:10-03:20 until 2026-01-02T03:10:00Z", "03:10-03:20 until 2026-01-03T03:10:00Z"}
	if strings.Join(windows, "; ") != strings.Join(want, "; ") {
		t.Errorf("deferrals to the window %q, want %q: the wait for the next opening said too", windows, want)
	}
}

// A hold by the restart rate is said once per edit while the time it
// said is ahead, though each check names a later time (the burst is spent
// meanwhile), and again once that time passed; a hold until a fixed time
// that changes (the window's next opening) is said again.
func TestRateDeferralIsSaidOncePerEdit(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	p := &pending{}
	for i, want := range []bool{true, false, false} {
		h := Hold{Reason: "the restart rate limit is reached", Kind: HoldRate, Until: t0.Add(time.Duration(10*(i+1)) * time.Second)}
		if got := p.firstDeferral("Deployment/web", h, t0.Add(time.Duration(i)*time.Second)); got != want {
			t.Errorf("rate hold %d: said %t, want %t", i+1, got, want)
		}
	}
	later := Hold{Reason: "the restart rate limit is reached", Kind: HoldRate, Until: t0.Add(time.Hour)}
	if !p.firstDeferral("Deployment/web", later, t0.Add(10*time.Second)) {
		t.Error("rate hold checked at the time it said: not said again")
	}
	for i, until := range []time.Time{t0.Add(time.Hour), t0.Add(25 * time.Hour)} {
		if !p.firstDeferral("Deployment/web", Hold{Reason: "window", Kind: HoldWindow, Window: "03:00-04:00", Until: until}, t0) {
			t.Errorf("window hold %d until %s: not said", i+1, until)
		}
	}
}

// TestRateDeferralIsSaidAgainWhenItsTimePasses: at one restart an hour,
// burst 1, three workloads read the edited key: one is restarted, two are
// deferred to the next token. At that time one of them takes it; the other
// is held an hour more, and says so with its new time: the time said
// before has passed, and a deferral never said again would leave it stale
// with a line whose time is gone.
func TestRateDeferralIsSaidAgainWhenItsTimePasses(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.RestartRate, f.loop.RestartBurst = 1.0/3600, 1
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.envWorkload("ns", "db", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventAction); len(got) != 1 {
		t.Fatalf("first round: actions %q, want one restart (burst 1)", got)
	}
	f.step(time.Hour + time.Second)
	var restarts, deferred []string
	for _, e := range f.events {
		switch {
		case e.Kind == EventAction:
			restarts = append(restarts, e.Action.Target.Name)
		case e.Kind == EventDeferred && e.Until != nil && e.Until.After(f.now.Add(59*time.Minute)):
			deferred = append(deferred, e.Action.Target.Name)
		}
	}
	if len(restarts) != 1 || len(deferred) != 1 || restarts[0] == deferred[0] {
		t.Errorf("at the next token: restarted %q, deferred to the next hour %q; want one of each", restarts, deferred)
	}
}

// TestHoldIsSaidAgainOnceTheTimeItSaidPasses: web, held for the limit
// (said), then by the rate until the next token (said, with that time), is
// held for the limit again when that time comes (another restart is under
// way): the line that named the time is no longer true, so the hold is
// said again, though its reason was said before for this edit.
func TestHoldIsSaidAgainOnceTheTimeItSaidPasses(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RestartRate, f.loop.RestartBurst, f.loop.RolloutWait = 1, 1.0/3600, 1, 3*time.Hour
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held by the limit", got)
	}
	f.step(MaxRecheck)
	if got := f.messages(EventDeferred); len(got) != 1 || !strings.Contains(got[0], "restart rate limit") {
		t.Fatalf("once api's rollout completed: deferred %q, want web held by the rate", got)
	}
	f.setGeneration("api", true)
	api := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "api"}
	f.loop.restarts.targets[api] = &flight{phase: FlightRolling, since: f.now} // api restarted again, by this loop: under way
	f.step(time.Hour)
	if got := f.messages(EventDeferred); len(got) != 1 || !strings.Contains(got[0], "--max-concurrent-restarts") {
		t.Errorf("at the time the rate's hold said: deferred %q, want web's hold for the limit said again", got)
	}
}

// TestEvictionStopsWhenItsWindowCloses: with --restart-via=evict, an
// eviction refused (a PodDisruptionBudget) is not sent again once the
// workload's restart window closes, though --timeout runs on; the restart
// waits for the next window, and says so.
func TestEvictionStopsWhenItsWindowCloses(t *testing.T) {
	f := newRoundFixture(t) // 2026-01-02 03:00 UTC, a Friday
	f.loop.Refresh.RestartVia = refresh.RestartViaEvict
	f.loop.Refresh.Timeout = 5 * time.Minute
	f.loop.Refresh.Sleep = func(_ context.Context, d time.Duration) { f.now = f.now.Add(d) }
	f.annotateWeb(map[string]string{restartwindow.Annotation: "Fri 03:00-03:01"})
	var sent []time.Time
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		sent = append(sent, f.now)
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	for range 5 {
		f.step(2 * RetryBase)
	}
	closes := time.Date(2026, 1, 2, 3, 1, 0, 0, time.UTC)
	if len(sent) == 0 {
		t.Fatal("no eviction sent in the window")
	}
	for _, at := range sent {
		if !at.Before(closes) {
			t.Fatalf("an eviction sent at %s, after the window closed at %s (%d sent)", at.Format(time.TimeOnly), closes.Format(time.TimeOnly), len(sent))
		}
	}
	var next []Event
	for _, e := range f.events {
		if e.Kind == EventDeferred && e.Until != nil && e.Until.Equal(time.Date(2026, 1, 9, 3, 0, 0, 0, time.UTC)) {
			next = append(next, e)
		}
	}
	if len(next) != 1 {
		t.Errorf("deferrals to the next window %+v, want one", next)
	}
}

// TestRestartPatchStopsWhenItsWindowCloses: a restart decided just before
// its window closes, whose patch is answered 429 until after it closed, is
// not sent again once it has: the retries of the patch stop at the window
// as an eviction does, and the restart waits for the next window.
func TestRestartPatchStopsWhenItsWindowCloses(t *testing.T) {
	f := newRoundFixture(t) // 2026-01-02 03:00 UTC, a Friday
	f.loop.Refresh.Sleep = func(_ context.Context, d time.Duration) { f.now = f.now.Add(d) }
	f.loop.Refresh.PatchBackoff = &wait.Backoff{Steps: 5, Duration: 20 * time.Second, Factor: 2} // 20 s, 40 s, ...: past the window
	f.annotateWeb(map[string]string{restartwindow.Annotation: "Fri 03:00-03:01"})
	var sent []time.Time
	f.client.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sent = append(sent, f.now)
		return true, nil, apierrors.NewTooManyRequests("slow down", 1)
	})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	for range 5 {
		f.step(2 * RetryBase)
	}
	closes := time.Date(2026, 1, 2, 3, 1, 0, 0, time.UTC)
	if len(sent) == 0 {
		t.Fatal("no restart patch sent in the window")
	}
	for _, at := range sent {
		if !at.Before(closes) {
			t.Fatalf("a restart patch sent at %s, after the window closed at %s (%d sent)", at.Format(time.TimeOnly), closes.Format(time.TimeOnly), len(sent))
		}
	}
	var next []Event
	for _, e := range f.events {
		if e.Kind == EventDeferred && e.Until != nil && e.Until.Equal(time.Date(2026, 1, 9, 3, 0, 0, 0, time.UTC)) {
			next = append(next, e)
		}
	}
	if len(next) != 1 {
		t.Errorf("deferrals to the next window %+v, want one", next)
	}
}

// TestEveryScheduleHoldSaysWhatHoldsIt: each hold of a restart's schedule
// carries its kind (the deferred event's hold, cmsync_deferred_total's
// label), and a paced one its end.
func TestEveryScheduleHoldSaysWhatHoldsIt(t *testing.T) {
	now := time.Date(2026, 1, 5, 3, 0, 0, 0, time.UTC) // a Monday
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	ago := func(d time.Duration) map[string]string {
		return map[string]string{refresh.RestartedAtAnnotation: now.Add(-d).Format(time.RFC3339)}
	}
	cases := []struct {
		name  string
		meta  subjectMeta
		rate  float64
		want  HoldKind
		paced bool
	}{
		{"window closed", subjectMeta{workload: map[string]string{restartwindow.Annotation: "Mon-Sun 02:00-02:10"}}, 0, HoldWindow, true},
		{"window unparsable", subjectMeta{workload: map[string]string{restartwindow.Annotation: "soon"}}, 0, HoldInvalid, false},
		{"pause period", subjectMeta{workload: map[string]string{ReloaderPausePeriod: "5m"}, template: ago(time.Minute)}, 0, HoldPausePeriod, true},
		{"pause period unparsable", subjectMeta{workload: map[string]string{ReloaderPausePeriod: "a while"}}, 0, HoldInvalid, false},
		{"--min-restart-interval", subjectMeta{template: ago(10 * time.Second)}, 0, HoldInterval, true},
		{"rate", subjectMeta{template: ago(time.Hour)}, 1.0 / 3600, HoldRate, true},
		{"annotations not read", subjectMeta{err: apierrors.NewTooManyRequests("slow down", 1)}, 0, HoldUnreadable, false},
		{"annotations forbidden", subjectMeta{err: apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "web", nil)}, 0, HoldUnreadable, false},
		{"none", subjectMeta{template: ago(time.Hour)}, 0, "", false},
	}
	for _, tc := range cases {
		l := &Loop{Config: Config{MinRestartInterval: time.Minute, RestartRate: tc.rate, RestartBurst: 1}}
		l.defaults()
		l.Now = func() time.Time { return now }
		if tc.rate > 0 {
			l.pace.bucket.AllowN(now, 1) // the burst spent
		}
		h := l.scheduleHold(web, tc.meta)
		if h.Kind != tc.want || h.paced() != tc.paced || (tc.want != "") != (h.Reason != "") || h.paced() && !h.Until.After(now) {
			t.Errorf("%s: hold %q (paced %t, until %s, %q), want %q (paced %t)", tc.name, h.Kind, h.paced(), h.Until, h.Reason, tc.want, tc.paced)
		}
	}
}

// TestADeferralIsSaidOncePerKind: a restart held for one kind of hold with
// no time (its annotations not read), then for another (the limit), is
// said for each, once: the line and cmsync_deferred_total's hold name
// what holds it now.
func TestADeferralIsSaidOncePerKind(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	p := &pending{}
	unread := Hold{Reason: "the restart window and pause period cannot be read", Kind: HoldUnreadable}
	limit := Hold{Reason: "1 restarts are under way (--max-concurrent-restarts)", Kind: HoldLimit}
	for i, step := range []struct {
		h    Hold
		want bool
	}{{unread, true}, {unread, false}, {limit, true}, {limit, false}, {unread, false}} {
		if got := p.firstDeferral("Deployment/web", step.h, t0.Add(time.Duration(i)*time.Second)); got != step.want {
			t.Errorf("hold %d (%s): said %t, want %t", i+1, step.h.Kind, got, step.want)
		}
	}
}
