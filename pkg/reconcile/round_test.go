package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The tests of this file drive the loop at its boundary: informer events
// in (noteChange, as the informers' handlers call it), one step (settle,
// as Run calls it between sleeps), and the events and the API writes out.
// They say nothing of how the loop queues its changes inside.

// roundFixture is namespace ns with ConfigMaps a {K, X} and b {L}, and a
// Deployment web whose one pod (web-1-a) reads a's K and b's L as
// environment variables; a clock that moves only when told.
type roundFixture struct {
	t      *testing.T
	loop   *Loop
	client *fake.Clientset
	ex     *readtest.Executor
	now    time.Time
	events []Event
}

// deploymentObjects are Deployment name (rolled out, one replica) with
// its ReplicaSet name-1 and its running, Ready pod name-1-a, whose one
// container "app" is c and whose volumes are volumes.
func deploymentObjects(name string, ann map[string]string, c corev1.Container, volumes ...corev1.Volume) []runtime.Object {
	ctrl, one := true, int32(1)
	sel := map[string]string{"app": name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Generation: 1, Annotations: ann},
		Spec:   appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-1", Namespace: "ns", UID: types.UID(name + "-rs"), Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: types.UID(name), Controller: &ctrl}}}}
	c.Name = "app"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-1-a", Namespace: "ns", UID: types.UID("u-" + name + "-1-a"), Labels: sel,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-1", UID: types.UID(name + "-rs"), Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{c}, Volumes: volumes},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	return []runtime.Object{dep, rs, pod}
}

func newRoundFixture(t *testing.T) *roundFixture {
	envFrom := func(name, cm string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: name}}}
	}
	objs := append(deploymentObjects("web", nil, corev1.Container{Env: []corev1.EnvVar{envFrom("K", "a"), envFrom("L", "b")}}),
		configMap("a", map[string]string{"K": "1", "X": "x"}), configMap("b", map[string]string{"L": "1"}))
	client := fake.NewClientset(objs...)
	f := &roundFixture{t: t, client: client, now: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC),
		ex: &readtest.Executor{Containers: map[string]*readtest.Container{"ns/web-1-a/app": {Env: map[string]string{"K": "1", "L": "1"}}}}}
	vo := inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second, Now: f.clock}
	f.loop = &Loop{
		Config: Config{Namespace: "ns", Debounce: 2 * time.Second, MaxWait: 30 * time.Second, RolloutWait: time.Hour, Now: f.clock,
			Refresh: refresh.Config{Strategy: refresh.StrategyAuto, MaxRestarts: -1, Yes: true, Verify: vo, Now: f.clock}},
		Client:      client,
		Cluster:     refresh.ClientCluster(client, f.ex, vo, false, ""),
		Annotations: refresh.ClientWorkloads{Client: client},
		Named:       refresh.ClientWorkloads{Client: client},
		Clock:       f.clock,
		Emit:        func(e Event) { f.events = append(f.events, e) },
	}
	f.loop.defaults()
	return f
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: data}
}

func (f *roundFixture) clock() time.Time { return f.now }

// edit writes new data into ConfigMap name and hands the change to the
// loop as its informer would.
func (f *roundFixture) edit(name string, data map[string]string) {
	f.t.Helper()
	cms := f.client.CoreV1().ConfigMaps("ns")
	old, err := cms.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	cur, err := cms.Update(context.Background(), configMap(name, data), metav1.UpdateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.loop.noteChange(inspect.ConfigMapObject(old), inspect.ConfigMapObject(cur))
}

// step moves the clock on by d and lets the loop act on what fell due.
func (f *roundFixture) step(d time.Duration) {
	f.now = f.now.Add(d)
	f.loop.settle(context.Background())
}

// took returns the events of kind since the last call, as "ACTION TARGET"
// (actions) or "TARGET: MESSAGE" (others), and forgets every event.
func (f *roundFixture) took(kind EventKind) []string {
	var out []string
	for _, e := range f.events {
		if e.Kind != kind {
			continue
		}
		switch {
		case e.Action != nil:
			out = append(out, string(e.Action.Action)+" "+e.Action.Target.String())
		case e.Target != nil:
			out = append(out, e.Target.String()+": "+e.Message)
		default:
			out = append(out, e.Message)
		}
	}
	f.events = nil
	return out
}

// restartedAt is the Deployment's restart annotation ("" without one).
func (f *roundFixture) restartedAt() string {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]
}

// TestReleaseOfSeveralObjectsIsOneRestart: two objects one workload reads,
// edited a second apart within the debounce, make one round and one
// restart, not one per object.
func TestReleaseOfSeveralObjectsIsOneRestart(t *testing.T) {
	f := newRoundFixture(t)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(time.Second)
	if got := f.took(EventAction); len(got) != 0 {
		t.Fatalf("actions before the debounce: %v", got)
	}
	f.edit("b", map[string]string{"L": "2"})
	f.step(time.Second) // 1 s after the last edit: still quiet time
	if got := f.took(EventAction); len(got) != 0 {
		t.Fatalf("actions within the debounce of the second edit: %v", got)
	}
	f.step(2 * time.Second)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("actions %q, want one restart of deployment/web", got)
	}
	if f.restartedAt() == "" {
		t.Error("deployment/web has no restartedAt: the restart was not sent")
	}
	f.step(time.Minute)
	if got := f.took(EventAction); len(got) != 0 {
		t.Errorf("actions after the release was acted on: %v", got)
	}
}

// TestUnreadKeyIsNoReasonToAct: an edit of a key no use reads makes no
// action and writes nothing, even where a use of the same object is stale
// from before (its variable K differs: only an edit of K is acted on).
func TestUnreadKeyIsNoReasonToAct(t *testing.T) {
	f := newRoundFixture(t)
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "0"
	f.edit("a", map[string]string{"K": "1", "X": "changed"})
	f.step(5 * time.Second)
	if got := f.took(EventAction); len(got) != 0 {
		t.Errorf("actions %v for a key no use reads, want none", got)
	}
	if f.restartedAt() != "" {
		t.Error("deployment/web was restarted for a key it does not read")
	}
}

