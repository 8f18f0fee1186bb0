package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestUninstallRemovesWhatTheControllerKept: the records on workloads and
// pods, the refresh annotations, the key Secret and the Lease go; other
// annotations and restartedAt stay; a second run changes nothing.
func TestUninstallRemovesWhatTheControllerKept(t *testing.T) {
	meta := func(name string, ann map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: ann}
	}
	rec := map[string]string{reconcile.AnnotationApplied: `{"configmap/a":"x"}`, "team": "web"}
	dep := &appsv1.Deployment{ObjectMeta: meta("web", rec)}
	dep.Spec.Template.Annotations = map[string]string{refresh.RestartedAtAnnotation: "2026-01-01T00:00:00Z"}
	c := fake.NewClientset(dep, &appsv1.StatefulSet{ObjectMeta: meta("db", nil)},
		&corev1.Pod{ObjectMeta: meta("web-1", map[string]string{refresh.RefreshedAtAnnotation: "t"})},
		&corev1.Pod{ObjectMeta: meta("bare", map[string]string{reconcile.AnnotationApplied: "{}"})},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "key", Namespace: "cmsync-system"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease", Namespace: "cmsync-system"}})
	var told []string
	u := &Uninstall{Client: c, KeyNamespace: "cmsync-system", KeySecret: "key", LeaseName: "lease", Done: func(s string) { told = append(told, s) }}
	n, err := u.Run(context.Background())
	if err != nil || n != 5 {
		t.Fatalf("Run = %d, %v; want 5 changes:\n%s", n, err, strings.Join(told, "\n"))
	}
	d, _ := c.AppsV1().Deployments("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if _, ok := d.Annotations[reconcile.AnnotationApplied]; ok || d.Annotations["team"] != "web" || d.Spec.Template.Annotations[refresh.RestartedAtAnnotation] == "" {
		t.Errorf("deployment annotations %v, template %v: want the record gone, the rest and restartedAt kept", d.Annotations, d.Spec.Template.Annotations)
	}
	for _, name := range []string{"web-1", "bare"} {
		p, _ := c.CoreV1().Pods("shop").Get(context.Background(), name, metav1.GetOptions{})
		if len(p.Annotations) != 0 {
			t.Errorf("pod %s annotations %v, want none", name, p.Annotations)
		}
	}
	if _, err := c.CoreV1().Secrets("cmsync-system").Get(context.Background(), "key", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("key Secret: %v, want deleted", err)
	}
	u2 := &Uninstall{Client: c, KeyNamespace: "cmsync-system", KeySecret: "key", LeaseName: "lease"}
	if n, err := u2.Run(context.Background()); n != 0 || err != nil {
		t.Errorf("second run = %d, %v; want nothing left to change", n, err)
	}
}

// TestUninstallSaysWhereItStopped: a failure part way says how many
// changes were made and how to finish.
func TestUninstallSaysWhereItStopped(t *testing.T) {
	c := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop",
		Annotations: map[string]string{reconcile.AnnotationApplied: "{}"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", Annotations: map[string]string{refresh.RefreshedAtAnnotation: "t"}}})
	c.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no patch"))
	})
	_, err := (&Uninstall{Client: c, KeyNamespace: "cmsync-system", KeySecret: "key", LeaseName: "lease"}).Run(context.Background())
	var ue *UninstallError
	if !errors.As(err, &ue) || ue.Changed != 1 || !strings.Contains(err.Error(), "run the same command again to finish") || !strings.Contains(err.Error(), "pod/p -n shop") {
		t.Errorf("error %v, want one that names pod/p, says 1 change was made and how to finish", err)
	}
}

// TestUninstallOfOneNamespaceKeepsTheKey: the key Secret and the Lease
// serve every namespace's records: -n leaves them.
func TestUninstallOfOneNamespaceKeepsTheKey(t *testing.T) {
	c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "key", Namespace: "cmsync-system"}})
	if n, err := (&Uninstall{Client: c, Namespace: "shop", KeyNamespace: "cmsync-system", KeySecret: "key", LeaseName: "lease"}).Run(context.Background()); n != 0 || err != nil {
		t.Fatalf("Run = %d, %v", n, err)
	}
	if _, err := c.CoreV1().Secrets("cmsync-system").Get(context.Background(), "key", metav1.GetOptions{}); err != nil {
		t.Errorf("key Secret after an uninstall of one namespace: %v, want kept", err)
	}
}

func TestReadWatermark(t *testing.T) {
	at := "2026-01-02T03:04:05.5Z"
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    time.Time
		wantErr bool
	}{
		{"none: a first install", nil, time.Time{}, false},
		{"written", map[string]string{AnnotationWatermark: at}, time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC), false},
		{"unreadable: everything changed is checked", map[string]string{AnnotationWatermark: "yesterday"}, watermarkUnknown, true},
	} {
		c := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "key", Namespace: "sys", Annotations: tc.ann}})
		got, err := readWatermark(context.Background(), c, "sys", "key")
		if !got.Equal(tc.want) || (err != nil) != tc.wantErr {
			t.Errorf("%s: %s, %v; want %s (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestUninstallRemovesTheRecordsOfRollouts: a Rollout's record goes, its
// other annotations and spec.restartAt stay; a cluster without the Rollout
// CRD (not found) has nothing to remove.
func TestUninstallRemovesTheRecordsOfRollouts(t *testing.T) {
	rollout := func(name string, ann map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": name, "namespace": "shop", "annotations": ann},
			"spec":     map[string]any{"restartAt": "2026-01-01T00:00:00Z"}}}
	}
	gvr := refresh.RolloutResource
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "RolloutList"},
		rollout("web", map[string]any{reconcile.AnnotationApplied: `{"configmap/a":"x"}`, "team": "web"}), rollout("db", map[string]any{"team": "db"}))
	var told []string
	u := &Uninstall{Client: fake.NewClientset(), Namespace: "shop", Rollouts: func(ns string) dynamic.ResourceInterface { return dyn.Resource(gvr).Namespace(ns) },
		Done: func(s string) { told = append(told, s) }}
	if n, err := u.Run(context.Background()); err != nil || n != 1 || strings.Join(told, "; ") != "rollout/web -n shop: record removed" {
		t.Fatalf("Run: %d changes, %v, told %q; want the record of rollout/web removed", n, err, told)
	}
	web, err := dyn.Resource(gvr).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ann := web.GetAnnotations(); ann[reconcile.AnnotationApplied] != "" || ann["team"] != "web" {
		t.Errorf("web's annotations after: %v, want the record gone and team kept", ann)
	}
	if at, _, _ := unstructured.NestedString(web.Object, "spec", "restartAt"); at != "2026-01-01T00:00:00Z" {
		t.Errorf("spec.restartAt after: %q, want it kept", at)
	}
	none := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "RolloutList"})
	none.PrependReactor("list", "rollouts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	})
	u = &Uninstall{Client: fake.NewClientset(), Namespace: "shop", Rollouts: func(ns string) dynamic.ResourceInterface { return none.Resource(gvr).Namespace(ns) }}
	if n, err := u.Run(context.Background()); err != nil || n != 0 {
		t.Errorf("without the CRD: %d changes, %v; want none and no error", n, err)
	}
}
