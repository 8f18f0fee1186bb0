//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// tmuxDashboard is `kubectl cmsync dashboard` running in a tmux pane, driven
// the way a person drives it: keys in, screen out.
type tmuxDashboard struct {
	f        *fx
	socket   string
	exitFile string
}

// Screen size of the dashboard's pane.
const tmuxWidth, tmuxHeight = "160", "40"

// startDashboard runs the dashboard in its own tmux server (a private
// socket, started from this process's environment: KUBECONFIG and the
// PATH holding the plugin). The shell script is constant; the arguments
// reach it as argv, never inside the script.
func (f *fx) startDashboard(args ...string) *tmuxDashboard {
	f.t.Helper()
	if pluginBuildErr != nil {
		f.t.Fatalf("plugin not built: %v", pluginBuildErr)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		f.t.Fatalf("tmux is needed for the dashboard e2e tests (apt-get install -y tmux; hack/cluster/prereqs.sh installs it): %v", err)
	}
	d := &tmuxDashboard{f: f, socket: "cmsync-" + f.ns, exitFile: filepath.Join(f.t.TempDir(), "exit")}
	script := `kubectl cmsync dashboard "$@"; echo $? >"$0.tmp" && mv "$0.tmp" "$0"; sleep 600`
	argv := append([]string{"-L", d.socket, "new-session", "-d", "-s", "dash", "-x", tmuxWidth, "-y", tmuxHeight,
		"sh", "-c", script, d.exitFile}, args...)
	if out, err := exec.Command("tmux", argv...).CombinedOutput(); err != nil {
		f.t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	f.t.Cleanup(func() { _ = exec.Command("tmux", "-L", d.socket, "kill-server").Run() })
	return d
}

func (d *tmuxDashboard) screen() string {
	out, err := exec.Command("tmux", "-L", d.socket, "capture-pane", "-p", "-t", "dash").Output()
	if err != nil {
		d.f.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

func (d *tmuxDashboard) keys(keys ...string) {
	d.f.t.Helper()
	for _, k := range keys {
		if out, err := exec.Command("tmux", "-L", d.socket, "send-keys", "-t", "dash", k).CombinedOutput(); err != nil {
			d.f.t.Fatalf("tmux send-keys %s: %v: %s", k, err, out)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// waitScreen polls the pane until cond holds, and returns that screen.
func (d *tmuxDashboard) waitScreen(what string, timeout time.Duration, cond func(string) bool) string {
	d.f.t.Helper()
	var s string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s = d.screen(); cond(s) {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.f.t.Fatalf("timed out after %s waiting until %s; screen:\n%s", timeout, what, s)
	return ""
}

// exitCode waits for the dashboard to end and returns its exit code.
func (d *tmuxDashboard) exitCode() string {
	d.f.t.Helper()
	var b []byte
	d.f.poll("the dashboard to exit", 15*time.Second, func() (bool, error) {
		var err error
		b, err = os.ReadFile(d.exitFile)
		return err == nil, nil
	})
	return strings.TrimSpace(string(b))
}

func has(parts ...string) func(string) bool {
	return func(s string) bool {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	}
}

func screenLine(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

// A person watches a ConfigMap edit in the dashboard, refreshes the
// consumer from the keyboard and sees it in-sync without a restart.
func TestDashboardEditRefreshInSync(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createPod(pod("web", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app"))))
	before := f.waitPodReady("web")
	id0, rc0 := containerID(before, "c")

	d := f.startDashboard("-n", f.ns)
	d.waitScreen("the ConfigMap is listed", 30*time.Second, has("namespace "+f.ns, " app ", "live"))
	d.keys("Enter")
	d.waitScreen("its volume consumer", 10*time.Second, func(s string) bool {
		return strings.Contains(screenLine(s, "/etc/app"), "web") && strings.Contains(screenLine(s, "/etc/app"), "hot-update")
	})

	out, err := exec.CommandContext(f.ctx, "kubectl", "patch", "configmap", "app", "-n", f.ns, "--type", "merge", "-p", `{"data":{"greeting":"v1"}}`).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl patch: %v: %s", err, out)
	}
	// The change is marked: pending with the expected delay (or, when the
	// kubelet's own sync came first, already followed to in-sync).
	s := d.waitScreen("the change is marked", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "configmap/app changed") &&
			(strings.Contains(screenLine(s, "/etc/app"), "pending") || strings.Contains(s, "the kubelet took"))
	})
	t.Logf("after the edit:\n%s", s)
	if strings.Contains(screenLine(s, "/etc/app"), "pending") && !strings.Contains(s, "expected to write it within 0-90s") {
		t.Errorf("a pending consumer without the expected delay:\n%s", s)
	}

	d.keys("r")
	s = d.waitScreen("the plan", 30*time.Second, has("[y/N]"))
	t.Logf("plan:\n%s", s)
	annotate := strings.Contains(s, "annotate") && strings.Contains(s, "pod/web")
	if !annotate && !strings.Contains(s, "already in-sync") {
		t.Fatalf("plan is neither annotate pod/web nor none (already in-sync):\n%s", s)
	}
	if strings.Contains(s, "restart ") {
		t.Errorf("a volume refresh plans a restart:\n%s", s)
	}
	d.keys("y")
	want := "refresh: 1 already current"
	if annotate {
		want = "refresh: 1 annotated current"
	}
	s = d.waitScreen("the result line", 60*time.Second, has(want))
	s = d.waitScreen("the consumer in-sync", 30*time.Second, func(s string) bool {
		return strings.Contains(screenLine(s, "/etc/app"), "in-sync")
	})
	t.Logf("after the refresh:\n%s", s)
	f.expectFile("web", "c", "/etc/app/greeting", "v1")
	if id, rc := containerID(f.getPod("web"), "c"); id != id0 || rc != rc0 {
		t.Errorf("container restarted: id %s -> %s, restarts %d -> %d", id0, id, rc0, rc)
	}

	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}

// With a stale env consumer the plan restarts the Deployment; n declines
// and nothing changes.
func TestDashboardRestartDeclined(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"greeting": "v0"}))
	f.createDeployment("web", 1, podSpec(withEnv(busybox("c"), cmEnv("GREETING", "app", "greeting", nil))), false)
	f.waitDeploymentSettled("web")
	f.patchConfigMapData("app", map[string]string{"greeting": "v1"}) // the env is stale from now on

	d := f.startDashboard("-n", f.ns)
	d.waitScreen("the ConfigMap is listed", 30*time.Second, has(" app ", "live"))
	dep0 := f.getDeployment("web")
	pods0, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.keys("r")
	s := d.waitScreen("the plan", 30*time.Second, has("[y/N]"))
	t.Logf("plan:\n%s", s)
	if !strings.Contains(s, "restart") || !strings.Contains(s, "deployment/web") || !strings.Contains(s, "The plan restarts 1 workloads") {
		t.Fatalf("the plan does not show the restart of deployment/web before anything happens:\n%s", s)
	}
	d.keys("n")
	d.waitScreen("declined", 10*time.Second, has("declined: nothing was changed"))
	time.Sleep(time.Second)
	dep1 := f.getDeployment("web")
	if dep1.ResourceVersion != dep0.ResourceVersion {
		t.Errorf("deployment resourceVersion %s -> %s after a declined refresh", dep0.ResourceVersion, dep1.ResourceVersion)
	}
	pods1, err := f.cs.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := map[string]string{}
	for _, p := range pods0.Items {
		rv[p.Name] = p.ResourceVersion
	}
	for _, p := range pods1.Items {
		if rv[p.Name] != p.ResourceVersion {
			t.Errorf("pod %s changed (resourceVersion %s -> %s) after a declined refresh", p.Name, rv[p.Name], p.ResourceVersion)
		}
	}
	if len(pods1.Items) != len(pods0.Items) {
		t.Errorf("%d pods before, %d after", len(pods0.Items), len(pods1.Items))
	}
	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}

// A dashboard refresh under a Role without patch on pods (the refresh
// role of deploy/rbac.yaml less that one rule) is refused before anything
// changes: every resourceVersion of the namespace (pods, workloads,
// ConfigMaps) stays as it was, and the status line names the missing
// permission.
func TestDashboardRefreshWithoutPatchPodsChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	cr, ok := rbacFileRoles(t)["cmsync-refresh"]
	if !ok {
		t.Fatalf("deploy/rbac.yaml has no ClusterRole cmsync-refresh")
	}
	var rules []rbacv1.PolicyRule
	dropped := false
	for _, r := range cr.Rules {
		if slices.Equal(r.APIGroups, []string{""}) && slices.Equal(r.Resources, []string{"pods"}) && slices.Equal(r.Verbs, []string{"patch"}) {
			dropped = true
			continue
		}
		rules = append(rules, r)
	}
	if !dropped {
		t.Fatalf("cmsync-refresh of deploy/rbac.yaml has no rule {apiGroups: [\"\"], resources: [\"pods\"], verbs: [\"patch\"]} to leave out: %+v", cr.Rules)
	}
	// a consumer whose every use is a mounted volume: the plan annotates
	// its pod (patch pods), whether or not the kubelet has synced it yet
	f.createConfigMap(configMap("cfg", map[string]string{"K": "v0"}))
	f.createDeployment("web", 1, withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/cfg"))), cmVolume("cfg", "cfg")), false)
	f.waitPodsReady(1)
	f.waitDeploymentSettled("web")
	kc := f.saKubeconfig("no-patch-pods", rules, "")
	f.patchConfigMapData("cfg", map[string]string{"K": "v1"})

	d := f.startDashboard("--kubeconfig", kc, "-n", f.ns)
	d.waitScreen("the ConfigMap is listed, live", 30*time.Second, has(" cfg ", "live"))
	before := f.resourceVersions()
	d.keys("r")
	want := fmt.Sprintf("patch pods in namespace %q", f.ns)
	s := d.waitScreen("the refusal naming the permission", 60*time.Second, has(want))
	t.Logf("after r:\n%s", s)
	if line := screenLine(s, want); !strings.Contains(line, "refused") || !strings.Contains(line, "nothing was changed") {
		t.Errorf("the status line does not say the refresh was refused and changed nothing: %q", line)
	}
	if strings.Contains(s, "[y/N]") {
		t.Errorf("a plan the credentials cannot apply was offered:\n%s", s)
	}
	time.Sleep(2 * time.Second) // past the 0.2-0.6 s a patch would take to show
	if changed := changedVersions(before, f.resourceVersions()); len(changed) > 0 {
		t.Errorf("a refused dashboard refresh changed: %s", strings.Join(changed, "; "))
	}
	if a := f.getPod(f.waitPodsReady(1)[0].Name).Annotations[refresh.RefreshedAtAnnotation]; a != "" {
		t.Errorf("the pod was annotated (%s = %s)", refresh.RefreshedAtAnnotation, a)
	}
	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}

// testDashboardContextsAndWorkload: `dashboard deploy/web` over the
// kubeconfig of the cluster, a context at a closed port and the second
// control plane: the header names the context and deployment/web, the rows
// are web's (not the bare pod's ConfigMap); c to the closed context fails
// and stays, c again goes on to the second control plane, where web is read
// again (it runs no pod there: no pod consumes, and u shows its template's
// ConfigMap), and q exits 0.
func testDashboardContextsAndWorkload(t *testing.T) {
	kubeconfig, cp2 := cluster2(t)
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "info"}))
	f.createConfigMap(configMap("other", map[string]string{"k": "v"}))
	web := podSpec(withEnv(busybox("app"), cmEnv("LEVEL", "app", "level", nil)))
	f.createDeployment("web", 1, web, false)
	f.createPod(pod("solo", withVolumes(podSpec(withMounts(busybox("c"), mount("cfg", "/etc/other"))), cmVolume("cfg", "other"))))
	f.waitDeploymentSettled("web")
	pendingIn(t, f, cp2)
	labels := map[string]string{"app": "web"}
	one := int32(1)
	d2 := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: web}}}
	if _, err := cp2.AppsV1().Deployments(f.ns).Create(f.ctx, d2, metav1.CreateOptions{}); err != nil {
		t.Fatalf("deployment web in %s: %v", contextCP2, err)
	}

	d := f.startDashboard("--kubeconfig", kubeconfig, "--context", contextMain, "-n", f.ns, "deploy/web")
	s := d.waitScreen("web's objects", 30*time.Second, has("context "+contextMain, "deployment/web", " app ", "live"))
	if strings.Contains(s, " other ") {
		t.Errorf("dashboard deploy/web lists the bare pod's ConfigMap other:\n%s", s)
	}
	d.keys("c") // in name order after cmsync-local: cmsync-closed
	d.waitScreen("the closed context refused", 30*time.Second, has("could not switch to context "+contextClosed+" (still on "+contextMain+"): cannot reach"))
	d.keys("c") // on from it: cmsync-cp2
	d.waitScreen("the second control plane", 30*time.Second, has("context "+contextCP2, "deployment/web", "live", "no pod consumes"))
	d.keys("u") // web runs no pod there: its template reads app
	s = d.waitScreen("web's template's ConfigMap", 10*time.Second, has("context "+contextCP2, " app "))
	t.Logf("in %s:\n%s", contextCP2, s)
	d.keys("q")
	if code := d.exitCode(); code != "0" {
		t.Errorf("dashboard exit code %s, want 0", code)
	}
}
