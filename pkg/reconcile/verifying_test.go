package reconcile

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The tests of this file drive the loop at its round boundary, as
// round_test.go does, with the engine's wait on: a restart whose rollout
// is not verified within the round's VerifyInRound is handed over to
// later rounds. The engine's clock is the real one (its waits sleep); the
// loop's is the fixture's.

// handOverFixture is newRoundFixture with the wait on, --timeout timeout
// and a round that hands over after 50 ms.
func handOverFixture(t *testing.T, timeout time.Duration) *roundFixture {
	f := newRoundFixture(t)
	f.loop.Refresh.Wait, f.loop.Refresh.Timeout, f.loop.Refresh.Now = true, timeout, time.Now
	f.loop.VerifyInRound = 50 * time.Millisecond
	return f
}

// rollingOut makes Deployment name's rollout under way: a generation its
// controller has not observed yet.
func (f *roundFixture) rollingOut(name string) {
	f.t.Helper()
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Generation = 2
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// rolledOut completes Deployment name's rollout: its controller observed
// the generation, and pod name-1-a is replaced by name-2-a, whose
// container reads env.
func (f *roundFixture) rolledOut(name string, env map[string]string) {
	f.t.Helper()
	ctx := context.Background()
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Status.ObservedGeneration = d.Generation
	if _, err := deps.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	pods := f.client.CoreV1().Pods("ns")
	old, err := pods.Get(ctx, name+"-1-a", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := pods.Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	p := old.DeepCopy()
	p.Name, p.UID, p.ResourceVersion = name+"-2-a", types.UID("u-"+name+"-2-a"), ""
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.ex.Containers["ns/"+p.Name+"/app"] = &readtest.Container{Env: env}
}

// restartRollingOut edits a (web reads K), lets the round restart web and
// hand the restart over, and makes its rollout under way; it returns
// web's restartedAt.
func (f *roundFixture) restartRollingOut() string {
	f.t.Helper()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	first := f.restartedAt()
	f.rollingOut("web")
	return first
}

// said returns the events of the kinds given since the last call, as
// "KIND ACTION TARGET OUTCOME" (actions and results) or "KIND MESSAGE",
// and forgets every event.
func (f *roundFixture) said(kinds ...EventKind) []string {
	var out []string
	for _, e := range f.events {
		for _, k := range kinds {
			if e.Kind != k {
				continue
			}
			if e.Action != nil {
				out = append(out, strings.TrimSpace(string(e.Kind)+" "+string(e.Action.Action)+" "+e.Action.Target.String()+" "+string(e.Outcome)))
			} else {
				out = append(out, string(e.Kind)+" "+e.Message)
			}
		}
	}
	f.events = nil
	return out
}

// TestStuckRolloutDoesNotHoldTheNamespacesNextChange: a round whose
// restart is not verified within VerifyInRound returns (it does not wait
// for --timeout), says nothing of it yet, and the namespace's next change
// is acted on at its debounce while that rollout is still under way.
func TestStuckRolloutDoesNotHoldTheNamespacesNextChange(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	f.addVolumeWorkload("vol", nil)
	f.ex.Containers["ns/vol-1-a/app"] = &readtest.Container{Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: "..2026_01_02_03_00_00.1",
		Files: map[string][]byte{"K": []byte("1"), "X": []byte("changed")}}}}
	f.edit("b", map[string]string{"L": "2"}) // web reads L: restarted
	began := time.Now()
	f.step(3 * time.Second)
	if took := time.Since(began); took > 30*time.Second {
		t.Fatalf("the round took %s: it waited for the rollout", took)
	}
	if got := f.said(EventAction, EventResult, EventRetry); strings.Join(got, "; ") != "action restart deployment/web" {
		t.Fatalf("the round: %q, want the restart and no result yet", got)
	}
	f.rollingOut("web")
	f.edit("a", map[string]string{"K": "1", "X": "changed"}) // only vol reads X
	f.step(3 * time.Second)
	if got := strings.Join(f.said(EventAction, EventResult), "; "); !strings.HasPrefix(got, "action annotate pod/vol-1-a; result annotate pod/vol-1-a") {
		t.Errorf("the next change, at its debounce: %q, want vol-1-a remounted and its result", got)
	}
	f.rolledOut("web", map[string]string{"K": "1", "L": "2"})
	f.step(MaxRecheck)
	if got := f.said(EventAction, EventResult, EventRetry, EventError); strings.Join(got, "; ") != "result restart deployment/web current" {
		t.Errorf("once rolled out: %q, want the restart verified current", got)
	}
}

