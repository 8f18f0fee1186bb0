package refresh

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// pdbRefusal is the 429 the Eviction API answers when a
// PodDisruptionBudget allows no disruption.
func pdbRefusal() error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 2 healthy pods and has 2 currently"})
	return err
}

// fakeEvictor is a workload controller in miniature: an evicted pod turns
// terminating and a new pod appears, Ready one listing later. It records
// the lowest number of Ready pods seen at an eviction.
type fakeEvictor struct {
	mu       sync.Mutex
	pods     []WorkloadPod
	fails    map[string][]error // pod -> errors to return first, in order
	sent     []string
	dryRuns  []bool
	n        int
	minReady int
	noNew    bool // replacements never become Ready
	listErr  error
}

func newFakeEvictor(names ...string) *fakeEvictor {
	f := &fakeEvictor{fails: map[string][]error{}, minReady: len(names)}
	for _, n := range names {
		f.pods = append(f.pods, WorkloadPod{Name: n, UID: "u-" + n, Ready: true})
	}
	return f
}

func (f *fakeEvictor) Evict(_ context.Context, _, name, uid string, dryRun bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, name)
	f.dryRuns = append(f.dryRuns, dryRun)
	if errs := f.fails[name]; len(errs) > 0 {
		f.fails[name] = errs[1:]
		return errs[0]
	}
	if dryRun {
		return nil
	}
	for i := range f.pods {
		p := &f.pods[i]
		if p.Name == name && p.UID == uid && !p.Terminating {
			p.Terminating, p.Ready = true, false
			f.n++
			f.pods = append(f.pods, WorkloadPod{Name: fmt.Sprintf("%s-new%d", name, f.n), UID: fmt.Sprintf("new-%d", f.n)})
			ready := 0
			for _, q := range f.pods {
				if q.Ready {
					ready++
				}
			}
			if ready < f.minReady {
				f.minReady = ready
			}
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func (f *fakeEvictor) WorkloadPods(context.Context, string, string, string) ([]WorkloadPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	out := append([]WorkloadPod(nil), f.pods...)
	if !f.noNew {
		for i := range f.pods { // the next listing sees them Ready
			if !f.pods[i].Terminating && strings.HasPrefix(f.pods[i].UID, "new-") {
				f.pods[i].Ready = true
			}
		}
	}
	return out, nil
}

func evictAction(pods ...string) Result {
	a := Action{Action: ActionEvict, Target: Target{"Deployment", "ns", "web"}, Pods: pods}
	for _, p := range pods {
		a.addPod(p, "u-"+p)
	}
	return Result{Action: a, Outcome: OutcomeNotApplied}
}

func fastEvict(o EvictOptions) EvictOptions {
	o.RetryFirst, o.RetryMax, o.Poll = time.Millisecond, 4*time.Millisecond, time.Millisecond
	if o.Deadline.IsZero() {
		o.Deadline = time.Now().Add(10 * time.Second)
	}
	return o
}

// One pod at a time, each replacement Ready before the next eviction: the
// workload never has fewer than n-1 Ready pods; a 429 of a
// PodDisruptionBudget is retried (and said so), not a failure.
func TestApplyEvictionsRetriesPDBRefusals(t *testing.T) {
	f := newFakeEvictor("web-a", "web-b", "web-c")
	f.fails["web-b"] = []error{pdbRefusal(), pdbRefusal()}
	var progress []string
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("web-a", "web-b", "web-c")},
		fastEvict(EvictOptions{Progress: func(s string) { progress = append(progress, s) }}))
	r := res[0]
	if r.Outcome != OutcomeApplied || r.Error != "" {
		t.Fatalf("outcome %s error %q, want applied", r.Outcome, r.Error)
	}
	if got := strings.Join(r.Evicted, ","); got != "web-a,web-b,web-c" {
		t.Errorf("evicted %s, want web-a,web-b,web-c in order", got)
	}
	if got := strings.Join(f.sent, ","); got != "web-a,web-b,web-b,web-b,web-c" {
		t.Errorf("evictions sent %s: web-b must be retried twice", got)
	}
	if len(r.Replacements) != 3 || len(r.replacementUIDs) != 3 || r.AppliedAt == nil {
		t.Errorf("replacements %v (%v), appliedAt %v", r.Replacements, r.replacementUIDs, r.AppliedAt)
	}
	if f.minReady != 2 {
		t.Errorf("lowest Ready count at an eviction %d, want 2 (one pod at a time)", f.minReady)
	}
	all := strings.Join(progress, "\n")
	if !strings.Contains(all, "pod ns/web-b: the eviction is refused by a PodDisruptionBudget") || !strings.Contains(all, "needs 2 healthy pods") || !strings.Contains(all, "retrying in") {
		t.Errorf("progress does not say the PDB refused and it retries:\n%s", all)
	}
}

