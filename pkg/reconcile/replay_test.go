package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
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

// jobObjects are Job name (with annotations ann on its own metadata, none
// on its pod template) and its running pod name-x, whose container reads
// key K of ConfigMap a as an environment variable.
func jobObjects(name string, ann map[string]string) []runtime.Object {
	ctrl := true
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Annotations: ann}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-x", Namespace: "ns", UID: types.UID("u-" + name + "-x"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID(name), Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Key: "K"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	return []runtime.Object{job, pod}
}

func (f *roundFixture) addJob(name string, ann map[string]string) {
	f.t.Helper()
	for _, o := range jobObjects(name, ann) {
		if err := f.client.Tracker().Add(o); err != nil {
			f.t.Fatal(err)
		}
	}
	f.ex.Containers["ns/"+name+"-x/app"] = &readtest.Container{Env: map[string]string{"K": "1"}}
}

// TestJobsOwnAnnotationsAreRead: Reloader's annotations on a Job's own
// metadata (where Reloader reads them, and where its fixtures put them)
// opt it in under --require-opt-in; the line says what cmsync does for a
// Job. A Job not opted in is told a hint that works: annotate the Job.
func TestJobsOwnAnnotationsAreRead(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.RequireOptIn = true
	f.addJob("opted", map[string]string{ReloaderAuto: "true"})
	f.addJob("plain", nil)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	var skips, actions []string
	for _, e := range f.events {
		switch {
		case e.Kind == EventSkip && e.Target != nil:
			skips = append(skips, e.Target.String()+": "+e.Message)
		case e.Kind == EventAction:
			actions = append(actions, string(e.Action.Action)+" "+e.Action.Target.String()+": "+e.Action.Reason)
		}
	}
	var optedSkip, plainSkip string
	for _, s := range skips {
		switch {
		case strings.HasPrefix(s, "job/opted:"):
			optedSkip = s
		case strings.HasPrefix(s, "job/plain:"):
			plainSkip = s
		}
	}
	if optedSkip != "" {
		t.Errorf("the Job opted in on its metadata was skipped: %q", optedSkip)
	}
	var optedAction string
	for _, a := range actions {
		if strings.Contains(a, "job/opted") {
			optedAction = a
		}
	}
	if !strings.HasPrefix(optedAction, "manual job/opted") || !strings.Contains(optedAction, "the change reaches new Jobs only") {
		t.Errorf("the opted-in Job's action %q, want manual saying the change reaches new Jobs only (actions %q)", optedAction, actions)
	}
	if !strings.Contains(plainSkip, "not opted in") || !strings.Contains(plainSkip, "annotate the Job") {
		t.Errorf("the plain Job's skip %q, want not opted in with a hint to annotate the Job", plainSkip)
	}
}