// TestHandedOverRestartIsRecordedOnceVerifiedAndCountedUntilThen: the
// record of a restarted workload is written by the later round that
// verifies its restart, not before; until then the restart counts
// against --max-concurrent-restarts, and another workload's restart is
// held by it, then sent once it is verified.
func TestHandedOverRestartIsRecordedOnceVerifiedAndCountedUntilThen(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	f.loop.DigestKey, f.loop.MaxConcurrentRestarts = []byte("0123456789abcdef0123456789abcdef"), 1
	envB := corev1.EnvVar{Name: "L", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Key: "L"}}}
	for _, o := range deploymentObjects("api", nil, corev1.Container{Env: []corev1.EnvVar{envB}}) {
		if err := f.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.ex.Containers["ns/api-1-a/app"] = &readtest.Container{Env: map[string]string{"L": "1"}}
	f.edit("a", map[string]string{"K": "2", "X": "x"}) // web only
	f.step(3 * time.Second)
	if got := f.said(EventAction, EventResult); strings.Join(got, "; ") != "action restart deployment/web" {
		t.Fatalf("the round: %q, want web's restart, not verified yet", got)
	}
	if rec := f.record("web"); rec != "" {
		t.Fatalf("web recorded before its restart was verified: %s", rec)
	}
	f.edit("b", map[string]string{"L": "2"}) // web and api; web's restart is under way
	f.rollingOut("web")
	f.step(3 * time.Second)
	got := strings.Join(f.said(EventAction, EventDeferred), "; ")
	if !strings.Contains(got, "deferred restart deployment/api") || strings.Contains(got, "action restart deployment/api") {
		t.Fatalf("while web's restart is pending: %q, want api's restart held by the limit", got)
	}
	f.rolledOut("web", map[string]string{"K": "2", "L": "2"})
	for range 4 {
		f.step(MaxRecheck)
	}
	got = strings.Join(f.said(EventAction, EventResult), "; ")
	if !strings.Contains(got, "result restart deployment/web current") || !strings.Contains(got, "action restart deployment/api") {
		t.Errorf("once web rolled out: %q, want web verified and api restarted", got)
	}
	if rec := f.record("web"); !strings.Contains(rec, "configmap/a") {
		t.Errorf("web's record after its restart was verified: %q, want configmap/a in it", rec)
	}
}

// record is Deployment name's record ("" without one).
func (f *roundFixture) record(name string) string {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Annotations[AnnotationApplied]
}

// TestEditWhileARestartIsPendingRestartsOncePerChange: an object edited
// again while its restart's rollout is pending is not restarted for it
// while that rollout is under way; the first restart is verified (its new
// pod read an earlier version of data changed again since: that edit is a
// change of its own), and the second change gets its one restart then.
func TestEditWhileARestartIsPendingRestartsOncePerChange(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	first := f.restartRollingOut()
	f.edit("a", map[string]string{"K": "3", "X": "x"})
	for range 5 {
		f.step(3 * time.Second)
	}
	if got := strings.Join(f.said(EventAction, EventResult), "; "); got != "action restart deployment/web" || f.restartedAt() != first {
		t.Fatalf("edited again while the rollout is under way: %q, want only the first restart", got)
	}
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"})
	for range 4 {
		f.step(MaxRecheck)
	}
	got := strings.Join(f.said(EventAction, EventResult), "; ")
	if !strings.HasPrefix(got, "result restart deployment/web current; action restart deployment/web") || strings.Count(got, "action restart") != 1 {
		t.Errorf("once rolled out: %q, want the first restart verified, then one restart for the second edit", got)
	}
}

