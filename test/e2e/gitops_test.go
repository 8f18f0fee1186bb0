//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/controller"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

// fluxManager is the field manager of Flux's kustomize-controller.
const fluxManager = "kustomize-controller"

// gitopsDeployment is the manifest a GitOps tool applies: env reads key
// level of ConfigMap app, and Reloader's auto annotation opts it in.
func (f *fx) gitopsDeployment() []byte {
	f.t.Helper()
	labels := map[string]string{"app": "gitops"}
	one := int32(1)
	d := appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "gitops", Namespace: f.ns, Annotations: map[string]string{reconcile.ReloaderAuto: "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil)))}}}
	b, err := json.Marshal(d)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// fluxApply is kustomize-controller's apply: a forced server-side apply of
// the manifest under its field manager.
func (f *fx) fluxApply(manifest []byte) *appsv1.Deployment {
	f.t.Helper()
	force := true
	d, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, "gitops", types.ApplyPatchType, manifest, metav1.PatchOptions{FieldManager: fluxManager, Force: &force})
	if err != nil {
		f.t.Fatalf("server-side apply as %s: %v", fluxManager, err)
	}
	return d
}

// fluxCleanup does what fluxcd/pkg's ssa does before each apply: the fields
// of every Update manager whose name starts with "kubectl" become
// kustomize-controller's (merged into its Apply entry), so that the next
// apply drops those its manifest lacks.
func (f *fx) fluxCleanup() {
	f.t.Helper()
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "gitops", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var keep []metav1.ManagedFieldsEntry
	flux := -1
	taken := &fieldpath.Set{}
	for _, e := range d.ManagedFields {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && strings.HasPrefix(e.Manager, "kubectl") && e.Subresource == "" {
			s := &fieldpath.Set{}
			if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
				f.t.Fatal(err)
			}
			taken = taken.Union(s)
			continue
		}
		if e.Manager == fluxManager && e.Operation == metav1.ManagedFieldsOperationApply {
			flux = len(keep)
		}
		keep = append(keep, e)
	}
	if flux < 0 {
		f.t.Fatalf("no %s Apply entry in %+v", fluxManager, d.ManagedFields)
	}
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(keep[flux].FieldsV1.Raw)); err != nil {
		f.t.Fatal(err)
	}
	raw, err := s.Union(taken).ToJSON()
	if err != nil {
		f.t.Fatal(err)
	}
	keep[flux].FieldsV1 = &metav1.FieldsV1{Raw: raw}
	patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/metadata/managedFields", "value": keep}})
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, "gitops", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("taking the kubectl* managers' fields: %v", err)
	}
}

func managers(d *appsv1.Deployment) string {
	var out []string
	for _, e := range d.ManagedFields {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return strings.Join(out, " ")
}

// TestControllerUnderFlux: a workload applied by Flux keeps cmsync's restart
// and record through Flux's cleanup of kubectl* managers and its next
// apply, and a record another build of cmsync wrote (as kubectl-cmsync) is
// moved to cmsync's field manager when the controller starts.
func TestControllerUnderFlux(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "l0"}))
	manifest := f.gitopsDeployment()
	f.fluxApply(manifest)
	f.waitDeploymentSettled("gitops")
	// a record written by another build of cmsync, under its old name
	old := []byte(`{"metadata":{"annotations":{"` + reconcile.AnnotationApplied + `":"{}"}}}`)
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, "gitops", types.MergePatchType, old, metav1.PatchOptions{FieldManager: "kubectl-cmsync"}); err != nil {
		t.Fatal(err)
	}

	f.deployController("controller", "-n", f.ns, "--debounce=1s")
	f.waitControllerEvent(f.leader(), "resumed", isResume)
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "gitops", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := managers(d); strings.Contains(m, "kubectl-cmsync/") || !strings.Contains(m, version.FieldManager+"/Update") {
		t.Errorf("managers after the controller started: %s; want kubectl-cmsync's entry moved to %s", m, version.FieldManager)
	}
	rec0 := d.Annotations[reconcile.AnnotationApplied]

	t.Log("an edit: one restart, then Flux's cleanup and apply")
	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	e := f.waitAnyControllerEvent("restart of gitops verified", isResult(refresh.ActionRestart, "deployment/gitops"))
	if e.Outcome != refresh.OutcomeCurrent {
		t.Fatalf("restart deployment/gitops: %s (%s), want current", e.Outcome, e.Message)
	}
	f.poll("the record of gitops written after the restart", podReadyTimeout, func() (bool, error) {
		return f.appliedRecord("gitops") != rec0, nil
	})
	d, err = f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "gitops", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restartedAt, record, generation := d.Spec.Template.Annotations[refresh.RestartedAtAnnotation], d.Annotations[reconcile.AnnotationApplied], d.Generation
	if restartedAt == "" {
		t.Fatalf("no %s after the restart", refresh.RestartedAtAnnotation)
	}
	f.fluxCleanup()
	after := f.fluxApply(manifest)
	if got := after.Spec.Template.Annotations[refresh.RestartedAtAnnotation]; got != restartedAt || after.Generation != generation {
		t.Errorf("after Flux's apply: restartedAt %q (generation %d -> %d), want %q kept and no new rollout; managers %s",
			got, generation, after.Generation, restartedAt, managers(after))
	}
	if got := after.Annotations[reconcile.AnnotationApplied]; got != record {
		t.Errorf("after Flux's apply: record %q, want %q kept; managers %s", got, record, managers(after))
	}
}

