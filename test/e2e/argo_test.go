//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// argoBin is hack/tools/argo-rollouts.sh's cached Argo Rollouts controller
// and the directory of its CRDs; the test fails, saying how to build them.
func argoBin(t *testing.T) (bin, crds string) {
	t.Helper()
	script := filepath.Join(repoRoot, "hack", "tools", "argo-rollouts.sh")
	out, err := exec.Command(script, "--path").Output()
	if err != nil {
		t.Fatalf("the Argo Rollouts controller is not built (%s): run hack/tools/argo-rollouts.sh once", strings.TrimSpace(string(out)))
	}
	dir, err := exec.Command(script, "--crds").Output()
	if err != nil {
		t.Fatalf("the Argo Rollouts CRDs are not cached (%s): run hack/tools/argo-rollouts.sh once", strings.TrimSpace(string(dir)))
	}
	return strings.TrimSpace(string(out)), strings.TrimSpace(string(dir))
}

// freePort is a TCP port free on the host now (for the controller's
// healthz and metrics servers, so that two runs never collide).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

// argoCRDs counts the tests of this run that use the Argo Rollouts CRDs
// (useArgoCRDs), so that tests side by side share them: the first installs
// them, the last deletes them if this run installed them.
var argoCRDs struct {
	sync.Mutex
	users     int
	installed bool // by this run: deleted by its last user
}

// useArgoCRDs makes the Argo Rollouts CRDs served for the test and, once
// no test of this run uses them, deletes them if this run installed them
// (the rest of the suite runs on a cluster without them, as most clusters
// are). The install is a server-side apply: the same CRDs applied again
// change nothing.
func (f *fx) useArgoCRDs(crds string) {
	f.t.Helper()
	argoCRDs.Lock()
	defer argoCRDs.Unlock()
	if argoCRDs.users == 0 {
		_, err := f.rollouts().List(f.ctx, metav1.ListOptions{Limit: 1})
		argoCRDs.installed = apierrors.IsNotFound(err)
		if out, err := exec.CommandContext(f.ctx, "kubectl", "apply", "--server-side", "--force-conflicts", "-f", crds).CombinedOutput(); err != nil {
			f.t.Fatalf("installing the Argo Rollouts CRDs: %v\n%s", err, out)
		}
	}
	argoCRDs.users++
	f.t.Cleanup(func() {
		argoCRDs.Lock()
		defer argoCRDs.Unlock()
		if argoCRDs.users--; argoCRDs.users > 0 || !argoCRDs.installed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "kubectl", "delete", "--ignore-not-found", "-f", crds).CombinedOutput(); err != nil {
			f.t.Errorf("deleting the Argo Rollouts CRDs: %v\n%s", err, out)
		}
	})
	f.poll("the Rollout CRD served", 60*time.Second, func() (bool, error) {
		_, err := f.rollouts().List(f.ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
}

// startArgo makes the Argo Rollouts CRDs served (useArgoCRDs) and runs the
// real controller on the host with the admin kubeconfig, in namespaced
// mode for the test's namespace only, without leader election, for at
// most the test's lifetime: it is killed at the end of the test.
func (f *fx) startArgo() {
	f.t.Helper()
	bin, crds := argoBin(f.t)
	f.useArgoCRDs(crds)
	ctx, cancel := context.WithTimeout(f.ctx, 9*time.Minute) // bounded even if the cleanup never runs
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig", os.Getenv("KUBECONFIG"), "--namespaced", "--namespace", f.ns,
		"--leader-elect=false", "--healthzPort", freePort(f.t), "--metricsPort", freePort(f.t), "--loglevel", "info")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		f.t.Fatalf("starting the Argo Rollouts controller: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	f.t.Cleanup(func() {
		cancel()
		<-done
		if f.t.Failed() {
			f.t.Logf("Argo Rollouts controller log:\n%s", lastLines(log.String(), 60))
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (f *fx) rollouts() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(restConfig).Resource(refresh.RolloutResource).Namespace(f.ns)
}

// createRollout creates a canary Rollout (a weight step, then an
// indefinite pause: a new revision stops there) of replicas pods.
func (f *fx) createRollout(name string, replicas int32, spec corev1.PodSpec, ann map[string]string) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec})
	if err != nil {
		f.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": f.ns},
		"spec": map[string]any{
			"replicas": int64(replicas), "selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "template": tmpl,
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{
				map[string]any{"setWeight": int64(50)}, map[string]any{"pause": map[string]any{}}}}},
		},
	}}
	u.SetAnnotations(ann)
	if _, err := f.rollouts().Create(f.ctx, u, metav1.CreateOptions{}); err != nil {
		f.t.Fatalf("creating rollout %s: %v", name, err)
	}
}

func (f *fx) getRollout(name string) *unstructured.Unstructured {
	f.t.Helper()
	u, err := f.rollouts().Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("getting rollout %s: %v", name, err)
	}
	return u
}

