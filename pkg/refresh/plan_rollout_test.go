package refresh

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// rolloutUse is a stale env use of a pod of the Argo Rollout name.
func rolloutUse(pod, name string) inspect.Use {
	it := use(pod, "Rollout", name, inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale)
	it.Workload.APIVersion = "argoproj.io/v1alpha1"
	return it
}

// An Argo Rollout is restarted by group and kind: through spec.restartAt by
// default and with rollout-strategy restart, through its pod template with
// rollout-strategy rollout, refused (manual, with the next step) where a new
// revision would not go through; a Rollout of another group is not one.
func TestPlanArgoRollout(t *testing.T) {
	key := func(name string) WorkloadKey { return WorkloadKey{RolloutKind, "ns", name} }
	info := func(r RolloutInfo) WorkloadInfo { return WorkloadInfo{Exists: true, Rollout: &r} }
	workloads := map[WorkloadKey]WorkloadInfo{
		key("web"):      info(RolloutInfo{Strategy: RolloutStrategyRestart}),
		key("tmpl"):     info(RolloutInfo{Strategy: RolloutStrategyRollout}),
		key("paused"):   info(RolloutInfo{Strategy: RolloutStrategyRestart, Paused: true}),
		key("aborted"):  info(RolloutInfo{Strategy: RolloutStrategyRestart, Aborted: true}),
		key("tpaused"):  info(RolloutInfo{Strategy: RolloutStrategyRollout, Paused: true}),
		key("taborted"): info(RolloutInfo{Strategy: RolloutStrategyRollout, Aborted: true, Paused: true}),
		key("bad"):      info(RolloutInfo{Strategy: "recreate"}),
	}
	other := rolloutUse("x-1", "x")
	other.Workload.APIVersion = "example.com/v1"
	tests := []struct {
		name      string
		it        inspect.Use
		via       RestartVia
		want      string
		restartAt bool
		reason    string
	}{
		{"default: spec.restartAt", rolloutUse("web-1", "web"), RestartViaTemplate, "restart rollout.argoproj.io/web", true, ""},
		{"rollout-strategy rollout: the template", rolloutUse("tmpl-1", "tmpl"), RestartViaTemplate, "restart rollout.argoproj.io/tmpl", false, ""},
		{"paused: restartAt still restarts", rolloutUse("paused-1", "paused"), RestartViaTemplate, "restart rollout.argoproj.io/paused", true, ""},
		{"aborted: restartAt still restarts", rolloutUse("aborted-1", "aborted"), RestartViaTemplate, "restart rollout.argoproj.io/aborted", true, ""},
		{"paused: no new revision", rolloutUse("tpaused-1", "tpaused"), RestartViaTemplate, "manual rollout.argoproj.io/tpaused", false,
			`Rollout "tpaused" is paused: a new revision would stop at the pause; promote it (kubectl argo rollouts promote tpaused -n ns), or set reloader.stakater.com/rollout-strategy=restart to restart its pods in place`},
		{"aborted: no new revision", rolloutUse("taborted-1", "taborted"), RestartViaTemplate, "manual rollout.argoproj.io/taborted", false,
			`Rollout "taborted" is aborted: a new revision would not be promoted; retry it (kubectl argo rollouts retry rollout taborted -n ns), or set reloader.stakater.com/rollout-strategy=restart to restart its pods in place`},
		{"unknown strategy", rolloutUse("bad-1", "bad"), RestartViaTemplate, "manual rollout.argoproj.io/bad", false,
			`Rollout "bad" has reloader.stakater.com/rollout-strategy="recreate": neither "restart" nor "rollout"; fix the annotation, then run this again`},
		{"not found", rolloutUse("gone-1", "gone"), RestartViaTemplate, "manual rollout.argoproj.io/gone", false,
			`Rollout "gone" was not found; restart it with kubectl argo rollouts restart gone -n ns`},
		{"evict: its pods", rolloutUse("web-1", "web"), RestartViaEvict, "evict rollout.argoproj.io/web", false, ""},
		{"another group's Rollout", other, RestartViaTemplate, "manual rollout.example.com/x", false,
			`owner example.com/v1 Rollout "x" is not a built-in workload`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanActions(PlanInput{Items: []inspect.Use{tt.it}, Workload: workloads, Strategy: StrategyAuto, Verified: true, RestartVia: tt.via})
			if s := summary(got); s != tt.want {
				t.Fatalf("plan = %q, want %q", s, tt.want)
			}
			if got[0].RestartAt != tt.restartAt {
				t.Errorf("RestartAt = %v, want %v", got[0].RestartAt, tt.restartAt)
			}
			if tt.reason != "" && !strings.HasPrefix(got[0].Reason, tt.reason) {
				t.Errorf("reason %q, want %q", got[0].Reason, tt.reason)
			}
		})
	}
}

