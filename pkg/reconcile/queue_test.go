package reconcile

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// envWorkload adds Deployment name in namespace ns, whose pod reads K of
// ConfigMap cm as an environment variable, and the pod's container as it
// is (K=1) to the fake executor.
func (f *roundFixture) envWorkload(ns, name, cm string) {
	f.t.Helper()
	c := corev1.Container{Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "K"}}}}}
	for _, o := range deploymentObjects(name, nil, c) {
		m, _ := meta.Accessor(o)
		m.SetNamespace(ns)
		if err := f.client.Tracker().Add(o); err != nil {
			f.t.Fatal(err)
		}
	}
	f.ex.Containers[ns+"/"+name+"-1-a/app"] = &readtest.Container{Env: map[string]string{"K": "1"}}
}

// setGeneration makes Deployment name's rollout under way (its generation
// ahead of the one its status observed) or complete.
func (f *roundFixture) setGeneration(name string, underWay bool) {
	f.t.Helper()
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Generation = d.Status.ObservedGeneration
	if underWay {
		d.Generation++
	}
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestMaxConcurrentRestartsCountsRolloutsUnderWay: with
// --max-concurrent-restarts 1, a restart is held while the rollout of one
// sent by an earlier round is still under way, not only while that round
// runs; it goes once that rollout completes.
func TestMaxConcurrentRestartsCountsRolloutsUnderWay(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts = 1
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want one restart (api, the first in order), the other held", got)
	}
	f.setGeneration("api", true)
	for range 5 {
		f.step(MaxRecheck)
		if got := f.took(EventAction); len(got) != 0 {
			t.Fatalf("while the rollout of api is under way: %v, want web held (1 restart under way)", got)
		}
	}
	f.setGeneration("api", false)
	f.step(MaxRecheck)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Fatalf("once api's rollout completed: %q, want the restart of web", got)
	}
}

// TestSlowNamespaceHoldsOneWorker: with the workers running, a namespace
// whose round is stuck reading does not keep another namespace's change
// from being acted on.
func TestSlowNamespaceHoldsOneWorker(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Namespace = ""
	f.envWorkload("other", "svc", "c")
	c := configMap("c", map[string]string{"K": "1"})
	c.Namespace = "other"
	if err := f.client.Tracker().Add(c); err != nil {
		t.Fatal(err)
	}
	// the read of namespace ns's container waits until released
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stuck := stuckExecutor{Executor: f.ex, ns: "ns", entered: func() { once.Do(func() { close(entered) }) }, release: release}
	vo := f.loop.Refresh.Verify
	f.loop.Cluster = refresh.ClientCluster(f.client, stuck, vo, false, "")
	var mu sync.Mutex
	var acted []string
	f.loop.Emit = func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == EventAction {
			acted = append(acted, string(e.Action.Action)+" "+e.Action.Target.String()+" -n "+e.Action.Target.Namespace)
		}
	}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	c2 := c.DeepCopy()
	c2.Data["K"] = "2"
	if _, err := f.client.CoreV1().ConfigMaps("other").Update(context.Background(), c2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.loop.noteChange(inspect.ConfigMapObject(c), inspect.ConfigMapObject(c2))
	f.now = f.now.Add(3 * time.Second) // the workers read the clock: it stays put from here
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := f.loop.startWorkers(ctx)
	f.loop.dispatch()
	<-entered
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(acted, "; ")
		mu.Unlock()
		if got == "restart deployment/svc -n other" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("while namespace ns is stuck: actions %q, want the restart of svc in namespace other", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	stop()
	if got := strings.Join(acted, "; "); !strings.Contains(got, "restart deployment/web -n ns") {
		t.Errorf("once ns answered: actions %q, want web restarted too", got)
	}
}

// stuckExecutor holds every exec in namespace ns until release is closed.
type stuckExecutor struct {
	*readtest.Executor
	ns      string
	entered func()
	release chan struct{}
}

func (e stuckExecutor) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	if t.Namespace == e.ns {
		e.entered()
		<-e.release
	}
	return e.Executor.Exec(ctx, t, argv, stdout, stderr)
}

