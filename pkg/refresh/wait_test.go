package refresh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// scriptedVerifier returns one set of items per call (the last repeats).
type scriptedVerifier struct {
	mu      sync.Mutex
	rounds  [][]inspect.Use
	calls   int
	skipped int // uses the wait loop did not ask to verify
}

func (s *scriptedVerifier) VerifyPods(_ context.Context, _ string, _ []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.calls
	if i >= len(s.rounds) {
		i = len(s.rounds) - 1
	}
	s.calls++
	var out []inspect.Use
	for _, it := range s.rounds[i] {
		if want(it) {
			out = append(out, it)
		} else {
			s.skipped++
		}
	}
	return out, nil
}

func (s *scriptedVerifier) VerifyPod(ctx context.Context, ns, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	return s.VerifyPods(ctx, ns, objects, func(it inspect.Use) bool { return it.Object.Namespace == ns && it.Pod.Name == pod })
}

type rolloutAfter struct{ n, calls int }

func (r *rolloutAfter) RolloutDone(context.Context, string, string, string) (bool, string, error) {
	r.calls++
	return r.calls > r.n, "Waiting for deployment \"web\" rollout to finish: 1 old replicas are pending termination...", nil
}

// fakeClock advances by step on every call. Wait reads it from a
// goroutine per annotated pod, hence the lock.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func applied(a Action, at time.Time) Result {
	t := metav1.NewTime(at)
	return Result{Action: a, Outcome: OutcomeApplied, AppliedAt: &t}
}

func TestWaitConverges(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0), step: 100 * time.Millisecond}
	annotate := Action{Action: ActionAnnotate, Target: Target{"Pod", "ns", "api-1"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "api-1", Container: "c", Mode: inspect.ModeVolume}}}
	restart := Action{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "web-old", Container: "c", Mode: inspect.ModeEnv}}}
	pendingVol := use("api-1", "Deployment", "api", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
	syncedVol := use("api-1", "Deployment", "api", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StateInSync)
	newEnv := use("web-new", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)
	bystander := use("other-1", "Deployment", "other", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StateInSync)
	obs := &scriptedVerifier{rounds: [][]inspect.Use{{pendingVol, bystander}, {syncedVol, newEnv, bystander}}}
	results := []Result{applied(annotate, clock.t), applied(restart, clock.t), {Action: Action{Action: ActionManual}, Outcome: OutcomeNotApplied}}
	var last Progress
	got := Wait(context.Background(), results, obs, &rolloutAfter{n: 1}, WaitOptions{Timeout: time.Minute, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now, Progress: func(p Progress) { last = p }})
	if got[0].Outcome != OutcomeCurrent || got[1].Outcome != OutcomeCurrent {
		t.Fatalf("outcomes %s %s (%s / %s)", got[0].Outcome, got[1].Outcome, got[0].Detail, got[1].Detail)
	}
	if got[2].Outcome != OutcomeNotApplied {
		t.Errorf("manual action must stay not-applied, got %s", got[2].Outcome)
	}
	if got[0].CurrentAfter == nil || got[0].CurrentAfter.Duration <= 0 {
		t.Errorf("CurrentAfter not set: %v", got[0].CurrentAfter)
	}
	if obs.skipped == 0 {
		t.Errorf("the wait loop verified a pod no open action covers")
	}
	if last.Current != 2 || last.Total != 2 {
		t.Errorf("last progress %+v", last)
	}
}

func TestWaitTimesOut(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0), step: time.Second}
	annotate := Action{Action: ActionAnnotate, Target: Target{"Pod", "ns", "api-1"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "api-1", Container: "c", Mode: inspect.ModeVolume}}}
	pendingVol := use("api-1", "Deployment", "api", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
	obs := &scriptedVerifier{rounds: [][]inspect.Use{{pendingVol}}}
	got := Wait(context.Background(), []Result{applied(annotate, clock.t)}, obs, &rolloutAfter{}, WaitOptions{Timeout: 5 * time.Second, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now})
	if got[0].Outcome != OutcomeTimeout {
		t.Fatalf("outcome %s, want timeout", got[0].Outcome)
	}
	if got[0].Detail != `pod api-1 container c volume of configmap "cm": pending` {
		t.Errorf("detail %q", got[0].Detail)
	}
}

// nsVerifier returns, per call, the items of the namespace asked for.
type nsVerifier struct{ items []inspect.Use }

