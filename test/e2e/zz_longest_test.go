//go:build e2e

package e2e

// The suite's longest parallel tests, declared in the file whose name sorts
// last. go test pauses every parallel test until the sequential ones are
// done and then resumes them in about the reverse of their declaration
// order (files by name, then by line), -parallel at a time: declared here,
// they start among the first instead of among the last, and the parallel
// phase does not end with one of them running alone for two minutes.
// Their helpers stay beside the tests of the same kind (argo_test.go,
// controller_test.go, matrix_test.go). A parallel subtest only queues once
// every top-level test has started, so the matrix's case that waits over a
// minute for the kubelet is a top-level test of its own here.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The controller as it is installed (deploy/controller: two replicas, its
// RBAC and nothing else), in the cluster: a volume edit is verified with no
// restart; an unread key does nothing; the leader SIGKILLed between the
// restart of an env consumer and its record is replaced (by the other
// replica, or by itself restarted), and the next leader finishes it
// without a second restart (the Reloader-annotated Deployment works as
// is); restarted with nothing changed it does nothing. Metrics and Events
// are checked on the way.
func TestController(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0", "level": "l0", "unread": "u0"}))
	f.createAnnotatedDeployment("vol", 2, withVolumes(podSpec(withMounts(busybox("c"), mount("v", "/etc/app"))),
		cmItemsVolume("v", "app", corev1.KeyToPath{Key: "greeting", Path: "greeting"})), map[string]string{reconcile.AnnotationWatch: "true"})
	// env's pods are Ready 5 s after they start: a rollout of it lasts that long, and the leader is
	// deleted while its wait for that rollout is under way
	slow := withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))
	slow.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 5, PeriodSeconds: 1}
	f.createAnnotatedDeployment("env", 1, podSpec(slow), map[string]string{reconcile.ReloaderAuto: "true"})
	f.waitDeploymentSettled("vol")
	f.waitDeploymentSettled("env")
	// the default Lease timing: a graceful delete releases the Lease at once
	f.deployController("controller", "-n", f.ns, "--secrets", "--debounce=1s", "--max-wait=5s", "--min-restart-interval=20s")
	first := f.leader()
	e := f.waitControllerEvent(first, "resumed", isResume)
	if !strings.HasPrefix(e.Message, "0 consumers current by their record, 2 recorded for the first time") {
		t.Errorf("first start: %s, want both Deployments recorded", e.Message)
	}
	if f.appliedRecord("vol") == "" || f.appliedRecord("env") == "" {
		t.Fatalf("no record on the Deployments after the first start")
	}

	t.Log("a volume edit: the pods are verified current, nothing restarts")
	before, _ := f.deploymentPods("vol")
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	for name := range before {
		e := f.waitControllerEvent(first, "pod "+name+" refreshed", isResult(refresh.ActionAnnotate, "pod/"+name))
		if e.Outcome != refresh.OutcomeCurrent {
			t.Errorf("annotate pod/%s: %s (%s), want current", name, e.Outcome, e.Message)
		}
		if e.SinceChange != nil {
			t.Logf("pod %s verified current %s after the edit", name, *e.SinceChange)
		}
		f.expectFile(name, "c", "/etc/app/greeting", "v1")
	}
	if after, restarts := f.deploymentPods("vol"); fmt.Sprint(after) != fmt.Sprint(before) || restarts != 0 {
		t.Errorf("pods of vol: %v with %d restarts, want the same pods %v with 0", after, restarts, before)
	}
	f.checkMetrics(first, `cmsync_leader 1`, `cmsync_results_total{action="annotate",outcome="current"} 2`)
	f.checkKubeEvent("Pod", "Refreshed")

	t.Log("an edit of a key no consumer reads: no action")
	actions := func(pod string) int {
		n := 0
		for _, e := range f.controllerEvents(pod) {
			if e.Kind == reconcile.EventAction {
				n++
			}
		}
		return n
	}
	n := actions(first)
	f.patchConfigMapData("app", map[string]string{"unread": "u1"})
	f.waitControllerEvent(first, "the unread key ignored", func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventIgnored && strings.Join(e.Keys, ",") == "unread"
	})
	time.Sleep(2 * time.Second)
	if got := actions(first); got != n {
		t.Errorf("%d actions after an unread key changed, want none", got-n)
	}

	t.Log("the leader SIGKILLed between its restart and its record: the next leader finishes it, one restart")
	d0, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec0 := d0.Annotations[reconcile.AnnotationApplied]
	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	var restartedAt string
	f.poll("the rollout of env started", podReadyTimeout, func() (bool, error) {
		d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
		if err == nil {
			restartedAt = d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]
		}
		return restartedAt != "", err
	})
	killed := f.sigkill(first)
	second, e := f.resumedAfter(killed)
	t.Logf("%s resumed after the leader %s was killed: %s", second, first, e.Message)
	if !strings.Contains(e.Message, "1 changed since their record (checked)") {
		t.Errorf("the new leader's resume: %q, want env changed since its record (the old leader was killed before it recorded); its log:\n%s",
			e.Message, f.controllerLog(second))
	}
	f.poll("env's record updated by "+second, podReadyTimeout, func() (bool, error) { return f.appliedRecord("env") != rec0, nil })
	f.waitDeploymentSettled("env")
	// one restart: the restartedAt the first leader set is the one there now, two ReplicaSets, one Refreshing
	// Event (the generation says nothing: the API server bumps a Deployment's for an annotation too)
	d1, _ := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
	rss, err := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=env"})
	if got := d1.Spec.Template.Annotations[refresh.RestartedAtAnnotation]; got != restartedAt || err != nil || len(rss.Items) != 2 {
		t.Errorf("env: restartedAt %q -> %q, %d ReplicaSets (%v); want one restart (the same restartedAt, 2 ReplicaSets)", restartedAt, got, len(rss.Items), err)
	}
	if n := f.kubeEventCount("Deployment", "env", "Refreshing"); n != 1 {
		t.Errorf("%d Refreshing Events on deployment/env, want 1", n)
	}
	pods, _ := f.deploymentPods("env")
	for name := range pods {
		f.expectEnv(name, "c", "LEVEL", "l1")
	}

	t.Log("both replicas restarted with nothing changed: no action")
	for _, p := range f.controllerPods() {
		if err := f.cs.CoreV1().Pods(f.ctlNS()).Delete(f.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	third := f.leader(first, second)
	e = f.waitControllerEvent(third, "resumed", isResume)
	if want := "2 consumers current by their record, 0 recorded for the first time (left alone), 0 changed since their record (checked)"; e.Message != want {
		t.Errorf("restart with nothing changed: %q, want %q", e.Message, want)
	}
	time.Sleep(3 * time.Second) // past a debounce
	if got := actions(third); got != 0 {
		t.Errorf("%d actions after a restart with nothing changed, want 0", got)
	}
	for _, p := range f.controllerPods() {
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount != 0 {
				t.Errorf("controller pod %s restarted %d times:\n%s", p.Name, s.RestartCount, f.controllerLog(p.Name))
			}
		}
	}
	f.flap(60*time.Second, 20*time.Second)
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

// TestMatrixKubeletAlone runs the cases of matrix() that see the kubelet
// alone: no annotation bump after the edit, so the volume only changes at the
// kubelet's own periodic sync of the pod (over a minute).
func TestMatrixKubeletAlone(t *testing.T) {
	t.Parallel()
	runMatrix(t, true)
}