// TestRestartUnderWayForGoodIsNotCountedForGood: a restart whose rollout
// never completes (no progress deadline: a StatefulSet's, a crash loop)
// stops counting against --max-concurrent-restarts after --rollout-wait,
// reported, so the other restarts go.
func TestRestartUnderWayForGoodIsNotCountedForGood(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 1, 10*time.Minute
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held", got)
	}
	f.setGeneration("api", true) // and so it stays
	var acted []string
	reported := false
	for range 25 {
		f.step(MaxRecheck)
		for _, e := range f.events {
			reported = reported || (e.Kind == EventError && strings.Contains(e.Message, "no longer counted against --max-concurrent-restarts"))
		}
		if acted = f.took(EventAction); len(acted) > 0 {
			break
		}
	}
	if got := strings.Join(acted, "; "); got != "restart deployment/web" || !reported {
		t.Fatalf("after --rollout-wait: %q (reported: %t), want web restarted and api's rollout reported", got, reported)
	}
}

// TestWatermarkWaitsForTheRoundsUnderWay: a change a worker took and has
// not acted on yet holds the watermark back, as a pending one does.
func TestWatermarkWaitsForTheRoundsUnderWay(t *testing.T) {
	f := newRoundFixture(t)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	first := f.now
	f.now = f.now.Add(time.Hour)
	if got := f.loop.take("ns"); len(got) != 1 {
		t.Fatalf("took %d changes, want 1", len(got))
	}
	if got, want := f.loop.actedUntil(), first.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("a change taken by a round under way: %s, want its first edit less the margin %s", got, want)
	}
	f.loop.untake("ns")
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("once the round ended: %s, want now less the margin %s", got, want)
	}
}

// TestShutdownLeavesQueuedWorkPending: a namespace handed to a worker
// after the loop was cancelled is not acted on; its changes stay pending,
// to be reported as interrupted.
func TestShutdownLeavesQueuedWorkPending(t *testing.T) {
	f := newRoundFixture(t)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.now = f.now.Add(3 * time.Second)
	f.loop.dispatch()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.loop.work(ctx)
	if len(f.loop.pending) != 1 || len(f.took(EventAction)) != 0 {
		t.Fatalf("pending %d, actions %v: want the change left pending, no action", len(f.loop.pending), f.events)
	}
}

// TestEditDuringResumeIsKept: an edit seen while the resume read the
// existing state is not replaced by the resume's check of the same object.
func TestEditDuringResumeIsKept(t *testing.T) {
	f := newRoundFixture(t)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	f.loop.putDue(map[inspect.ObjectKey]*pending{k: {change: Change{Object: k}, first: f.now, existing: true, only: map[string]bool{"Deployment/other": true}}})
	p := f.loop.pending[k]
	if p == nil || strings.Join(p.change.Keys, ",") != "K" || !p.existing || p.only != nil {
		t.Fatalf("pending %+v, want the edit of K kept, every use concerned", p)
	}
	f.step(3 * time.Second) // the edit's debounce
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Errorf("actions %q, want the restart of web for the edit", got)
	}
}

// TestResumeKeepsARetryToItsWorkloads: a resume's check of an object
// whose edit is pending as a retry for some workloads only (a restart held
// by the limit, the others' restarts sent) adds the workloads the check
// names to the retry, and does not widen it to every use: the workloads
// already restarted for that edit (here one named in Reloader's reload
// annotation, with no record to tell it current) are not restarted again.
func TestResumeKeepsARetryToItsWorkloads(t *testing.T) {
	f := newRoundFixture(t)
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	f.loop.pending[k] = &pending{change: Change{Object: k, Keys: []string{"K"}}, first: f.now, retry: true, edit: 1,
		only: map[string]bool{"Deployment/held": true}}
	f.loop.putDue(map[inspect.ObjectKey]*pending{k: {change: Change{Object: k}, first: f.now, existing: true,
		only: map[string]bool{"Deployment/held": true, "Deployment/other": true}}})
	p := f.loop.pending[k]
	if p == nil || len(p.only) != 2 || !p.only["Deployment/held"] || !p.only["Deployment/other"] {
		t.Fatalf("pending %+v, want the retry of held widened by other only", p)
	}
}

