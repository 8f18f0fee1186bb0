package reconcile

import (
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// An Argo Rollout (by group and kind) is a subject like a Deployment: its
// record is kept on it, its annotations select it, a Reloader opt-in
// restarts it on every change, keyed by its group-qualified kind; another
// group's Rollout stays a foreign controller's (its pod carries the record,
// nothing restarts it).
func TestArgoRolloutIsASubject(t *testing.T) {
	argo := inspect.WorkloadRef{Kind: "Rollout", Name: "web", APIVersion: "argoproj.io/v1alpha1"}
	other := inspect.WorkloadRef{Kind: "Rollout", Name: "web", APIVersion: "example.com/v1"}
	use := func(w inspect.WorkloadRef) inspect.Use {
		return inspect.Use{Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cm"}, Pod: inspect.PodRef{Name: "web-1"}, Workload: w}
	}
	if s := subjectOf(use(argo)); s.Kind != refresh.RolloutKind || s.Name != "web" {
		t.Errorf("subject of the Argo Rollout's pod: %+v, want the Rollout", s)
	}
	if s := subjectOf(use(other)); s.Kind != "Pod" || s.Name != "web-1" {
		t.Errorf("subject of another group's Rollout's pod: %+v, want the pod", s)
	}
	opted := subjectMeta{workload: map[string]string{ReloaderAuto: "true"}}
	got := restartsOnChange(map[inspect.WorkloadRef]subjectMeta{argo: opted, other: opted}, "ns", "")
	want := refresh.WorkloadKey{Kind: refresh.RolloutKind, Namespace: "ns", Name: "web"}
	if len(got) != 1 || got[want][inspect.KindConfigMap] == "" {
		t.Errorf("restarts on change %v, want the Argo Rollout only, keyed %v", got, want)
	}
}

// TestReloaderOnChangeDefault: --reloader-on-change=remount makes a
// Reloader opt-in remounted, and no restart is planned for it; a
// workload's own on-change annotation still wins, and "" is restart.
func TestReloaderOnChangeDefault(t *testing.T) {
	auto := map[string]string{ReloaderAuto: "true"}
	for _, tc := range []struct {
		ann            map[string]string
		reloader, want string
	}{
		{auto, "", OnChangeRestart},
		{auto, OnChangeRestart, OnChangeRestart},
		{auto, OnChangeRemount, OnChangeRemount},
		{map[string]string{ReloaderAuto: "true", AnnotationOnChange: OnChangeRestart}, OnChangeRemount, OnChangeRestart},
	} {
		if got, why := OnChangeFor(tc.ann, nil, inspect.KindConfigMap, tc.reloader); got != tc.want || why == "" {
			t.Errorf("OnChangeFor(%v, %q) = %q (%s), want %q", tc.ann, tc.reloader, got, why, tc.want)
		}
	}
	w := inspect.WorkloadRef{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}
	if got := restartsOnChange(map[inspect.WorkloadRef]subjectMeta{w: {workload: auto}}, "ns", OnChangeRemount); len(got) != 0 {
		t.Errorf("restarts under --reloader-on-change=remount: %v, want none", got)
	}
}
