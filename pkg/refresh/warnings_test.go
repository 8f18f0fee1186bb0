package refresh

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestPlanGroupWarnings: the plan's warnings keep their numbers; results
// whose wait ended unverifiable for the plan's cause join its warning
// (each use counted once), two of a new cause make warning 2, a single
// one keeps its cause; the details point to their warnings.
func TestPlanGroupWarnings(t *testing.T) {
	const nsCause, nsFix = "error: namespace readers, where the node reader pods run, does not exist", "kubectl create namespace readers"
	const execCause, execFix = "forbidden: exec into the pod", "grant create on pods/exec"
	use := func(pod, cause, fix string, c inspect.StateCause) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}, Pod: inspect.PodRef{Name: pod, UID: pod},
			Mode: inspect.ModeVolume, State: inspect.StateUnverifiable, StateCause: c, StateReason: cause + " (" + fix + ")", StateFix: fix}
	}
	planned := []inspect.Use{use("a", nsCause, nsFix, inspect.CauseExecFailed), use("b", nsCause, nsFix, inspect.CauseExecFailed)}
	p := &Plan{Uses: planned, Warnings: inspect.GroupWarnings(planned)}
	result := func(u inspect.Use, o Outcome) Result {
		r := Result{Action: Action{Action: ActionAnnotate, Target: Target{Kind: "Pod", Namespace: "ns", Name: u.Pod.Name}}, Outcome: o, Detail: "annotated; " + describe(u)}
		r.noteUnverifiable(&u)
		return r
	}
	results := []Result{
		result(use("a", nsCause, nsFix, inspect.CauseExecFailed), OutcomeTimeout),             // planned already: counted once
		result(use("c", nsCause, nsFix, inspect.CauseExecFailed), OutcomeTimeout),             // joins warning 1
		result(use("d", execCause, execFix, inspect.CauseExecForbidden), OutcomeUnverifiable), // a new cause, twice: warning 2
		result(use("e", execCause, execFix, inspect.CauseExecForbidden), OutcomeUnverifiable),
		result(use("f", "timeout: the exec did not finish", "raise --exec-timeout", inspect.CauseExecTimeout), OutcomeTimeout), // once: on its row
		{Action: Action{Action: ActionAnnotate}, Outcome: OutcomeCurrent},
	}
	got := p.GroupWarnings(results)
	want := []inspect.Warning{{Cause: nsCause, Fix: nsFix, Uses: 3}, {Cause: execCause, Fix: execFix, Uses: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %+v\nwant %+v", got, want)
	}
	for i, w := range []string{"(see warning 1)", "(see warning 1)", "(see warning 2)", "(see warning 2)", "(timeout: the exec did not finish (raise --exec-timeout))"} {
		if !strings.HasSuffix(results[i].Detail, w) || strings.Count(results[i].Detail, "warning") > 1 {
			t.Errorf("result %d detail %q, want it to end with %q", i, results[i].Detail, w)
		}
	}
	if (*Plan)(nil).GroupWarnings(results[5:]) != nil {
		t.Errorf("no plan, no unverifiable result: warnings")
	}
}

// TestDecideUnverifiableReason: a grouped use's reason points to its
// warning; an ungrouped one quotes its cause.
func TestDecideUnverifiableReason(t *testing.T) {
	it := inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Name: "cfg"}, Mode: inspect.ModeEnv, Verdict: inspect.VerdictRestartNeeded,
		Workload: inspect.WorkloadRef{Kind: "Deployment", Name: "web"}, State: inspect.StateUnverifiable, StateCause: inspect.CauseExecForbidden, StateReason: "forbidden: exec (grant it)"}
	if d := decide(it, nil, StrategyAuto, true); d.reason != "cannot tell whether stale (forbidden: exec (grant it)); use --strategy restart" {
		t.Errorf("ungrouped: %q", d.reason)
	}
	it.Warning = 2
	if d := decide(it, nil, StrategyAuto, true); d.reason != "cannot tell whether stale (see warning 2); use --strategy restart" {
		t.Errorf("grouped: %q", d.reason)
	}
	it.Mode, it.Verdict = inspect.ModeVolume, inspect.VerdictHotUpdate
	if d := decide(it, nil, StrategyAuto, true); d.reason != "mount is unverifiable (see warning 2): annotating is harmless and makes the kubelet rewrite it now" {
		t.Errorf("grouped mount: %q", d.reason)
	}
}