func (f *fx) patchRollout(name, patch string) {
	f.t.Helper()
	if _, err := f.rollouts().Patch(f.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("patching rollout %s with %s: %v", name, patch, err)
	}
}

// waitRolloutPhase waits until the Rollout's controller reports phase with
// want pods Ready.
func (f *fx) waitRolloutPhase(name, phase string, want int) []corev1.Pod {
	f.t.Helper()
	f.poll("rollout "+name+" "+phase, podReadyTimeout, func() (bool, error) {
		u, err := f.rollouts().Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := stringAt(u, "status", "phase"); got != phase {
			return false, fmt.Errorf("phase %q", got)
		}
		return true, nil
	})
	return f.waitPodsReady(want)
}

// stringAt is a string field of u, "" when absent.
func stringAt(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// expectReplaced checks that none of before's pods is among now's, and that
// every pod of now reads LEVEL=want.
func (f *fx) expectReplaced(before, now []corev1.Pod, want string) {
	f.t.Helper()
	old := map[types.UID]bool{}
	for _, p := range before {
		old[p.UID] = true
	}
	for _, p := range now {
		if old[p.UID] {
			f.t.Errorf("pod %s (uid %s) was not replaced", p.Name, p.UID)
		}
		f.expectEnv(p.Name, "c", "LEVEL", want)
	}
}

// An Argo Rollout with an env consumer, run by the real Argo Rollouts
// controller. refresh --wait restarts it through spec.restartAt: the
// controller evicts its pods, status.restartedAt catches up, no new
// revision is made (the pod template and the current pod hash are
// unchanged), and every new pod reads the new value. watch does the same
// for the next edit. A paused Rollout is restarted all the same (the
// controller's pod restarter runs whatever the pause) and stays paused;
// with reloader.stakater.com/rollout-strategy=rollout the paused Rollout
// is refused with the promote step and nothing is patched, while
// --restart-via=evict evicts its pods and leaves it alone.
func TestArgoRollout(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.startArgo()
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	f.createRollout("web", 2, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil))), map[string]string{reconcile.ReloaderAuto: "true"})
	before := f.waitRolloutPhase("web", "Healthy", 2)
	ro0 := f.getRollout("web")
	hash0 := stringAt(ro0, "status", "currentPodHash")
	tmpl0, _, _ := unstructured.NestedMap(ro0.Object, "spec", "template")

	// refresh --wait: spec.restartAt, the controller's evictions, verified
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})
	start := time.Now()
	doc, errOut, code := f.refreshJSON("app", "--yes", "--wait", "--timeout", "240s")
	t.Logf("refresh of the Rollout took %s", time.Since(start).Round(100*time.Millisecond))
	if code != 0 || actionsOf(doc) != "restart rollout.argoproj.io/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent || !doc.Items[0].RestartAt {
		t.Fatalf("refresh: exit %d %+v, want one restart of the Rollout through spec.restartAt, current\nstderr: %s", code, doc.Items, errOut)
	}
	ro1 := f.getRollout("web")
	if at, done := stringAt(ro1, "spec", "restartAt"), stringAt(ro1, "status", "restartedAt"); at == "" || at != done {
		t.Errorf("spec.restartAt %q, status.restartedAt %q: want both set and equal", at, done)
	}
	tmpl1, _, _ := unstructured.NestedMap(ro1.Object, "spec", "template")
	if h := stringAt(ro1, "status", "currentPodHash"); h != hash0 || fmt.Sprint(tmpl1) != fmt.Sprint(tmpl0) {
		t.Errorf("pod hash %s -> %s, template changed %v: a restartAt restart makes no new revision", hash0, h, fmt.Sprint(tmpl1) != fmt.Sprint(tmpl0))
	}
	after := f.waitPodsReady(2)
	f.expectReplaced(before, after, "v1")

	// watch --require-opt-in: the Rollout's own reloader.stakater.com/auto
	// opts it in (its pods have no annotation); the next edit, the same restart
	w := f.startWatch("--require-opt-in")
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v2"})
	e := w.waitFor("rollout restarted", isResult(refresh.ActionRestart, "rollout.argoproj.io/web"))
	if e.Outcome != refresh.OutcomeCurrent {
		t.Errorf("watch: restart of the Rollout %s (%s), want current", e.Outcome, e.Message)
	}
	w.stop()
	if at := stringAt(f.getRollout("web"), "spec", "restartAt"); at == stringAt(ro1, "spec", "restartAt") {
		t.Errorf("watch: spec.restartAt still %q, want a later one", at)
	}
	now := f.waitPodsReady(2)
	f.expectReplaced(after, now, "v2")

	// paused: spec.restartAt restarts its pods all the same; it stays paused
	f.patchRollout("web", `{"spec":{"paused":true}}`)
	f.waitRolloutPhase("web", "Paused", 2)
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v3"})
	doc, errOut, code = f.refreshJSON("app", "--yes", "--wait", "--timeout", "240s")
	if code != 0 || actionsOf(doc) != "restart rollout.argoproj.io/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent {
		t.Fatalf("paused: exit %d %+v, want the restart current\nstderr: %s", code, doc.Items, errOut)
	}
	paused := f.waitPodsReady(2)
	f.expectReplaced(now, paused, "v3")
	if p := stringAt(f.getRollout("web"), "status", "phase"); p != "Paused" {
		t.Errorf("after the restart the Rollout is %s, want still Paused", p)
	}

	// paused, and restarted through the pod template: refused, nothing sent
	f.patchRollout("web", `{"metadata":{"annotations":{"reloader.stakater.com/rollout-strategy":"rollout"}}}`)
	f.patchConfigMapData("app", map[string]string{"LEVEL": "v4"})
	gen := f.getRollout("web").GetGeneration()
	doc, errOut, code = f.refreshJSON("app", "--yes", "--wait", "--timeout", "60s")
	want := fmt.Sprintf(`Rollout "web" is paused: a new revision would stop at the pause; promote it (kubectl argo rollouts promote web -n %s)`, f.ns)
	if actionsOf(doc) != "manual rollout.argoproj.io/web" || !strings.HasPrefix(doc.Items[0].Reason, want) {
		t.Fatalf("paused, rollout strategy: exit %d %+v, want manual: %s\nstderr: %s", code, doc.Items, want, errOut)
	}
	t.Logf("paused, rollout strategy: exit %d, %s", code, doc.Items[0].Reason)
	if got := f.getRollout("web").GetGeneration(); got != gen {
		t.Errorf("the refused Rollout's spec was written (generation %d -> %d)", gen, got)
	}

	// --restart-via=evict: its pods evicted (their ReplicaSet re-creates
	// them), the Rollout never written, paused or not
	doc, errOut, code = f.refreshJSON("app", "--restart-via=evict", "--yes", "--wait", "--timeout", "240s")
	if code != 0 || actionsOf(doc) != "evict rollout.argoproj.io/web" || doc.Items[0].Outcome != refresh.OutcomeCurrent || len(doc.Items[0].Evicted) != 2 {
		t.Fatalf("evict: exit %d %+v, want both pods of the Rollout evicted, current\nstderr: %s", code, doc.Items, errOut)
	}
	f.expectReplaced(paused, f.waitPodsReady(2), "v4")
	if got := f.getRollout("web").GetGeneration(); got != gen {
		t.Errorf("--restart-via=evict wrote the Rollout's spec (generation %d -> %d)", gen, got)
	}
}

