package refresh

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// denying denies the listed resources.
type denying map[string]bool

func (d denying) Allowed(_ context.Context, p Permission) (bool, error) { return !d[p.Resource], nil }

// staleEnvCluster: Deployment web (selector app=web) with pod web-1-a
// through ReplicaSet web-1, whose env still has the old value of cfg; a
// terminating pod web-1-z of the same ReplicaSet.
func staleEnvCluster() (kubernetes.Interface, *readtest.Executor) {
	ctrl := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "dep"}, Spec: appsv1.DeploymentSpec{Selector: sel}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "rs", Labels: sel.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep", Controller: &ctrl}}}}
	pod := func(name string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("u-" + name), Labels: sel.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
		if terminating {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/web-1-a/app": {Env: map[string]string{"K": "old"}}}}
	return fake.NewClientset(cm, dep, rs, pod("web-1-a", false), pod("web-1-z", true)), ex
}

func staleEnvRefresher(t *testing.T, cfg Config) (*Refresher, *inspect.Snapshot, []inspect.Use, *recordingPatcher) {
	t.Helper()
	c, ex := staleEnvCluster()
	snap, items := cfgUses(t, c)
	p := &recordingPatcher{}
	cfg.Verify = inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}
	cluster := ClientCluster(c, ex, cfg.Verify, false, "")
	cluster.Patcher, cluster.Access = p, denying{}
	return &Refresher{Config: cfg, Cluster: cluster}, snap, items, p
}

func TestRefresherPlansRestartOfStaleEnv(t *testing.T) {
	r, snap, items, _ := staleEnvRefresher(t, Config{MaxRestarts: -1, Yes: true})
	p, err := r.Plan(context.Background(), snap, items)
	if err != nil {
		t.Fatal(err)
	}
	if p.Restarts != 1 || len(p.Actions) != 2 || p.Actions[0].Action != ActionRestart || p.Actions[0].Target.String() != "deployment/web" {
		t.Fatalf("plan %+v, want the restart of deployment/web (and none for the terminating pod)", p.Actions)
	}
	// the one workload-pod listing: the live pod, not the terminating one
	if got := strings.Join(p.Actions[0].Pods, ","); got != "web-1-a" {
		t.Errorf("restart replaces %q, want web-1-a", got)
	}
}

// Every refusal comes before anything is sent, with the plan to show.
func TestRefresherRefusesBeforeSending(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    Config
		access AccessReviewer
		want   any
	}{
		{"max-restarts", Config{MaxRestarts: 0, Yes: true}, denying{}, new(*TooManyRestartsError)},
		{"max-restarts in a client dry run", Config{MaxRestarts: 0, DryRun: DryRunClient}, denying{}, new(*TooManyRestartsError)},
		{"patch denied", Config{MaxRestarts: -1, Yes: true}, denying{"deployments": true}, new(*PermissionError)},
		{"patch denied in a server dry run", Config{MaxRestarts: -1, DryRun: DryRunServer}, denying{"deployments": true}, new(*PermissionError)},
		{"eviction denied", Config{MaxRestarts: -1, RestartVia: RestartViaEvict}, denying{"pods/eviction": true}, new(*PermissionError)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, snap, items, patches := staleEnvRefresher(t, c.cfg)
			r.Access = c.access
			p, err := r.Plan(context.Background(), snap, items)
			if err == nil || !errors.As(err, c.want) {
				t.Fatalf("Plan() error %v, want %T", err, c.want)
			}
			if p == nil || len(p.Actions) == 0 {
				t.Errorf("no plan returned with the refusal")
			}
			if len(patches.sent) != 0 || len(p.Abandon()) != 0 {
				t.Errorf("sent before the refusal: %v", patches.sent)
			}
		})
	}
	// a client dry run sends nothing and checks no permission
	r, snap, items, _ := staleEnvRefresher(t, Config{MaxRestarts: -1, DryRun: DryRunClient})
	r.Access = denying{"deployments": true}
	if _, err := r.Plan(context.Background(), snap, items); err != nil {
		t.Errorf("client dry run: %v", err)
	}
}