// TestHeldRestartIsRetried: a restart held while the workload's rollout is
// under way is deferred (said once), checked again with a backoff that
// grows with the hold (a ten-minute rollout costs a few dozen reads of the
// namespace, not one every debounce), and made once the rollout completes;
// exactly one restart.
func TestHeldRestartIsRetried(t *testing.T) {
	f := newRoundFixture(t)
	deps := f.client.AppsV1().Deployments("ns")
	d, _ := deps.Get(context.Background(), "web", metav1.GetOptions{})
	d.Generation = 2 // a rollout its controller has not observed yet
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventDeferred); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("deferred %q, want one deferral of deployment/web", got)
	}
	f.client.ClearActions()
	for range 600 { // ten minutes of a rollout under way: nothing sent, nothing said again
		f.step(time.Second)
		if got := append(f.took(EventAction), f.took(EventDeferred)...); len(got) != 0 {
			t.Fatalf("while the rollout is under way: %v, want nothing", got)
		}
	}
	if n := namespaceReads(f.client); n < 10 || n > 40 {
		t.Errorf("the namespace was read %d times in ten minutes of a held restart, want 10 to 40 (a backoff to %s, not every debounce)", n, MaxRecheck)
	}
	if f.restartedAt() != "" {
		t.Fatal("restarted while the previous rollout was under way")
	}
	d, _ = deps.Get(context.Background(), "web", metav1.GetOptions{})
	d.Status.ObservedGeneration = 2
	if _, err := deps.UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step(MaxRecheck)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("after the rollout: actions %q, want one restart of deployment/web", got)
	}
	f.step(time.Minute)
	if got := f.took(EventAction); len(got) != 0 {
		t.Errorf("actions after the held restart was made: %v", got)
	}
}

// namespaceReads counts the rounds that read the namespace since the fake
// API server's actions were last cleared: one ConfigMap LIST each (the
// fixture's loop has no informer cache to serve them).
func namespaceReads(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "configmaps" {
			n++
		}
	}
	return n
}

// failPodLists makes the next n pod LISTs of the fake API server fail with
// err (n < 0: every one).
func (f *roundFixture) failPodLists(n int, err error) {
	f.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, err
	})
}

// TestTransientFailureIsRetried: a round whose reads fail while the API
// server is unavailable puts the change back and tries again after a
// backoff that grows; once the server answers, the change is acted on.
func TestTransientFailureIsRetried(t *testing.T) {
	f := newRoundFixture(t)
	f.failPodLists(2, apierrors.NewServiceUnavailable("the API server is restarting"))
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventRetry); len(got) != 1 || !strings.Contains(got[0], "tried again in") || !strings.Contains(got[0], "(attempt 1)") {
		t.Fatalf("retries %q, want one, attempt 1", got)
	}
	f.step(RetryBase * 2) // past the first backoff (1 s, jitter at most 20%)
	if got := f.took(EventRetry); len(got) != 1 || !strings.Contains(got[0], "(attempt 2)") {
		t.Fatalf("retries %q, want attempt 2", got)
	}
	f.step(RetryBase) // 2 s backoff now: not due yet
	if got := append(f.took(EventAction), f.took(EventRetry)...); len(got) != 0 {
		t.Fatalf("within the second backoff: %v, want nothing", got)
	}
	f.step(2 * RetryBase)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
		t.Fatalf("once the API server answers: actions %q, want one restart of deployment/web", got)
	}
}

// TestPermanentFailureIsReportedOnce: a round refused for good (forbidden)
// is reported once and not tried again until the object changes.
func TestPermanentFailureIsReportedOnce(t *testing.T) {
	f := newRoundFixture(t)
	f.failPodLists(-1, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no list")))
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventError); len(got) != 1 || !strings.Contains(got[0], "not tried again until it changes again") {
		t.Fatalf("errors %q, want one that says it is not tried again", got)
	}
	f.step(10 * time.Minute)
	if got := append(append(f.took(EventRetry), f.took(EventError)...), f.took(EventAction)...); len(got) != 0 {
		t.Errorf("after a permanent failure: %v, want nothing until the object changes", got)
	}
}

// TestFlappingObjectRestartsAtMostOncePerInterval: an object edited every
// 200 ms for 60 s restarts its env consumer at most 60 s /
// --min-restart-interval + 1 times, though each round (at most every
// MaxWait) finds it stale, and once more after the last edit: the last
// value is acted on.
func TestFlappingObjectRestartsAtMostOncePerInterval(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MaxWait, f.loop.MinRestartInterval = 5*time.Second, 20*time.Second
	f.loop.defaults()
	restarts := 0
	for i := range 300 {
		f.edit("a", map[string]string{"K": fmt.Sprint(i + 2), "X": "x"})
		f.step(200 * time.Millisecond)
		restarts += len(f.took(EventAction))
	}
	if restarts > 60/20+1 {
		t.Errorf("%d restarts in 60 s with --min-restart-interval 20s, want at most 4", restarts)
	}
	last := f.restartedAt()
	f.step(30 * time.Second)
	if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" || f.restartedAt() == last {
		t.Errorf("after the last edit: actions %q, want one restart for the last value", got)
	}
	t.Logf("%d restarts while the object changed every 200 ms for 60 s", restarts)
}

// A dry run's restart counts for nothing; a shadow's counts as the one the
// acting loop would have sent.
func TestPacerCountsAShadowsRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	notSent := []refresh.Result{{Action: refresh.Action{Action: refresh.ActionRestart, Target: web}, Outcome: refresh.OutcomeNotApplied}}
	for _, would := range []bool{false, true} {
		p := newPacer(time.Minute, 0, 0)
		if h := p.hold(web, time.Minute, time.Time{}, t0); h.Reason != "" {
			t.Fatalf("first restart held: %+v", h)
		}
		p.sent(notSent, t0, would)
		if h := p.hold(web, time.Minute, time.Time{}, t0.Add(time.Second)); h.paced() != would {
			t.Errorf("shadow %v: a second later held %v, want %v (%s)", would, h.paced(), would, h.Reason)
		}
	}
}

func TestPacerHoldsByIntervalAndRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web, db := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}, refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "db"}
	p := newPacer(time.Minute, 0, 0)
	if h := p.hold(web, time.Minute, t0.Add(-30*time.Second), t0); !h.paced() || !h.Until.Equal(t0.Add(30*time.Second)) {
		t.Errorf("restarted 30 s ago: %+v, want held until 30 s from now", h)
	}
	if h := p.hold(web, time.Minute, t0.Add(-2*time.Minute), t0); h.Reason != "" {
		t.Errorf("restarted 2 min ago: %+v, want it sent", h)
	}
	p.sent([]refresh.Result{{Action: refresh.Action{Action: refresh.ActionRestart, Target: web}, AppliedAt: &metav1.Time{Time: t0}}}, t0, false)
	if h := p.hold(web, time.Minute, time.Time{}, t0.Add(time.Second)); !h.paced() {
		t.Errorf("sent a second ago by this loop: %+v, want held", h)
	}
	p = newPacer(0, 0.5, 2) // one restart every 2 s, two at once
	api := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "api"}
	var results []refresh.Result
	for i, w := range []refresh.Target{db, web, api} {
		want := i == 2
		if h := p.hold(w, 0, time.Time{}, t0); h.paced() != want {
			t.Errorf("restart %d at once: held %v, want %v (%s)", i+1, h.paced(), want, h.Reason)
		}
		results = append(results, refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart, Target: w}, AppliedAt: &metav1.Time{Time: t0}})
	}
	p.sent(results, t0, false)
	if h := p.hold(api, 0, time.Time{}, t0.Add(2*time.Second)); h.Reason != "" {
		t.Errorf("2 s later: %+v, want a token", h)
	}
}