func (s *nsVerifier) VerifyPods(_ context.Context, ns string, _ []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error) {
	var out []inspect.Use
	for _, it := range s.items {
		if it.Object.Namespace == ns && want(it) {
			out = append(out, it)
		}
	}
	return out, nil
}

func (s *nsVerifier) VerifyPod(ctx context.Context, ns, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	return s.VerifyPods(ctx, ns, objects, func(it inspect.Use) bool { return it.Pod.Name == pod })
}

// mountUse is a volume use of cm in namespace ns by pod (uid) container c at path.
func mountUse(ns, pod, uid, path string, state inspect.State) inspect.Use {
	it := use(pod, "StatefulSet", "redis", inspect.ModeVolume, inspect.VerdictHotUpdate, state)
	it.Object.Namespace, it.Pod.UID = ns, uid
	it.Volume = &inspect.VolumeRef{Name: "v" + path, MountPath: path}
	return it
}

func annotateOf(items ...inspect.Use) Action {
	a := Action{Action: ActionAnnotate, Target: Target{"Pod", items[0].Object.Namespace, items[0].Pod.Name}}
	for _, it := range items {
		a.Consumers = append(a.Consumers, ConsumerOf(it))
	}
	return a
}

func waitOnce(t *testing.T, results []Result, obs Verifier) []Result {
	t.Helper()
	clock := &fakeClock{t: time.Unix(1000, 0), step: time.Second}
	return Wait(context.Background(), results, obs, &rolloutAfter{}, WaitOptions{Timeout: 3 * time.Second, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now})
}

// With -A, redis-0 in staging being in-sync must not mark redis-0 in prod
// current.
func TestWaitTellsNamespacesApart(t *testing.T) {
	prodPending := mountUse("prod", "redis-0", "u-prod", "/etc/redis", inspect.StatePending)
	stagingSynced := mountUse("staging", "redis-0", "u-staging", "/etc/redis", inspect.StateInSync)
	results := []Result{applied(annotateOf(prodPending), time.Unix(1000, 0)), applied(annotateOf(stagingSynced), time.Unix(1000, 0))}
	got := waitOnce(t, results, &nsVerifier{items: []inspect.Use{stagingSynced, prodPending}})
	if got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "pending") {
		t.Errorf("prod/redis-0: outcome %s (%s), want timeout: it is still pending", got[0].Outcome, got[0].Detail)
	}
	if got[1].Outcome != OutcomeCurrent {
		t.Errorf("staging/redis-0: outcome %s (%s), want current", got[1].Outcome, got[1].Detail)
	}
}

// Two mounts of one ConfigMap in one container are two consumers: one
// in-sync mount does not make the other current.
func TestWaitTellsTwoMountsApart(t *testing.T) {
	a := mountUse("ns", "api-1", "u1", "/etc/a", inspect.StatePending)
	b := mountUse("ns", "api-1", "u1", "/etc/b", inspect.StatePending)
	if ConsumerOf(a) == ConsumerOf(b) {
		t.Fatalf("two mounts give one consumer: %+v", ConsumerOf(a))
	}
	aSynced, bPending := a, b
	aSynced.State = inspect.StateInSync
	got := waitOnce(t, []Result{applied(annotateOf(a, b), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{aSynced, bPending}})
	if got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "/etc/b") {
		t.Errorf("outcome %s (%s), want timeout naming the pending mount /etc/b", got[0].Outcome, got[0].Detail)
	}
}

