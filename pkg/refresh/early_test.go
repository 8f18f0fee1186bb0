package refresh

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// earlyCluster: pod w-a, owned by a workload of kind owner (none for
// "Pod"), whose env still has the old value of cfg (observed first); and
// bare pod solo, which only mounts cfg as a volume (annotated early with
// --yes).
func earlyCluster(owner string) ([]runtime.Object, *readtest.Executor) {
	ctrl := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}}
	meta := metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "w-uid", Labels: sel.MatchLabels}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	objs := []runtime.Object{cm}
	var ref []metav1.OwnerReference
	switch owner {
	case "ReplicaSet":
		objs = append(objs, &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: sel}})
		ref = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: "w", UID: "w-uid", Controller: &ctrl}}
	case "Deployment":
		rs := meta
		rs.Name, rs.UID = "w-1", "rs-uid"
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: "w", UID: "w-uid", Controller: &ctrl}}
		objs = append(objs, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel}}, &appsv1.ReplicaSet{ObjectMeta: rs, Spec: appsv1.ReplicaSetSpec{Selector: sel}})
		ref = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "w-1", UID: "rs-uid", Controller: &ctrl}}
	case "StatefulSet":
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: sel}})
		ref = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: "w", UID: "w-uid", Controller: &ctrl}}
	case "DaemonSet":
		objs = append(objs, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: sel}})
		ref = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: "w", UID: "w-uid", Controller: &ctrl}}
	case "Job":
		objs = append(objs, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Selector: sel}})
		ref = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: owner, Name: "w", UID: "w-uid", Controller: &ctrl}}
	}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	envPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-a", Namespace: "ns", UID: "u-w-a", Labels: sel.MatchLabels, OwnerReferences: ref},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
		Status: running}
	solo := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "ns", UID: types.UID("u-solo")},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
		Status: running}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/w-a/app": {Env: map[string]string{"K": "old"}}}}
	return append(objs, envPod, solo), ex
}

// With --yes, pods that need no observation are annotated while the others
// are observed only when every permission the whole plan may need is
// granted: whatever owns the observed pod and however it is restarted, a
// plan refused for a missing permission has sent nothing.
func TestEarlyAnnotationOnlyWhenThePlanCannotBeRefused(t *testing.T) {
	denied := denying{"deployments": true, "statefulsets": true, "daemonsets": true, "pods/eviction": true}
	for _, owner := range []string{"ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"} {
		for _, via := range []RestartVia{RestartViaTemplate, RestartViaEvict} {
			t.Run(owner+"/"+string(via), func(t *testing.T) {
				objs, ex := earlyCluster(owner)
				client := fake.NewClientset(objs...)
				ctx := context.Background()
				snap, items := cfgUses(t, client)
				cfg := Config{RestartVia: via, MaxRestarts: -1, Yes: true, Timeout: 5 * time.Second,
					Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}}
				patches := &recordingPatcher{}
				cluster := ClientCluster(client, ex, cfg.Verify, false, "")
				cluster.Patcher, cluster.Access = patches, denied
				r := &Refresher{Config: cfg, Cluster: cluster}
				p, err := r.Plan(ctx, snap, items)
				early := p.Abandon()
				var pe *PermissionError
				switch {
				case errors.As(err, &pe):
					if len(patches.sent) != 0 || len(early) != 0 {
						t.Errorf("refused for %s, but %d patches were sent before (early results %+v)", pe.Missing[0], len(patches.sent), early)
					}
				case err != nil:
					t.Fatal(err)
				default:
					// nothing the plan needs is denied: solo may go early
					if got := summary(p.Actions); strings.Contains(got, "restart") || strings.Contains(got, "evict") {
						t.Errorf("plan %s passed the check with every restart denied", got)
					}
				}
			})
		}
	}
}

// sentinelVerifier answers every read of an annotated pod with its uses
// pending, for a reason that quotes Secret data.
type sentinelVerifier struct{ items []inspect.Use }

func (v sentinelVerifier) VerifyPods(context.Context, string, []inspect.ObjectKey, func(inspect.Use) bool) ([]inspect.Use, error) {
	return nil, nil
}
func (v sentinelVerifier) VerifyPod(_ context.Context, _, pod string, _ []inspect.ObjectKey) ([]inspect.Use, error) {
	var out []inspect.Use
	for _, it := range v.items {
		if it.Pod.Name == pod {
			it.State, it.StateReason = inspect.StatePending, "differs: the file reads "+earlySentinel
			out = append(out, it)
		}
	}
	return out, nil
}

// failingWorkloads fails every workload read: the plan is refused after
// the early annotations started.
type failingWorkloads struct{}