// addVolumeWorkload adds Deployment name whose pod mounts ConfigMap a as a
// volume, with the annotations ann.
func (f *roundFixture) addVolumeWorkload(name string, ann map[string]string) {
	f.t.Helper()
	c := corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}
	v := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}
	for _, o := range deploymentObjects(name, ann, c, v) {
		if err := f.client.Tracker().Add(o); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestOnChangePolicy: a volume-only consumer opted in through Reloader's
// annotation is restarted once for a change (Reloader's behaviour); the
// same workload with on-change: remount is remounted, not restarted.
func TestOnChangePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want string
	}{
		{"reloader", map[string]string{ReloaderAuto: "true"}, "restart deployment/vol"},
		{"reloader, remount", map[string]string{ReloaderAuto: "true", AnnotationOnChange: OnChangeRemount}, "annotate pod/vol-1-a"},
		{"cmsync's own opt-in", map[string]string{AnnotationWatch: "true"}, "annotate pod/vol-1-a"},
		{"cmsync's, restart", map[string]string{AnnotationWatch: "true", AnnotationOnChange: OnChangeRestart}, "restart deployment/vol"},
		{"reloader for Secrets only", map[string]string{ReloaderSecretAuto: "true"}, "annotate pod/vol-1-a"},
		// a reload hook: remounted and told, whatever the other annotations
		{"hook, reloader", map[string]string{ReloaderAuto: "true", AnnotationReloadHook: "POST :9090/-/reload"}, "annotate pod/vol-1-a"},
		{"hook, on-change restart", map[string]string{AnnotationWatch: "true", AnnotationOnChange: OnChangeRestart, AnnotationReloadHook: "GET :9090"}, "annotate pod/vol-1-a"},
		{"invalid hook, reloader", map[string]string{ReloaderAuto: "true", AnnotationReloadHook: "PATCH :9090"}, "annotate pod/vol-1-a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoundFixture(t)
			f.addVolumeWorkload("vol", tc.ann)
			f.edit("a", map[string]string{"K": "1", "X": "changed"}) // X: only the volume reads it
			f.step(3 * time.Second)
			var got []string
			for _, e := range f.events {
				if e.Kind == EventAction && e.Action.Target.Name != "web" {
					got = append(got, string(e.Action.Action)+" "+e.Action.Target.String())
					if e.Action.Action == refresh.ActionRestart && !strings.Contains(e.Action.Reason, "on-change: restart") {
						t.Errorf("restart reason %q does not say the policy", e.Action.Reason)
					}
					if v, hooked := tc.ann[AnnotationReloadHook]; hooked && (e.Action.Hook == nil || e.Action.Hook.Request != v || !strings.Contains(e.Action.Reason, "reload hook")) {
						t.Errorf("the annotation does not carry the workload's hook %q: %+v, reason %q", v, e.Action.Hook, e.Action.Reason)
					}
				}
			}
			if strings.Join(got, "; ") != tc.want {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
		})
	}
}

// changedWhileNoLeaderActed makes ConfigMap a last written an hour ago,
// with web's container stale for it, and the loop one that resumes with
// records: what a new leader finds of an edit made while no leader acted.
// It returns when a was written.
func (f *roundFixture) changedWhileNoLeaderActed() time.Time {
	f.t.Helper()
	f.ex.Containers["ns/web-1-a/app"].Env["K"] = "0"
	changed := f.now.Add(-time.Hour)
	cm, _ := f.client.CoreV1().ConfigMaps("ns").Get(context.Background(), "a", metav1.GetOptions{})
	cm.CreationTimestamp = metav1.NewTime(changed)
	if _, err := f.client.CoreV1().ConfigMaps("ns").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.loop.DigestKey, f.loop.Resume = []byte("0123456789abcdef0123456789abcdef"), true
	return changed
}

// TestResumeChecksWhatChangedSinceTheWatermark: at a leader's start, a
// consumer with no record is checked (and restarted, being stale) when its
// object changed after the watermark the previous leader left, and only
// recorded when the object changed before it or no leader ever acted.
func TestResumeChecksWhatChangedSinceTheWatermark(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watermark time.Duration // from the object's change; 0: none
		want      string
	}{
		{"changed after the watermark", -time.Minute, "restart deployment/web"},
		{"changed before the watermark", time.Minute, ""},
		{"no watermark: a first install", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoundFixture(t)
			changed := f.changedWhileNoLeaderActed()
			if tc.watermark != 0 {
				f.loop.Watermark = changed.Add(tc.watermark)
			}
			out := map[inspect.ObjectKey]*pending{}
			var n resumeCounts
			f.loop.resumeIn(context.Background(), "ns", out, &n)
			f.loop.putDue(out)
			f.loop.settle(context.Background())
			if got := strings.Join(f.took(EventAction), "; "); got != tc.want {
				t.Errorf("actions %q, want %q (%s)", got, tc.want, n)
			}
		})
	}
}

func TestActedUntilWaitsForThePendingChanges(t *testing.T) {
	f := newRoundFixture(t)
	if got, want := f.loop.actedUntil(), f.now.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("nothing pending: %s, want now less the margin %s", got, want)
	}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	first := f.now
	f.now = f.now.Add(time.Hour)
	if got, want := f.loop.actedUntil(), first.Add(-watermarkMargin); !got.Equal(want) {
		t.Errorf("a change pending since %s: %s, want its first edit less the margin %s", first, got, want)
	}
	f.loop.Watermark, f.loop.resumeIncomplete = first.Add(-time.Hour), true
	f.loop.pending = map[inspect.ObjectKey]*pending{}
	if got := f.loop.actedUntil(); !got.Equal(f.loop.Watermark) {
		t.Errorf("a resume that could not check every consumer: %s, want the watermark it started from %s", got, f.loop.Watermark)
	}
}

// TestOnChangeRestartIsForEditsOnly: the state found at start
// (--sync-existing, a resume's check) remounts a Reloader-annotated
// volume consumer; it is not a reason to restart every such workload.
func TestOnChangeRestartIsForEditsOnly(t *testing.T) {
	f := newRoundFixture(t)
	f.addVolumeWorkload("vol", map[string]string{ReloaderAuto: "true"})
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	f.loop.putDue(map[inspect.ObjectKey]*pending{k: {change: Change{Object: k}, first: f.now, existing: true}})
	f.loop.settle(context.Background())
	for _, e := range f.events {
		if e.Kind == EventAction && e.Action.Target.Name == "vol" && e.Action.Action != refresh.ActionAnnotate {
			t.Errorf("%s %s for the state found at start, want annotate", e.Action.Action, e.Action.Target)
		}
	}
}