// A pod re-created with the same name is another pod: its in-sync use is
// reported as the replacement's, without claiming the annotation made it
// current.
func TestWaitTellsARecreatedPod(t *testing.T) {
	old := mountUse("ns", "redis-0", "u-old", "/etc/redis", inspect.StatePending)
	renewed := mountUse("ns", "redis-0", "u-new", "/etc/redis", inspect.StateInSync)
	got := waitOnce(t, []Result{applied(annotateOf(old), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{renewed}})
	r := got[0]
	if r.Outcome != OutcomeCurrent || r.CurrentAfter != nil || !strings.Contains(r.Detail, "re-created") {
		t.Errorf("outcome %s after %v (%s), want current, no time-to-current, and the detail saying the pod was re-created", r.Outcome, r.CurrentAfter, r.Detail)
	}
}

// A consumer that can never be verified (here a projected volume whose
// files an unread Secret may write, with each permanent cause) ends at
// once as unverifiable, whatever words its reason uses.
func TestWaitEndsAtOnceForPermanentCauses(t *testing.T) {
	for _, cause := range []inspect.StateCause{inspect.CauseSecretsNotRead, inspect.CauseVolumeNotWritable, inspect.CauseNoShell, inspect.CauseExecForbidden} {
		t.Run(string(cause), func(t *testing.T) {
			it := mountUse("ns", "api-1", "u1", "/etc/app", inspect.StateUnverifiable)
			it.Mode, it.StateCause = inspect.ModeProjected, cause
			it.StateReason = "the files of the configmap that could be compared match (1 file), but token may come from Secret \"s\", which was not read (add --secrets)"
			obs := &nsVerifier{items: []inspect.Use{it}}
			got := waitOnce(t, []Result{applied(annotateOf(it), time.Unix(1000, 0))}, obs)
			if got[0].Outcome != OutcomeUnverifiable || !strings.Contains(got[0].Detail, "cannot be verified") {
				t.Errorf("outcome %s (%s), want unverifiable at once", got[0].Outcome, got[0].Detail)
			}
		})
	}
	// a passing cause is waited for
	it := mountUse("ns", "api-1", "u1", "/etc/app", inspect.StateUnverifiable)
	it.StateCause, it.StateReason = inspect.CauseNotRunning, "not running: the container is waiting (ContainerCreating)"
	if got := waitOnce(t, []Result{applied(annotateOf(it), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{it}}); got[0].Outcome != OutcomeTimeout {
		t.Errorf("not-running: outcome %s, want timeout", got[0].Outcome)
	}
}

// A partitioned StatefulSet restart converges on the pods it replaces: a
// spared pod below the partition, still stale, does not hold it back; a
// planned pod still running under its old UID does.
func TestWaitPartitionedRestartConvergesOnPlannedPods(t *testing.T) {
	wl := map[WorkloadKey]WorkloadInfo{{"StatefulSet", "ns", "db"}: {Exists: true, Partition: 2, Pods: dbPods(3)}}
	stale := func(pod, uid string) inspect.Use {
		it := use(pod, "StatefulSet", "db", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
		it.Pod.UID = uid
		return it
	}
	plan := PlanActions(PlanInput{Items: []inspect.Use{stale("db-2", "u-db-2")}, Workload: wl, Strategy: StrategyAuto, Verified: true})
	if summary(plan) != "restart statefulset/db" {
		t.Fatalf("plan %q", summary(plan))
	}
	spared := stale("db-0", "u-db-0") // below the partition: never replaced
	renewed := stale("db-2", "u-db-2-new")
	renewed.State = inspect.StateCurrent
	got := waitOnce(t, []Result{applied(plan[0], time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{spared, renewed}})
	if got[0].Outcome != OutcomeCurrent {
		t.Errorf("outcome %s (%s), want current: db-2 was replaced and is current", got[0].Outcome, got[0].Detail)
	}
	got = waitOnce(t, []Result{applied(plan[0], time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{spared, func() inspect.Use { it := stale("db-2", "u-db-2"); it.State = inspect.StateCurrent; return it }()}})
	if got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "db-2 has not been replaced") {
		t.Errorf("old db-2: outcome %s (%s), want timeout: it was not replaced yet", got[0].Outcome, got[0].Detail)
	}
}

// A container that is not running when the wait reads it (here: every exec
// kills its PID 1, so the pod's status shows it terminated) is n/a from the
// pod's status alone: that proves nothing about its volume, and the
// annotate must never be reported current for it. Before the fix the wait
// counted any n/a as current ("annotate ... current after 1.0s" on such a
// container, whose planned state was unverifiable).
func TestWaitNeverCurrentWithoutARead(t *testing.T) {
	planned := mountUse("ns", "exits", "u1", "/etc/cfg", inspect.StateUnverifiable)
	planned.StateCause, planned.StateReason = inspect.CauseNotRunning, "not running: the container exited during the observation"
	terminated := mountUse("ns", "exits", "u1", "/etc/cfg", inspect.StateNA)
	terminated.StateReason = "the container has terminated (Completed): nothing to check"
	got := waitOnce(t, []Result{applied(annotateOf(planned), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{terminated}})
	if got[0].Outcome == OutcomeCurrent || got[0].CurrentAfter != nil {
		t.Fatalf("outcome %s after %v (%s): a terminated container was taken for a current one", got[0].Outcome, got[0].CurrentAfter, got[0].Detail)
	}
	if got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "terminated") {
		t.Errorf("outcome %s (%s), want timeout saying the container has terminated", got[0].Outcome, got[0].Detail)
	}
	// the same n/a from a successful read (nothing to compare) is settled
	read := terminated
	read.Verified = true
	if got := waitOnce(t, []Result{applied(annotateOf(planned), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{read}}); got[0].Outcome != OutcomeCurrent {
		t.Errorf("n/a after a read: outcome %s (%s), want current", got[0].Outcome, got[0].Detail)
	}
	// an init container that has not run yet reads the current data when it starts
	initNA := use("web-new", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateNA)
	initNA.Container.Type = inspect.ContainerInit
	if !settled(initNA) {
		t.Errorf("an init container that has not run yet must count as current")
	}
	// a failed read never makes it current, whatever the plan observed before
	was := mountUse("ns", "api-1", "u3", "/etc/app", inspect.StateInSync)
	if got := waitOnce(t, []Result{applied(annotateOf(was), time.Unix(1000, 0))}, failingVerifier{}); got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "observe: ") {
		t.Errorf("failed reads: outcome %s (%s), want timeout with the error", got[0].Outcome, got[0].Detail)
	}
}

type failingVerifier struct{}

func (failingVerifier) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, errors.New("connection refused")
}

func (failingVerifier) VerifyPod(context.Context, string, string, []inspect.ObjectKey) ([]inspect.Use, error) {
	return nil, errors.New("connection refused")
}

// timedVerifier records when each pod was read and answers in-sync from
// the second read of a pod on (the first is still pending).
type timedVerifier struct {
	mu    sync.Mutex
	reads map[string][]time.Time
	items map[string]inspect.Use
}

func (o *timedVerifier) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, errors.New("annotate actions must be verified pod by pod, not in rounds")
}

func (o *timedVerifier) VerifyPod(_ context.Context, _, pod string, _ []inspect.ObjectKey) ([]inspect.Use, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads[pod] = append(o.reads[pod], time.Now())
	it := o.items[pod]
	if len(o.reads[pod]) > 1 {
		it.State = inspect.StateInSync
	}
	return []inspect.Use{it}, nil
}

// Each annotated pod is read on its own, PodDelay after its own patch (not
// in a round after the last one), and again with a backoff until current;
// its CurrentAfter runs from its patch to the read that proved it.
func TestWaitVerifiesEachPodAfterItsPatch(t *testing.T) {
	base := time.Now()
	obs := &timedVerifier{reads: map[string][]time.Time{}, items: map[string]inspect.Use{}}
	var results []Result
	for i, pod := range []string{"a", "b"} {
		it := mountUse("ns", pod, "u-"+pod, "/etc/app", inspect.StatePending)
		obs.items[pod] = it
		// a was patched 200ms after b
		results = append(results, applied(annotateOf(it), base.Add(time.Duration(i)*-200*time.Millisecond)))
	}
	got := Wait(context.Background(), results, obs, &rolloutAfter{}, WaitOptions{Timeout: 10 * time.Second, Interval: 20 * time.Millisecond, PodDelay: 100 * time.Millisecond})
	for i, pod := range []string{"a", "b"} {
		r := got[i]
		if r.Outcome != OutcomeCurrent || r.CurrentAfter == nil {
			t.Fatalf("pod %s: outcome %s (%s), want current", pod, r.Outcome, r.Detail)
		}
		reads := obs.reads[pod]
		if len(reads) != 2 {
			t.Errorf("pod %s read %d times, want 2 (pending, then in-sync)", pod, len(reads))
		}
		if first := reads[0].Sub(r.AppliedAt.Time); first < 100*time.Millisecond || first > time.Second {
			t.Errorf("pod %s first read %s after its patch, want PodDelay (100ms) after it", pod, first)
		}
		if after := r.CurrentAfter.Duration; after < reads[1].Sub(r.AppliedAt.Time)-50*time.Millisecond || after > reads[1].Sub(r.AppliedAt.Time)+50*time.Millisecond {
			t.Errorf("pod %s current after %s, want the time of its second read (%s)", pod, after, reads[1].Sub(r.AppliedAt.Time))
		}
	}
	if !obs.reads["b"][0].Before(obs.reads["a"][0]) {
		t.Errorf("pod b (patched first) was read after pod a")
	}
}

// The same ConfigMap twice in one projected volume (different items) is
// two consumers: one in-sync must not make the other, still pending,
// current.
func TestWaitTellsRepeatedProjectedSourcesApart(t *testing.T) {
	first := mountUse("ns", "redis-0", "u0", "/etc/all", inspect.StateInSync)
	first.Mode, first.Volume.Source = inspect.ModeProjected, 1
	second := first
	second.Volume = &inspect.VolumeRef{Name: first.Volume.Name, MountPath: first.Volume.MountPath, Source: 3}
	second.State = inspect.StatePending
	if ConsumerOf(first).ID() == ConsumerOf(second).ID() {
		t.Fatalf("the two consumers share the ID %+v", ConsumerOf(first).ID())
	}
	got := waitOnce(t, []Result{applied(annotateOf(first, second), time.Unix(1000, 0))}, &nsVerifier{items: []inspect.Use{first, second}})
	if got[0].Outcome != OutcomeTimeout || !strings.Contains(got[0].Detail, "pending") {
		t.Errorf("outcome %s (%s), want timeout on the pending second source", got[0].Outcome, got[0].Detail)
	}
}

// TestNamedRestartIsVerifiedByItsRollout: a restart whose consumers are all
// named (Reloader's reload annotation, not read by the pod spec) is reached
// once rolled out, with no pod to read; one with a real use waits for it.
func TestNamedRestartIsVerifiedByItsRollout(t *testing.T) {
	target := Target{Kind: "Deployment", Namespace: "ns", Name: "api"}
	obj := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app", Exists: true}
	named := Result{Action: Action{Action: ActionRestart, Target: target, Consumers: []Consumer{{Object: obj, Mode: ModeNamed}}}}
	if p, detail, _ := converged(named, nil, nil); p != reached || !strings.Contains(detail, "does not read") {
		t.Errorf("named restart: %v %q, want reached", p, detail)
	}
	used := named
	used.Action.Consumers = []Consumer{{Object: obj, Mode: inspect.ModeEnv, Pod: "api-1", Container: "c"}}
	if p, _, _ := converged(used, nil, nil); p != notYet {
		t.Errorf("restart with an env use and no pod observed: %v, want notYet", p)
	}
}

// TestRestartOfAnObjectChangedAgainIsReached: a restart's new pod that is
// stale is reached when the caller says the object's data changed again
// after the plan (the pod read it after the restart was sent; the newer
// edit is a change of its own), and waited for when it did not, or when the
// pod cannot be read; a StatefulSet still waits for each planned pod.
func TestRestartOfAnObjectChangedAgainIsReached(t *testing.T) {
	obj := inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "app", Exists: true}
	restart := func(kind string, pods ...string) Result {
		return Result{Action: Action{Action: ActionRestart, Target: Target{Kind: kind, Namespace: "ns", Name: "api"}, Pods: pods,
			Consumers: []Consumer{{Object: obj, Mode: inspect.ModeEnv, Pod: "api-0", Container: "c"}}}}
	}
	use := func(kind, pod string, state inspect.State) inspect.Use {
		return inspect.Use{Object: obj, Workload: inspect.WorkloadRef{Kind: kind, Name: "api"}, Pod: inspect.PodRef{Name: pod, UID: "new"},
			Mode: inspect.ModeEnv, State: state}
	}
	changed := func(inspect.ObjectKey) bool { return true }
	for _, tc := range []struct {
		name  string
		r     Result
		items []inspect.Use
		again func(inspect.ObjectKey) bool
		want  progress
	}{
		{"stale, unchanged since the plan", restart("Deployment"), []inspect.Use{use("Deployment", "api-2", inspect.StateStale)}, nil, notYet},
		{"stale, changed again", restart("Deployment"), []inspect.Use{use("Deployment", "api-2", inspect.StateStale)}, changed, reached},
		{"unverifiable for now, changed again", restart("Deployment"), []inspect.Use{use("Deployment", "api-2", inspect.StateUnverifiable)}, changed, notYet},
		{"a StatefulSet pod not seen yet", restart("StatefulSet", "api-0", "api-1"), []inspect.Use{use("StatefulSet", "api-0", inspect.StateStale)}, changed, notYet},
	} {
		p, detail, _ := converged(tc.r, tc.items, tc.again)
		if p != tc.want || (p == reached && !strings.Contains(detail, "changed again since")) {
			t.Errorf("%s: %v %q, want %v", tc.name, p, detail, tc.want)
		}
	}
}

// gatedPatcher holds the patch of pod hold until first has been read.
type gatedPatcher struct {
	hold  string
	first chan struct{}
}

func (p *gatedPatcher) Patch(ctx context.Context, t Target, _ types.PatchType, _ []byte, _ bool) error {
	if t.Name != p.hold {
		return nil
	}
	select {
	case <-p.first:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("pod " + t.Name + " was patched before pod api-1's read: the wait started after all the patches")
	}
}

// firstReadVerifier reports every pod in-sync, closing first at the first
// read of pod api-1.
type firstReadVerifier struct {
	once  sync.Once
	first chan struct{}
}

func (v *firstReadVerifier) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, errors.New("no poll expected")
}