// TestHandedOverRestartTimesOutOnce: a handed-over restart still not
// verified --timeout after it was sent is reported timed out once and
// verified again after a backoff, never sent again: still stale then, a
// manual action says what to look at, as when the round waited.
func TestHandedOverRestartTimesOutOnce(t *testing.T) {
	f := handOverFixture(t, 2*time.Second)
	first := f.restartRollingOut()
	if got := f.said(EventResult, EventRetry); len(got) != 0 {
		t.Fatalf("before --timeout: %q, want nothing", got)
	}
	var got []string
	for end := time.Now().Add(3 * time.Second); len(got) == 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		f.step(recheckFloor)
		got = f.said(EventResult, EventRetry)
	}
	if len(got) != 2 || got[0] != "result restart deployment/web timeout" || !strings.Contains(got[1], "verified again, not sent again") {
		t.Fatalf("after --timeout: %q, want one timeout and one recheck", got)
	}
	f.step(time.Minute)
	if got := strings.Join(f.said(EventAction, EventResult), "; "); got != "action manual deployment/web; result manual deployment/web not-applied" {
		t.Errorf("the recheck: %q, want a manual action", got)
	}
	if f.restartedAt() != first {
		t.Error("restarted a second time for the same change")
	}
}

// TestHandedOverRestartIsToldInOneRound: the round that sends a restart
// it hands over is told (Round) together with the round that sees the
// restart verified: one Round names the action and how it ended, as when
// the round waited for it.
func TestHandedOverRestartIsToldInOneRound(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	var rounds []Round
	f.loop.Round = func(r Round) {
		if len(r.Events) > 0 { // a round that only checked, and saw nothing end, says nothing
			rounds = append(rounds, r)
		}
	}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	f.step(recheckFloor) // checked again, still pending
	if len(rounds) != 0 {
		t.Fatalf("%d rounds told before the restart was verified, want none", len(rounds))
	}
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"})
	f.step(MaxRecheck)
	if len(rounds) != 1 {
		t.Fatalf("%d rounds told, want 1", len(rounds))
	}
	var got []string
	for _, e := range rounds[0].Events {
		got = append(got, string(e.Kind))
	}
	if strings.Join(got, " ") != "change action result" {
		t.Errorf("the round told: %v, want the change, the restart and its result", got)
	}
}

// TestTimedOutRestartLeavesTheNewerChangeAlone: a handed-over restart that
// times out while a newer edit of the same object is held (deferred for the
// rollout under way) is not verified again for its old change: the newer
// change keeps its own restart, sent once the rollout completes, and is
// not turned into a manual action.
func TestTimedOutRestartLeavesTheNewerChangeAlone(t *testing.T) {
	f := handOverFixture(t, 2*time.Second)
	first := f.restartRollingOut()
	f.edit("a", map[string]string{"K": "3", "X": "x"}) // a second change while the first restart is pending
	f.step(3 * time.Second)
	t.Logf("second change, rollout under way: %q", f.said(EventAction, EventResult, EventDeferred, EventRetry, EventError))
	time.Sleep(2500 * time.Millisecond) // the first restart's --timeout passes (engine clock is real)
	for range 3 {
		f.step(recheckFloor)
	}
	t.Logf("after the first restart's timeout: %q", f.said(EventAction, EventResult, EventDeferred, EventRetry, EventError))
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"}) // the first rollout completes: its pod read K=2, not K=3
	for range 6 {
		f.step(MaxRecheck)
	}
	got := f.said(EventAction, EventResult, EventDeferred, EventRetry, EventError)
	t.Logf("once rolled out: %q", got)
	if f.restartedAt() == first {
		t.Errorf("web was never restarted for the second change (K=3): %q", got)
	}
}

// TestEditDuringTheRoundsWaitIsAChangeAgain: an edit made while the round
// that restarts for the previous edit still waits in the round (before
// it hands over) marks the verification handed over "changed again", as
// an edit after the hand-over does: the new pods, which read the data
// planned, are verified current, not judged stale until --timeout.
func TestEditDuringTheRoundsWaitIsAChangeAgain(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	f.loop.VerifyInRound = time.Second
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.now = f.now.Add(3 * time.Second)
	done := make(chan struct{})
	go func() { f.loop.settle(t.Context()); close(done) }()
	time.Sleep(400 * time.Millisecond)                 // the round sent its restart and waits (VerifyInRound)
	f.edit("a", map[string]string{"K": "3", "X": "x"}) // edited again before the hand-over
	<-done
	f.loop.mu.Lock()
	vs := f.loop.verifying["ns"]
	again := len(vs) == 1 && vs[0].again[inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}]
	f.loop.mu.Unlock()
	if !again {
		t.Errorf("verification handed over: configmap a not marked changed again (%d verifications)", len(vs))
	}
	f.said(EventAction, EventResult)
	f.rollingOut("web")
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"}) // the new pod read K=2, what the restart was for
	for range 4 {
		f.step(MaxRecheck)
	}
	got := strings.Join(f.said(EventAction, EventResult), "; ")
	t.Logf("after the rollout: %q", got)
	if !strings.Contains(got, "result restart deployment/web current") {
		t.Errorf("the first restart is never verified: %q", got)
	}
}

