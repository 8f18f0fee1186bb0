// Package nodereader reads what containers show from one short-lived pod
// per node instead of one exec per container: the node reader. Its pod
// (hostPID, two capabilities, no host mount) sees every container of its
// node through /proc: a volume in the kubelet's directory (through the
// kubelet's own mount namespace, /proc/KUBELET/root), a subPath file where
// the kubelet bind-mounts it (volume-subpaths) and the environment of the
// container's main process (/proc/PID/environ). One exec per node reads
// every requested container of that node (one tar of all its paths,
// parsed into what the exec reader's script would have shown; that
// script itself where the image has no tar), so the results are the same
// containerread.Verified and go through the same comparisons. Shell-less
// containers are read like any other.
package nodereader

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// DefaultImage is a small public image with sleep and a POSIX shell
	// with rm, mkdir, grep, sort, tr, ln, cat, ls and tar (busybox; where
	// tar is missing or fails the node script runs the verify script,
	// which reads links with readlink and uses wc, stat and sha256sum
	// when present).
	DefaultImage = "docker.io/library/busybox:1.37"
	// DefaultNamespace is where reader pods run unless --reader-namespace
	// says otherwise: a namespace for them alone, which the user creates
	// (privileged for Pod Security); never "default", which is often
	// unlabelled and where many may exec.
	DefaultNamespace = "cmsync-readers"
	// DefaultLifetime bounds a reader pod's life (activeDeadlineSeconds).
	DefaultLifetime = 10 * time.Minute

	// LabelManagedBy and ManagedBy mark every pod cmsync creates.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubectl-cmsync"
	// LabelComponent and Component mark a node reader.
	LabelComponent = "app.kubernetes.io/component"
	Component      = "node-reader"
	// LabelRun is the run that created the pod: a run removes its own pods
	// and, of other runs, only the ones that have ended.
	LabelRun = "kubectl-cmsync.io/run"

	// scratchDir holds the per-read links and lists: in /dev/shm, the
	// tmpfs every runtime gives a pod's containers, writable under a
	// read-only root filesystem. A volume (an emptyDir) would hold the
	// pod's start by the kubelet's wait for its volumes to be mounted,
	// polled every 300 ms.
	scratchDir = "/dev/shm/cmsync"
	// readDir is the node script's scratch directory: one read runs per
	// node at a time (batch.go), so one directory serves
	readDir = scratchDir + "/read"
	// containerName is the reader container's name.
	containerName = "reader"
)

// Capabilities are the only ones the reader keeps (all others are
// dropped): SYS_PTRACE to open /proc/PID/root and /proc/PID/environ of
// processes of other users (the kernel's ptrace access check), and
// DAC_READ_SEARCH to read files and directories whatever their mode (a
// Secret volume with defaultMode 0400 owned by another user, fsGroup
// directories). No CAP_DAC_OVERRIDE: nothing is ever written outside the
// reader's own emptyDir.
var Capabilities = []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}

// NewRunID returns a random id for the run label.
func NewRunID() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// ReaderPod is the reader pod for one node: pinned by nodeName (no
// scheduler), hostPID, tolerating every taint, bounded by
// activeDeadlineSeconds, as root with only Capabilities, a read-only root
// filesystem, no service account token, seccomp's runtime default, and
// AppArmor and SELinux that let it read other containers (see below). It
// sleeps; the reads are execs.
func ReaderPod(namespace, node, image, runID string, lifetime time.Duration) *corev1.Pod {
	secs := int64(lifetime / time.Second)
	if secs < 1 {
		secs = 1
	}
	zero, root := int64(0), int64(0)
	no, yes := false, true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "cmsync-reader-",
			Namespace:    namespace,
			Labels:       map[string]string{LabelManagedBy: ManagedBy, LabelComponent: Component, LabelRun: runID},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			HostPID:                       true,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &secs,
			TerminationGracePeriodSeconds: &zero,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				// sleep past the deadline: the kubelet ends the pod at
				// activeDeadlineSeconds, cmsync deletes it before
				Command: []string{"sleep", strconv.FormatInt(secs+60, 10)},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					RunAsNonRoot:             &no,
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: Capabilities},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					// the runtimes' default AppArmor profile (Ubuntu, COS)
					// and SELinux type (RHEL, OpenShift, Bottlerocket) keep a
					// container from other processes' /proc/PID/root, as they
					// do node agents: unconfined, and spc_t, the type of
					// containers that may reach the host
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
					SELinuxOptions:  &corev1.SELinuxOptions{Type: "spc_t"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
	}
}