// --max-unavailable 2: two evictions, then the wait for two new pods.
func TestApplyEvictionsInBatches(t *testing.T) {
	f := newFakeEvictor("a", "b", "c")
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("a", "b", "c")}, fastEvict(EvictOptions{MaxUnavailable: 2}))
	if res[0].Outcome != OutcomeApplied || f.minReady != 1 {
		t.Fatalf("outcome %s (%s), lowest Ready %d, want applied and 1", res[0].Outcome, res[0].Error, f.minReady)
	}
}

// A refusal that lasts past --timeout fails the action and says which pods
// were evicted and which were not; later evict actions are not started.
func TestApplyEvictionsTimeoutSaysWhatWasEvicted(t *testing.T) {
	f := newFakeEvictor("web-a", "web-b", "web-c")
	for i := 0; i < 1000; i++ {
		f.fails["web-b"] = append(f.fails["web-b"], pdbRefusal())
	}
	second := evictAction("other-1")
	second.Target.Name = "other"
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("web-a", "web-b", "web-c"), second},
		fastEvict(EvictOptions{Deadline: time.Now().Add(150 * time.Millisecond)}))
	r := res[0]
	if r.Outcome != OutcomeFailed || strings.Join(r.Evicted, ",") != "web-a" || strings.Join(r.NotEvicted, ",") != "web-b,web-c" {
		t.Fatalf("outcome %s evicted %v not evicted %v, want failed, web-a, web-b+web-c", r.Outcome, r.Evicted, r.NotEvicted)
	}
	if !strings.Contains(r.Error, "PodDisruptionBudget") || !strings.Contains(r.Error, "--timeout") {
		t.Errorf("error %q must name the PDB and the timeout", r.Error)
	}
	if res[1].Outcome != OutcomeNotApplied || strings.Join(res[1].NotEvicted, ",") != "other-1" || !strings.Contains(res[1].Error, "not started") {
		t.Errorf("second action %+v, want not started", res[1])
	}
}

// An error that is not a refusal is not retried.
func TestApplyEvictionsForbiddenFailsAtOnce(t *testing.T) {
	f := newFakeEvictor("a", "b")
	f.fails["a"] = []error{apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "a", fmt.Errorf("no"))}
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("a", "b")}, fastEvict(EvictOptions{}))
	if r := res[0]; r.Outcome != OutcomeFailed || len(r.Evicted) != 0 || strings.Join(r.NotEvicted, ",") != "a,b" || len(f.sent) != 1 {
		t.Fatalf("got %+v, sent %v", r, f.sent)
	}
}

// A replacement that never becomes Ready: the eviction stops there.
func TestApplyEvictionsWaitsForReplacements(t *testing.T) {
	f := newFakeEvictor("a", "b")
	f.noNew = true
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("a", "b")}, fastEvict(EvictOptions{Deadline: time.Now().Add(100 * time.Millisecond)}))
	r := res[0]
	if r.Outcome != OutcomeFailed || strings.Join(r.Evicted, ",") != "a" || strings.Join(r.NotEvicted, ",") != "b" || !strings.Contains(r.Error, "0 of 1 new pods Ready") {
		t.Fatalf("got outcome %s evicted %v not %v error %q", r.Outcome, r.Evicted, r.NotEvicted, r.Error)
	}
}