// TestInterruptedCheckIsReportedOnce: a check of a handed-over restart
// that the loop's end interrupts reports the restart once, as interrupted,
// and leaves no change behind to be reported again as not acted on.
func TestInterruptedCheckIsReportedOnce(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	f.edit("b", map[string]string{"L": "2"}) // web reads L: restarted
	f.step(3 * time.Second)
	if got := f.said(EventAction, EventResult); strings.Join(got, "; ") != "action restart deployment/web" {
		t.Fatalf("the round: %q, want the restart and no result yet", got)
	}
	f.rollingOut("web")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the loop ends while the check runs
	f.loop.verifyHandedOver(ctx, "ns")
	f.loop.dropPending()
	f.loop.dropVerifications()
	var said []string
	for _, e := range f.events {
		said = append(said, string(e.Kind)+" "+string(e.Outcome)+" "+e.Message)
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "result timeout interrupted before it was verified") {
		t.Errorf("at the loop's end: %q, want the restart reported once, interrupted", said)
	}
}

// TestTimedOutRestartIsVerifiedAgainAfterAnEditOfAnotherKey: a handed-over
// restart that times out after its object was edited again, at a key its
// workload does not read, is verified again for its change: that newer
// change does not reach the workload, so nothing else would say it is
// still not current.
func TestTimedOutRestartIsVerifiedAgainAfterAnEditOfAnotherKey(t *testing.T) {
	f := handOverFixture(t, 2*time.Second)
	first := f.restartRollingOut()
	f.edit("a", map[string]string{"K": "2", "X": "y"}) // X: web does not read it
	f.step(3 * time.Second)
	f.said(EventAction, EventResult, EventRetry)
	f.timesOutThenRechecks()
	f.step(time.Minute)
	if got := strings.Join(f.said(EventAction, EventResult), "; "); got != "action manual deployment/web; result manual deployment/web not-applied" {
		t.Errorf("the recheck: %q, want a manual action", got)
	}
	if f.restartedAt() != first {
		t.Error("restarted a second time for the same change")
	}
}

// TestTimedOutRestartIsVerifiedAgainAfterAnEditOnlyItsVolumeReads: web
// reads K of a as env and mounts a as a volume too; its restart (for K) is
// handed over and times out after a was edited again at X, which only the
// volume reads. That newer change is acted on for the volume alone (it
// restarts nothing for K), so the restart is verified again for its own
// change, as when no use of web read X: else nothing would say that web's
// K is still not current.
func TestTimedOutRestartIsVerifiedAgainAfterAnEditOnlyItsVolumeReads(t *testing.T) {
	f := handOverFixture(t, 2*time.Second)
	pods := f.client.CoreV1().Pods("ns")
	p, err := pods.Get(context.Background(), "web-1-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	p.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}}
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := f.restartRollingOut()
	f.ex.Containers["ns/web-1-a/app"].Volumes = map[string]readtest.Volume{"/etc/cfg": {Target: "..2026_01_02_03_00_05.1",
		Files: map[string][]byte{"K": []byte("2"), "X": []byte("y")}}}
	f.edit("a", map[string]string{"K": "2", "X": "y"}) // X: only the volume reads it
	f.step(3 * time.Second)
	f.said(EventAction, EventResult, EventRetry)
	f.timesOutThenRechecks()
	f.step(time.Minute)
	if got := strings.Join(f.said(EventAction, EventResult), "; "); !strings.HasPrefix(got, "action manual deployment/web; result manual deployment/web not-applied") {
		t.Errorf("the recheck: %q, want a manual action", got)
	}
	if f.restartedAt() != first {
		t.Error("restarted a second time for the same change")
	}
}

// timesOutThenRechecks steps the fixture until web's handed-over restart
// has timed out and been put back to be verified again (at most 3 s of
// real time for the hand-over's goroutine), and fails unless it says
// exactly that: one timeout, then one recheck.
func (f *roundFixture) timesOutThenRechecks() {
	f.t.Helper()
	var got []string
	for end := time.Now().Add(3 * time.Second); len(got) < 2 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		f.step(recheckFloor)
		got = append(got, f.said(EventResult, EventRetry)...)
	}
	if len(got) != 2 || got[0] != "result restart deployment/web timeout" || !strings.Contains(got[1], "verified again, not sent again") {
		f.t.Fatalf("after --timeout: %q, want one timeout and one recheck", got)
	}
}

