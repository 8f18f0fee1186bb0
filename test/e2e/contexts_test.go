//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// The contexts of hack/cluster/cluster2-up.sh's contexts.kubeconfig.
const (
	contextMain   = "cmsync-local"
	contextCP2    = "cmsync-cp2"
	contextClosed = "cmsync-closed"
)

// TestAcrossContexts runs the tests that read the second control plane as
// its subtests, one after another: the control plane is started once for
// all of them (5-8 s a start on 2 busy cores) and stopped at the end if
// this test started it. Each subtest still calls cluster2, which finds it
// up and only writes the contexts' kubeconfig again.
func TestAcrossContexts(t *testing.T) {
	cluster2(t)
	t.Run("StatusAcrossContexts", testStatusAcrossContexts)
	t.Run("RefreshAcrossContexts", testRefreshAcrossContexts)
	t.Run("LintAcrossContexts", testLintAcrossContexts)
	t.Run("DashboardContextsAndWorkload", testDashboardContextsAndWorkload)
}

// cluster2 starts the second control plane (hack/cluster/cluster2-up.sh)
// unless it is up, stops it at the end if this test started it, and
// returns the kubeconfig of three contexts and a client of the second
// control plane. It fails the test with the script's output when the
// control plane cannot start.
func cluster2(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	script := func(name string, args ...string) ([]byte, error) {
		return exec.Command(filepath.Join(repoRoot, "hack", "cluster", name), args...).CombinedOutput()
	}
	_, err := script("cluster2-status.sh", "-q")
	started := err != nil
	if out, err := script("cluster2-up.sh"); err != nil {
		t.Fatalf("the second control plane did not start (hack/cluster/cluster2-up.sh): %v\n%s", err, out)
	}
	if started {
		t.Cleanup(func() {
			if out, err := script("cluster2-down.sh"); err != nil {
				t.Errorf("hack/cluster/cluster2-down.sh: %v\n%s", err, out)
			}
		})
	}
	cache := os.Getenv("CMSYNC_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "kubectl-cmsync")
	}
	etc := filepath.Join(cache, "cluster2", "etc")
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(etc, "admin.kubeconfig"))
	if err != nil {
		t.Fatalf("the second control plane's kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(etc, "contexts.kubeconfig"), cs
}

// cmsyncIn runs `kubectl cmsync ARGS` with kubeconfig: stdout, stderr and
// the exit code.
func cmsyncIn(t *testing.T, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{"cmsync", "--kubeconfig", kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(argv, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// pendingIn creates, in the second control plane, f's namespace, the
// ConfigMap app and a pod "pending" that mounts it (Pending: no node).
func pendingIn(t *testing.T, f *fx, cp2 kubernetes.Interface) {
	t.Helper()
	ctx := f.ctx
	if _, err := cp2.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace in %s: %v", contextCP2, err)
	}
	t.Cleanup(func() { _ = cp2.CoreV1().Namespaces().Delete(context.Background(), f.ns, metav1.DeleteOptions{}) })
	if _, err := cp2.CoreV1().ConfigMaps(f.ns).Create(ctx, configMap("app", map[string]string{"level": "info"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := pod("pending", withVolumes(podSpec(withMounts(busybox("app"), mount("cfg", "/etc/app"))), cmVolume("cfg", "app")))
	if _, err := cp2.CoreV1().Pods(f.ns).Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testStatusAcrossContexts: status over the cluster, a second control
// plane (its pods Pending: no node) and a context at a closed port, read at
// once: a CONTEXT column, the closed one an error line while the others
// print, a `context` per JSON item, the Pending pod never reported current,
// and --check's 3 when one context has a stale consumer.
func testStatusAcrossContexts(t *testing.T) {
	if pluginBuildErr != nil {
		t.Fatal(pluginBuildErr)
	}
	kubeconfig, cp2 := cluster2(t)
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "info"}))
	f.createPod(pod("env", podSpec(withEnv(busybox("app"), cmEnv("LEVEL", "app", "level", nil)))))
	f.waitPodReady("env")

	pendingIn(t, f, cp2)

	// every context, all namespaces: the closed one is one error line
	out, errOut, code := cmsyncIn(t, kubeconfig, "status", "-A", "--all-contexts")
	if code != 1 || !strings.Contains(errOut, `error: context "`+contextClosed+`": cannot reach the Kubernetes API server at https://127.0.0.1:1`) {
		t.Errorf("status -A --all-contexts: exit %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "CONTEXT ") {
		t.Errorf("no CONTEXT column first:\n%s", out)
	}
	for _, want := range []string{contextMain + " ", contextCP2 + " "} {
		found := false
		for _, l := range lines {
			found = found || (strings.HasPrefix(l, want) && strings.Contains(l, f.ns) && strings.Contains(l, " app "))
		}
		if !found {
			t.Errorf("no row of %s in %s:\n%s", want, f.ns, out)
		}
	}
	if !strings.Contains(out, "\n"+contextCP2+": ") || !strings.Contains(out, "\nall 2 contexts: ") || strings.Contains(out, contextClosed) {
		t.Errorf("summary lines:\n%s", out)
	}

	// JSON: a context per item; the Pending pod (no node) is not current
	out, errOut, code = cmsyncIn(t, kubeconfig, "status", "-n", f.ns, "--context", contextMain+","+contextCP2, "--verify", "-o", "json")
	var rep inspect.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("-o json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	seen := map[string]bool{}
	for _, it := range rep.Items {
		seen[it.Context] = true
		if it.Context == contextCP2 { // never current nor in-sync: unverifiable, not running
			if it.Pod.Name != "pending" || it.Pod.Phase != string(corev1.PodPending) || it.State != inspect.StateUnverifiable || it.StateCause != inspect.CauseNotRunning {
				t.Errorf("the Pending pod of %s: pod %q phase %q state %q (%s)", contextCP2, it.Pod.Name, it.Pod.Phase, it.State, it.StateReason)
			}
		}
	}
	if !seen[contextMain] || !seen[contextCP2] || len(seen) != 2 {
		t.Errorf("contexts of the JSON items: %v\n%s", seen, out)
	}

	// --check: 0 while in sync, 3 once the env consumer of one context is stale
	check := func() (string, int) {
		_, errOut, code := cmsyncIn(t, kubeconfig, "status", "-n", f.ns, "-l", "app=env", "--context", contextMain, "--context", contextCP2, "--verify", "--check")
		return errOut, code
	}
	if errOut, code := check(); code != 0 {
		t.Fatalf("--check before the change: exit %d\n%s", code, errOut)
	}
	f.patchConfigMapData("app", map[string]string{"level": "debug"})
	errOut, code = check()
	if code != 3 || !strings.Contains(errOut, `context "`+contextMain+`": check failed`) || !strings.Contains(errOut, "stale") ||
		strings.Contains(errOut, `context "`+contextCP2+`": check failed`) {
		t.Errorf("--check after the change: exit %d, want 3 (%s stale)\n%s", code, contextMain, errOut)
	}
}

// refreshItem is one item of refresh -o json over several contexts.
type refreshItem struct {
	Context string `json:"context"`
	Action  string `json:"action"`
	Target  struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"target"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}

// testRefreshAcrossContexts: refresh over the cluster (a Deployment with a
// stale env consumer) and the second control plane (a Pending pod). With
// the context at a closed port too, nothing is planned to be sent: every
// context refused, exit 1, no pod replaced nor annotated anywhere. With the
// two real contexts, the Deployment is restarted and verified current, the
// Pending pod is reported not current, and the exit is 3.
func testRefreshAcrossContexts(t *testing.T) {
	if pluginBuildErr != nil {
		t.Fatal(pluginBuildErr)
	}
	kubeconfig, cp2 := cluster2(t)
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "info"}))
	f.createDeployment("web", 1, podSpec(withEnv(busybox("app"), cmEnv("LEVEL", "app", "level", nil))), false)
	f.waitDeploymentSettled("web")
	pendingIn(t, f, cp2)
	before := f.podsOf("web")
	f.patchConfigMapData("app", map[string]string{"level": "debug"})

	_, errOut, code := cmsyncIn(t, kubeconfig, "refresh", "app", "-n", f.ns, "--all-contexts", "--yes", "--timeout", "45s")
	if code != 1 || !strings.Contains(errOut, `error: context "`+contextClosed+`": cannot reach the Kubernetes API server at https://127.0.0.1:1`) ||
		!strings.Contains(errOut, `nothing was changed in any of the 3 contexts`) {
		t.Errorf("refresh --all-contexts with %s: exit %d, want 1; stderr:\n%s", contextClosed, code, errOut)
	}
	if now := f.podsOf("web"); !maps.Equal(now, before) {
		t.Errorf("refused, yet the pods of web changed: %v, were %v", now, before)
	}
	p, err := cp2.CoreV1().Pods(f.ns).Get(f.ctx, "pending", metav1.GetOptions{})
	if err != nil || p.Annotations[refresh.RefreshedAtAnnotation] != "" {
		t.Errorf("refused, yet the pending pod of %s was annotated (or not read: %v): %v", contextCP2, err, p.Annotations)
	}

	// diff: the stale env of web under its context's heading; exit 3
	out, errOut, code := cmsyncIn(t, kubeconfig, "diff", "app", "-n", f.ns, "--context", contextMain+","+contextCP2)
	if code != 3 || !strings.HasPrefix(out, "=== context "+contextMain+" ===\n") || !strings.Contains(out, "debug") {
		t.Errorf("diff of %s and %s: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", contextMain, contextCP2, code, out, errOut)
	}
	t.Logf("diff: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)

	// the Pending pod is never verified: the run lasts its --timeout, which web's restart (one pod) fits in
	out, errOut, code = cmsyncIn(t, kubeconfig, "refresh", "app", "-n", f.ns, "--context", contextMain+","+contextCP2, "--yes", "-o", "json", "--timeout", "25s")
	var doc struct {
		Items []refreshItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("refresh -o json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	var restarted, pending bool
	for _, it := range doc.Items {
		switch {
		case it.Context == contextMain && it.Action == "restart" && it.Target.Name == "web":
			restarted = it.Outcome == "current"
		case it.Context == contextCP2 && it.Target.Name == "pending":
			pending = it.Outcome != "current" && it.Outcome != "applied"
		}
	}
	if !restarted || !pending || code != 3 || !strings.Contains(errOut, `error: context "`+contextCP2+`": `) {
		t.Errorf("refresh of %s and %s: exit %d (want 3), web restarted and current %t, the Pending pod not current %t\nstdout:\n%s\nstderr:\n%s",
			contextMain, contextCP2, code, restarted, pending, out, errOut)
	}
	t.Logf("refresh of %s and %s: exit %d\nstderr:\n%s", contextMain, contextCP2, code, errOut)
	f.waitDeploymentSettled("web")
	for name := range f.podsOf("web") {
		if _, ok := before[name]; ok {
			t.Errorf("pod %s of web not replaced by the restart", name)
		}
	}
}

// testLintAcrossContexts: lint --cluster asks the cluster (which holds the
// ConfigMap app), the second control plane (whose namespace lacks it) and a
// context at a closed port, at once: a CONTEXT column, one summary line per
// context and for all, the closed context one error line while the others
// print, the second control plane's --check failure under its name, exit 3;
// -o json carries the context of each item.
func testLintAcrossContexts(t *testing.T) {
	if pluginBuildErr != nil {
		t.Fatal(pluginBuildErr)
	}
	kubeconfig, cp2 := cluster2(t)
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "info"}))
	if _, err := cp2.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace in %s: %v", contextCP2, err)
	}
	t.Cleanup(func() { _ = cp2.CoreV1().Namespaces().Delete(context.Background(), f.ns, metav1.DeleteOptions{}) })
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: `+imageBusybox+`
        volumeMounts: [{name: cfg, mountPath: /etc/app}]
      volumes:
      - {name: cfg, configMap: {name: app}}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := cmsyncIn(t, kubeconfig, "lint", "-f", manifest, "-n", f.ns, "--cluster", "--all-contexts", "--check")
	if code != 3 || !strings.HasPrefix(out, "CONTEXT ") {
		t.Errorf("lint --all-contexts --check: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	rows := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if name, _, ok := strings.Cut(l, " "); ok {
			rows[name] = l
		}
	}
	if !strings.Contains(rows[contextMain], "info: hot-update") || !strings.Contains(rows[contextCP2], "error: missing-reference") || rows[contextClosed] != "" {
		t.Errorf("rows per context: %q", rows)
	}
	for _, want := range []string{
		contextMain + ": 1 use in 1 file: 0 errors, 0 warnings, 1 info\n",
		contextCP2 + ": 1 use in 1 file: 1 error, 0 warnings, 0 info\n",
		"all 2 contexts: 2 uses in 1 file: 1 error, 0 warnings, 1 info",
		`context "` + contextCP2 + `": check failed: 1 error:`,
		`error: context "` + contextClosed + `": cannot reach the Kubernetes API server at https://127.0.0.1:1`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no %q in stderr:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `context "`+contextMain+`": check failed`) {
		t.Errorf("%s failed --check:\n%s", contextMain, errOut)
	}

	out, errOut, code = cmsyncIn(t, kubeconfig, "lint", "-f", manifest, "-n", f.ns, "--cluster", "--context", contextMain+","+contextCP2, "-o", "json")
	var rep struct {
		Items []struct {
			Context string `json:"context"`
			Verdict string `json:"verdict"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Items) != 2 ||
		rep.Items[0].Context != contextMain || rep.Items[0].Verdict != "hot-update" || rep.Items[1].Context != contextCP2 || rep.Items[1].Verdict != "missing" {
		t.Errorf("lint -o json of %s and %s: exit %d, %+v\nstdout:\n%s\nstderr:\n%s", contextMain, contextCP2, code, rep.Items, out, errOut)
	}

	// manifests that hold every object: no GET is needed, and yet the
	// closed context is not reported as asked
	out, errOut, code = cmsyncIn(t, kubeconfig, "lint", "-f", filepath.Join(repoRoot, "hack", "demo", "demo.yaml"), "--cluster", "--all-contexts")
	if code != 1 || strings.Contains(out, contextClosed) || !strings.Contains(out, contextCP2+" ") ||
		!strings.Contains(errOut, `error: context "`+contextClosed+`": cannot reach the Kubernetes API server at https://127.0.0.1:1`) {
		t.Errorf("lint of hack/demo/demo.yaml --all-contexts: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