// Server dry run: every eviction is sent with dryRun, none waited for; a
// refusal is a note. Client dry run sends nothing.
func TestApplyEvictionsDryRun(t *testing.T) {
	f := newFakeEvictor("a", "b")
	f.fails["b"] = []error{pdbRefusal()}
	res := ApplyEvictions(context.Background(), f, []Result{evictAction("a", "b")}, fastEvict(EvictOptions{DryRun: DryRunServer}))
	if r := res[0]; r.Outcome != OutcomeDryRun || !strings.Contains(r.Detail, "a real run waits") || len(f.sent) != 2 || !f.dryRuns[0] || !f.dryRuns[1] {
		t.Fatalf("server dry run: %+v sent %v dryRun %v", r, f.sent, f.dryRuns)
	}
	f = newFakeEvictor("a")
	res = ApplyEvictions(context.Background(), f, []Result{evictAction("a")}, fastEvict(EvictOptions{DryRun: DryRunClient}))
	if len(f.sent) != 0 || res[0].Outcome != OutcomeNotApplied {
		t.Fatalf("client dry run sent %v", f.sent)
	}
}

func TestEvictionOrderAndBatches(t *testing.T) {
	got := EvictionOrder("StatefulSet", "db", []string{"db-0", "db-2", "db-10", "db-1"}, map[string]bool{"db-0": true, "db-2": true, "db-10": true})
	if s := strings.Join(got, ","); s != "db-1,db-10,db-2,db-0" {
		t.Errorf("StatefulSet order %s, want the unready db-1 first, then highest ordinal down", s)
	}
	got = EvictionOrder("Deployment", "web", []string{"web-c", "web-a", "web-b"}, map[string]bool{"web-a": true, "web-b": false, "web-c": true})
	if s := strings.Join(got, ","); s != "web-b,web-a,web-c" {
		t.Errorf("Deployment order %s", s)
	}
	if b := fmt.Sprint(Batches([]string{"a", "b", "c"}, 2)); b != "[[a b] [c]]" {
		t.Errorf("batches %s", b)
	}
	if b := fmt.Sprint(Batches([]string{"a", "b"}, 0)); b != "[[a] [b]]" {
		t.Errorf("batches of 0 %s", b)
	}
}

func readyPod(ready bool) *corev1.Pod {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}}}
}