// TestTimedOutRestartIsVerifiedAgainNotSentAgain: a restart whose wait
// timed out is verified again after a backoff: reported current once its
// consumers are, and never restarted a second time for the same change
// (a manual action says what to look at).
func TestTimedOutRestartIsVerifiedAgainNotSentAgain(t *testing.T) {
	for _, current := range []bool{true, false} {
		t.Run(fmt.Sprintf("current %v", current), func(t *testing.T) {
			f := newRoundFixture(t)
			// the pod is never replaced on the fake API server: the wait times out
			f.loop.Refresh.Wait, f.loop.Refresh.Timeout, f.loop.Refresh.Now = true, 300*time.Millisecond, time.Now
			f.edit("a", map[string]string{"K": "2", "X": "x"})
			f.step(3 * time.Second)
			if got := f.took(EventRetry); len(got) != 1 || !strings.Contains(got[0], "verified again, not sent again") {
				t.Fatalf("after the timeout: retries %q, want one recheck", got)
			}
			first := f.restartedAt()
			if current {
				f.ex.Containers["ns/web-1-a/app"].Env["K"] = "2"
			}
			f.step(2 * RetryBase)
			var got []string
			for _, e := range f.events {
				if e.Kind == EventAction || e.Kind == EventResult {
					got = append(got, string(e.Kind)+" "+string(e.Action.Action)+" "+string(e.Outcome))
				}
			}
			want := "result none current"
			if !current {
				want = "action manual ; result manual not-applied"
			}
			if strings.Join(got, "; ") != want {
				t.Errorf("the recheck: %q, want %q", got, want)
			}
			if f.restartedAt() != first {
				t.Error("restarted a second time for the same change")
			}
		})
	}
}

// TestEditMergedIntoACheckOfStartStateIsAnEdit: an edit made while a check
// of the state found at start is held back (a rollout under way) is still
// an edit: the on-change restart it asks for is made.
func TestEditMergedIntoACheckOfStartStateIsAnEdit(t *testing.T) {
	f := newRoundFixture(t)
	f.addVolumeWorkload("vol", map[string]string{ReloaderAuto: "true"})
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	// as afterRollouts puts back a check of existing state held for web's rollout
	f.loop.requeue(pending{change: Change{Object: k}, first: f.now, existing: true, only: map[string]bool{"Deployment/web": true}})
	f.edit("a", map[string]string{"K": "1", "X": "changed"}) // X: only vol reads it
	f.step(3 * time.Second)
	var got []string
	for _, e := range f.events {
		if e.Kind == EventAction && e.Action.Target.Name != "web" {
			got = append(got, string(e.Action.Action)+" "+e.Action.Target.String())
		}
	}
	if strings.Join(got, "; ") != "restart deployment/vol" {
		t.Errorf("actions %q, want restart deployment/vol (the edit's on-change: restart)", got)
	}
}

// TestRetryOfEveryUseWidensAHeldRetry: a retry of some workloads merged
// with a retry of every use (a transient failure of the round) concerns
// every use.
func TestRetryOfEveryUseWidensAHeldRetry(t *testing.T) {
	f := newRoundFixture(t)
	k := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "a"}
	f.loop.requeue(pending{change: Change{Object: k}, first: f.now, existing: true, only: map[string]bool{"Deployment/w1": true}})
	f.loop.requeueAt(pending{change: Change{Object: k}, first: f.now, existing: true}, f.now.Add(time.Second))
	if o := f.loop.pending[k].only; o != nil {
		t.Errorf("only after a retry of every use: %v, want nil (every use)", o)
	}
}

// TestPacedRetryWaitsOnTheLocalClock: with the API server's clock an hour
// behind, a restart paced for 5 minutes waits; it is not tried again round
// after round.
func TestPacedRetryWaitsOnTheLocalClock(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MinRestartInterval = 5 * time.Minute
	f.loop.Now = func() time.Time { return f.now.Add(-time.Hour) }
	f.loop.Refresh.Now = f.loop.Now
	f.loop.defaults()
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	f.took(EventAction)
	f.edit("a", map[string]string{"K": "3", "X": "x"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lists := 0
	f.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists > 50 {
			cancel()
		}
		return false, nil, nil
	})
	f.now = f.now.Add(3 * time.Second)
	f.loop.settle(ctx)
	if lists > 2 {
		t.Errorf("one step made %d rounds for a restart paced 5 min: it should wait", lists)
	}
}

// TestTransientReadOfTheWorkloadsIsRetried: a round that cannot tell
// whether a workload may be acted on (its annotations, or the workloads
// that name objects in Reloader's reload list, not read for a reason that
// may pass) is tried again after a backoff, and then acts; the change is
// not dropped.
func TestTransientReadOfTheWorkloadsIsRetried(t *testing.T) {
	for _, verb := range []string{"get", "list"} {
		t.Run(verb+" deployments", func(t *testing.T) {
			f := newRoundFixture(t)
			failed := false
			f.client.PrependReactor(verb, "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failed {
					return false, nil, nil
				}
				failed = true
				return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
			})
			f.edit("a", map[string]string{"K": "2", "X": "x"})
			f.step(3 * time.Second)
			if got := f.took(EventRetry); len(got) != 1 || !failed {
				t.Fatalf("retries %q, want one", got)
			}
			if f.restartedAt() != "" {
				t.Fatal("restarted in the round that could not read the workloads")
			}
			f.step(2 * RetryBase)
			if got := f.took(EventAction); strings.Join(got, "; ") != "restart deployment/web" {
				t.Fatalf("once the API server answers: actions %q, want one restart of deployment/web", got)
			}
		})
	}
}

// TestRoundHandsItsEvents: Round receives each round's events once, at
// its end, in order: the change, the action and its result; an edit of a
// key no use reads is a round of its ignored change alone.
func TestRoundHandsItsEvents(t *testing.T) {
	f := newRoundFixture(t)
	var rounds []Round
	f.loop.Round = func(r Round) { rounds = append(rounds, r) }
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(5 * time.Second)
	if len(rounds) != 1 {
		t.Fatalf("%d rounds, want 1", len(rounds))
	}
	var kinds []string
	for _, e := range rounds[0].Events {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, " "); rounds[0].Namespace != "ns" || got != "change action result" {
		t.Errorf("round of namespace %q with events %q, want ns with \"change action result\"", rounds[0].Namespace, got)
	}
	if got := len(f.events); got != len(rounds[0].Events) {
		t.Errorf("%d events emitted, %d in the round: Emit must still get every one", got, len(rounds[0].Events))
	}
	f.edit("a", map[string]string{"K": "2", "X": "y"})
	f.step(5 * time.Second)
	if len(rounds) != 2 || len(rounds[1].Events) != 2 || rounds[1].Events[1].Kind != EventIgnored {
		t.Errorf("rounds %+v, want a second round of a change and its ignored event", rounds)
	}
}