func (v *firstReadVerifier) VerifyPod(_ context.Context, _, pod string, _ []inspect.ObjectKey) ([]inspect.Use, error) {
	if pod == "api-1" {
		v.once.Do(func() { close(v.first) })
	}
	return []inspect.Use{use(pod, "Deployment", "api", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StateInSync)}, nil
}

// TestPodsAreVerifiedAsTheirPatchesLand: a pod is read as soon as its own
// patch is answered, while other patches are still under way (the patch of
// api-2 waits for the read of api-1).
func TestPodsAreVerifiedAsTheirPatchesLand(t *testing.T) {
	first := make(chan struct{})
	annotate := func(pod string) Action {
		return Action{Action: ActionAnnotate, Target: Target{"Pod", "ns", pod},
			Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: pod, Container: "c", Mode: inspect.ModeVolume}}}
	}
	actions := []Action{annotate("api-1"), annotate("api-2")}
	w := NewPodWaits(context.Background(), &firstReadVerifier{first: first}, WaitOptions{Timeout: time.Minute, Interval: time.Millisecond, PodDelay: -1})
	w.Expect(2)
	results := ApplyThen(context.Background(), &gatedPatcher{hold: "api-2", first: first}, actions, DryRunNone, time.Now, w.Add)
	results = w.Finish(results, &rolloutAfter{})
	for _, r := range results {
		if r.Outcome != OutcomeCurrent {
			t.Errorf("%s: %s (%s%s)", r.Target.Name, r.Outcome, r.Detail, r.Error)
		}
	}
}