func (failingWorkloads) Workload(context.Context, WorkloadKey) (WorkloadInfo, error) {
	return WorkloadInfo{}, errors.New("the API server is gone")
}
func (failingWorkloads) WorkloadPods(context.Context, string, string, string) ([]WorkloadPod, error) {
	return nil, errors.New("the API server is gone")
}

const earlySentinel = "S3CRET-early-9c1d"

// The results of the pods annotated early, handed back when the plan is
// refused after they started, pass the output edge: no Secret value in
// them.
func TestAbandonedEarlyResultsAreRedacted(t *testing.T) {
	objs, ex := earlyCluster("Deployment")
	objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tok", Namespace: "ns"}, Data: map[string][]byte{"t": []byte(earlySentinel)}})
	client := fake.NewClientset(objs...)
	ctx := context.Background()
	snap, err := inspect.Load(ctx, client, inspect.LoadOptions{Namespace: "ns", Secrets: true})
	if err != nil {
		t.Fatal(err)
	}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MaxRestarts: -1, Yes: true, Wait: true, Timeout: 300 * time.Millisecond,
		Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}}
	patches := &recordingPatcher{}
	cluster := ClientCluster(client, ex, cfg.Verify, true, "")
	cluster.Patcher, cluster.Access, cluster.Workloads, cluster.Verifier = patches, denying{}, failingWorkloads{}, sentinelVerifier{items}
	r := &Refresher{Config: cfg, Cluster: cluster}
	p, err := r.Plan(ctx, snap, items)
	if err == nil {
		t.Fatal("Plan() succeeded, want the workload read's error")
	}
	early := p.Abandon()
	if len(early) != 1 || len(patches.sent) != 1 {
		t.Fatalf("early results %+v (%d patches), want solo annotated early", early, len(patches.sent))
	}
	for _, res := range early {
		text := strings.Join(append([]string{res.Reason, res.Detail, res.Error}, res.Warnings...), " ")
		if strings.Contains(text, earlySentinel) || !strings.Contains(text, inspect.Redacted) {
			t.Errorf("early result not redacted: %q", text)
		}
	}
}

// A workload the caller restarts besides the plan (Restarting) is busy: its
// pods are not annotated early, so the caller can fold their annotations
// into the restart.
func TestEarlyAnnotationSparesTheWorkloadsRestarting(t *testing.T) {
	for _, restarting := range []bool{false, true} {
		objs, ex := earlyCluster("Pod")
		client := fake.NewClientset(objs...)
		snap, items := cfgUses(t, client)
		cfg := Config{MaxRestarts: -1, Yes: true, Timeout: 5 * time.Second,
			Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}}
		cluster := ClientCluster(client, ex, cfg.Verify, false, "")
		patches := &recordingPatcher{}
		cluster.Patcher, cluster.Access = patches, nil
		r := &Refresher{Config: cfg, Cluster: cluster}
		if restarting {
			r.Restarting = map[WorkloadKey]bool{{Kind: "Pod", Namespace: "ns", Name: "solo"}: true}
		}
		p, err := r.Plan(context.Background(), snap, items)
		if err != nil {
			t.Fatal(err)
		}
		early, planned := len(p.Abandon()), strings.Contains(summary(p.Actions), "annotate pod/solo")
		if early == 1 == restarting || planned != restarting {
			t.Errorf("restarting %t: %d early results, solo in the plan %t (%s)", restarting, early, planned, summary(p.Actions))
		}
	}
}

// PlanOnly: Plan sends nothing, even where --yes and no --max-restarts
// would annotate early; the pod is in the plan instead.
func TestPlanOnlyAnnotatesNothingEarly(t *testing.T) {
	objs, ex := earlyCluster("Pod")
	client := fake.NewClientset(objs...)
	snap, items := cfgUses(t, client)
	cfg := Config{MaxRestarts: -1, Yes: true, PlanOnly: true, Timeout: 5 * time.Second,
		Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}}
	cluster := ClientCluster(client, ex, cfg.Verify, false, "")
	patches := &recordingPatcher{}
	cluster.Patcher, cluster.Access = patches, nil
	r := &Refresher{Config: cfg, Cluster: cluster}
	p, err := r.Plan(context.Background(), snap, items)
	if err != nil {
		t.Fatal(err)
	}
	if early := p.Abandon(); len(early) != 0 || len(patches.sent) != 0 || !strings.Contains(summary(p.Actions), "annotate pod/solo") {
		t.Errorf("PlanOnly: %d early results, %d patches sent, plan %s; want none sent and solo planned", len(early), len(patches.sent), summary(p.Actions))
	}
}