// TestRecordThatDiffersIsAnEdit: an edit made while no leader acted on it
// (a leader handover, or a restart a leader deferred to its window before
// it went) is found by the next leader as a record that differs from what
// the consumer reads; the on-change policy applies to it as to a live
// edit: a Reloader-annotated volume consumer is restarted (within its
// window), not only remounted. A consumer with no record is still only
// remounted (TestOnChangeRestartIsForEditsOnly).
func TestRecordThatDiffersIsAnEdit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window string
		want   string
	}{
		{"no window", "", "restart deployment/vol"},
		{"outside its window", "04:00-05:00", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRoundFixture(t)
			ann := map[string]string{ReloaderAuto: "true"}
			if tc.window != "" {
				ann[restartwindow.Annotation] = tc.window
			}
			f.addVolumeWorkload("vol", ann)
			f.loop.DigestKey, f.loop.Resume = []byte("0123456789abcdef0123456789abcdef"), true
			resume := f.resumeAsLeader
			resume() // the first leader records what vol reads
			if got := f.took(EventAction); len(got) != 0 {
				t.Fatalf("first sight: actions %q, want none", got)
			}
			// edited while no leader acts on it: no informer event reaches the loop
			if _, err := f.client.CoreV1().ConfigMaps("ns").Update(context.Background(), configMap("a", map[string]string{"K": "1", "X": "changed"}), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.now = f.now.Add(time.Minute)
			resume() // the next leader
			var got []string
			for _, e := range f.events {
				if e.Kind == EventAction && e.Action.Target.Name == "vol" {
					got = append(got, string(e.Action.Action)+" "+e.Action.Target.String())
				}
			}
			if strings.Join(got, "; ") != tc.want {
				t.Errorf("actions of vol %q, want %q", got, tc.want)
			}
			if tc.window != "" && !slices.ContainsFunc(f.events, func(e Event) bool {
				return e.Kind == EventDeferred && e.Window == tc.window
			}) {
				t.Errorf("no deferral to the window %q: %v", tc.window, f.took(EventDeferred))
			}
		})
	}
}

// failRestarts makes the next n PATCHes of Deployment name fail with a
// cut connection.
func (f *roundFixture) failRestarts(name string, n int) {
	f.client.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() != name || n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}
	})
}

// TestFailedRestartCountsForNothing: a restart whose PATCH failed on a
// cut connection is sent again at its retry, a second or two later: it
// did not restart the workload, so it spends no --min-restart-interval
// (no "was restarted 2s ago") and no token of the restart rate.
func TestFailedRestartCountsForNothing(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.MinRestartInterval, f.loop.RestartRate, f.loop.RestartBurst = time.Hour, 1.0/3600, 1
	f.loop.defaults()
	f.failRestarts("web", 1)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if f.restartedAt() != "" {
		t.Fatal("the failed PATCH restarted web")
	}
	f.step(2 * RetryBase)
	f.step(2 * RetryBase)
	if f.restartedAt() == "" {
		t.Errorf("not restarted after its retry; deferred: %q", f.took(EventDeferred))
	}
	for _, e := range f.events {
		if e.Kind == EventDeferred {
			t.Errorf("deferred after a restart that failed: %s", e.Message)
		}
	}
}

// TestEventOutsideARoundIsARoundOfItsOwn: an event about a namespace in
// which no round is under way (here a rollout of another namespace given
// up by this round's gate after --rollout-wait) still reaches Round, the
// alerts' feed, as a round of its own; Emit gets it once.
func TestEventOutsideARoundIsARoundOfItsOwn(t *testing.T) {
	f := newRoundFixture(t)
	var rounds []Round
	f.loop.Round = func(r Round) { rounds = append(rounds, r) }
	f.loop.MaxConcurrentRestarts, f.loop.RolloutWait = 2, time.Minute
	stuck := refresh.Target{Kind: "Deployment", Namespace: "other", Name: "stuck"}
	f.envWorkload("other", "stuck", "c")
	deps := f.client.AppsV1().Deployments("other")
	d, err := deps.Get(context.Background(), "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Generation++ // its rollout never completes
	if _, err := deps.Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.loop.restarts.targets = map[refresh.Target]*flight{stuck: {phase: FlightRolling, since: f.now.Add(-time.Hour)}}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(5 * time.Second)
	var lone []Round
	for _, r := range rounds {
		if r.Namespace == "other" {
			lone = append(lone, r)
		}
	}
	if len(lone) != 1 || len(lone[0].Events) != 1 || lone[0].Events[0].Kind != EventError || lone[0].Events[0].Target == nil || *lone[0].Events[0].Target != stuck {
		t.Fatalf("rounds of namespace other %+v, want one holding the error that gives up %s", lone, stuck)
	}
	n := 0
	for _, e := range f.events {
		if e.Target != nil && *e.Target == stuck {
			n++
		}
	}
	if n != 1 {
		t.Errorf("Emit got the event %d times, want once", n)
	}
}

// TestRecordUnderAnotherKeyIsNoEdit: a record made under another key (the
// key Secret re-created) differs with no edit: its consumer is checked,
// and a Reloader-annotated volume consumer is remounted, not restarted.
func TestRecordUnderAnotherKeyIsNoEdit(t *testing.T) {
	f := newRoundFixture(t)
	f.addVolumeWorkload("vol", map[string]string{ReloaderAuto: "true"})
	f.loop.DigestKey, f.loop.Resume = []byte("0123456789abcdef0123456789abcdef"), true
	resume := f.resumeAsLeader
	resume()
	f.loop.DigestKey = []byte("fedcba9876543210fedcba9876543210") // rotated
	f.now = f.now.Add(time.Minute)
	resume()
	for _, e := range f.events {
		if e.Kind == EventAction && e.Action.Target.Name == "vol" && e.Action.Action == refresh.ActionRestart {
			t.Errorf("restarted after a key rotation with no edit: %s", e.Action.Reason)
		}
	}
}

// TestRecordOfOtherKeysReadIsNoEdit: a record that differs only because
// the consumers read another key of an object nobody edited (a deploy
// made the pods read X of a too) is no edit: the next leader checks the
// consumer, and does not restart a Reloader-annotated volume consumer by
// its on-change policy.
func TestRecordOfOtherKeysReadIsNoEdit(t *testing.T) {
	f := newRoundFixture(t)
	a := configMap("a", map[string]string{"K": "1", "X": "x"})
	a.ResourceVersion = "5" // as the API server has it; nobody writes a again
	if _, err := f.client.CoreV1().ConfigMaps("ns").Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reading := func(keys ...string) []runtime.Object { // Deployment vol, its ReplicaSet and a pod that reads keys of a
		c := corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}
		v := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}
		for _, k := range keys {
			v.ConfigMap.Items = append(v.ConfigMap.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		return deploymentObjects("vol", map[string]string{ReloaderAuto: "true"}, c, v)
	}
	for _, o := range reading("K") {
		if err := f.client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.loop.DigestKey, f.loop.Resume = []byte("0123456789abcdef0123456789abcdef"), true
	f.resumeAsLeader() // the first leader records what vol reads: K of a
	if err := f.client.CoreV1().Pods("ns").Delete(context.Background(), "vol-1-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next := reading("K", "X")[2].(*corev1.Pod)
	next.Name, next.UID = "vol-1-b", "u-vol-1-b"
	if err := f.client.Tracker().Add(next); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	f.resumeAsLeader() // the next leader
	for _, e := range f.events {
		if e.Kind == EventAction && e.Action.Target.Name == "vol" && e.Action.Action == refresh.ActionRestart {
			t.Errorf("restarted for a record that differs only by the keys read: %s", e.Action.Reason)
		}
	}
}

// TestFailedRestartGivesItsTokenBackLater: the token of a restart whose
// patch failed is given back though its answer came after the token was
// taken (the clock moves within a round on a real cluster).
func TestFailedRestartGivesItsTokenBackLater(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web, db := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}, refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "db"}
	p := newPacer(0, 1.0/3600, 1)
	if h := p.hold(web, 0, time.Time{}, t0); h.Reason != "" {
		t.Fatalf("first restart held: %+v", h)
	}
	p.sent([]refresh.Result{{Action: refresh.Action{Action: refresh.ActionRestart, Target: web}, Outcome: refresh.OutcomeFailed, Error: "broken pipe"}}, t0.Add(50*time.Millisecond), false)
	if h := p.hold(db, 0, time.Time{}, t0.Add(time.Second)); h.Reason != "" {
		t.Errorf("a second later, after a failed restart: %+v, want its token back", h)
	}
}

// resumeAsLeader runs a new leader's resume of namespace ns and the rounds
// it makes due.
func (f *roundFixture) resumeAsLeader() {
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	f.loop.resumeIn(context.Background(), "ns", out, &n)
	f.loop.putDue(out)
	f.loop.settle(context.Background())
}

// A shadow holds a restart whose window is closed before the limit and
// the rollouts are asked: the others keep their index.
func TestWindowFirst(t *testing.T) {
	web, db := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}, refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "db"}
	pod := refresh.Target{Kind: "Pod", Namespace: "ns", Name: "p"}
	actions := []refresh.Action{{Action: refresh.ActionRestart, Target: web}, {Action: refresh.ActionAnnotate, Target: pod}, {Action: refresh.ActionRestart, Target: db}}
	rest, idx, held := windowFirst(actions, func(t refresh.Target) Hold {
		if t == web {
			return Hold{Reason: "restart window closed", Window: "02:00-03:00"}
		}
		return Hold{}
	})
	if len(held) != 1 || held[0].Window == "" {
		t.Errorf("held %+v, want web (index 0) by its window", held)
	}
	if len(rest) != 2 || rest[0].Target != pod || rest[1].Target != db || fmt.Sprint(idx) != "[1 2]" {
		t.Errorf("rest %+v at %v, want the annotation and db at [1 2]", rest, idx)
	}
}