// TestHandedOverRestartIsRecheckedUntilItsDeadline: a wait with a hand-over
// leaves a restart not verified by then pending (outcome applied), and
// Recheck verifies it later: current once rolled out and its new pods are,
// a timeout once the wait's deadline has passed; pending in between.
func TestHandedOverRestartIsRecheckedUntilItsDeadline(t *testing.T) {
	restart := Action{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "web-old", Container: "c", Mode: inspect.ModeEnv}}}
	newEnv := use("web-new", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)
	for _, tc := range []struct {
		name     string
		rollouts int // polls before the rollout is complete
		want     Outcome
	}{{"rolled out later", 10, OutcomeCurrent}, {"never rolled out", 1 << 20, OutcomeTimeout}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1000, 0), step: time.Second}
			obs := &scriptedVerifier{rounds: [][]inspect.Use{{newEnv}}}
			rc := &rolloutAfter{n: tc.rollouts}
			o := WaitOptions{Timeout: time.Minute, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now}
			w := NewPodWaits(context.Background(), obs, o)
			w.handOver = w.start.Add(3 * time.Second)
			got := w.Finish([]Result{applied(restart, clock.t)}, rc)
			if !got[0].Pending || got[0].Outcome != OutcomeApplied {
				t.Fatalf("at the hand-over: pending %v, outcome %s; want pending, applied", got[0].Pending, got[0].Outcome)
			}
			for range 200 {
				if got = Recheck(context.Background(), got, obs, rc, o); !got[0].Pending {
					break
				}
				if got[0].Outcome != OutcomeApplied {
					t.Fatalf("pending with outcome %s", got[0].Outcome)
				}
			}
			if got[0].Pending || got[0].Outcome != tc.want {
				t.Fatalf("after the rechecks: pending %v, outcome %s (%s); want %s", got[0].Pending, got[0].Outcome, got[0].Detail, tc.want)
			}
			if tc.want == OutcomeCurrent && (got[0].CurrentAfter == nil || got[0].CurrentAfter.Duration < 10*time.Second) {
				t.Errorf("currentAfter %v, want from the patch to the recheck that saw it (10 s or more)", got[0].CurrentAfter)
			}
			if tc.want == OutcomeTimeout && !clock.t.After(time.Unix(1060, 0)) {
				t.Errorf("timed out at %s, before the wait's deadline", clock.t)
			}
		})
	}
}