// TestRetryTakenWithARestartsTimeoutIsNoSecondRestart: a retry of the
// change a handed-over restart was sent for, due in the round that sees
// that restart time out, is acted on knowing that the restart was sent:
// the workload (opted in through Reloader: on-change restart, no read
// needed) is read again, never restarted a second time for one change. The round checks what was handed over before it
// takes the namespace's changes.
func TestRetryTakenWithARestartsTimeoutIsNoSecondRestart(t *testing.T) {
	f := handOverFixture(t, time.Second)
	f.annotateWeb(map[string]string{ReloaderAuto: "true"})
	first := f.restartRollingOut()
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"})
	f.ex.Containers["ns/web-2-a/app"].Err = context.DeadlineExceeded // the new pod cannot be read
	f.said(EventAction, EventResult, EventRetry)
	time.Sleep(1200 * time.Millisecond) // past --timeout: the next check ends the restart
	// a copy of the same edit, to be read again for web (an unread retry
	// merged with an earlier edit's), due now
	f.loop.requeueAt(pending{change: Change{Object: inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}, Keys: []string{"K"}},
		edits: 1, first: f.now, edit: f.loop.edits, only: map[string]bool{"Deployment/web": true}}, f.now)
	f.step(recheckFloor)
	got := f.said(EventAction, EventResult, EventRetry)
	if f.restartedAt() != first {
		t.Fatalf("restarted a second time for the same change: %q", got)
	}
	if len(got) != 3 || got[0] != "result restart deployment/web timeout" || !strings.Contains(got[1], "verified again, not sent again") ||
		!strings.Contains(got[2], "cannot tell whether its env use of ConfigMap a is stale") {
		t.Errorf("the round: %q, want the timeout, and web read again (its new pod cannot be read)", got)
	}
}

// TestRetryOfAWorkloadBeingVerifiedIsLeftToIt: a retry of a change (an
// unread retry of an earlier edit merged into it) that names a workload
// whose restart for that edit is handed over and not verified yet leaves
// the workload to that verification: no second restart (it is opted in
// through Reloader: no read needed), no read.
func TestRetryOfAWorkloadBeingVerifiedIsLeftToIt(t *testing.T) {
	f := handOverFixture(t, time.Hour)
	f.annotateWeb(map[string]string{ReloaderAuto: "true"})
	first := f.restartRollingOut()
	f.rolledOut("web", map[string]string{"K": "2", "L": "1"})
	f.ex.Containers["ns/web-2-a/app"].Err = context.DeadlineExceeded // the new pod cannot be read yet
	f.said(EventAction, EventResult, EventRetry)
	f.loop.requeueAt(pending{change: Change{Object: inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}, Keys: []string{"K"}},
		edits: 1, first: f.now, edit: f.loop.edits, only: map[string]bool{"Deployment/web": true}}, f.now)
	f.step(recheckFloor)
	if got := f.said(EventAction, EventResult, EventRetry); f.restartedAt() != first || len(got) != 0 {
		t.Fatalf("a retry of web while its restart for the edit is verified: %q (restarted again: %t), want nothing", got, f.restartedAt() != first)
	}
	f.ex.Containers["ns/web-2-a/app"].Err = nil
	f.step(time.Minute) // the pod that could not be read is read (refresh.Result's probe)
	f.step(time.Minute) // then every pod
	if got := strings.Join(f.said(EventAction, EventResult, EventRetry), "; "); got != "result restart deployment/web current" {
		t.Errorf("once its new pod can be read: %q, want the restart verified current", got)
	}
}

