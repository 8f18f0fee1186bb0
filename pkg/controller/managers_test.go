package controller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
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

// TestRolloutRestartsUnderWayAreCounted: a new leader counts an Argo
// Rollout whose restart cmsync sent (its spec.restartAt, owned by cmsync's
// field manager) is not done, as it counts a Deployment's; a Rollout whose
// restart is done is not counted; a cluster that serves no Rollout CRD has
// none, and its Deployments are counted all the same.
func TestRolloutRestartsUnderWayAreCounted(t *testing.T) {
	at := "2026-01-02T03:00:00Z"
	rollout := func(name string, status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": name, "namespace": "shop", "generation": int64(2), "managedFields": []any{map[string]any{
				"manager": version.FieldManager, "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:restartAt": map[string]any{}}}}}},
			"spec":   map[string]any{"restartAt": at},
			"status": status}}
	}
	canary := rollout("canary", map[string]any{"observedGeneration": "2", "phase": "Progressing"}) // its pods not restarted yet
	stable := rollout("stable", map[string]any{"observedGeneration": "2", "phase": "Healthy", "restartedAt": at})
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 2,
		ManagedFields: []metav1.ManagedFieldsEntry{entry(version.FieldManager, metav1.ManagedFieldsOperationUpdate, restartField)}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1}}
	dep.Spec.Template.Annotations = map[string]string{refresh.RestartedAtAnnotation: at}
	gvr := refresh.RolloutResource
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "RolloutList"}, canary, stable)
	noCRD := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "RolloutList"})
	noCRD.PrependReactor("list", "rollouts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	})
	web := refresh.Target{Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name string
		dyn  *dynamicfake.FakeDynamicClient
		want []refresh.Target
	}{
		{"Rollouts served", dyn, []refresh.Target{web, {Kind: refresh.RolloutKind, Namespace: "shop", Name: "canary"}}},
		{"no Rollout CRD", noCRD, []refresh.Target{web}},
	} {
		rollouts := func(ns string) dynamic.ResourceInterface { return tc.dyn.Resource(gvr).Namespace(ns) }
		_, underWay, err := MoveFieldManagers(context.Background(), fake.NewClientset(dep), rollouts, "shop")
		if err != nil || len(underWay) != len(tc.want) {
			t.Errorf("%s: under way %v, %v; want %v", tc.name, underWay, err, tc.want)
			continue
		}
		for _, w := range tc.want {
			if got, ok := underWay[w]; !ok || got.Format(time.RFC3339) != at {
				t.Errorf("%s: under way %v; want %s since %s", tc.name, underWay, w, at)
			}
		}
	}
}