// countingVerifier answers every read with the uses of its pods, each
// unverifiable (an exec that timed out) until call readableAt, then
// current; it counts the pod reads asked for (one exec each).
type countingVerifier struct {
	pods        []string
	readableAt  int
	calls, read int
}

func (c *countingVerifier) VerifyPods(_ context.Context, _ string, _ []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error) {
	c.calls++
	var out []inspect.Use
	for _, p := range c.pods {
		it := use(p, "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)
		if c.calls < c.readableAt {
			it.State, it.StateCause = inspect.StateUnverifiable, inspect.CauseExecTimeout
		}
		if want(it) {
			c.read++
			out = append(out, it)
		}
	}
	return out, nil
}

func (c *countingVerifier) VerifyPod(ctx context.Context, ns, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	return c.VerifyPods(ctx, ns, objects, func(it inspect.Use) bool { return it.Pod.Name == pod })
}

// TestUnreadablePodsOfARestartAreProbed: once a poll of a restart cannot
// read its new pods (an exec that timed out), the polls read one of them
// until it is read, then all again: 25 pods that cannot be read for 40
// polls cost 25 + 40 reads, not 1,000 (the 41st reads the probe, the
// 42nd all 25); the restart is verified current only once every pod
// was read.
func TestUnreadablePodsOfARestartAreProbed(t *testing.T) {
	restart := Action{Action: ActionRestart, Target: Target{"Deployment", "ns", "web"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "web-old", Container: "c", Mode: inspect.ModeEnv}}}
	obs := &countingVerifier{readableAt: 41}
	for i := range 25 {
		obs.pods = append(obs.pods, fmt.Sprintf("web-new-%d", i))
	}
	clock := &fakeClock{t: time.Unix(1000, 0), step: time.Second}
	o := WaitOptions{Timeout: time.Hour, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now}
	w := NewPodWaits(context.Background(), obs, o)
	w.handOver = w.start.Add(-time.Second) // handed over at its first poll
	got := w.Finish([]Result{applied(restart, clock.t)}, &rolloutAfter{})
	for got[0].Pending && obs.calls < 100 {
		got = Recheck(context.Background(), got, obs, &rolloutAfter{}, o)
	}
	if got[0].Outcome != OutcomeCurrent {
		t.Fatalf("outcome %s (%s), want current once the pods can be read", got[0].Outcome, got[0].Detail)
	}
	if want := 25 + 40 + 25; obs.read != want || obs.calls != 42 {
		t.Errorf("%d pod reads in %d polls, want %d in 42 (all, then one a poll while it cannot be read, then all)", obs.read, obs.calls, want)
	}
}

