//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The images hack/cluster/images.sh builds and up.sh imports: nothing is
// pulled (no registry is reachable), so every fixture uses pullPolicy Never.
const (
	imageBusybox = "localhost/busybox:probe"
	imageNoShell = "localhost/pause:probe" // one static binary, /pause: no shell, no cat
)

// Set up once by TestMain.
var (
	restConfig *rest.Config
	clientset  *kubernetes.Clientset
	// pluginBuildErr is why the plugin could not be built: every status call
	// then fails with it, while the kubelet-side checks still run.
	pluginBuildErr error
	repoRoot       string
	// binDir holds the plugin binary built for this run (removed at the end)
	binDir string
	// k8sVersion is the cluster's version (v1.37.2): the cached kubectl of that version is used
	k8sVersion string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// the cases wait on the kubelet more than on the CPU: run more of them at once than GOMAXPROCS
	// (the default of -parallel) unless -test.parallel was given; but each exec costs the API server,
	// kubelet, containerd and runc CPU (about 0.2 s of wall time each on two busy cores), and at 16
	// at once the execs of the suite took over their 10 s timeout (22 timeouts in TestVerifyPayloads,
	// TestVerifyStates, TestHostileSpecs, ...): 6
	explicit := false
	flag.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "6")
	}
	err := setup()
	if binDir != "" {
		defer os.RemoveAll(binDir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nFAIL: e2e setup: %v\n\n", err)
		return 1
	}
	return m.Run()
}

func setup() error {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		return fmt.Errorf("KUBECONFIG is not set: start the cluster (make cluster-up, or hack/cluster/up.sh) and run `make e2e`, or export KUBECONFIG=$(hack/cluster/kubeconfig.sh)")
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("KUBECONFIG=%s: %v", kc, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for KUBECONFIG=%s: %v", kc, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("cluster of KUBECONFIG=%s unreachable: %v (is it up? make cluster-up)", kc, err)
	}
	k8sVersion = sv.GitVersion
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %v", err)
	}
	ready := 0
	var images []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
		for _, img := range n.Status.Images {
			images = append(images, img.Names...)
		}
	}
	if ready == 0 {
		return fmt.Errorf("cluster of KUBECONFIG=%s has no Ready node", kc)
	}
	for _, want := range []string{imageBusybox, imageNoShell} {
		if !contains(images, want) {
			return fmt.Errorf("the node does not have image %s (hack/cluster/up.sh imports it); node images: %v", want, images)
		}
	}
	restConfig, clientset = cfg, cs

	// the plugin, run the way users run it: `kubectl cmsync`, found on PATH by kubectl's plugin discovery
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		return fmt.Errorf("repository root not found from %s: %v", wd, err)
	}
	cmsyncImage = imageTag(repoRoot)
	kubectlDir, err := kubectlBinDir()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cmsync-e2e-bin-")
	if err != nil {
		return err
	}
	binDir = tmp
	// static, -trimpath and stripped, as released: loadImage puts this binary in the image, and go vet
	// (make vet) has compiled every dependency with the same flags
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(tmp, "kubectl-cmsync"), "./cmd/kubectl-cmsync")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		pluginBuildErr = fmt.Errorf("go build ./cmd/kubectl-cmsync failed: %v\n%s", err, out)
		fmt.Fprintf(os.Stderr, "WARNING: %v\n(every status check will fail; the kubelet-side checks still run)\n", pluginBuildErr)
	}
	os.Setenv("PATH", tmp+string(os.PathListSeparator)+kubectlDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := exec.Command("kubectl", "version", "--client", "-o", "json").Output()
	if err != nil || !strings.Contains(string(out), `"gitVersion": "`+k8sVersion+`"`) {
		return fmt.Errorf("kubectl on PATH is not %s (%v): %s", k8sVersion, err, out)
	}
	return nil
}

// kubectlBinDir is the directory of the cached Kubernetes binaries
// (hack/cluster/build.sh) of the cluster's version, which hold its kubectl.
func kubectlBinDir() (string, error) {
	dir := os.Getenv("CMSYNC_K8S_BIN")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".cache", "kubectl-cmsync", "k8s", k8sVersion, "bin")
	}
	if _, err := os.Stat(filepath.Join(dir, "kubectl")); err != nil {
		return "", fmt.Errorf("kubectl %s not found in %s (hack/cluster/build.sh builds it; CMSYNC_K8S_BIN overrides the directory): %v", k8sVersion, dir, err)
	}
	return dir, nil
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