// The controller as it is installed (deploy/controller, its own
// ServiceAccount and ClusterRole: the rollouts rule is what lets it read
// and patch the Rollout) beside the real Argo Rollouts controller: at its
// start it records the Reloader-annotated Rollout on the Rollout itself;
// an env edit restarts it through spec.restartAt, the new pods are
// verified current, and the record is written anew.
func TestControllerArgoRollout(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.startArgo()
	f.createConfigMap(configMap("app", map[string]string{"LEVEL": "v0"}))
	f.createRollout("web", 2, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "LEVEL", nil))), map[string]string{reconcile.ReloaderAuto: "true"})
	before := f.waitRolloutPhase("web", "Healthy", 2)
	f.deployController("controller", "-n", f.ns, "--debounce=1s", "--max-wait=5s")
	leader := f.leader()
	e := f.waitControllerEvent(leader, "resumed", isResume)
	if !strings.HasPrefix(e.Message, "0 consumers current by their record, 1 recorded for the first time") {
		t.Errorf("first start: %s, want the Rollout recorded", e.Message)
	}
	record0 := f.getRollout("web").GetAnnotations()[reconcile.AnnotationApplied]
	if record0 == "" {
		t.Fatalf("no %s on the Rollout after the first start", reconcile.AnnotationApplied)
	}

	f.patchConfigMapData("app", map[string]string{"LEVEL": "v1"})
	e = f.waitControllerEvent(leader, "the Rollout restarted", isResult(refresh.ActionRestart, "rollout.argoproj.io/web"))
	if e.Outcome != refresh.OutcomeCurrent {
		t.Errorf("restart of the Rollout: %s (%s), want current", e.Outcome, e.Message)
	}
	ro := f.getRollout("web")
	if at, done := stringAt(ro, "spec", "restartAt"), stringAt(ro, "status", "restartedAt"); at == "" || at != done {
		t.Errorf("spec.restartAt %q, status.restartedAt %q: want both set and equal", at, done)
	}
	f.expectReplaced(before, f.waitPodsReady(2), "v1")
	f.poll("the Rollout's record written anew", 30*time.Second, func() (bool, error) {
		r := f.getRollout("web").GetAnnotations()[reconcile.AnnotationApplied]
		return r != "" && r != record0, nil
	})
}
