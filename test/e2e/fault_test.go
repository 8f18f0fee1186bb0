//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// TestRefreshWaitAcrossAPIServerRestart: the API server crashes and comes
// back while `refresh --wait` waits for a restarted Deployment. The run
// either resumes and ends current, or ends with a per-consumer result
// saying what was changed; a second run finishes the job and changes
// nothing that is already current. It restarts the cluster's API server
// once (hack/cluster/component.sh, KILL=1: a crash), so it is not parallel:
// go test runs it before any parallel test starts.
func TestRefreshWaitAcrossAPIServerRestart(t *testing.T) {
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"greeting": "v1"}))
	c := withMounts(withEnv(busybox(app), cmEnv("GREETING", "cfg", "greeting", nil)), mount("cfg", "/etc/cfg"))
	f.createDeployment("web", 2, withVolumes(podSpec(c), cmVolume("cfg", "cfg")), false)
	f.waitPodsReady(2)
	f.waitDeploymentSettled("web")
	f.patchConfigMapData("cfg", map[string]string{"greeting": "v2"})

	run := f.runPlugin("refresh", "-n", f.ns, "--yes", "--wait", "--timeout", "100s", "-o", "json")
	f.poll("the restart to be applied", time.Minute, func() (bool, error) {
		d := f.getDeployment("web")
		return d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "", nil
	})
	apiServer(t, "restart", "KILL=1")
	res := <-run
	t.Logf("refresh --wait across the restart:\n%s", res)
	if strings.HasPrefix(res, "HUNG") {
		t.Fatal("refresh --wait hung across the API server restart")
	}
	_, body, _ := strings.Cut(res, "stdout:\n")
	body, _, _ = strings.Cut(body, "\nstderr:")
	var doc refreshDoc
	if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Items) == 0 {
		t.Errorf("refresh --wait across the restart: want a per-consumer result document (%v)", err)
	}
	for _, r := range doc.Items {
		if r.Outcome == "" || len(r.Consumers) == 0 {
			t.Errorf("result without an outcome or consumers: %+v", r)
		}
	}
	restartedAt := f.getDeployment("web").Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]

	// again: it finishes the job and restarts nothing that is current
	f.waitDeploymentSettled("web")
	f.waitPodsReady(2)
	doc, errOut, code := f.refreshJSON("--yes", "--wait", "--timeout", "100s")
	if code != 0 {
		t.Errorf("second refresh --wait: exit %d, want 0\n%s", code, errOut)
	}
	for _, r := range doc.Items {
		if r.Action.Action == refresh.ActionRestart {
			t.Errorf("second refresh restarts %s again: %s", r.Target, r.Reason)
		}
	}
	if got := f.getDeployment("web").Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"]; got != restartedAt {
		t.Errorf("the second run changed restartedAt from %s to %s", restartedAt, got)
	}
	for _, p := range f.waitPodsReady(2) {
		f.expectEnv(p.Name, app, "GREETING", "v2")
	}
}

// TestDashboardAcrossAPIServerRestart: the API server crashes under a
// running dashboard. The dashboard says the connection is lost, and when
// the API server is back it goes live by itself, with watches that work: an
// edit and a new pod made after the restart show up, and q exits 0. The API
// server is killed and started as two steps (hack/cluster/component.sh kill
// / start), so that the outage lasts until the dashboard has shown it (its
// probe runs every 10 s while connected); not parallel, like the test above.
func TestDashboardAcrossAPIServerRestart(t *testing.T) {
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	web := func(name string) *corev1.Pod {
		return pod(name, withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app")))
	}
	f.createPod(web("web"))
	f.waitPodReady("web")

	d := f.startDashboard("-n", f.ns)
	s := d.waitScreen("the ConfigMap is listed", 30*time.Second, has(" app ", "live"))
	if n := objectPods(s, "app"); n != "1" {
		t.Fatalf("PODS of app = %q before the restart, want 1:\n%s", n, s)
	}

	down := false
	t.Cleanup(func() { // before the namespace is deleted: that needs the API server
		if down {
			apiServer(t, "start")
		}
	})
	down = true
	apiServer(t, "kill")
	s = d.waitScreen("the connection lost", 30*time.Second, has("unreachable", "error: cannot reach the API server"))
	t.Logf("API server down:\n%s", s)
	apiServer(t, "start")
	down = false
	s = d.waitScreen("live again", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "live") && !strings.Contains(s, "unreachable") && !strings.Contains(s, "error:")
	})
	t.Logf("API server back:\n%s", s)

	// the watches work again: an edit and a new pod after the restart
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"})
	f.createPod(web("web2"))
	s = d.waitScreen("the edit and the new pod", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "configmap/app changed") && objectPods(s, "app") == "2"
	})
	t.Logf("after the edit and the new pod:\n%s", s)
	d.keys("Enter")
	s = d.waitScreen("both consumers", 30*time.Second, func(s string) bool {
		return strings.Contains(podRow(s, "web"), "/etc/app") && strings.Contains(podRow(s, "web2"), "/etc/app")
	})
	for _, p := range []string{"web", "web2"} {
		if row := podRow(s, p); !strings.Contains(row, "hot-update") || !strings.Contains(row, "pod/"+p) {
			t.Errorf("consumer row of %s = %q, want hot-update, workload pod/%s", p, row, p)
		}
	}
	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}

