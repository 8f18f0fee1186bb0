//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An in-cluster client (a pod with its ServiceAccount token and nothing else)
// reaches the API server the way client-go's rest.InClusterConfig does:
// KUBERNETES_SERVICE_HOST and _PORT (the `kubernetes` Service's ClusterIP),
// TLS verified against the mounted CA, authenticated by the token. The
// cluster's kubectl (static) is mounted into a busybox pod and run there.
func TestInClusterClientReachesTheAPIServer(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	dir, err := kubectlBinDir()
	if err != nil {
		t.Fatalf("the cluster's kubectl: %v", err)
	}
	file := corev1.HostPathFile
	f.createPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "in-cluster"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr[int64](1),
			DNSPolicy:                     corev1.DNSDefault,
			Containers: []corev1.Container{{
				Name: "c", Image: imageBusybox, ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "kubectl", MountPath: "/opt/kubectl", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kubectl", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(dir, "kubectl"), Type: &file},
			}}},
		},
	})
	f.waitPodReady("in-cluster")

	svc, err := f.cs.CoreV1().Services("default").Get(f.ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the kubernetes Service: %v", err)
	}
	env := f.environ("in-cluster", "c")
	if env["KUBERNETES_SERVICE_HOST"] != svc.Spec.ClusterIP || env["KUBERNETES_SERVICE_PORT"] != "443" {
		t.Fatalf("KUBERNETES_SERVICE_HOST:PORT = %s:%s, want the Service's %s:443",
			env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"], svc.Spec.ClusterIP)
	}
	// no flag that overrides the connection: kubectl takes the in-cluster configuration only when nothing
	// else is set
	who := f.mustExec("in-cluster", "c", "/opt/kubectl", "auth", "whoami",
		"-o", "jsonpath={.status.userInfo.username}")
	if want := "system:serviceaccount:" + f.ns + ":default"; who != want {
		t.Fatalf("kubectl auth whoami in the pod = %q, want %q", who, want)
	}
	// and through the Service's endpoint, as clients that read the endpoints dial it
	eps, err := f.cs.CoreV1().Endpoints("default").Get(f.ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(eps.Subsets) == 0 || len(eps.Subsets[0].Addresses) == 0 || len(eps.Subsets[0].Ports) == 0 {
		t.Fatalf("the kubernetes Endpoints: %v %+v", err, eps)
	}
	ep := eps.Subsets[0].Addresses[0].IP
	// the token is read inside the pod, never printed; the address is an argument of the script
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount"
	version := f.mustExec("in-cluster", "c", "sh", "-c", `exec /opt/kubectl --request-timeout=10s --server="https://$1:6443" `+
		`--certificate-authority=`+sa+`/ca.crt --token="$(cat `+sa+`/token)" get --raw /version`, "sh", ep)
	if !strings.Contains(version, `"gitVersion": "`+k8sVersion+`"`) {
		t.Fatalf("GET /version through the endpoint %s:6443: %s", ep, version)
	}
}

// The container image (hack/image: the static binary, no registry, no
// daemon), imported into the node's containerd (hack/cluster/load-image.sh),
// runs as a non-root, read-only pod and reaches the API server with its
// ServiceAccount: the in-cluster path of the controller.
func TestImageRunsInTheCluster(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	tag := cmsyncImage
	loadImage(t)
	f.createPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cmsync"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr[int64](1),
			DNSPolicy:                     corev1.DNSDefault,
			Containers: []corev1.Container{{
				Name: "cmsync", Image: tag, ImagePullPolicy: corev1.PullNever,
				Args: []string{"version", "-o", "json"},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr(true), ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	})
	f.poll("pod cmsync Succeeded", 60*time.Second, func() (bool, error) {
		p := f.getPod("cmsync")
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod cmsync failed: %s", f.logs("cmsync", "cmsync"))
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	out := f.logs("cmsync", "cmsync")
	var v struct {
		ServerVersion *struct{ GitVersion string } `json:"serverVersion"`
		ServerError   string                       `json:"serverError"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version -o json in the pod: %v\n%s", err, out)
	}
	if v.ServerVersion == nil || v.ServerVersion.GitVersion != k8sVersion {
		t.Fatalf("version in the pod reached no %s API server: %s", k8sVersion, out)
	}
}

// cmsyncImage is the image the e2e suite builds once and imports, tagged
// for its checkout (imageTag): a suite run from another checkout at the
// same time imports its own build under another tag, never over this one.
var cmsyncImage string

// imageTag is the image name of the checkout at root.
func imageTag(root string) string {
	h := fnv.New32a()
	h.Write([]byte(root))
	return fmt.Sprintf("localhost/kubectl-cmsync:e2e-%08x", h.Sum32())
}

var imageOnce struct {
	sync.Mutex
	done bool
}

// loadImage builds the container image (hack/image) of this tree and
// imports it into the node's containerd, once per run of the suite.
func loadImage(t *testing.T) {
	t.Helper()
	imageOnce.Lock()
	defer imageOnce.Unlock()
	if imageOnce.done {
		return
	}
	if pluginBuildErr != nil {
		t.Fatalf("the image needs the plugin, which was not built: %v", pluginBuildErr)
	}
	// the plugin setup built (static, as released) is the image's binary
	bin, tarball := filepath.Join(binDir, "kubectl-cmsync"), filepath.Join(t.TempDir(), "image.tar")
	for _, c := range [][]string{
		{"go", "run", "-trimpath", "./hack/image", "-binary", bin, "-tag", cmsyncImage, "-o", tarball},
		{"hack/cluster/load-image.sh", tarball},
	} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	imageOnce.done = true
}

// logs returns a container's log (or the error reading it).
func (f *fx) logs(pod, container string) string {
	b, err := f.cs.CoreV1().Pods(f.ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(f.ctx)
	if err != nil {
		return fmt.Sprintf("(log of %s/%s: %v)", pod, container, err)
	}
	return string(b)
}