// TestChangesDroppedAtExitAreNotAlerted: the changes left pending when the
// loop ends are said (Emit), not handed to Round: a new leader resumes
// them.
func TestChangesDroppedAtExitAreNotAlerted(t *testing.T) {
	f := newRoundFixture(t)
	var rounds []Round
	f.loop.Round = func(r Round) { rounds = append(rounds, r) }
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.loop.dropPending()
	if got := f.took(EventError); len(got) != 1 || len(rounds) != 0 {
		t.Errorf("errors %q and %d rounds, want the dropped change said once and no round", got, len(rounds))
	}
}

// evictions answers the Eviction API as a workload's controller would: the
// evicted pod is deleted and a Ready replacement (NAME-new), which reads
// the data of now, takes its place. The first fails[pod] evictions of a
// pod fail with err instead. It returns the pods evicted, in order.
func (f *roundFixture) evictions(fails map[string]int, err error) *[]string {
	var evicted []string
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
		if fails[name] > 0 {
			fails[name]--
			return true, nil, err
		}
		ns := a.GetNamespace()
		obj, gerr := f.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), ns, name)
		if gerr != nil {
			return true, nil, gerr
		}
		fresh := obj.(*corev1.Pod).DeepCopy()
		fresh.Name, fresh.UID, fresh.ResourceVersion = name+"-new", fresh.UID+"-new", ""
		cm, _ := f.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, "a")
		f.ex.Containers[ns+"/"+fresh.Name+"/app"] = &readtest.Container{Env: map[string]string{"K": cm.(*corev1.ConfigMap).Data["K"], "L": "1"}}
		if derr := f.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, name); derr != nil {
			return true, nil, derr
		}
		evicted = append(evicted, name)
		return true, nil, f.client.Tracker().Add(fresh)
	})
	return &evicted
}

// TestFailedEvictionIsRetried: with --restart-via=evict, an eviction that
// failed for a reason that may pass (a cut connection) is tried again for
// its workload after the namespace's backoff, and so is the eviction its
// failure did not start; neither waits for the next edit.
func TestFailedEvictionIsRetried(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Refresh.RestartVia = refresh.RestartViaEvict
	f.envWorkload("ns", "api", "a")
	cut := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}}
	evicted := f.evictions(map[string]int{"api-1-a": 1}, cut)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if len(*evicted) != 0 {
		t.Fatalf("evicted %v in the round whose first eviction failed", *evicted)
	}
	if got := f.took(EventRetry); len(got) != 1 {
		t.Fatalf("retries %q, want one, for api (failed) and web (not started)", got)
	}
	f.step(2 * RetryBase)
	if got := strings.Join(*evicted, " "); got != "api-1-a web-1-a" {
		t.Errorf("evicted %q after the retry, want api-1-a web-1-a", got)
	}
}

// TestConflictingEvictionOfALivePodIsNotCurrent: an eviction answered 409
// while the pod it names is still there with its UID (the pod was modified
// while the API server evicted it) evicted nothing: the workload is not
// reported current, and the eviction is sent again. Only a pod gone or
// re-created under its name (the UID precondition) needs no eviction.
func TestConflictingEvictionOfALivePodIsNotCurrent(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Refresh.RestartVia = refresh.RestartViaEvict
	modified := apierrors.NewConflict(schema.GroupResource{Resource: "pods/eviction"}, "web-1-a", errors.New("the object has been modified"))
	evicted := f.evictions(map[string]int{"web-1-a": 1}, modified)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	for _, e := range f.events {
		if e.Kind == EventResult && e.Outcome != refresh.OutcomeFailed {
			t.Errorf("%s %s: %s (%s), and no pod was evicted", e.Action.Action, e.Action.Target, e.Outcome, e.Message)
		}
	}
	for range 3 {
		f.step(2 * RetryBase)
	}
	if got := strings.Join(*evicted, " "); got != "web-1-a" {
		t.Errorf("evicted %q, want web-1-a once the conflict passed", got)
	}
}