// TestACheckJoinedToAnEditAfterItsRoundIsNoEditOfItsWorkloads: a
// resume's check of a workload (its record differs, no edit of its own),
// joined to the retry of an edit whose round concerned every use and
// restarted that workload already, checks it: its on-change policy does
// not restart it again for the edit's keys. The workloads the edit retries
// stay edited, an edit whose round is still to come concerns every use,
// and a new edit concerns every use again.
func TestACheckJoinedToAnEditAfterItsRoundIsNoEditOfItsWorkloads(t *testing.T) {
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	check := func() *pending {
		return &pending{change: Change{Object: k}, existing: true, retry: true, only: map[string]bool{"Deployment/held": true, "Deployment/other": true}}
	}
	edit := func() *pending {
		return &pending{change: Change{Object: k, Keys: []string{"K"}}, retry: true, edit: 1, only: map[string]bool{"Deployment/held": true}}
	}
	due := func(f *roundFixture, q *pending) *pending {
		f.loop.pending[k] = q
		c := check()
		c.retry = false
		f.loop.putDue(map[inspect.ObjectKey]*pending{k: c})
		return f.loop.pending[k]
	}
	for _, tc := range []struct {
		name        string
		join        func(f *roundFixture) *pending
		other, held bool // edited for each
	}{
		{"the edit's retry joins the check", func(*roundFixture) *pending { q := check(); q.join(*edit()); return q }, false, true},
		{"the check joins the edit's retry", func(*roundFixture) *pending { q := edit(); q.join(*check()); return q }, false, true},
		{"the resume's check put due beside the edit's retry", func(f *roundFixture) *pending { return due(f, edit()) }, false, true},
		{"an edit whose round is to come", func(f *roundFixture) *pending {
			q := edit()
			q.retry, q.only = false, nil
			return due(f, q)
		}, true, true},
		{"a new edit after the check joined", func(f *roundFixture) *pending {
			due(f, edit())
			f.edit("a", map[string]string{"K": "3", "X": "x"})
			return f.loop.pending[k]
		}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.join(newRoundFixture(t))
			if got := editedFor(p, "Deployment/other"); got != tc.other {
				t.Errorf("other edited: %v, want %v (pending %+v)", got, tc.other, p)
			}
			if got := editedFor(p, "Deployment/held"); got != tc.held {
				t.Errorf("held edited: %v, want %v (pending %+v)", got, tc.held, p)
			}
		})
	}
}

// TestARoundsCheckJoinedByAnEditsCopyKeepsTheCopysWorkloads: a resume's
// check taken by a round, joined by the copy an edit's verification put
// back (a restart that timed out, verified again, never sent again),
// verifies the copy's workload again as the copy says: the check's
// workloads and the copy's, the copy's rechecks, and the copy's edit for
// its own workloads only.
func TestARoundsCheckJoinedByAnEditsCopyKeepsTheCopysWorkloads(t *testing.T) {
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	q := pending{change: Change{Object: k}, existing: true, only: map[string]bool{"Deployment/other": true}}
	q.join(pending{change: Change{Object: k, Keys: []string{"K"}}, retry: true, edit: 1,
		only: map[string]bool{"Deployment/held": true}, recheck: map[string]bool{"Deployment/held": true}})
	if len(q.only) != 2 || !q.only["Deployment/held"] || !q.only["Deployment/other"] || !q.recheck["Deployment/held"] {
		t.Errorf("only %v, recheck %v: want held and other, held verified again", q.only, q.recheck)
	}
	if editedFor(&q, "Deployment/other") || !editedFor(&q, "Deployment/held") {
		t.Errorf("edited: other %v, held %v; want the edit for held only", editedFor(&q, "Deployment/other"), editedFor(&q, "Deployment/held"))
	}
}