// TestControllerActsOnWhatNoLeaderSaw: a Deployment created after the
// leader started has no record; its ConfigMap edited while the controller
// is scaled to zero is seen by the next leader (the watermark), which
// restarts it and verifies it current. Uninstalled from the test's
// namespace (-n: the other controller tests' records are left alone), its
// record there is removed and the key and the Lease, which serve every
// namespace, are kept (TestControllerUninstallAllNamespaces removes them).
func TestControllerActsOnWhatNoLeaderSaw(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.createConfigMap(configMap("late", map[string]string{"level": "l0"}))
	f.deployController("controller", "-n", f.ns, "--debounce=1s")
	f.waitControllerEvent(f.leader(), "resumed", isResume)
	f.createAnnotatedDeployment("late", 1, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "late", "level", nil))), map[string]string{reconcile.ReloaderAuto: "true"})
	f.waitDeploymentSettled("late")
	f.poll("the watermark written", podReadyTimeout, func() (bool, error) {
		s, err := f.cs.CoreV1().Secrets(f.ctlNS()).Get(f.ctx, controllerKey, metav1.GetOptions{})
		return err == nil && s.Annotations[controller.AnnotationWatermark] != "", err
	})

	t.Log("no leader: the controller scaled to zero, then the edit")
	f.scaleController(0)
	f.patchConfigMapData("late", map[string]string{"level": "l1"})
	f.scaleController(2)
	e := f.waitAnyControllerEvent("the restart of late verified", isResult(refresh.ActionRestart, "deployment/late"))
	if e.Outcome != refresh.OutcomeCurrent {
		t.Fatalf("restart deployment/late: %s (%s), want current", e.Outcome, e.Message)
	}
	pods, _ := f.deploymentPods("late")
	for name := range pods {
		f.expectEnv(name, "c", "LEVEL", "l1")
	}

	t.Log("uninstall from the test's namespace: the controller stopped, its record there removed, the key and Lease kept")
	f.poll("the record of late written", podReadyTimeout, func() (bool, error) { return f.appliedRecord("late") != "", nil })
	f.scaleController(0)
	out, err := exec.CommandContext(f.ctx, "kubectl", "cmsync", "controller", "uninstall", "-n", f.ns, "--key-namespace", f.ctlNS()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deployment/late -n "+f.ns+": record removed") {
		t.Fatalf("kubectl cmsync controller uninstall: %v\n%s", err, out)
	}
	if rec := f.appliedRecord("late"); rec != "" {
		t.Errorf("record of late after uninstall: %q, want none", rec)
	}
	if _, err := f.cs.CoreV1().Secrets(f.ctlNS()).Get(f.ctx, controllerKey, metav1.GetOptions{}); err != nil {
		t.Errorf("key Secret after the uninstall of one namespace: %v, want it kept", err)
	}
	if _, err := f.cs.CoordinationV1().Leases(f.ctlNS()).Get(f.ctx, ctlName, metav1.GetOptions{}); err != nil {
		t.Errorf("Lease after the uninstall of one namespace: %v, want it kept", err)
	}
}