func TestPermissionErrorNamesThePermission(t *testing.T) {
	r, snap, items, _ := staleEnvRefresher(t, Config{MaxRestarts: -1})
	r.Access = denying{"deployments": true}
	_, err := r.Plan(context.Background(), snap, items)
	if want := `refused: the credentials lack patch deployments in namespace "ns" (for deployment/web); nothing was changed`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// currentVerifier observes nothing: these tests do not wait.
type currentVerifier struct{}

func (currentVerifier) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, nil
}
func (currentVerifier) VerifyPod(context.Context, string, string, []inspect.ObjectKey) ([]inspect.Use, error) {
	return nil, nil
}

// Apply runs the evictions of the plan and reports each event to the
// callback; without Wait it verifies nothing.
func TestRefresherApplyEvictsAndReports(t *testing.T) {
	r, snap, items, patches := staleEnvRefresher(t, Config{MaxRestarts: -1, RestartVia: RestartViaEvict, MaxUnavailable: 1, Timeout: 10 * time.Second})
	ev := newFakeEvictor("web-1-a")
	r.Evictor, r.Verifier = ev, currentVerifier{}
	p, err := r.Plan(context.Background(), snap, items)
	if err != nil || p.Restarts != 1 || p.Actions[0].Action != ActionEvict {
		t.Fatalf("Plan() = %+v, %v; want one evict action", p, err)
	}
	var mu sync.Mutex
	var events []string
	res := r.Apply(context.Background(), p, func(pr Progress) {
		mu.Lock()
		defer mu.Unlock()
		if pr.Event != "" {
			events = append(events, pr.Event)
		}
	})
	if len(res) != 2 || res[0].Outcome != OutcomeApplied || strings.Join(res[0].Evicted, ",") != "web-1-a" {
		t.Fatalf("results %+v, want web-1-a evicted", res)
	}
	if len(patches.sent) != 0 || strings.Join(ev.sent, ",") != "web-1-a" {
		t.Errorf("patches %v, evictions %v; want no patch and one eviction", patches.sent, ev.sent)
	}
	if len(events) == 0 || !strings.HasPrefix(events[0], "evicting pod ns/web-1-a") {
		t.Errorf("events %q, want the eviction reported", events)
	}
}

func TestClientWorkloads(t *testing.T) {
	c, _ := staleEnvCluster()
	w := ClientWorkloads{Client: c}
	ctx := context.Background()
	info, err := w.Workload(ctx, WorkloadKey{"Deployment", "ns", "web"})
	if err != nil || !info.Exists || len(info.Pods) != 1 || info.Pods[0].Name != "web-1-a" || !info.Pods[0].Ready {
		t.Errorf("Workload() = %+v, %v; want web-1-a only (web-1-z terminates)", info, err)
	}
	pods, err := w.WorkloadPods(ctx, "Deployment", "ns", "web")
	if err != nil || len(pods) != 2 || !pods[1].Terminating && !pods[0].Terminating {
		t.Errorf("WorkloadPods() = %+v, %v; want both, the terminating one flagged", pods, err)
	}
	if info, err := w.Workload(ctx, WorkloadKey{"StatefulSet", "ns", "gone"}); err != nil || info.Exists {
		t.Errorf("a missing workload: %+v, %v; want Exists false and no error", info, err)
	}
	var ce *CallError
	if _, err := w.WorkloadPods(ctx, "StatefulSet", "ns", "gone"); !errors.As(err, &ce) || ce.Verb != "get" || ce.Resource != "statefulsets" {
		t.Errorf("WorkloadPods of a missing StatefulSet: %v, want a CallError get statefulsets", err)
	}
}

// cfgUses loads namespace ns of client and builds the uses of ConfigMap
// ns/cfg, the object every refresh test cluster changes.
func cfgUses(t *testing.T, client kubernetes.Interface) (*inspect.Snapshot, []inspect.Use) {
	t.Helper()
	snap, err := inspect.Load(context.Background(), client, inspect.LoadOptions{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}}})
	if err != nil {
		t.Fatal(err)
	}
	return snap, items
}