// TestRestartsOfAnEarlierLeaderAreCounted: a new leader counts the
// restarts its predecessor sent whose rollouts are still under way
// (UnderWay) against --max-concurrent-restarts from its first round, not
// only once its own gate has read them; it restarts once they complete.
func TestRestartsOfAnEarlierLeaderAreCounted(t *testing.T) {
	f := newRoundFixture(t)
	f.envWorkload("ns", "api", "b") // restarted by the leader before, still rolling
	f.setGeneration("api", true)
	f.loop.MaxConcurrentRestarts = 1
	f.loop.UnderWay = map[refresh.Target]time.Time{{Kind: "Deployment", Namespace: "ns", Name: "api"}: f.now.Add(-time.Minute)}
	f.loop.defaults()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventAction); len(got) != 0 {
		t.Fatalf("while the earlier leader's restart of api rolls: %q, want web held (1 restart under way)", got)
	}
	f.setGeneration("api", false)
	f.step(MaxRecheck)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Fatalf("once api's rollout completed: %q, want the restart of web", got)
	}
}

// TestOldRestartsAreNotUnderWay: a restart an earlier leader sent longer
// than --rollout-wait ago is not counted (its workload's pods are
// unavailable for some other reason), nor reported as a rollout given up.
func TestOldRestartsAreNotUnderWay(t *testing.T) {
	f := newRoundFixture(t)
	f.envWorkload("ns", "api", "b")
	f.setGeneration("api", true)
	f.loop.MaxConcurrentRestarts = 1
	f.loop.UnderWay = map[refresh.Target]time.Time{{Kind: "Deployment", Namespace: "ns", Name: "api"}: f.now.Add(-2 * f.loop.RolloutWait)}
	f.loop.defaults()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Errorf("actions %q, want the restart of web (api's restart is days old)", got)
	}
}

// TestRestartHeldByTheLimitSpendsNoToken: a restart held by
// --max-concurrent-restarts takes no --restart-rate token, however often it
// is checked again: with a limit of 1 and a burst of 2 at one restart an
// hour, web, held while api's rollout goes on, is restarted once that
// rollout completes, not an hour later.
func TestRestartHeldByTheLimitSpendsNoToken(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RestartRate, f.loop.RestartBurst = 1, 1.0/3600, 2
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held by the limit", got)
	}
	f.setGeneration("api", true)
	for range 3 {
		f.step(MaxRecheck)
	}
	f.took(EventAction)
	f.setGeneration("api", false)
	f.step(MaxRecheck)
	events := f.events
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		f.events = events
		t.Fatalf("once api's rollout completed: %q, want the restart of web (the burst's second token); deferred: %q", got, f.messages(EventDeferred))
	}
}

// progressDeadlineExceeded makes Deployment name's rollout stuck: its
// controller observed its generation and reports it past its progress
// deadline.
func (f *roundFixture) progressDeadlineExceeded(name string) {
	f.t.Helper()
	deps := f.client.AppsV1().Deployments("ns")
	d, err := deps.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Generation = d.Status.ObservedGeneration
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestStuckRolloutFreesItsSlotAtOnce: a restart whose rollout passed its
// progress deadline stops counting against --max-concurrent-restarts at
// the next check, not after --rollout-wait (an hour here), reported once
// with the command that shows it; the restart it held goes.
func TestStuckRolloutFreesItsSlotAtOnce(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts = 1
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held by the limit", got)
	}
	f.progressDeadlineExceeded("api")
	var acted, reports []string
	for range 3 {
		f.step(MaxRecheck)
		for _, e := range f.events {
			if e.Kind == EventError && e.Target != nil && e.Target.Name == "api" {
				reports = append(reports, e.Message)
			}
		}
		acted = append(acted, f.took(EventAction)...)
	}
	if got := strings.Join(acted, "; "); got != "restart deployment/web" {
		t.Errorf("once api's rollout is stuck: %q, want the restart of web", got)
	}
	if len(reports) != 1 || !strings.Contains(reports[0], "kubectl rollout status deployment/api -n ns") {
		t.Errorf("reports of api's rollout %q, want one that names `kubectl rollout status deployment/api -n ns`", reports)
	}
}