// TestUnreadableAnnotatedPodIsReadWithABackoff: an annotated pod that
// cannot be read is read again with a backoff up to 8 times the
// interval's (16 s at the defaults), not every 2 s: 14 reads over a
// 2-minute --timeout, not 60 or more.
func TestUnreadableAnnotatedPodIsReadWithABackoff(t *testing.T) {
	annotate := Action{Action: ActionAnnotate, Target: Target{"Pod", "ns", "web-new-0"},
		Consumers: []Consumer{{Object: inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}, Pod: "web-new-0", Container: "c", Mode: inspect.ModeEnv}}}
	obs := &countingVerifier{pods: []string{"web-new-0"}, readableAt: 1 << 20}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	sleep := func(_ context.Context, d time.Duration) { clock.mu.Lock(); clock.t = clock.t.Add(d); clock.mu.Unlock() }
	got := Wait(context.Background(), []Result{applied(annotate, clock.t)}, obs, &rolloutAfter{},
		WaitOptions{Timeout: 2 * time.Minute, PodDelay: -1, Now: clock.now, Sleep: sleep})
	if got[0].Outcome != OutcomeTimeout {
		t.Fatalf("outcome %s, want timeout", got[0].Outcome)
	}
	if obs.read != 14 {
		t.Errorf("%d reads over 2 minutes, want 14", obs.read)
	}
}
