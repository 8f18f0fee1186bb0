package controller

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Time: &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
}

const (
	restartField = `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/restartedAt":{}}}}}}`
	recordField  = `{"f:metadata":{"f:annotations":{"f:kubectl-cmsync.io/applied-digest":{}}}}`
)

// TestMovedManagersGiveCmsyncTheFieldsOfOtherBuilds: the Update entries of
// kubectl-cmsync and kubectl-cmsync-controller become cmsync's (renamed, or
// merged into cmsync's own); kubectl's, Flux's and an Apply are untouched.
func TestMovedManagersGiveCmsyncTheFieldsOfOtherBuilds(t *testing.T) {
	flux := entry("kustomize-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:replicas":{}}}`)
	kubectl := entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{}}}`)
	applied := entry("kubectl-cmsync", metav1.ManagedFieldsOperationApply, `{"f:metadata":{}}`)

	got, moved, err := movedManagers([]metav1.ManagedFieldsEntry{flux, entry("kubectl-cmsync", metav1.ManagedFieldsOperationUpdate, restartField), kubectl, applied})
	if err != nil || !moved || len(got) != 4 || got[1].Manager != version.FieldManager || string(got[1].FieldsV1.Raw) != restartField {
		t.Fatalf("renamed: moved %v, err %v, entries %+v; want kubectl-cmsync's entry renamed %s", moved, err, got, version.FieldManager)
	}
	for _, i := range []int{0, 2, 3} {
		if want := []metav1.ManagedFieldsEntry{flux, {}, kubectl, applied}[i]; got[i].Manager != want.Manager || got[i].Operation != want.Operation {
			t.Errorf("entry %d = %s %s, want %s %s untouched", i, got[i].Manager, got[i].Operation, want.Manager, want.Operation)
		}
	}

	later := entry("kubectl-cmsync-controller", metav1.ManagedFieldsOperationUpdate, recordField)
	later.Time = &metav1.Time{Time: later.Time.Add(time.Hour)}
	got, moved, err = movedManagers([]metav1.ManagedFieldsEntry{entry(version.FieldManager, metav1.ManagedFieldsOperationUpdate, restartField), flux, later})
	if err != nil || !moved || len(got) != 2 || got[0].Manager != version.FieldManager || !got[0].Time.Equal(later.Time) {
		t.Fatalf("merged: moved %v, err %v, entries %+v; want one %s entry at the later time", moved, err, got, version.FieldManager)
	}
	var fields map[string]any
	if err := json.Unmarshal(got[0].FieldsV1.Raw, &fields); err != nil || fields["f:spec"] == nil || fields["f:metadata"] == nil {
		t.Errorf("merged fields %s, want the restart and the record fields", got[0].FieldsV1.Raw)
	}

	// cmsync's own entry after another build's; two other builds' entries
	got, moved, err = movedManagers([]metav1.ManagedFieldsEntry{entry("kubectl-cmsync", metav1.ManagedFieldsOperationUpdate, restartField), flux,
		entry(version.FieldManager, metav1.ManagedFieldsOperationUpdate, recordField)})
	if err != nil || !moved || len(got) != 2 || got[0].Manager != "kustomize-controller" || got[1].Manager != version.FieldManager {
		t.Fatalf("cmsync's entry last: moved %v, err %v, entries %+v; want flux's and one %s entry", moved, err, got, version.FieldManager)
	}
	got, moved, err = movedManagers([]metav1.ManagedFieldsEntry{flux, entry("kubectl-cmsync", metav1.ManagedFieldsOperationUpdate, restartField),
		entry("kubectl-cmsync-controller", metav1.ManagedFieldsOperationUpdate, recordField)})
	if err != nil || !moved || len(got) != 2 || got[1].Manager != version.FieldManager {
		t.Fatalf("two other builds: moved %v, err %v, entries %+v; want flux's and one %s entry", moved, err, got, version.FieldManager)
	}
	if err := json.Unmarshal(got[1].FieldsV1.Raw, &fields); err != nil || fields["f:spec"] == nil || fields["f:metadata"] == nil {
		t.Errorf("two other builds merged: fields %s, want both", got[1].FieldsV1.Raw)
	}

	if _, moved, _ := movedManagers([]metav1.ManagedFieldsEntry{flux, kubectl, applied}); moved {
		t.Error("moved entries where no other build of cmsync owns any")
	}
}

// TestRestartUnderWay: a workload whose template restart cmsync (or
// another build of it) wrote and whose rollout may not be complete is a
// restart under way since that time; one restarted by kubectl, one whose
// rollout is complete, and one with no restart are not.
func TestRestartUnderWay(t *testing.T) {
	at := "2026-01-02T03:00:00Z"
	for _, tc := range []struct {
		name    string
		manager string
		rolling bool
		at      string
		want    bool
	}{
		{"cmsync, rolling", version.FieldManager, true, at, true},
		{"another build of cmsync, rolling", version.OtherFieldManagers[0], true, at, true},
		{"kubectl, rolling", "kubectl-rollout", true, at, false},
		{"cmsync, complete", version.FieldManager, false, at, false},
		{"no restart", version.FieldManager, true, "", false},
	} {
		o := workloadMeta{kind: "Deployment", restartedAt: tc.at, rolling: tc.rolling,
			meta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, recordField),
				entry(tc.manager, metav1.ManagedFieldsOperationUpdate, restartField)}}}
		got, ok := restartUnderWay(o)
		if ok != tc.want || (ok && got.Format(time.RFC3339) != at) {
			t.Errorf("%s: %s %v, want under way %v since %s", tc.name, got, ok, tc.want, at)
		}
	}
}