// The patch of a Rollout restart: spec.restartAt alone, in RFC3339 UTC.
func TestRestartAtPatch(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 800, time.FixedZone("x", 3600))
	if got, want := string(RestartAtPatch(at)), `{"spec":{"restartAt":"2026-03-04T04:06:07Z"}}`; got != want {
		t.Errorf("patch %s, want %s", got, want)
	}
}

// A Rollout's restart is done from its status: observed, restartedAt caught
// up with restartAt, Healthy or Paused on its stable pods.
func TestRolloutStatus(t *testing.T) {
	ro := func(s string) argoRollout {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout",` + s[1:])); err != nil {
			t.Fatal(err)
		}
		r, err := rolloutOf(u)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const at = `"2026-03-04T05:06:07Z"`
	tests := []struct {
		name, obj string
		done      bool
		msg       string
	}{
		{"healthy", `{"metadata":{"generation":3},"status":{"observedGeneration":"3","phase":"Healthy"}}`, true, "the Rollout is Healthy"},
		{"not observed", `{"metadata":{"generation":4},"status":{"observedGeneration":"3","phase":"Healthy"}}`, false,
			"waiting for the Argo Rollouts controller to observe the Rollout's spec"},
		{"integer observedGeneration", `{"metadata":{"generation":3},"status":{"observedGeneration":3,"phase":"Healthy"}}`, true, "the Rollout is Healthy"},
		{"restart under way", `{"metadata":{"generation":3},"spec":{"restartAt":` + at + `},"status":{"observedGeneration":"3","phase":"Healthy"}}`, false,
			"waiting for the Argo Rollouts controller to restart the pods older than spec.restartAt 2026-03-04T05:06:07Z"},
		{"restart done", `{"metadata":{"generation":3},"spec":{"restartAt":` + at + `},"status":{"observedGeneration":"3","phase":"Healthy","restartedAt":` + at + `}}`, true, "the Rollout is Healthy"},
		{"paused on its stable pods", `{"metadata":{"generation":3},"spec":{"paused":true},"status":{"observedGeneration":"3","phase":"Paused","currentPodHash":"a","stableRS":"a"}}`, true,
			"the Rollout is Paused with its stable pods current"},
		{"paused part way", `{"metadata":{"generation":3},"status":{"observedGeneration":"3","phase":"Paused","message":"CanaryPauseStep","currentPodHash":"b","stableRS":"a"}}`, false,
			"the Rollout is paused part way through an update (CanaryPauseStep): promote it with kubectl argo rollouts promote"},
		{"aborted", `{"metadata":{"generation":3},"status":{"observedGeneration":"3","phase":"Degraded","abort":true,"message":"RolloutAborted"}}`, false,
			"the Rollout is aborted (RolloutAborted): retry it with kubectl argo rollouts retry rollout"},
		{"progressing", `{"metadata":{"generation":3},"status":{"observedGeneration":"3","phase":"Progressing","message":"more replicas need to be updated"}}`, false,
			"the Rollout is Progressing (more replicas need to be updated)"},
		{"no status yet", `{"metadata":{"generation":1}}`, false, "waiting for the Argo Rollouts controller to observe the Rollout's spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, msg := RolloutStatus(ro(tt.obj))
			if done != tt.done || msg != tt.msg {
				t.Errorf("RolloutStatus = %v, %q; want %v, %q", done, msg, tt.done, tt.msg)
			}
		})
	}
}

// Only argoproj.io's Rollout is a Rollout.
func TestIsRollout(t *testing.T) {
	for kind, want := range map[string]bool{"Rollout.argoproj.io": true, "Rollout": false, "Rollout.example.com": false, "Deployment": false, "Rollouts.argoproj.io": false} {
		if got := IsRollout(kind); got != want {
			t.Errorf("IsRollout(%q) = %v, want %v", kind, got, want)
		}
	}
}
