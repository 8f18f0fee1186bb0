//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestControllerRestartWindow: a Deployment whose restart window opens
// within a minute and a half gets no restart for an edit of the variable
// it reads: the controller says it is deferred and until when (its log, a
// Kubernetes Event, a metric). The leader's pod is deleted while it waits
// (it releases the Lease at once): the next leader finds the change by its
// record and defers it again. A second edit while it waits is deferred
// too and makes no second restart: one restart, when the window opens,
// with the last value.
func TestControllerRestartWindow(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	loadImage(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "l0"}))
	f.createAnnotatedDeployment("env", 1, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "app", "level", nil))),
		map[string]string{reconcile.AnnotationWatch: "true"})
	f.createPod(pod("scraper", podSpec(busybox("c")))) // for checkMetrics, Ready by then
	f.waitDeploymentSettled("env")
	f.deployController("controller", "-n", f.ns, "--debounce=1s", "--max-wait=5s")
	first := f.leader()
	f.waitControllerEvent(first, "resumed", isResume)
	// the window, set once the controller leads: it opens at the first whole minute (a window's
	// resolution) at least 40 s ahead (the API server's clock is this machine's), for what follows
	// to happen before it opens (about 15 s on an idle machine); it closes 10 minutes later; every
	// day, UTC. A metadata patch rolls nothing out.
	opens := time.Now().UTC().Add(40*time.Second - time.Nanosecond).Truncate(time.Minute).Add(time.Minute)
	window := opens.Format("15:04") + "-" + opens.Add(10*time.Minute).Format("15:04")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, restartwindow.Annotation, window)
	if _, err := f.cs.AppsV1().Deployments(f.ns).Patch(f.ctx, "env", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	f.patchConfigMapData("app", map[string]string{"level": "l1"})
	e := f.waitControllerEvent(first, "the restart deferred to the window", isDeferred("deployment/env"))
	t.Logf("deferred: %s", e.Message)
	if e.Window != window || e.Until == nil || !e.Until.Equal(opens) || !strings.Contains(e.Message, "opens at "+opens.Format(time.RFC3339)) {
		t.Errorf("deferred event: window %q until %v (%s), want window %q until %s", e.Window, e.Until, e.Message, window, opens)
	}
	f.checkKubeEvent("Deployment", "RestartDeferred")
	if rep, ok := f.status(); ok && time.Now().Before(opens) { // the Deployment's annotation, as its ReplicaSet carries it
		var w *inspect.RestartWindow
		for _, it := range rep.Items {
			if it.Mode == inspect.ModeEnv {
				w = it.RestartWindow
			}
		}
		if w == nil || w.Value != window || w.Open || w.Opens == nil || !w.Opens.Time.Equal(opens) {
			t.Errorf("status: the env use's restartWindow %+v, want %q opening at %s", w, window, opens)
		}
	}
	f.checkMetrics(first, fmt.Sprintf(`cmsync_restart_window_deferred_until_seconds{namespace=%q,workload="deployment/env"}`, f.ns))

	t.Log("the leader's pod deleted while the restart waits: the next leader defers it again")
	handover := time.Now()
	if err := f.cs.CoreV1().Pods(f.ctlNS()).Delete(f.ctx, first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second, resumed := f.resumedAfter(handover)
	if !strings.Contains(resumed.Message, "1 changed since their record (checked)") {
		t.Errorf("the new leader's resume: %q, want env checked (no record of l1)", resumed.Message)
	}
	deferrals := 0
	if time.Now().Before(opens.Add(-5 * time.Second)) {
		f.waitControllerEvent(second, "the restart deferred again", isDeferred("deployment/env"))
		deferrals = countEvents(f.controllerEvents(second), isDeferred("deployment/env"))
	} else {
		t.Logf("the window opened before the new leader's resume (a slow machine): its deferral is not checked")
	}
	f.patchConfigMapData("app", map[string]string{"level": "l2"})
	if time.Now().Before(opens.Add(-5 * time.Second)) {
		f.poll("the second edit deferred", time.Until(opens), func() (bool, error) {
			return countEvents(f.controllerEvents(second), isDeferred("deployment/env")) > deferrals, nil
		})
	}
	if time.Now().Before(opens) {
		for _, p := range f.controllerPods() {
			if n := countEvents(f.controllerEvents(p.Name), isAction(refresh.ActionRestart, "deployment/env")); n != 0 {
				t.Fatalf("%s restarted env before its window opened", p.Name)
			}
		}
	} else {
		t.Logf("the window opened before the second edit was debounced (a slow machine): its deferral is not checked")
	}

	t.Log("the window opens: one restart, with the last value")
	var restart reconcile.Event
	f.poll("env restarted in its window", time.Until(opens)+podReadyTimeout, func() (bool, error) {
		for _, p := range f.controllerPods() {
			for _, e := range f.controllerEvents(p.Name) {
				if isResult(refresh.ActionRestart, "deployment/env")(e) && e.Outcome == refresh.OutcomeCurrent {
					restart = e
					return true, nil
				}
			}
		}
		return false, nil
	})
	if restart.Time.Before(opens) {
		t.Errorf("env restarted at %s, before its window opened at %s", restart.Time, opens)
	}
	f.waitDeploymentSettled("env")
	time.Sleep(3 * time.Second) // a second restart would show now
	d, err := f.cs.AppsV1().Deployments(f.ns).Get(f.ctx, "env", metav1.GetOptions{})
	rss, err2 := f.cs.AppsV1().ReplicaSets(f.ns).List(f.ctx, metav1.ListOptions{LabelSelector: "app=env"})
	if err != nil || err2 != nil || len(rss.Items) != 2 {
		t.Errorf("env: %d ReplicaSets (%v, %v), want 2: one restart", len(rss.Items), err, err2)
	}
	if at, _ := time.Parse(time.RFC3339, d.Spec.Template.Annotations[refresh.RestartedAtAnnotation]); at.Before(opens.Add(-time.Second)) {
		t.Errorf("env's restartedAt %s is before its window opened at %s", at, opens)
	}
	pods, _ := f.deploymentPods("env")
	for name := range pods {
		f.expectEnv(name, "c", "LEVEL", "l2")
	}
}

func isDeferred(target string) func(reconcile.Event) bool {
	return func(e reconcile.Event) bool {
		return e.Kind == reconcile.EventDeferred && e.Action != nil && e.Action.Target.String() == target
	}
}

func countEvents(events []reconcile.Event, match func(reconcile.Event) bool) int {
	n := 0
	for _, e := range events {
		if match(e) {
			n++
		}
	}
	return n
}