// TestChangeWithCurrentConsumersEndsInALine: a change whose consumers are
// already current (their pods were created after the edit: a rollout for
// an earlier edit made them read it) ends in a result line, current, that
// says why; it is not left without an outcome.
func TestChangeWithCurrentConsumersEndsInALine(t *testing.T) {
	f := newRoundFixture(t)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	// the pod is replaced after the edit and reads the new value
	pods := f.client.CoreV1().Pods("ns")
	p, err := pods.Get(context.Background(), "web-1-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.CreationTimestamp = metav1.NewTime(f.now.Add(time.Second))
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "2"
	f.step(3 * time.Second)
	var results []Event
	for _, e := range f.events {
		if e.Kind == EventResult {
			results = append(results, e)
		}
		if e.Kind == EventAction && e.Action.Action != refresh.ActionNone {
			t.Errorf("action %s %s for a current consumer", e.Action.Action, e.Action.Target)
		}
	}
	if len(results) != 1 {
		t.Fatalf("results %+v, want one for the change", results)
	}
	r := results[0]
	if r.Outcome != refresh.OutcomeCurrent || r.Action == nil || r.Action.Target.Name != "web-1-a" {
		t.Errorf("result %+v, want current for pod web-1-a", r)
	}
	if !strings.Contains(r.Message, "created") || !strings.Contains(r.Message, "after") {
		t.Errorf("result message %q does not say why (the pod was created after the edit)", r.Message)
	}
}

// TestUnreadableConsumerIsNotRetriedForGood: a consumer that never
// becomes readable, in a namespace where nothing else changes, is tried
// unreadAttempts times for one change at the backoff's times, then left as
// the plan's manual step once unreadWait has passed, said once; no retry
// after it.
func TestUnreadableConsumerIsNotRetriedForGood(t *testing.T) {
	f := newRoundFixture(t)
	f.execTimesOut()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	retries, manual := f.unreadWalk(30*time.Minute, nil)
	if len(retries) != unreadAttempts || len(manual) != 1 {
		t.Fatalf("%d retries and %d manual actions, want %d retries then one manual action", len(retries), len(manual), unreadAttempts)
	}
	if d := manual[0].Sub(retries[0]); d < unreadWait {
		t.Errorf("given up %s after the first attempt, want at least %s", d, unreadWait)
	}
}

// unreadWalk moves the clock a second at a time for d, letting the loop
// act, and returns the times of web's retries and of its manual steps.
func (f *roundFixture) unreadWalk(d time.Duration, each func(i int)) (retries, manual []time.Time) {
	for i := 0; i < int(d/time.Second); i++ {
		if each != nil {
			each(i)
		}
		f.step(time.Second)
		for _, e := range f.events {
			switch {
			case e.Kind == EventRetry && e.Object != nil && e.Object.Name == "a":
				retries = append(retries, f.now)
			case e.Kind == EventAction && e.Action.Action == refresh.ActionManual && e.Action.Target.Name == "web":
				manual = append(manual, f.now)
			}
		}
		f.events = nil
	}
	return retries, manual
}

// TestNewEditDuringAnUnreadRetryStartsItsAttemptsOver: an edit of an
// object whose unreadable consumer is being retried starts the attempts
// over, whether it arrives while the retry is pending or while the round
// that retries it runs: the new value is retried as a first change is,
// not made a manual step on the old change's leftover attempts.
func TestNewEditDuringAnUnreadRetryStartsItsAttemptsOver(t *testing.T) {
	for _, during := range []string{"pending retry", "round"} {
		t.Run(during, func(t *testing.T) {
			f := newRoundFixture(t)
			f.execTimesOut()
			f.edit("a", map[string]string{"K": "2", "X": "x"})
			var retries int
			for i := 0; retries < unreadAttempts-1 && i < 600; i++ { // the old change nearly given up
				r, m := f.unreadWalk(time.Second, nil)
				if retries += len(r); len(m) > 0 {
					t.Fatalf("the first change was given up after %d retries", retries)
				}
			}
			edited, fired := f.now, during == "pending retry"
			switch during {
			case "pending retry":
				f.edit("a", map[string]string{"K": "3", "X": "x"})
			case "round": // the round that retries the old change reads web when the edit arrives
				f.ex.Before = func() {
					f.ex.Before, fired, edited = nil, true, f.now
					f.edit("a", map[string]string{"K": "3", "X": "x"})
				}
			}
			for i := 0; !fired && i < 600; i++ { // until the retry's round makes the edit
				f.unreadWalk(time.Second, nil)
			}
			r, m := f.unreadWalk(4*time.Minute, nil)
			if len(m) > 0 {
				t.Errorf("the new value was made a manual step %s after its edit (retries at %v): want its attempts started over", m[0].Sub(edited), r)
			}
			if len(r) == 0 {
				t.Error("the new value was not retried")
			}
		})
	}
}

// TestUnreadRetriesAreBoundedByTime: an unreadable consumer is given up
// after about the time the namespace's backoff takes for unreadAttempts
// attempts (about four minutes), said once, however many rounds the edits
// of another object (here every 5 s) make in its namespace meanwhile.
func TestUnreadRetriesAreBoundedByTime(t *testing.T) {
	f := newRoundFixture(t)
	if err := f.client.Tracker().Add(configMap("c", map[string]string{"N": "0"})); err != nil {
		t.Fatal(err)
	}
	f.execTimesOut()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	retries, manual := f.unreadWalk(10*time.Minute, func(i int) {
		if i%5 == 0 {
			f.edit("c", map[string]string{"N": fmt.Sprint(i)})
		}
	})
	if len(retries) == 0 || len(manual) != 1 {
		t.Fatalf("%d retries and manual steps at %v, want retries then one manual step", len(retries), manual)
	}
	if d := manual[0].Sub(retries[0]); d < 4*time.Minute || d > 6*time.Minute {
		t.Errorf("given up %s after the first attempt (%d retries), want about four minutes", d, len(retries))
	}
}

// TestFreshEditIsNotGivenUpWithAnOldOne: a workload whose consumers of
// one object have been unread for unreadWait, and whose consumers of
// another object were just edited, gets the new edit's retries: the new
// edit is not given up with the old one (in one round or in the next).
func TestFreshEditIsNotGivenUpWithAnOldOne(t *testing.T) {
	walk := func(editB time.Duration) (edited, manual time.Time) {
		f := newRoundFixture(t)
		f.execTimesOut()
		start := f.now
		f.edit("a", map[string]string{"K": "2", "X": "x"})
		of := "a" // the object whose give-up is watched: a, then b once edited
		for f.now.Sub(start) < 15*time.Minute && manual.IsZero() {
			if f.now.Sub(start) == editB {
				edited, of = f.now, "b"
				f.edit("b", map[string]string{"L": "2"})
			}
			f.step(time.Second)
			for _, e := range f.events {
				if e.Kind == EventAction && e.Action.Action == refresh.ActionManual && e.Action.Target.Name == "web" &&
					slices.ContainsFunc(e.Action.Consumers, func(c refresh.Consumer) bool { return c.Object.Name == of }) {
					manual = f.now
				}
			}
			f.events = nil
		}
		if manual.IsZero() {
			t.Fatalf("web was never given up for %s (b edited at +%s)", of, editB)
		}
		return edited, manual
	}
	_, gaveUpA := walk(-1) // a alone: when its retries end
	// b edited so that its first round is the one that gives a up
	edited, manual := walk(gaveUpA.Sub(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)) - 2*time.Second)
	if d := manual.Sub(edited); d < unreadWait {
		t.Errorf("web given up %s after b's edit, want at least %s: b's consumer was not retried", d, unreadWait)
	}
}

