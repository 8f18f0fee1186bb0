package inspect

import (
	"reflect"
	"testing"
)

// TestGroupWarnings: uses left unverifiable by one cause with one fix are
// one warning, numbered in the order of their first use; a cause of one
// use, or without a known fix, stays on its row.
func TestGroupWarnings(t *testing.T) {
	const nsFix = "create it for the readers alone: `kubectl create namespace cmsync-readers`"
	const execFix = "grant create on pods/exec"
	u := func(pod string, cause StateCause, reason, fix string) Use {
		it := Use{Pod: PodRef{Name: pod}, State: StateUnverifiable, StateCause: cause, StateReason: reason, StateFix: fix}
		if fix != "" {
			it.StateReason += " (" + fix + ")"
		}
		return it
	}
	items := []Use{
		{Pod: PodRef{Name: "ok"}, State: StateInSync},
		u("a", CauseExecFailed, "error: namespace cmsync-readers, where the node reader pods run, does not exist", nsFix),
		u("b", CauseExecForbidden, "forbidden: exec into b", execFix),
		u("c", CauseExecFailed, "error: namespace cmsync-readers, where the node reader pods run, does not exist", nsFix),
		u("d", CauseExecForbidden, "forbidden: exec into d", execFix),
		u("e", CauseExecFailed, "error: namespace cmsync-readers, where the node reader pods run, does not exist", nsFix),
		u("f", CauseExecTimeout, "timeout: the exec did not finish in time", "raise --exec-timeout"), // one use only
		u("g", CauseExecFailed, "error: exit code 2", ""),                                            // no fix known
		u("h", CauseExecFailed, "error: exit code 2", ""),
	}
	got := GroupWarnings(items)
	want := []Warning{
		{Cause: "error: namespace cmsync-readers, where the node reader pods run, does not exist", Fix: nsFix, Uses: 3},
		{Cause: "forbidden: exec into b", Fix: execFix, Uses: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %+v\nwant %+v", got, want)
	}
	var numbers []int
	for _, it := range items {
		numbers = append(numbers, it.Warning)
	}
	if want := []int{0, 1, 2, 1, 2, 1, 0, 0, 0}; !reflect.DeepEqual(numbers, want) {
		t.Errorf("row warnings = %v, want %v", numbers, want)
	}
	if s := got[0].String(1); s != "[1] 3 uses are unverifiable: error: namespace cmsync-readers, where the node reader pods run, does not exist. Fix: "+nsFix {
		t.Errorf("String = %q", s)
	}
}