// --restart-via=evict: one evict action per workload for the pods of its
// stale consumers (not every pod), in order; a bare pod is refused with the
// manual hint; paused Deployments, partitions and ReplicaSets are evicted
// (a template restart could not), OnDelete stays manual.
func TestPlanEvict(t *testing.T) {
	wl := map[WorkloadKey]WorkloadInfo{
		{"Deployment", "ns", "web"}:   {Exists: true, Pods: []WorkloadPod{{Name: "web-a"}, {Name: "web-b"}, {Name: "web-c"}}},
		{"Deployment", "ns", "held"}:  {Exists: true, Paused: true},
		{"StatefulSet", "ns", "db"}:   {Exists: true, Partition: 2},
		{"DaemonSet", "ns", "agent"}:  {Exists: true, OnDelete: true},
		{"Deployment", "ns", "other"}: {Exists: true},
	}
	envStale := func(pod, kind, name string) inspect.Use {
		return use(pod, kind, name, inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
	}
	pending := func(pod, kind, name string) inspect.Use {
		return use(pod, kind, name, inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)
	}
	pods := map[string]*corev1.Pod{PodKey("ns", "web-a"): readyPod(true), PodKey("ns", "web-c"): readyPod(false)}
	for _, tt := range []struct {
		name  string
		items []inspect.Use
		want  string
	}{
		{"stale pods evicted, a pending mount of another pod annotated", []inspect.Use{envStale("web-a", "Deployment", "web"), envStale("web-c", "Deployment", "web"), pending("web-a", "Deployment", "web"), pending("web-b", "Deployment", "web")},
			"evict deployment/web; annotate pod/web-b"},
		{"bare pod refused", []inspect.Use{envStale("solo", "Pod", "solo")}, "manual pod/solo"},
		{"paused deployment", []inspect.Use{envStale("held-1", "Deployment", "held")}, "evict deployment/held"},
		{"below a partition", []inspect.Use{envStale("db-0", "StatefulSet", "db")}, "evict statefulset/db"},
		{"OnDelete", []inspect.Use{envStale("agent-x", "DaemonSet", "agent")}, "manual daemonset/agent"},
		{"ReplicaSet", []inspect.Use{envStale("rs-x", "ReplicaSet", "rs")}, "evict replicaset/rs"},
		{"Job", []inspect.Use{envStale("j-1", "Job", "j")}, "manual job/j"},
		{"custom controller", []inspect.Use{envStale("r-1", "Rollout", "r")}, "manual rollout/r"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanActions(PlanInput{Items: tt.items, Pods: pods, Workload: wl, Strategy: StrategyAuto, Verified: true, RestartVia: RestartViaEvict})
			if s := summary(got); s != tt.want {
				t.Fatalf("plan %q, want %q (%v)", s, tt.want, reasons(got))
			}
			if tt.name == "bare pod refused" && !strings.Contains(got[0].Reason, "bare pod: nothing would re-create it") {
				t.Errorf("bare pod reason %q", got[0].Reason)
			}
			if a := got[0]; a.Action == ActionEvict && tt.name[0] == 's' {
				if p := strings.Join(a.Pods, ","); p != "web-c,web-a" {
					t.Errorf("pods %s, want the unready web-c first, web-b not evicted", p)
				}
				if len(a.Consumers) != 3 || !strings.Contains(a.Reason, "evicts pods in this order: web-c, then web-a (1 at a time") || len(a.OutsideSelector) != 0 {
					t.Errorf("consumers %d reason %q", len(a.Consumers), a.Reason)
				}
			}
		})
	}
	got := PlanActions(PlanInput{Items: []inspect.Use{envStale("web-a", "Deployment", "web"), envStale("web-b", "Deployment", "web"), envStale("web-c", "Deployment", "web")},
		Workload: wl, Strategy: StrategyAuto, Verified: true, RestartVia: RestartViaEvict, MaxUnavailable: 2})
	if !strings.Contains(got[0].Reason, "web-a + web-b, then web-c (2 at a time") {
		t.Errorf("batches not in the reason: %q", got[0].Reason)
	}
}

// The wait verifies an evict action on its replacement pods only.
func TestWaitEvictConvergesOnReplacements(t *testing.T) {
	a := evictAction("web-a")
	a.Consumers = []Consumer{ConsumerOf(use("web-a", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale))}
	a.Outcome, a.AppliedAt = OutcomeApplied, &metav1.Time{Time: time.Unix(1000, 0)}
	a.Replacements, a.replacementUIDs = []string{"web-x"}, map[string]bool{"new-1": true}
	other := use("web-b", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
	other.Pod.UID = "u-web-b" // not evicted, not verified
	fresh := use("web-x", "Deployment", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateCurrent)
	fresh.Pod.UID = "new-1"
	pending := fresh
	pending.State = inspect.StateStale
	obs := &scriptedVerifier{rounds: [][]inspect.Use{{other}, {other, pending}, {other, fresh}}}
	clock := &fakeClock{t: time.Unix(1000, 0), step: 100 * time.Millisecond}
	res := Wait(context.Background(), []Result{a}, obs, &rolloutAfter{}, WaitOptions{Timeout: time.Minute, Interval: time.Millisecond, FirstDelay: -1, Now: clock.now})
	if res[0].Outcome != OutcomeCurrent || obs.calls != 3 || obs.skipped != 3 {
		t.Fatalf("outcome %s after %d rounds (%d skipped): %s", res[0].Outcome, obs.calls, obs.skipped, res[0].Detail)
	}
}

// A failed eviction says whether its cause may pass (Transient), for a
// caller that runs again: a cut connection, a failed LIST, a refusal that
// outlasts --timeout may; forbidden and replacements not Ready by
// --timeout do not. An evict action not started after a failure may be
// sent again.
func TestApplyEvictionsSaysWhichFailuresMayPass(t *testing.T) {
	cut := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}
	for _, tc := range []struct {
		name      string
		setup     func(*fakeEvictor)
		transient bool
	}{
		{"broken pipe", func(f *fakeEvictor) { f.fails["a"] = []error{cut} }, true},
		{"failed LIST", func(f *fakeEvictor) { f.listErr = apierrors.NewServiceUnavailable("restarting") }, true},
		{"PDB until --timeout", func(f *fakeEvictor) {
			for range 1000 {
				f.fails["a"] = append(f.fails["a"], pdbRefusal())
			}
		}, true},
		{"forbidden", func(f *fakeEvictor) {
			f.fails["a"] = []error{apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "a", fmt.Errorf("no"))}
		}, false},
		{"replacement not Ready by --timeout", func(f *fakeEvictor) { f.noNew = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEvictor("a", "b")
			tc.setup(f)
			second := evictAction("other-1")
			second.Target.Name = "other"
			res := ApplyEvictions(context.Background(), f, []Result{evictAction("a", "b"), second},
				fastEvict(EvictOptions{Deadline: time.Now().Add(150 * time.Millisecond)}))
			if r := res[0]; r.Outcome != OutcomeFailed || r.Transient != tc.transient {
				t.Errorf("outcome %s transient %v (%s), want failed, transient %v", r.Outcome, r.Transient, r.Error, tc.transient)
			}
			if r := res[1]; r.Outcome != OutcomeNotApplied || !r.Transient {
				t.Errorf("the action not started: outcome %s transient %v, want not-applied and transient", r.Outcome, r.Transient)
			}
		})
	}
}