// TestPermanentEvictionFailureIsSaidOnce: an eviction refused for good
// (forbidden) is said once with the command that finishes it, and not
// tried again.
func TestPermanentEvictionFailureIsSaidOnce(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Refresh.RestartVia = refresh.RestartViaEvict
	f.evictions(map[string]int{"web-1-a": 100}, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "web-1-a", errors.New("no")))
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if got := f.took(EventError); len(got) != 1 || !strings.Contains(got[0], "finishes it") {
		t.Fatalf("errors %q, want one that says how to finish", got)
	}
	f.step(10 * time.Minute)
	if got := append(f.took(EventRetry), f.took(EventAction)...); len(got) != 0 {
		t.Errorf("after a permanent eviction failure: %v, want nothing until the object changes", got)
	}
}

// TestTerminatingPodIsNotEvictedAgain: a pod already terminating (an
// earlier attempt evicted it) is not evicted again when its change is
// tried again: its replacement reads the object when it starts.
func TestTerminatingPodIsNotEvictedAgain(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.Refresh.RestartVia = refresh.RestartViaEvict
	evicted := f.evictions(nil, nil)
	pods := f.client.CoreV1().Pods("ns")
	p, err := pods.Get(context.Background(), "web-1-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(f.now)
	p.DeletionTimestamp = &now
	if _, err := pods.Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	if len(*evicted) != 0 {
		t.Errorf("evicted %v, a pod already terminating", *evicted)
	}
}

// apiRestartedAt is Deployment api's restart annotation ("" without one).
func (f *roundFixture) apiRestartedAt() string {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]
}

// TestFailedRestartSpendsNoTokenAfterAHeldOne: at one restart an hour,
// burst 1, api's restart is let through and web's, in the same round, is
// held by the rate; api's PATCH fails on a cut connection. The clock moves
// within the round (web is held after api was let through): api's retry
// is sent all the same, its failure spent no token, and web still waits.
func TestFailedRestartSpendsNoTokenAfterAHeldOne(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.RestartRate, f.loop.RestartBurst = 1.0/3600, 1
	f.loop.Now = func() time.Time {
		f.now = f.now.Add(time.Millisecond)
		return f.now
	}
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	f.failRestarts("api", 1)
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	f.step(3 * time.Second)
	deferred := f.messages(EventDeferred)
	if f.apiRestartedAt() != "" || len(deferred) != 1 || !strings.Contains(deferred[0], "restart rate limit") {
		t.Fatalf("first round: api restarted %t, deferred %q; want api's PATCH failed and web held by the rate (burst 1)", f.apiRestartedAt() != "", deferred)
	}
	f.step(2 * RetryBase)
	f.step(2 * RetryBase)
	events := f.events
	if f.apiRestartedAt() == "" {
		t.Fatalf("api not restarted at its retry; deferred: %q", f.messages(EventDeferred))
	}
	if f.restartedAt() != "" {
		f.events = events
		t.Errorf("web restarted within the hour; actions %q", f.took(EventAction))
	}
}

// TestPacerTakesATokenOnlyForAnAcceptedRestart: a restart let through
// counts against the burst until its answer (a second one at once is held,
// until a token is there); one that failed gives nothing back because it
// took nothing, though another was held since; one accepted takes its
// token when it was accepted.
func TestPacerTakesATokenOnlyForAnAcceptedRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api, web := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "api"}, refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "web"}
	restart := func(t refresh.Target, applied *metav1.Time) []refresh.Result {
		r := refresh.Result{Action: refresh.Action{Action: refresh.ActionRestart, Target: t}, AppliedAt: applied}
		if applied == nil {
			r.Outcome, r.Error = refresh.OutcomeFailed, "broken pipe"
		}
		return []refresh.Result{r}
	}
	p := newPacer(0, 1.0/3600, 1)
	if h := p.hold(api, 0, time.Time{}, t0); h.Reason != "" {
		t.Fatalf("first restart held: %+v", h)
	}
	near := func(a, b time.Time) bool { return a.Sub(b).Abs() < time.Millisecond }
	if h := p.hold(web, 0, time.Time{}, t0.Add(time.Second)); !h.paced() || !near(h.Until, t0.Add(time.Second+time.Hour)) {
		t.Errorf("second restart in the same round: %+v, want held an hour (burst 1)", h)
	}
	p.sent(restart(api, nil), t0.Add(2*time.Second), false)
	if h := p.hold(api, 0, time.Time{}, t0.Add(3*time.Second)); h.Reason != "" {
		t.Fatalf("after a failed restart and one held since: %+v, want the token there", h)
	}
	p.sent(restart(api, &metav1.Time{Time: t0.Add(3 * time.Second)}), t0.Add(3*time.Second), false)
	if h := p.hold(web, 0, time.Time{}, t0.Add(4*time.Second)); !h.paced() || !near(h.Until, t0.Add(3*time.Second+time.Hour)) {
		t.Errorf("after an accepted restart: %+v, want held until an hour after it was accepted", h)
	}
}

// TestPacerTakesTokensInTheOrderAccepted: a round's restarts take their
// tokens when each was accepted, in that order, whatever the order of the
// results: a restart patched at once beside an eviction refused for four
// minutes took its token four minutes before the eviction took its own.
func TestPacerTakesTokensInTheOrderAccepted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evicted, restarted, next := refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "evicted"},
		refresh.Target{Kind: "Deployment", Namespace: "ns", Name: "restarted"}, refresh.Target{Kind: "Deployment", Namespace: "other", Name: "next"}
	p := newPacer(0, 1.0/60, 2)
	for _, w := range []refresh.Target{evicted, restarted} {
		if h := p.hold(w, 0, time.Time{}, t0); h.Reason != "" {
			t.Fatalf("%s held: %+v", w, h)
		}
	}
	late := t0.Add(4*time.Minute + 17*time.Second)
	p.sent([]refresh.Result{ // the evictions first, as the engine returns them
		{Action: refresh.Action{Action: refresh.ActionEvict, Target: evicted}, AppliedAt: &metav1.Time{Time: late}},
		{Action: refresh.Action{Action: refresh.ActionRestart, Target: restarted}, AppliedAt: &metav1.Time{Time: t0}},
	}, late, false)
	if h := p.hold(next, 0, time.Time{}, late.Add(3*time.Second)); h.Reason != "" {
		t.Errorf("3 s after the eviction was accepted: %+v, want the token the restart's has earned back since", h)
	}
}

