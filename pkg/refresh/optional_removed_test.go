package refresh

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// optionalCluster: Deployment web's pod web-1-a has container app with the
// given env and envFrom, and the environment env; cm, when not nil, is the
// ConfigMap cfg.
func optionalCluster(cm *corev1.ConfigMap, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, has map[string]string) ([]runtime.Object, *readtest.Executor) {
	ctrl := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "dep"}, Spec: appsv1.DeploymentSpec{Selector: sel}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "rs", Labels: sel.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep", Controller: &ctrl}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: "ns", UID: "u-web-1-a", Labels: sel.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: env, EnvFrom: envFrom}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	objs := []runtime.Object{dep, rs, pod}
	if cm != nil {
		objs = append(objs, cm)
	}
	return objs, &readtest.Executor{Containers: map[string]*readtest.Container{"ns/web-1-a/app": {Env: has}}}
}

// An env or envFrom use whose optional key or optional object was removed
// keeps the old value in the running container: verify says stale, and
// refresh (auto, and restart) plans the restart of its workload, saying
// which key or object was removed. Where the container has no such value
// any more, nothing is planned.
func TestRefreshRestartsEnvOfRemovedOptionalKeyOrObject(t *testing.T) {
	yes := true
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"OTHER": "x"}}
	keyRef := func(key string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: key, Optional: &yes}}}}
	}
	fromCM := []corev1.EnvFromSource{{Prefix: "P_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Optional: &yes}}}
	for _, c := range []struct {
		name    string
		cm      *corev1.ConfigMap
		env     []corev1.EnvVar
		envFrom []corev1.EnvFromSource
		has     map[string]string
		want    string // the plan's actions; "restart": the reason must contain why
		why     string
	}{
		{"env: optional key removed", cfg, keyRef("K"), nil, map[string]string{"K": "old"}, "restart deployment/web", `optional key "K" is no longer in configmap "cfg"`},
		{"env: optional object removed", nil, keyRef("K"), nil, map[string]string{"K": "old"}, "restart deployment/web", `optional configmap "cfg" no longer exists`},
		{"envFrom: optional object removed", nil, nil, fromCM, map[string]string{"P_K": "old"}, "restart deployment/web", `optional configmap "cfg" no longer exists`},
		{"env: optional key absent, variable unset", cfg, keyRef("K"), nil, map[string]string{}, "none pod/web-1-a", ""},
		{"envFrom: optional object absent, no variable", nil, nil, fromCM, map[string]string{}, "none pod/web-1-a", ""},
	} {
		for _, strategy := range []Strategy{StrategyAuto, StrategyRestart} {
			t.Run(c.name+"/"+string(strategy), func(t *testing.T) {
				objs, ex := optionalCluster(c.cm, c.env, c.envFrom, c.has)
				client := fake.NewClientset(objs...)
				ctx := context.Background()
				snap, items := cfgUses(t, client)
				if len(items) != 1 {
					t.Fatalf("Build() = %d items, want 1", len(items))
				}
				vo := inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}
				verified := inspect.Verify(ctx, append([]inspect.Use(nil), items...), snap, ex, vo)
				wantState := inspect.StateStale
				if c.why == "" {
					wantState = inspect.StateCurrent
				}
				if verified[0].State != wantState {
					t.Fatalf("status --verify: %s (%s), want %s", verified[0].State, verified[0].StateReason, wantState)
				}
				r := &Refresher{Config: Config{Strategy: strategy, MaxRestarts: -1, Yes: true, Verify: vo}, Cluster: ClientCluster(client, ex, vo, false, "")}
				r.Access, r.Patcher = denying{}, &recordingPatcher{}
				p, err := r.Plan(ctx, snap, items)
				if err != nil {
					t.Fatal(err)
				}
				if got := summary(p.Actions); got != c.want {
					t.Fatalf("plan %q, want %q (reason %q)", got, c.want, p.Actions[0].Reason)
				}
				if strategy == StrategyAuto && c.why != "" && !strings.Contains(p.Actions[0].Reason, c.why) {
					t.Errorf("reason %q does not say %q", p.Actions[0].Reason, c.why)
				}
			})
		}
	}
}

// The planner's rule for a use read at container start whose optional
// object or key is missing: stale (observed) is restarted (auto, restart)
// or manual (annotate), with the removal in the reason; current,
// unobserved, or a hot-updating mount needs nothing.
func TestPlanOptionalRemovedByStrategy(t *testing.T) {
	missing := func(mode inspect.Mode, state inspect.State, exists bool) inspect.Use {
		it := use("web-1", "Deployment", "web", mode, inspect.VerdictMissing, state)
		it.Optional, it.Object.Exists, it.Keys = true, exists, []string{"K"}
		return it
	}
	workloads := map[WorkloadKey]WorkloadInfo{{Kind: "Deployment", Namespace: "ns", Name: "web"}: {Exists: true}}
	for _, c := range []struct {
		name     string
		it       inspect.Use
		strategy Strategy
		observed bool
		want     string
		why      string
	}{
		{"env key, auto", missing(inspect.ModeEnv, inspect.StateStale, true), StrategyAuto, true, "restart deployment/web", `optional key "K" is no longer in configmap "cm"`},
		{"env key, restart", missing(inspect.ModeEnv, inspect.StateStale, true), StrategyRestart, true, "restart deployment/web", ""},
		{"env key, annotate", missing(inspect.ModeEnv, inspect.StateStale, true), StrategyAnnotate, true, "manual deployment/web", `optional key "K" is no longer in configmap "cm"`},
		{"envFrom object, auto", missing(inspect.ModeEnvFrom, inspect.StateStale, false), StrategyAuto, true, "restart deployment/web", `optional configmap "cm" no longer exists`},
		{"subPath key, auto", missing(inspect.ModeSubPath, inspect.StateStale, true), StrategyAuto, true, "restart deployment/web", `optional key "K"`},
		{"env key current", missing(inspect.ModeEnv, inspect.StateCurrent, true), StrategyAuto, true, "none pod/web-1", "optional and absent"},
		{"env key not observed", missing(inspect.ModeEnv, "", true), StrategyAuto, false, "none pod/web-1", "optional and absent"},
		{"volume object, pending", missing(inspect.ModeVolume, inspect.StatePending, false), StrategyAuto, true, "none pod/web-1", "optional and absent"},
	} {
		plan := PlanActions(PlanInput{Items: []inspect.Use{c.it}, Workload: workloads, Strategy: c.strategy, Verified: c.observed})
		if got := summary(plan); got != c.want || !strings.Contains(plan[0].Reason, c.why) {
			t.Errorf("%s: plan %q (%s), want %q saying %q", c.name, got, plan[0].Reason, c.want, c.why)
		}
	}
	// only those read at container start are observed first
	need := NeedsVerify([]inspect.Use{missing(inspect.ModeEnv, "", true)})
	if !need["ns/web-1"] || len(NeedsVerify([]inspect.Use{missing(inspect.ModeVolume, "", false)})) != 0 {
		t.Errorf("NeedsVerify: env %v, want the env use's pod observed and the volume's not", need)
	}
}