// An evict action's NotAfter (its restart window closes) ends its
// evictions before --timeout does: a refusal is not retried past it, and
// a pod whose turn comes after it is not evicted. Either way the action
// fails for a cause that passes (the window opens again), saying which
// pods were evicted and which not.
func TestApplyEvictionsStopWhenTheWindowCloses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		refuse    int           // refusals of web-b
		step      time.Duration // what each pause moves the clock on
		evicted   string
		notAfter  time.Duration
		errorSays string
	}{
		{"refused until past the window", 1000, time.Second, "web-a", 10 * time.Second, "the restart window closes before the next try"},
		{"the window closes while a replacement starts", 0, 40 * time.Second, "web-a", 30 * time.Second, "the restart window of deployment/web closed at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 1, 5, 2, 0, 0, 0, time.UTC)
			now := start
			f := newFakeEvictor("web-a", "web-b", "web-c")
			for range tc.refuse {
				f.fails["web-b"] = append(f.fails["web-b"], pdbRefusal())
			}
			var late []string
			ev := sentAt{f, func(pod string) {
				if !now.Before(start.Add(tc.notAfter)) {
					late = append(late, pod)
				}
			}}
			r := evictAction("web-a", "web-b", "web-c")
			r.Action.NotAfter = start.Add(tc.notAfter)
			res := ApplyEvictions(context.Background(), ev, []Result{r}, EvictOptions{Deadline: start.Add(5 * time.Minute),
				Now: func() time.Time { return now }, Sleep: func(context.Context, time.Duration) { now = now.Add(tc.step) }})
			got := res[0]
			if got.Outcome != OutcomeFailed || !got.Transient || strings.Join(got.Evicted, ",") != tc.evicted || strings.Join(got.NotEvicted, ",") != "web-b,web-c" {
				t.Fatalf("outcome %s transient %v evicted %v not evicted %v (%s), want failed, transient, %s, web-b+web-c",
					got.Outcome, got.Transient, got.Evicted, got.NotEvicted, got.Error, tc.evicted)
			}
			if !strings.Contains(got.Error, tc.errorSays) {
				t.Errorf("error %q, want it to say %q", got.Error, tc.errorSays)
			}
			if len(late) > 0 {
				t.Errorf("%d evictions sent once the window closed (the first of %s)", len(late), late[0])
			}
		})
	}
}

// sentAt is an Evictor that tells each eviction sent.
type sentAt struct {
	*fakeEvictor
	sent func(pod string)
}

func (s sentAt) Evict(ctx context.Context, ns, name, uid string, dryRun bool) error {
	s.sent(name)
	return s.fakeEvictor.Evict(ctx, ns, name, uid, dryRun)
}