// TestLateEditTheHandedOverRestartReadIsNoEditForIt: a workload that
// restarts on every change is restarted for an edit of a; an edit of b,
// which it mounts, made before that round listed the namespace but
// delivered after it (a watch cut, then its relist) is no reason to
// restart it again, while that restart is still being verified or once it
// timed out unverified: its new pods read b as it is now (the timeout's
// manual step says the rest).
func TestLateEditTheHandedOverRestartReadIsNoEditForIt(t *testing.T) {
	for _, timedOut := range []bool{false, true} {
		f := handOverFixture(t, 2*time.Second) // the wait of mix's remount, which the fake never makes, ends then
		f.loop.DigestKey = []byte("0123456789abcdef0123456789abcdef")
		c := corev1.Container{Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Key: "K"}}}}, VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}
		v := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}}}
		for _, o := range deploymentObjects("mix", map[string]string{AnnotationWatch: "true", AnnotationOnChange: OnChangeRestart}, c, v) {
			if err := f.client.Tracker().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		f.ex.Containers["ns/mix-1-a/app"] = &readtest.Container{Env: map[string]string{"K": "1"},
			Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: "..2026_01_02_02_00_00.000000000", Files: map[string][]byte{"L": []byte("1")}}}}
		cms := f.client.CoreV1().ConfigMaps("ns")
		oldB, err := cms.Get(context.Background(), "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		newB, err := cms.Update(context.Background(), configMap("b", map[string]string{"L": "2"}), metav1.UpdateOptions{}) // not delivered: the watch is cut
		if err != nil {
			t.Fatal(err)
		}
		f.edit("a", map[string]string{"K": "2", "X": "x"})
		f.step(3 * time.Second)
		restarts := func() (n int) {
			for _, e := range f.events {
				if e.Kind == EventAction && e.Action.Action == refresh.ActionRestart && e.Action.Target.Name == "mix" {
					n++
				}
			}
			return n
		}
		if n := restarts(); n != 1 {
			t.Fatalf("%d restarts of mix for the edit of a, want 1", n)
		}
		if timedOut { // the engine's clock is the real one
			time.Sleep(2100 * time.Millisecond)
			f.step(3 * time.Second)
			if f.loop.verifying["ns"] != nil {
				t.Fatalf("mix's restart still verified after its --timeout")
			}
			f.step(3 * time.Second) // its recheck says the manual step
			if !slices.ContainsFunc(f.events, func(e Event) bool {
				return e.Kind == EventAction && e.Action.Action == refresh.ActionManual && e.Action.Target.Name == "mix"
			}) {
				t.Fatal("no manual step of mix before b's edit is delivered")
			}
		}
		f.loop.noteChange(inspect.ConfigMapObject(oldB), inspect.ConfigMapObject(newB)) // the relist delivers it
		f.step(3 * time.Second)
		if n := restarts(); n != 1 {
			t.Errorf("timed out %t: %d restarts of mix once b's edit was delivered, want still 1: its restart's pods read b as it is", timedOut, n)
		}
	}
}

// TestAResumeCheckIsLeftOnlyToAVerificationOfEveryUse: a restart of web
// for a live edit of a is handed over and verified; a resume's check of
// every use of a's consumers (an edit no leader acted on, of a key only
// web's env var reads) is not left to it, since it verifies the uses of
// the live edit's keys alone; a check of a live edit, or one verified by
// a check of every use, is.
func TestAResumeCheckIsLeftOnlyToAVerificationOfEveryUse(t *testing.T) {
	a := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	restart := refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"},
		Consumers: []refresh.Consumer{{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}}}}}
	for _, tc := range []struct {
		name                string
		verifying, checking bool // existing: a check of every use
		left                bool
	}{
		{"a resume's check, a live edit's verification", false, true, false},
		{"a live edit, a live edit's verification", false, false, true},
		{"a resume's check, a resume's verification", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoundFixture(t)
			f.loop.verifying["ns"] = []*verification{{results: []refresh.Result{restart},
				changes: map[inspect.ObjectKey]*pending{a: {edit: 2, existing: tc.verifying}}}}
			changes := map[inspect.ObjectKey]*pending{a: {edit: 1, existing: tc.checking, only: map[string]bool{"Deployment/web": true}}}
			f.loop.leaveToVerifications("ns", changes)
			if left := !changes[a].only["Deployment/web"]; left != tc.left {
				t.Errorf("web left to the verification: %v, want %v", left, tc.left)
			}
		})
	}
}