// TestRestartHeldAgainIsNotCountedPastRolloutWait: a restart whose
// rollout never completes stops counting against
// --max-concurrent-restarts --rollout-wait after it was sent, though new
// edits keep its workload's change held for that rollout in every round
// of the namespace: the restart it held goes.
func TestRestartHeldAgainIsNotCountedPastRolloutWait(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 1, 10*time.Minute
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held", got)
	}
	f.setGeneration("api", true) // and so it stays
	var acted []string
	for i := range 30 {
		if i%6 == 5 { // edited again every three minutes
			f.edit("a", map[string]string{"K": "2", "X": strconv.Itoa(i)})
		}
		f.step(MaxRecheck)
		if acted = f.took(EventAction); len(acted) > 0 {
			break
		}
	}
	if got := strings.Join(acted, "; "); got != "restart deployment/web" {
		t.Fatalf("after --rollout-wait: %q, want web restarted", got)
	}
}

// TestStuckRolloutSeenByTheRoundFreesItsSlot: a restart whose rollout the
// round itself sees past its progress deadline (its workload's change is
// in the round) does not count against --max-concurrent-restarts in that
// round: the restart it held goes at once.
func TestStuckRolloutSeenByTheRoundFreesItsSlot(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxConcurrentRestarts = 1
	f.envWorkload("ns", "api", "a")
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/api" {
		t.Fatalf("first round: %q, want the restart of api, web held by the limit", got)
	}
	f.progressDeadlineExceeded("api")
	f.edit("a", map[string]string{"K": "3", "X": "x"})
	f.step(3 * time.Second)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Errorf("the round that sees api's rollout stuck: %q, want the restart of web", got)
	}
}

// TestRestartUnderWayCountsFromItsAcceptance: a restart let through by the
// gate and accepted by the API server later (the round's annotated pods
// were waited for in between) is under way from its acceptance, so that
// --rollout-wait does not end its count early.
func TestRestartUnderWayCountsFromItsAcceptance(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	f := inFlight{targets: map[refresh.Target]*flight{web: {phase: FlightSending, since: t0}}}
	at := metav1.NewTime(t0.Add(30 * time.Second))
	f.sent([]refresh.Result{{Action: refresh.Action{Action: refresh.ActionRestart, Target: web}, Outcome: refresh.OutcomeApplied, AppliedAt: &at}})
	if fl := f.targets[web]; fl == nil || fl.phase != FlightRolling || !fl.since.Equal(at.Time) {
		t.Errorf("under way %+v, want since the acceptance at %s", fl, at.Time)
	}
}

// TestRetryIsNotTakenBeforeItsTime: a change put back until later (a
// retry's backoff) is left pending by a round of its namespace that runs
// earlier with nothing due (a handed-over restart's check), and that round
// keeps the namespace due when the retry is: it is tried again after its
// backoff, as its line says, not at every round. A round with a change
// due takes it too: what it does covers it.
func TestRetryIsNotTakenBeforeItsTime(t *testing.T) {
	f := newRoundFixture(t)
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	f.loop.requeueAt(pending{change: Change{Object: k, Keys: []string{"K"}}, first: f.now, only: map[string]bool{"Deployment/web": true}}, f.now.Add(time.Minute))
	f.loop.bounce.Due(f.now.Add(time.Minute)) // a round of the namespace for another reason: its turn is taken
	if got := f.loop.take("ns"); len(got) != 0 {
		t.Fatalf("a round before the retry's time took %d changes, want none", len(got))
	}
	f.loop.untake("ns")
	if _, next := f.loop.bounce.Due(f.now); !next.Equal(f.now.Add(time.Minute)) {
		t.Errorf("the namespace is next due at %s, want the retry's time %s", next, f.now.Add(time.Minute))
	}
	f.now = f.now.Add(time.Minute)
	if got := f.loop.take("ns"); got[k] == nil {
		t.Errorf("at the retry's time: took %v, want the retry of a", got)
	}
	f.loop.untake("ns")
	f.loop.requeueAt(pending{change: Change{Object: k, Keys: []string{"K"}}, first: f.now, only: map[string]bool{"Deployment/web": true}}, f.now.Add(time.Minute))
	f.edit("b", map[string]string{"L": "2"})
	if got := f.loop.take("ns"); len(got) != 2 {
		t.Errorf("an edit due with a retry not due yet: took %d changes, want both", len(got))
	}
}