// controllerKey is the controller's key Secret (--key-secret's default).
const controllerKey = "kubectl-cmsync-controller-key"

// TestControllerUninstallAllNamespaces: `controller uninstall -A` removes
// the records and the refresh annotations in every namespace, and the key
// Secret (with its watermark) and the Lease from --key-namespace. It
// changes every namespace, so it runs in the sequential phase, when no
// controller of another test runs; it needs no controller, only what one
// leaves (TestControllerActsOnWhatNoLeaderSaw has a real one write them).
func TestControllerUninstallAllNamespaces(t *testing.T) {
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "l0"}))
	f.createAnnotatedDeployment("recorded", 0, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))),
		map[string]string{reconcile.AnnotationApplied: "{}"})
	p := pod("refreshed", podSpec(busybox("c")))
	p.Annotations = map[string]string{refresh.RefreshedAtAnnotation: time.Now().UTC().Format(time.RFC3339)}
	f.createPod(p)
	if _, err := f.cs.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: controllerKey,
		Annotations: map[string]string{controller.AnnotationWatermark: time.Now().UTC().Format(time.RFC3339)}},
		Data: map[string][]byte{"key": []byte("0123456789abcdef0123456789abcdef")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder := "gone"
	if _, err := f.cs.CoordinationV1().Leases(f.ns).Create(f.ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: ctlName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := exec.CommandContext(f.ctx, "kubectl", "cmsync", "controller", "uninstall", "-A", "--key-namespace", f.ns).CombinedOutput()
	for _, want := range []string{"deployment/recorded -n " + f.ns + ": record removed", "pod/refreshed -n " + f.ns + ": ",
		"secret/" + controllerKey + " -n " + f.ns + ": deleted", "lease/" + ctlName + " -n " + f.ns + ": deleted"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("kubectl cmsync controller uninstall -A: %v, want %q in:\n%s", err, want, out)
		}
	}
	if rec := f.appliedRecord("recorded"); rec != "" {
		t.Errorf("record of deployment/recorded after uninstall: %q, want none", rec)
	}
	if at := f.getPod("refreshed").Annotations[refresh.RefreshedAtAnnotation]; at != "" {
		t.Errorf("pod refreshed's %s after uninstall: %q, want none", refresh.RefreshedAtAnnotation, at)
	}
	if _, err := f.cs.CoreV1().Secrets(f.ns).Get(f.ctx, controllerKey, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("key Secret after uninstall: %v, want not found", err)
	}
	if _, err := f.cs.CoordinationV1().Leases(f.ns).Get(f.ctx, ctlName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Lease after uninstall: %v, want not found", err)
	}
}

// scaleController sets the controller's replicas and waits until that many
// of its pods run (none left for 0, terminating ones included).
func (f *fx) scaleController(n int32) {
	f.t.Helper()
	s, err := f.cs.AppsV1().Deployments(f.ctlNS()).GetScale(f.ctx, ctlName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	s.Spec.Replicas = n
	if _, err := f.cs.AppsV1().Deployments(f.ctlNS()).UpdateScale(f.ctx, ctlName, s, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.poll(fmt.Sprintf("%d controller pods", n), podReadyTimeout, func() (bool, error) {
		running := 0
		for _, p := range f.controllerPods() {
			if p.DeletionTimestamp == nil && podReady(&p) {
				running++
			}
		}
		if n == 0 { // none left, terminating ones included: a leader that has not stopped yet still acts
			pods, err := f.cs.CoreV1().Pods(f.ctlNS()).List(f.ctx, metav1.ListOptions{LabelSelector: ctlPods})
			return err == nil && len(pods.Items) == 0, err
		}
		return running == int(n), nil
	})
}
