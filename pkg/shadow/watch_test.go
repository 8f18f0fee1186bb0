package shadow

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

type sizes map[Workload]int

func (s sizes) Desired(w Workload) (int, bool) { n, ok := s[w]; return n, ok }

// While the peer's rollout is under way the workload has the old
// revision's pods and the new one's: cmsync's plan lists them all. The row
// counts the pods the workload runs by its spec.
func TestCollectorCountsTheWorkloadsPods(t *testing.T) {
	cfg := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	ref := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	first := t0
	annotate := func(pod string) reconcile.Event {
		return reconcile.Event{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionAnnotate,
			Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: pod}, Pods: []string{pod}, Consumers: []refresh.Consumer{{Object: ref, Pod: pod}}}}
	}
	restart := func(kind reconcile.EventKind, name string, pods ...string) reconcile.Event {
		return reconcile.Event{Kind: kind, Action: &refresh.Action{Action: refresh.ActionRestart,
			Target: refresh.Target{Kind: "Deployment", Namespace: "ns", Name: name}, Pods: pods, Consumers: []refresh.Consumer{{Object: ref}}}}
	}
	own := owners{"vol-old-1": w("vol"), "vol-old-2": w("vol"), "vol-new-1": w("vol")}
	var c Collector
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &cfg, Keys: []string{"k"}, FirstEdit: &first, Time: t0.Add(time.Second)},
		annotate("vol-old-1"), annotate("vol-old-2"), annotate("vol-new-1"),
		restart(reconcile.EventAction, "env", "env-old-1", "env-new-1"),
		restart(reconcile.EventDeferred, "held", "held-old-1", "held-new-1", "held-new-2"),
		restart(reconcile.EventAction, "unknown", "unknown-old-1", "unknown-new-1"),
	} {
		c.Handle(e, own, sizes{w("vol"): 2, w("env"): 1, w("held"): 2})
	}
	rows := c.Due(t0.Add(time.Hour), time.Minute, []Marker{marker("vol", time.Second, "cfg", 2), marker("env", time.Second, "cfg", 1)})
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	got := map[string]WorkloadRow{}
	for _, wr := range rows[0].Workloads {
		got[wr.Workload.Name] = wr
	}
	if r := got["vol"]; r.Remounted != 2 || r.Class != ClassSpared {
		t.Errorf("vol: %d pods remounted (%s), want 2 (the Deployment's replicas), spared", r.Remounted, r.Class)
	}
	if r := got["env"]; r.CmsyncPods != 1 || r.Class != ClassAgree {
		t.Errorf("env: cmsync would restart %d pods (%s), want 1, agree", r.CmsyncPods, r.Class)
	}
	if r := got["held"]; r.CmsyncPods != 2 {
		t.Errorf("held: cmsync would restart %d pods, want 2", r.CmsyncPods)
	}
	if r := got["unknown"]; r.CmsyncPods != 2 {
		t.Errorf("unknown (no size known): cmsync would restart %d pods, want the plan's 2", r.CmsyncPods)
	}
	if rows[0].Spared != 2 || rows[0].CmsyncPods != 5 {
		t.Errorf("row: %d spared, %d cmsync pods, want 2 and 5", rows[0].Spared, rows[0].CmsyncPods)
	}
}

func rollout(replicas int64, restartAt string, env map[string]string) *unstructured.Unstructured {
	var envs []any
	for k, v := range env {
		envs = append(envs, map[string]any{"name": k, "value": v})
	}
	spec := map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": "app:1", "env": envs}}}}}
	if restartAt != "" {
		spec["restartAt"] = restartAt
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "web", "namespace": "ns"}, "spec": spec}}
}

func TestRolloutMarkers(t *testing.T) {
	view := func(u *unstructured.Unstructured) view {
		v, ok := rolloutView(u)
		if !ok {
			t.Fatalf("rolloutView(%v) failed", u)
		}
		return v
	}
	web := Workload{Kind: refresh.RolloutKind, Namespace: "ns", Name: "web"}
	before := view(rollout(3, "", nil))
	ms := viewMarkers(before, view(rollout(3, "2025-03-01T10:00:01Z", nil)))
	if len(ms) != 1 || ms[0].Strategy != StrategyRestartAt || ms[0].Workload != web || ms[0].Pods != 3 || ms[0].Known() {
		t.Errorf("spec.restartAt set: markers %+v, want one restart-at of %s, 3 pods, no object named", ms, web)
	}
	moved := viewMarkers(view(rollout(3, "2025-03-01T10:00:01Z", nil)), view(rollout(3, "2025-03-01T10:05:00Z", nil)))
	if len(moved) != 1 || moved[0].Strategy != StrategyRestartAt {
		t.Errorf("spec.restartAt moved: markers %+v", moved)
	}
	env := viewMarkers(before, view(rollout(3, "", map[string]string{"STAKATER_CFG_CONFIGMAP": "h1"})))
	if len(env) != 1 || env[0].Strategy != StrategyEnvVars || !env[0].For("ConfigMap", "cfg") || env[0].Workload != web {
		t.Errorf("the template's env-vars marker on a Rollout: %+v", env)
	}
	if ms := viewMarkers(view(rollout(3, "2025-03-01T10:00:01Z", nil)), view(rollout(5, "2025-03-01T10:00:01Z", nil))); len(ms) != 0 {
		t.Errorf("scaled, not restarted: markers %+v", ms)
	}
	// cmsync decides on a Rollout under its qualified kind; a restartAt restart by the peer pairs with it
	d := decision(false, WorkloadDecision{Workload: web, Action: ActRestart, Pods: 3}, WorkloadDecision{Workload: Workload{Kind: refresh.RolloutKind, Namespace: "ns", Name: "vol"}, Action: ActRemount, Pods: 2})
	volMarker := ms0(viewMarkers(view(rollout(2, "", nil)), view(rollout(2, "2025-03-01T10:00:02Z", nil))))
	volMarker.Workload.Name = "vol"
	webMarker := ms[0]
	webMarker.At, volMarker.At = t0.Add(time.Second), t0.Add(2*time.Second)
	r := Pair(d, []Marker{webMarker, volMarker}, time.Minute, time.Time{})
	if r.Class != ClassSpared || r.Workloads[0].Class != ClassAgree || r.Workloads[0].Peer != StrategyRestartAt || r.Spared != 2 {
		t.Errorf("row = %+v, want web agree (restart-at), vol spared, 2 pods spared", r)
	}
}

