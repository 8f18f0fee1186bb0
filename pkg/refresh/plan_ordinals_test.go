package refresh

import (
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// A StatefulSet whose ordinals start at 3 with partition 1: the controller
// compares the partition with each pod's index (its ordinal minus
// spec.ordinals.start), so of web-3, web-4 and web-5 a restart replaces
// web-4 and web-5 and spares web-3.
func TestPlanPartitionCountsFromOrdinalsStart(t *testing.T) {
	var pods []WorkloadPod
	for _, n := range []string{"web-3", "web-4", "web-5"} {
		pods = append(pods, WorkloadPod{Name: n, UID: "u-" + n})
	}
	wl := map[WorkloadKey]WorkloadInfo{{"StatefulSet", "ns", "web"}: {Exists: true, Partition: 1, OrdinalsStart: 3, Pods: pods}}
	items := []inspect.Use{
		use("web-3", "StatefulSet", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
		use("web-4", "StatefulSet", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
		use("web-5", "StatefulSet", "web", inspect.ModeEnv, inspect.VerdictRestartNeeded, inspect.StateStale),
	}
	got := PlanActions(PlanInput{Items: items, Workload: wl, Strategy: StrategyAuto, Verified: true})
	var restart *Action
	for i := range got {
		if got[i].Action == ActionRestart {
			restart = &got[i]
		}
	}
	if restart == nil {
		t.Fatalf("plan %q has no restart", summary(got))
	}
	if strings.Join(restart.Pods, ",") != "web-4,web-5" {
		t.Errorf("restart replaces %v, want web-4,web-5 (indexes 1 and 2)", restart.Pods)
	}
	if len(restart.Warnings) != 1 || !strings.Contains(restart.Warnings[0], "pod web-3 is not replaced") || !strings.Contains(restart.Warnings[0], "ordinals 4 and up") {
		t.Errorf("warnings %q, want web-3 spared and ordinals 4 and up replaced", restart.Warnings)
	}
	named := false
	for _, a := range got {
		if a.Action == ActionManual && strings.Contains(a.Reason, "web-3") {
			named = true
		}
		if a.Action == ActionManual && (strings.Contains(a.Reason, "web-4") || strings.Contains(a.Reason, "web-5")) {
			t.Errorf("manual action for a pod the restart replaces: %q", a.Reason)
		}
	}
	if !named {
		t.Errorf("plan %q: the stale web-3, which the restart spares, is not named", summary(got))
	}
	for _, tc := range []struct {
		pod  string
		want bool
	}{{"web-3", true}, {"web-4", false}, {"web-5", false}, {"web-0", true}} {
		if got := spared(wl[WorkloadKey{"StatefulSet", "ns", "web"}], WorkloadKey{"StatefulSet", "ns", "web"}, tc.pod); got != tc.want {
			t.Errorf("spared(%s) = %v, want %v", tc.pod, got, tc.want)
		}
	}
}
