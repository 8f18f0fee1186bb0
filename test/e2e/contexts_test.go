//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
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
)

// The contexts of hack/cluster/cluster2-up.sh's contexts.kubeconfig.
const (
	contextMain   = "cmsync-local"
	contextCP2    = "cmsync-cp2"
	contextClosed = "cmsync-closed"
)

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

// TestStatusAcrossContexts: status over the cluster, a second control
// plane (its pods Pending: no node) and a context at a closed port, read at
// once: a CONTEXT column, the closed one an error line while the others
// print, a `context` per JSON item, the Pending pod never reported current,
// and --check's 3 when one context has a stale consumer.
func TestStatusAcrossContexts(t *testing.T) {
	if pluginBuildErr != nil {
		t.Fatal(pluginBuildErr)
	}
	kubeconfig, cp2 := cluster2(t)
	f := newFx(t)
	f.createConfigMap(configMap("app", map[string]string{"level": "info"}))
	f.createPod(pod("env", podSpec(withEnv(busybox("app"), cmEnv("LEVEL", "app", "level", nil)))))
	f.waitPodReady("env")

	// the same namespace, ConfigMap and a consumer in the second control plane
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