func ms0(ms []Marker) Marker {
	if len(ms) == 0 {
		return Marker{}
	}
	return ms[0]
}

type memStore struct {
	mu   sync.Mutex
	rows []Row
}

func (s *memStore) Append(_ context.Context, rows []Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, rows...)
	return nil
}

func (s *memStore) Read(context.Context) ([]Row, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Row(nil), s.rows...), 0, nil
}

// The observer over informers: a Rollout restarted through spec.restartAt
// and a DaemonSet whose template the peer annotated are the peer's
// restarts of the change cmsync decided on; a pod of the Rollout is named
// by its qualified kind, and each workload's pods are its spec's.
func TestObserverWatchesRolloutsAndDaemonSets(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "RolloutList"}, rollout(3, "", nil))
	isController := true
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"}, Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1}}
	client := fake.NewClientset(ds,
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", Controller: &isController}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8-a", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8", Controller: &isController}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-x", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &isController}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-y", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &isController}}}})
	store := &memStore{}
	var notes []string
	o := &Observer{Client: client, Dynamic: dyn, Namespace: "ns", Window: 2 * time.Second, Store: store, Owners: ClientOwners{Client: client},
		Now: time.Now, Note: func(s string) { notes = append(notes, s) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go o.Run(ctx)
	for o.sizesKnown() == nil {
		time.Sleep(10 * time.Millisecond)
	}

	cfg := inspect.ObjectKey{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	ref := inspect.ObjectRef{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}
	first := time.Now()
	annotate := func(pod string) reconcile.Event {
		return reconcile.Event{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionAnnotate,
			Target: refresh.Target{Kind: "Pod", Namespace: "ns", Name: pod}, Pods: []string{pod}, Consumers: []refresh.Consumer{{Object: ref, Pod: pod}}}}
	}
	for _, e := range []reconcile.Event{
		{Kind: reconcile.EventChange, Object: &cfg, Keys: []string{"k"}, FirstEdit: &first, Time: first},
		{Kind: reconcile.EventAction, Action: &refresh.Action{Action: refresh.ActionRestart, Target: refresh.Target{Kind: refresh.RolloutKind, Namespace: "ns", Name: "web"},
			Pods: []string{"web-5d8-a", "web-5d8-b", "web-5d8-c", "web-7f1-a"}, Consumers: []refresh.Consumer{{Object: ref}}}},
		annotate("agent-x"), annotate("agent-y"),
	} {
		o.Handle(e)
	}
	if _, err := dyn.Resource(gvr).Namespace("ns").Update(ctx, rollout(3, time.Now().UTC().Format(time.RFC3339), nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ds2 := ds.DeepCopy()
	ds2.Spec.Template.Annotations = map[string]string{LastReloadedFrom: `{"type":"CONFIGMAP","name":"cfg","namespace":"ns","hash":"h"}`}
	if _, err := client.AppsV1().DaemonSets("ns").Update(ctx, ds2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for deadline := time.Now().Add(15 * time.Second); len(rows) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rows, _, _ = store.Read(ctx)
	}
	if len(rows) != 1 {
		t.Fatalf("rows = %+v, want the change's", rows)
	}
	got := map[string]WorkloadRow{}
	for _, wr := range rows[0].Workloads {
		got[wr.Workload.Kind+"/"+wr.Workload.Name] = wr
	}
	if r := got[refresh.RolloutKind+"/web"]; r.Peer != StrategyRestartAt || r.Class != ClassAgree || r.PeerPods != 3 || r.CmsyncPods != 3 {
		t.Errorf("the Rollout: %+v, want restarted by the peer (restart-at), agree, 3 pods each", r)
	}
	if r := got["DaemonSet/agent"]; r.Peer != StrategyAnnotations || r.Class != ClassSpared || r.Remounted != 1 || r.PeerPods != 1 {
		t.Errorf("the DaemonSet: %+v, want restarted by the peer (annotations), spared, 1 pod (its desired) remounted", r)
	}
	if len(got) != 2 || len(notes) != 0 {
		t.Errorf("workloads %v, notes %v: want the two and no note", got, notes)
	}
	if w := (ClientOwners{Client: client}).Owner("ns", "web-5d8-a"); w != (Workload{Kind: refresh.RolloutKind, Namespace: "ns", Name: "web"}) {
		t.Errorf("owner of a Rollout's pod: %+v", w)
	}
}

// sizesKnown is the observer's Sizes once its informers synced.
func (o *Observer) sizesKnown() Sizes {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sizes
}
