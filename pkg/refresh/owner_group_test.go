package refresh

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// kruiseCluster: pod db-0, owned by an OpenKruise Advanced StatefulSet
// (apps.kruise.io, kind StatefulSet) named db, whose env still has the old
// value of cfg; an apps/v1 StatefulSet also named db, with the same labels.
func kruiseCluster() (*fake.Clientset, *readtest.Executor) {
	ctrl := true
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "apps-sts"}, Spec: appsv1.StatefulSetSpec{Selector: sel}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "ns", UID: types.UID("u-db-0"), Labels: sel.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db", UID: "kruise-sts", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "K"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{"ns/db-0/app": {Env: map[string]string{"K": "old"}}}}
	return fake.NewClientset(cm, sts, pod), ex
}

// A pod owned by a controller of another API group that shares a built-in
// kind's name is planned manual, named by apiVersion, kind and name, and
// nothing is patched or evicted, though an apps/v1 StatefulSet of the same
// name exists: every strategy and way of restarting.
func TestForeignOwnerIsManualAndNeverPatched(t *testing.T) {
	for _, c := range []struct {
		strategy Strategy
		via      RestartVia
	}{{StrategyAuto, RestartViaTemplate}, {StrategyRestart, RestartViaTemplate}, {StrategyAuto, RestartViaEvict}, {StrategyRestart, RestartViaEvict}} {
		t.Run(string(c.strategy)+"/"+string(c.via), func(t *testing.T) {
			client, ex := kruiseCluster()
			ctx := context.Background()
			snap, items := cfgUses(t, client)
			cfg := Config{Strategy: c.strategy, RestartVia: c.via, MaxRestarts: -1, Yes: true, Timeout: 5 * time.Second,
				Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 1, ExecTimeout: 5 * time.Second}}
			r := &Refresher{Config: cfg, Cluster: ClientCluster(client, ex, cfg.Verify, false, "")}
			r.Access = denying{}
			client.ClearActions()
			p, err := r.Plan(ctx, snap, items)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) != 1 || p.Actions[0].Action != ActionManual || p.Restarts != 0 {
				t.Fatalf("plan %s, want one manual action and no restart", summary(p.Actions))
			}
			a := p.Actions[0]
			if a.Target.Kind != "StatefulSet.apps.kruise.io" || a.Target.String() != "statefulset.apps.kruise.io/db" {
				t.Errorf("target %+v (%s), want the StatefulSet of apps.kruise.io", a.Target, a.Target)
			}
			if !strings.Contains(a.Reason, `apps.kruise.io/v1beta1 StatefulSet "db"`) {
				t.Errorf("reason %q does not name the owner's apiVersion, kind and name", a.Reason)
			}
			res := r.Apply(ctx, p, nil)
			if len(res) != 1 || res[0].Outcome != OutcomeNotApplied {
				t.Errorf("results %+v, want the manual action not applied", res)
			}
			for _, act := range client.Actions() {
				if v := act.GetVerb(); v == "patch" || v == "create" || v == "update" || v == "delete" {
					t.Errorf("sent %s %s/%s: nothing may change", v, act.GetResource().Resource, act.GetSubresource())
				}
			}
		})
	}
}

// The adapters match by group and kind: a kind qualified with another
// group is refused, never sent to the built-in resource of the same name.
func TestAdaptersRefuseForeignKinds(t *testing.T) {
	client, _ := kruiseCluster()
	ctx := context.Background()
	client.ClearActions()
	if err := (ClientPatcher{Client: client}).Patch(ctx, Target{Kind: "StatefulSet.apps.kruise.io", Namespace: "ns", Name: "db"}, types.MergePatchType, []byte(`{}`), false); err == nil {
		t.Error("ClientPatcher patched a StatefulSet of apps.kruise.io")
	}
	if _, _, err := (ClusterRollout{Client: client}).RolloutDone(ctx, "StatefulSet.apps.kruise.io", "ns", "db"); err == nil {
		t.Error("ClusterRollout read the rollout of a StatefulSet of apps.kruise.io")
	}
	if _, err := (ClientWorkloads{Client: client}).WorkloadPods(ctx, "StatefulSet.apps.kruise.io", "ns", "db"); err == nil {
		t.Error("ClientWorkloads listed the pods of a StatefulSet of apps.kruise.io")
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("%d calls sent for another group's kind: %v", n, client.Actions())
	}
	// the built-in kind, unqualified or with its own group, still resolves
	for _, k := range []string{"StatefulSet", "StatefulSet.apps", "Pod"} {
		if _, ok := BuiltinKind(k); !ok {
			t.Errorf("BuiltinKind(%q) not built-in", k)
		}
	}
	for _, k := range []string{"StatefulSet.apps.kruise.io", "Rollout.argoproj.io", "Rollout", "Pod.core", "StatefulSet.core"} {
		if _, ok := BuiltinKind(k); ok {
			t.Errorf("BuiltinKind(%q) taken for a built-in kind", k)
		}
	}
}

// In one plan, the apps/v1 StatefulSet db is restarted for its own stale
// pod, and the pods of the Advanced StatefulSet db are neither part of
// that restart nor folded into it.
func TestPlanKeepsSameNamedOwnersOfOtherGroupsApart(t *testing.T) {
	foreign := func(it inspect.Use) inspect.Use {
		it.Workload.APIVersion = "apps.kruise.io/v1beta1"
		return it
	}
	items := []inspect.Use{
		use("db-1", "StatefulSet", "db", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
		foreign(use("db-0", "StatefulSet", "db", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)),
		foreign(use("db-2", "StatefulSet", "db", inspect.ModeVolume, inspect.VerdictHotUpdate, inspect.StatePending)),
	}
	for _, via := range []RestartVia{RestartViaTemplate, RestartViaEvict} {
		plan := PlanActions(PlanInput{Items: items, Workload: map[WorkloadKey]WorkloadInfo{{Kind: "StatefulSet", Namespace: "ns", Name: "db"}: {Exists: true}},
			Strategy: StrategyAuto, Verified: true, RestartVia: via})
		restart := map[RestartVia]string{RestartViaTemplate: "restart", RestartViaEvict: "evict"}[via]
		want := restart + " statefulset/db; annotate pod/db-2; manual statefulset.apps.kruise.io/db"
		if got := summary(plan); got != want {
			t.Errorf("%s: plan %q, want %q", via, got, want)
			continue
		}
		if got := strings.Join(plan[0].Pods, ","); got != "db-1" {
			t.Errorf("%s: the restart of the apps/v1 StatefulSet replaces %q, want db-1 only", via, got)
		}
	}
}