// TestChangeDeliveredAgainRestartsNothingRecordedCurrent: an edit made
// while the watch was cut, which vol's last restart already read (its
// record holds the object as it is now, version included), is delivered
// again by the relist: a workload that restarts on every change (here a
// volume consumer opted in through Reloader's annotation) is not
// restarted a second time for it; a new edit restarts it.
func TestChangeDeliveredAgainRestartsNothingRecordedCurrent(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.DigestKey = []byte("0123456789abcdef0123456789abcdef")
	f.addVolumeWorkload("vol", map[string]string{ReloaderAuto: "true"})
	cms := f.client.CoreV1().ConfigMaps("ns")
	old, err := cms.Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur := configMap("a", map[string]string{"K": "1", "X": "changed"})
	cur.ResourceVersion = "7" // the fake tracker sets none; the record holds it
	if cur, err = cms.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.recordAsItReadsNow("vol")
	f.loop.noteChange(inspect.ConfigMapObject(old), inspect.ConfigMapObject(cur)) // the relist's
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); strings.Contains(got, "restart deployment/vol") {
		t.Fatalf("actions %q: vol restarted again for data its record says it read", got)
	}
	f.events = nil
	f.edit("a", map[string]string{"K": "1", "X": "changed again"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); !strings.Contains(got, "restart deployment/vol") {
		t.Errorf("actions %q, want vol restarted for a new edit", got)
	}
}