// TestRestartRetriedInItsPatchIsTimedWhenAccepted: api's PATCH is refused
// twice with a 500 and accepted at its third attempt, 3 s after its first
// (the patch's own retries, within the round). Every attempt sends the
// same patch, so that a retry of one that was applied after all starts no
// second rollout; the restart rate's token is taken when it was accepted,
// so that web's restart, held by the rate (one a minute, burst 1), waits a
// minute from api's acceptance, not from its first attempt.
func TestRestartRetriedInItsPatchIsTimedWhenAccepted(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.RestartRate, f.loop.RestartBurst = 1.0/60, 1
	f.loop.Refresh.Serial = true
	f.loop.Refresh.Sleep = func(_ context.Context, d time.Duration) { f.now = f.now.Add(d) }
	f.loop.Refresh.PatchBackoff = &wait.Backoff{Steps: 5, Duration: time.Second, Factor: 2}
	f.loop.defaults()
	f.envWorkload("ns", "api", "a")
	refused := 2
	var sent []string
	f.client.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if pa := a.(k8stesting.PatchAction); pa.GetName() == "api" && strings.Contains(string(pa.GetPatch()), "restartedAt") {
			sent = append(sent, string(pa.GetPatch()))
		}
		if a.(k8stesting.PatchAction).GetName() != "api" || refused == 0 {
			return false, nil, nil
		}
		refused--
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))
	})
	f.edit("a", map[string]string{"K": "2", "X": "x"})
	first := f.now.Add(3 * time.Second) // the round
	f.step(3 * time.Second)
	if len(sent) != 3 || sent[1] != sent[0] || sent[2] != sent[0] {
		t.Errorf("api's patches %q, want three the same", sent)
	}
	if want := first.UTC().Format(time.RFC3339); f.apiRestartedAt() != want || f.restartedAt() != "" {
		t.Errorf("api's restartedAt %q, want %q (its first attempt); web restarted %t, want held by the rate",
			f.apiRestartedAt(), want, f.restartedAt() != "")
	}
	f.step(58 * time.Second) // 61 s after api's first attempt, 58 s after its acceptance
	if f.restartedAt() != "" {
		t.Errorf("web restarted 58 s after api's restart was accepted, at one restart a minute")
	}
	f.step(3 * time.Second)
	if f.restartedAt() == "" {
		t.Errorf("web not restarted 61 s after api's; deferred: %q", f.messages(EventDeferred))
	}
}

// TestFailedResumeIsResumedAgain: a new leader whose resume cannot list
// the namespace (the API server unavailable, through every attempt) says
// so once and resumes it again after a backoff: an edit made while no
// leader ran is acted on once the server answers, not left to the
// object's next change.
func TestFailedResumeIsResumedAgain(t *testing.T) {
	f := newRoundFixture(t)
	f.loop.DigestKey, f.loop.Resume = []byte("0123456789abcdef0123456789abcdef"), true
	f.loop.Refresh.Sleep = func(context.Context, time.Duration) {}
	f.resumeAsLeader() // the first leader records what web reads
	a := configMap("a", map[string]string{"K": "2", "X": "x"})
	if _, err := f.client.CoreV1().ConfigMaps("ns").Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	f.failPodLists(resumeAttempts, apierrors.NewServiceUnavailable("the API server is restarting"))
	f.events = nil
	f.resumeAsLeader() // the next leader, while no pod can be listed
	if got := f.took(EventError); len(got) != 1 || f.restartedAt() != "" {
		t.Fatalf("errors %q, restarted %t: want the failed resume said once, nothing restarted", got, f.restartedAt() != "")
	}
	for range 3 {
		f.step(RetryBase * 2)
	}
	if f.restartedAt() == "" {
		t.Errorf("web not restarted once the namespace could be read; said %q", f.took(EventError))
	}
}

// TestCompareKeysIsTotal: objects of one kind and name in two namespaces
// are ordered, so that the lines said of several objects (a loop that
// stops with changes pending) come in one order every time.
func TestCompareKeysIsTotal(t *testing.T) {
	a := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns0", Name: "c0"}
	b := inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: "ns1", Name: "c0"}
	if compareKeys(a, b) >= 0 || compareKeys(b, a) <= 0 || compareKeys(a, a) != 0 {
		t.Errorf("compareKeys(ns0/c0, ns1/c0) = %d, reversed %d: want ns0 first", compareKeys(a, b), compareKeys(b, a))
	}
}

// TestResumeRetriesWhenTheAnnotationsCannotBeRead: a resume that cannot
// read a consumer's annotations for a cause that may pass (the API server
// unavailable through its attempts) says so and resumes the namespace
// again after a backoff, as when the namespace cannot be read: the
// consumer is checked then, not left alone in silence.
func TestResumeRetriesWhenTheAnnotationsCannotBeRead(t *testing.T) {
	f := newRoundFixture(t)
	failing := f.resumeFailing("get", "deployments")
	f.resumeAsLeader()
	if got := f.took(EventError); len(got) != 1 || !strings.Contains(got[0], "resumed again after a backoff") {
		t.Fatalf("errors %q, want one that says the namespace is resumed again", got)
	}
	*failing = false
	f.step(time.Minute)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Errorf("once the annotations can be read: actions %q, want restart deployment/web", got)
	}
}

// TestResumeRetryOutlivesAnEarlierRound: a namespace whose resume failed
// is resumed again when its backoff ends, though a round of the namespace
// (for an edit of another object) ran before then and took the
// namespace's turn: an edit made while no leader acted is not lost to it.
func TestResumeRetryOutlivesAnEarlierRound(t *testing.T) {
	f := newRoundFixture(t)
	failing := f.resumeFailing("list", "pods")
	f.resumeAsLeader()
	for range 6 { // failed again and again: its backoff grows past a minute
		f.step(2 * time.Minute)
	}
	*failing = false
	f.edit("b", map[string]string{"L": "1", "M": "unread"}) // a key no one reads: a round, no action
	f.step(3 * time.Second)
	if got := f.took(EventAction); len(got) != 0 {
		t.Fatalf("the round of b's edit acted: %q", got)
	}
	f.step(RetryMax)
	if got := strings.Join(f.took(EventAction), "; "); got != "restart deployment/web" {
		t.Errorf("once the resume's backoff ended: actions %q, want restart deployment/web", got)
	}
}

// resumeFailing makes web stale for an edit of a made while no leader
// acted (changedWhileNoLeaderActed), with a watermark before it, and verb
// on resource answer 503 while the flag it returns is true (it starts
// true): a new leader's resume that fails for a cause that may pass.
func (f *roundFixture) resumeFailing(verb, resource string) *bool {
	changed := f.changedWhileNoLeaderActed()
	f.loop.Watermark = changed.Add(-time.Minute)
	f.loop.Refresh.Sleep = func(context.Context, time.Duration) {}
	failing := true
	f.client.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return false, nil, nil
	})
	return &failing
}