// apiServer runs hack/cluster/component.sh VERB kube-apiserver with env
// added (kill: a crash, the API server stays down; start: until it and the
// cluster are healthy again; restart with KILL=1: a crash, then a start).
//
// Once the API server is back (start, restart) its clients among the
// cluster's daemons are restarted too: the kube-scheduler, the
// kube-controller-manager and the kubelet. client-go's reflectors retry a
// failed list or watch with a backoff that doubles up to 30 s (jittered up
// to 60 s) and is only reset after two minutes without a failure; the
// refused connections while the server is down and the 403s while its
// authorizers start count as failures. After the third API server restart
// within two minutes the kubelet's pod watch was in that backoff: a pod
// the controller manager created at once was first seen by the kubelet
// 95 s later, and the rollout the test waited for with it. These tests
// check how the plugin rides an API server outage, not how the cluster's
// daemons do; fresh ones list everything at once (a few seconds).
func apiServer(t *testing.T, verb string, env ...string) {
	t.Helper()
	component(t, verb, "kube-apiserver", env...)
	if verb == "start" || verb == "restart" {
		for _, name := range []string{"kube-scheduler", "kube-controller-manager", "kubelet"} {
			component(t, "restart", name)
		}
	}
}

// component runs hack/cluster/component.sh VERB NAME with env added.
func component(t *testing.T, verb, name string, env ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "cluster", "component.sh"), verb, name)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("component.sh %s %s: %v\n%s", verb, name, err, out)
	}
	t.Logf("component.sh %s %s: %s (%s)", verb, name, strings.TrimSpace(string(out)), time.Since(start).Round(100*time.Millisecond))
}

// objectPods is the PODS cell of a ConfigMap's row on the objects screen
// (NAMESPACE NAME KIND PODS ...), "" without the row.
func objectPods(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		for i := 0; i+2 < len(f); i++ {
			if f[i] == name && f[i+1] == "ConfigMap" {
				return f[i+2]
			}
		}
	}
	return ""
}

// podRow is the row of a pod on the consumers screen (POD CONTAINER ...).
func podRow(screen, pod string) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == pod {
			return l
		}
	}
	return ""
}

// TestWatchAcrossAPIServerDown: an edit whose round meets the API server
// down is tried again with a backoff, not dropped: once the server is
// back the env consumer is restarted once and verified current.
func TestWatchAcrossAPIServerDown(t *testing.T) {
	f := newFx(t)
	f.createConfigMap(configMap("cfg", map[string]string{"level": "l0"}))
	f.createAnnotatedDeployment("envapp", 1, podSpec(withEnv(busybox("c"), cmEnv("LEVEL", "cfg", "level", nil))), nil)
	f.waitDeploymentSettled("envapp")
	w := f.startWatch("--debounce", "4s")
	f.patchConfigMapData("cfg", map[string]string{"level": "l1"})
	time.Sleep(500 * time.Millisecond) // the watch has the edit
	apiServer(t, "stop", "GRACE=5")    // as in an upgrade
	// the round falls due, and its reads fail: the API server is started again at the first retry
	w.waitFor("a retry while the API server is down", func(e reconcile.Event) bool { return e.Kind == reconcile.EventRetry })
	apiServer(t, "start")
	w.expectOneRestart("envapp")
	if n := w.count(func(e reconcile.Event) bool { return e.Kind == reconcile.EventRetry }); n == 0 {
		t.Error("no retry event: the round did not meet the API server down")
	}
	pods, _ := f.deploymentPods("envapp")
	for name := range pods {
		f.expectEnv(name, "c", "LEVEL", "l1")
	}
}