// recordAsItReadsNow writes on workload name the record the loop writes
// once its consumers are current with the objects as they are now.
func (f *roundFixture) recordAsItReadsNow(name string) {
	f.t.Helper()
	snap, err := inspect.Load(context.Background(), f.client, inspect.LoadOptions{Namespace: "ns"})
	if err != nil {
		f.t.Fatal(err)
	}
	for s, r := range digests(f.loop.DigestKey, snap, f.loop.allItems(snap)) {
		if s.Name == name {
			f.loop.writeRecord(context.Background(), s, r)
			return
		}
	}
	f.t.Fatalf("no record of %s", name)
}

// TestConsumersReadAgainGetRetriesOfTheirOwn: a workload whose consumers
// could not be read for nearly unreadWait, then were read and acted on (a
// restart planned for the same change), is not given up when a later
// read fails (its restart's new pods not readable yet): the later failure
// has retries of its own, not what was left of the first ones.
func TestConsumersReadAgainGetRetriesOfTheirOwn(t *testing.T) {
	f := newRoundFixture(t)
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	p := &pending{change: Change{Object: k, Keys: []string{"K"}}, first: f.now,
		unreadSince: map[string]time.Time{"Deployment/web": f.now.Add(-unreadWait + 10*time.Second)}}
	rd := &roundRead{ns: "ns", changes: map[inspect.ObjectKey]*pending{k: p}}
	use := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"},
		Pod: inspect.PodRef{Name: "web-1-a"}, Mode: inspect.ModeEnv, State: inspect.StateUnverifiable, StateReason: "the exec did not finish in time"}
	c := refresh.Consumer{Object: use.Object, Pod: "web-1-a", Mode: inspect.ModeEnv}
	restart := refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"},
		Consumers: []refresh.Consumer{c}}
	if out := f.loop.retryUnread(rd, &refresh.Plan{Actions: []refresh.Action{restart}}); len(out) != 0 {
		t.Fatalf("a restart was taken out of the plan: %+v", out)
	}
	f.now = f.now.Add(30 * time.Second) // the restart's new pods cannot be read
	manual := restart
	manual.Action = refresh.ActionManual
	if out := f.loop.retryUnread(rd, &refresh.Plan{Actions: []refresh.Action{manual}, Uses: []inspect.Use{use}}); len(out) != 1 {
		t.Errorf("web given up 30 s after its consumers were read: want its failed read retried")
	}
}

// TestAnEvictionBesideAnUnreadPodDoesNotPutOffItsGiveUp: a workload whose
// plan evicts one pod (held or refused, again and again) and cannot read
// another is given up for the unread one once unreadWait has passed: the
// eviction of the other pod does not start its time over.
func TestAnEvictionBesideAnUnreadPodDoesNotPutOffItsGiveUp(t *testing.T) {
	f := newRoundFixture(t)
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	p := &pending{change: Change{Object: k, Keys: []string{"K"}}, first: f.now,
		unreadSince: map[string]time.Time{"Deployment/web": f.now.Add(-unreadWait - time.Minute)}}
	rd := &roundRead{ns: "ns", changes: map[inspect.ObjectKey]*pending{k: p}}
	obj := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	use := inspect.Use{Object: obj, Pod: inspect.PodRef{Name: "web-1-b"}, Mode: inspect.ModeEnv, State: inspect.StateUnverifiable,
		StateReason: "not running: the container is waiting (CrashLoopBackOff)"}
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	evict := refresh.Action{Action: refresh.ActionEvict, Target: web, Consumers: []refresh.Consumer{{Object: obj, Pod: "web-1-a", Mode: inspect.ModeEnv}}}
	manual := refresh.Action{Action: refresh.ActionManual, Target: web, Consumers: []refresh.Consumer{{Object: obj, Pod: "web-1-b", Mode: inspect.ModeEnv}}}
	plan := &refresh.Plan{Actions: []refresh.Action{evict, manual}, Uses: []inspect.Use{use}}
	if out := f.loop.retryUnread(rd, plan); len(out) != 0 {
		t.Errorf("web's unread pod taken out for another retry %s after its first failed read: want it given up", unreadWait+time.Minute)
	}
}
