package nodereader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

func TestReaderPodLeastPrivilege(t *testing.T) {
	p := ReaderPod("ns", "node-1", "img", "run1", 90*time.Second)
	s := p.Spec
	if s.NodeName != "node-1" || !s.HostPID || s.HostNetwork || s.HostIPC {
		t.Fatalf("node/host namespaces: %+v", s)
	}
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 90 {
		t.Fatalf("activeDeadlineSeconds = %v", s.ActiveDeadlineSeconds)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0].Operator != corev1.TolerationOpExists || s.Tolerations[0].Key != "" {
		t.Fatalf("tolerations = %+v", s.Tolerations)
	}
	if *s.AutomountServiceAccountToken {
		t.Fatal("a service account token is mounted")
	}
	if len(s.Volumes) != 0 {
		t.Fatalf("volumes %+v: none is needed (the scratch files are in /dev/shm), and any holds the pod's start", s.Volumes)
	}
	sc := s.Containers[0].SecurityContext
	if sc.Privileged != nil && *sc.Privileged || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem {
		t.Fatalf("security context = %+v", sc)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}) {
		t.Fatalf("capabilities = %+v", sc.Capabilities)
	}
	if sc.AppArmorProfile == nil || sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
		t.Fatalf("AppArmor profile = %+v, want Unconfined (the runtime's default denies other processes' /proc/PID/root)", sc.AppArmorProfile)
	}
	if sc.SELinuxOptions == nil || *sc.SELinuxOptions != (corev1.SELinuxOptions{Type: "spc_t"}) {
		t.Fatalf("SELinux options = %+v, want type spc_t alone", sc.SELinuxOptions)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("seccomp profile = %+v, want RuntimeDefault", sc.SeccompProfile)
	}
	want := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: Component, LabelRun: "run1"}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Fatalf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
}

const cid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func consumer(node, containerID string, running bool) *corev1.Pod {
	st := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	if !running {
		st = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "8e1b2c3d-0000-4000-8000-000000000001"},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
				{Name: "cfg", MountPath: "/etc/cfg"},
				{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
				{Name: "sec", MountPath: "/etc/sec"}}}},
			Volumes: []corev1.Volume{
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: st, ContainerID: containerID}}},
	}
}

func request(p *corev1.Pod, env bool, paths ...string) containerread.Request {
	q := containerread.Request{ExecRequest: containerread.ExecRequest{Namespace: p.Namespace, Pod: p.Name, Container: "c", Env: env}, Pod: p}
	for _, pth := range paths {
		q.Paths = append(q.Paths, containerread.PathRequest{Path: pth})
	}
	return q
}

func TestPlanNodes(t *testing.T) {
	good := consumer("n1", "containerd://"+cid, true)
	other := consumer("n2", "containerd://"+strings.Repeat("f", 64), true)
	reqs := []containerread.Request{
		request(good, true, "/etc/cfg", "/etc/app.conf", "/etc/sec"),
		request(consumer("n1", "", false), false, "/etc/cfg"),
		request(consumer("n1", "containerd://$(reboot)", true), false, "/etc/cfg"),
		request(other, false, "/etc/cfg"),
		{ExecRequest: containerread.ExecRequest{Container: "c"}},
	}
	nodes, failed := batchByNode(reqs, "/d")
	if len(nodes) != 2 || nodes[0].node != "n1" || nodes[1].node != "n2" {
		t.Fatalf("nodes = %+v", nodes)
	}
	if failed[1] == nil || failed[1].Reason != containerread.VerifyNotRunning || failed[2] == nil || failed[4] == nil || len(failed) != 3 {
		t.Fatalf("failed = %v", failed)
	}
	c := nodes[0].containers[0]
	uid := string(good.UID)
	want := map[string]string{
		"/etc/cfg": "/d/k/pods/" + uid + "/volumes/kubernetes.io~configmap/cfg",
		"/etc/sec": "/d/k/pods/" + uid + "/volumes/kubernetes.io~secret/sec",
		// where the kubelet bind-mounts the container's second mount (a
		// subPath), never through the container's root
		"/etc/app.conf": "/d/k/pods/" + uid + "/volume-subpaths/cfg/c/1",
	}
	if c.id != cid || !c.env || len(c.view) != 3 {
		t.Fatalf("container = %+v", c)
	}
	for k, v := range want {
		if c.view[k] != v {
			t.Errorf("%s seen at %q, want %q", k, c.view[k], v)
		}
	}
	if len(nodes[0].paths) != 3 {
		t.Fatalf("paths = %v", nodes[0].paths)
	}
	// a path that is neither a volume nor a subPath mount is not read
	_, failed = batchByNode([]containerread.Request{request(good, false, "/etc/passwd")}, "/d")
	if failed[0] == nil || !strings.Contains(failed[0].Message, "neither a volume nor a subPath mount") {
		t.Fatalf("a path outside the kubelet's mounts: %v", failed)
	}
}

func busybox(t *testing.T) string {
	t.Helper()
	return lookPath(t, "busybox", "busybox is needed to run the node script (Debian package busybox or busybox-static)")
}

// lookPath is the path of program name, or a failure that says why it is
// needed.
func lookPath(t *testing.T, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(why+": ", err)
	}
	return p
}

// dash is the path of dash, Debian's /bin/sh: the node script with the
// machine's GNU tools, as in a --reader-image built on Debian, and a shell
// whose read has no -t.
func dash(t *testing.T) string {
	t.Helper()
	return lookPath(t, "dash", "dash is needed to run the node script (Debian's /bin/sh)")
}

// shells are the argv prefixes the node script is tested with: busybox sh
// (busybox's applets) and dash (GNU tools).
func shells(t *testing.T) [][]string {
	return [][]string{{busybox(t), "sh"}, {dash(t)}}
}

// asNode makes this machine a node as the node script sees it: root (the
// script reads through /proc/PID/root; the tests make cgroups) and a
// kubelet process (fakeKubelet).
func asNode(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the node script reads through /proc/PID/root and its tests make cgroups, which needs root")
	}
	fakeKubelet(t)
}

// runNodeScript runs the node script with shell (argv: busybox sh, whose
// applets are busybox's; or dash, with the machine's GNU tools) and
// parses both sections.
func runNodeScript(t *testing.T, shell []string, nr *nodeBatch, dir, rootDir string) (*nodeOutput, *containerread.Verified) {
	t.Helper()
	n1, n2 := containerread.NewNonce(), containerread.NewNonce()
	argv := nodeArgv(nr, dir, rootDir, 1<<20, n1, n2)
	cmd := exec.Command(shell[0], append(shell[1:], argv[1:]...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node script: %v: %s", err, errb.String())
	}
	no, err := parseNodeOutput(out.Bytes(), n2)
	if err != nil {
		t.Fatalf("node records: %v (%q)", err, out.String())
	}
	if !bytes.HasPrefix(no.rest, []byte("T\x00")) {
		t.Fatalf("the paths were not read by tar: %q", no.rest[:min(len(no.rest), 20)])
	}
	obs, rest, err := parseTarSection(no.rest[2:], n2, nr.paths, 1<<20)
	if err != nil || obs == nil || len(rest) != 0 {
		t.Fatalf("tar section: %v (tar failed: %v; %d bytes after it)", err, obs == nil, len(rest))
	}
	return no, obs
}

// runVerifyScript reads the node read's paths with the exec reader's
// script, as the node script does where its image has no tar, dir/k
// linked to rootDir as the node script links it.
func runVerifyScript(t *testing.T, nr *nodeBatch, dir, rootDir string) *containerread.Verified {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Symlink(rootDir, filepath.Join(dir, "k")); err != nil {
		t.Fatal(err)
	}
	n := containerread.NewNonce()
	out, err := exec.Command(busybox(t), append([]string{"sh", "-c", verifyScriptText(), "sh", "1048576", n, "0"}, nr.paths...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	obs, err := containerread.ParseVerified(out, n, nr.paths)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// atomicVolume lays out a volume as the kubelet's atomic writer does.
func atomicVolume(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	ts := "..2024_05_06_07_08_09.123456789"
	if err := os.MkdirAll(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, ts, k), []byte(v), 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestNodeScriptReadsKubeletDir runs the real node script: the kubelet
// root directory given (as --kubelet-root-dir does), a volume read through
// dir/k, a container that is not on this machine reported as not found,
// and cluster strings that would break a shell string kept as data.
func TestNodeScriptReadsKubeletDir(t *testing.T) {
	asNode(t)
	root := t.TempDir()
	p := consumer("n1", "containerd://"+cid, true)
	p.UID = "8e1b2c3d-0000-4000-8000-000000000001"
	vol := filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~configmap", "cfg")
	atomicVolume(t, vol, map[string]string{"a": "1", "evil;$(touch x)": "Z\x00cmsync-0\x00"})
	// a nested item (items[].path "sub/b") and a link inside the data: the
	// tar and the verify script must list them alike
	ts := filepath.Join(vol, "..2024_05_06_07_08_09.123456789")
	if err := os.MkdirAll(filepath.Join(ts, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "sub", "b"), []byte("nested"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(ts, "sub", "l")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "scratch")
	nodes, failed := batchByNode([]containerread.Request{request(p, true, "/etc/cfg", "/etc/app.conf")}, dir)
	if len(failed) != 0 {
		t.Fatal(failed)
	}
	no, obs := runNodeScript(t, []string{busybox(t), "sh"}, nodes[0], dir, root)
	// dash with GNU tar, ls and grep (a --reader-image built on Debian)
	if _, gnu := runNodeScript(t, []string{dash(t)}, nodes[0], dir, root); !reflect.DeepEqual(obs, gnu) {
		t.Errorf("busybox and GNU tools differ:\n%s\n%s", dump(obs), dump(gnu))
	}
	// the exec reader's script, where the image has no tar, shows the same
	if byScript := runVerifyScript(t, nodes[0], dir, root); !reflect.DeepEqual(obs, byScript) {
		t.Errorf("tar and the verify script differ:\n%s\n%s", dump(obs), dump(byScript))
	}
	if no.rootDir != root || no.source != "flag" {
		t.Fatalf("root dir = %q from %q", no.rootDir, no.source)
	}
	if _, ok := no.pids[cid]; ok {
		t.Fatal("a container that does not run here was found")
	}
	got := containerVerified(nodes[0].containers[0], &nodeResult{no: no, obs: obs}, "n1")
	if got.Err == nil || got.Err.Reason != containerread.VerifyNotRunning {
		t.Fatalf("err = %v, want not running", got.Err)
	}
	vp := obs.Paths[nodes[0].containers[0].view["/etc/cfg"]]
	if vp == nil || vp.Kind != containerread.PathAtomic || vp.Target != "..2024_05_06_07_08_09.123456789" {
		t.Fatalf("volume = %+v", vp)
	}
	if f := vp.Files["a"]; f == nil || string(f.Data) != "1" || f.Mode != 0o400 {
		t.Fatalf("file a = %+v", f)
	}
	if f := vp.Files["evil;$(touch x)"]; f == nil || string(f.Data) != "Z\x00cmsync-0\x00" {
		t.Fatalf("hostile file = %+v", f)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("scratch directory left behind: %v", err)
	}
}

// TestNodeScriptPathWithANewline: the node script splits its lists of
// paths at newlines, so a path that holds one (no checked name makes one)
// is read by the verify script, whole, beside the others.
func TestNodeScriptPathWithANewline(t *testing.T) {
	asNode(t)
	root := t.TempDir()
	plain, odd := filepath.Join(root, "plain"), filepath.Join(root, "odd\nname")
	atomicVolume(t, plain, map[string]string{"a": "1"})
	atomicVolume(t, odd, map[string]string{"b": "2"})
	nr := &nodeBatch{node: "n1", paths: []string{plain, odd}}
	for _, shell := range shells(t) {
		n1, n2 := containerread.NewNonce(), containerread.NewNonce()
		argv := nodeArgv(nr, filepath.Join(t.TempDir(), "scratch"), root, 1<<20, n1, n2)
		out, err := exec.Command(shell[0], append(shell[1:], argv[1:]...)...).Output()
		if err != nil {
			t.Fatalf("%s: %v", shell[0], err)
		}
		got, err := parseRead(out, n1, n2, nr.paths, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", shell[0], err)
		}
		if !bytes.HasPrefix(got.no.rest, []byte("V\x00")) {
			t.Errorf("%s: the paths were not read by the verify script: %q", shell[0], got.no.rest[:min(len(got.no.rest), 20)])
		}
		for p, want := range map[string]string{plain: "1", odd: "2"} {
			vp := got.obs.Paths[p]
			if vp == nil || vp.Kind != containerread.PathAtomic || len(vp.Files) != 1 {
				t.Fatalf("%s: %q = %+v", shell[0], p, vp)
			}
			for _, f := range vp.Files {
				if string(f.Data) != want {
					t.Errorf("%s: %q holds %q, want %q", shell[0], p, f.Data, want)
				}
			}
		}
	}
}

// fakeKubelet runs sleep under the name kubelet, so that the script finds
// a kubelet sharing this test's mount namespace even where no kubelet
// runs (a real one, when there is one, shares it too).
func fakeKubelet(t *testing.T) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "kubelet")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func TestEnded(t *testing.T) {
	now := time.Now()
	secs := int64(60)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: corev1.PodSpec{ActiveDeadlineSeconds: &secs}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if Ended(p, now) {
		t.Fatal("a running pod within its deadline has ended")
	}
	if !Ended(p, now.Add(2*time.Minute)) {
		t.Fatal("a pod past its deadline has not ended")
	}
	p.Status.Phase = corev1.PodFailed
	if !Ended(p, now) {
		t.Fatal("a failed pod has not ended")
	}
}

// TestSweepLeavesLiveRuns: a run removes other runs' ended readers and
// never a live one; Close removes its own.
func TestSweepLeavesLiveRuns(t *testing.T) {
	ctx := context.Background()
	secs := int64(600)
	mk := func(name, run string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.Now(),
			Labels: map[string]string{LabelManagedBy: ManagedBy, LabelComponent: Component, LabelRun: run}},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: &secs}, Status: corev1.PodStatus{Phase: phase}}
	}
	cs := fake.NewClientset(mk("live", "other", corev1.PodRunning), mk("ended", "killed", corev1.PodFailed))
	r := New(cs, nil, Options{Namespace: "ns"})
	r.removeEnded(ctx)
	left, _ := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "live" {
		t.Fatalf("left = %v", left.Items)
	}
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, mk("mine", r.RunID(), corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.unsure.Store(true) // as an interrupted create leaves it: its answer never came
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ = cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "live" {
		t.Fatalf("after Close = %v", left.Items)
	}
}

func TestVerifyScriptAdapted(t *testing.T) {
	if s := verifyScriptText(); s == "" || !strings.Contains(s, targetByReadlink) {
		t.Fatal("the exec reader's script no longer finds the ..data target with the line the node reader replaces: update targetByCd")
	}
}

// TestCreateErrors: a reader pod the API refuses makes every container of
// its node unverifiable with what to do: the Pod Security label or another
// namespace, the RBAC verbs, or the commands that create the namespace.
func TestCreateErrors(t *testing.T) {
	cases := map[string]struct {
		err     error
		reason  string
		mustSay []string
	}{
		"pod security": {apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf(`violates PodSecurity "baseline:latest": host namespaces (hostPID=true)`)),
			containerread.VerifyFailed, []string{"Pod Security", "pod-security.kubernetes.io/enforce=privileged", "--reader-namespace"}},
		"rbac": {apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf(`User "alice" cannot create resource "pods"`)),
			containerread.VerifyForbidden, []string{"create pods", "create, get, list, watch and delete on pods", "pods/exec"}},
		"no namespace": {apierrors.NewNotFound(corev1.Resource("namespaces"), "ns"),
			containerread.VerifyFailed, []string{"namespace ns, where the node reader pods run, does not exist", "`kubectl create namespace ns`",
				"`kubectl label namespace ns pod-security.kubernetes.io/enforce=privileged`", "--reader=exec"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			var failures atomic.Int32
			r := New(cs, nil, Options{Namespace: "ns", PodFailed: func() { failures.Add(1) }})
			defer r.Close()
			got := r.ReadContainers(context.Background(), []containerread.Request{request(consumer("n1", "containerd://"+cid, true), false, "/etc/cfg")}, containerread.Options{})
			if got[0] == nil || got[0].Err == nil || got[0].Err.Reason != tc.reason {
				t.Fatalf("got %+v, want reason %s", got[0], tc.reason)
			}
			if n := failures.Load(); n != 1 {
				t.Errorf("PodFailed called %d times for one reader pod refused, want 1", n)
			}
			for _, s := range tc.mustSay {
				if !strings.Contains(got[0].Err.Error(), s) {
					t.Errorf("%q does not say %q", got[0].Err.Error(), s)
				}
			}
		})
	}
}

// A read whose context ends while its reader pod starts fails, and that is
// no failure of the reader pod.
func TestInterruptedStartIsNoPodFailure(t *testing.T) {
	var failures atomic.Int32
	r := New(fake.NewClientset(), nil, Options{Namespace: "ns", PodFailed: func() { failures.Add(1) }})
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := r.ReadContainers(ctx, []containerread.Request{request(consumer("n1", "containerd://"+cid, true), false, "/etc/cfg")}, containerread.Options{})
	if got[0] == nil || got[0].Err == nil {
		t.Fatalf("got %+v, want the read interrupted", got[0])
	}
	if n := failures.Load(); n != 0 {
		t.Errorf("PodFailed called %d times for a start interrupted by its read's context (%v), want 0", n, got[0].Err)
	}
}

// recordingReader is a fallback containerread.Reader that records what it reads.
type recordingReader struct {
	mu   sync.Mutex
	pods []string
}

func (f *recordingReader) ReadContainers(_ context.Context, reqs []containerread.Request, _ containerread.Options) []*containerread.Verified {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*containerread.Verified, len(reqs))
	for i, q := range reqs {
		f.pods = append(f.pods, q.Pod.Spec.NodeName+"/"+q.Container)
		out[i] = &containerread.Verified{}
	}
	return out
}

// TestFallbackReadsWhereNoReaderStarts (--reader=auto): the containers of a
// node where the reader pod is refused are read by the fallback, without
// an error, and that node is not tried again; a container that cannot be
// read whichever reader is used is not handed over.
func TestFallbackReadsWhereNoReaderStarts(t *testing.T) {
	cs := fake.NewClientset()
	creates := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf(`violates PodSecurity "baseline:latest"`))
	})
	fb := &recordingReader{}
	r := New(cs, nil, Options{Namespace: "ns", Fallback: fb})
	defer r.Close()
	reqs := []containerread.Request{
		request(consumer("n1", "containerd://"+cid, true), false, "/etc/cfg"),
		request(consumer("n1", "", false), false, "/etc/cfg"), // not running: no reader reads it
	}
	for round := 1; round <= 2; round++ {
		got := r.ReadContainers(context.Background(), reqs, containerread.Options{})
		if got[0] == nil || got[0].Err != nil {
			t.Fatalf("round %d: %+v, want the fallback's read", round, got[0])
		}
		if got[1] == nil || got[1].Err == nil || got[1].Err.Reason != containerread.VerifyNotRunning {
			t.Fatalf("round %d: a container not running: %+v", round, got[1])
		}
	}
	if creates != 1 || strings.Join(fb.pods, ",") != "n1/c,n1/c" {
		t.Errorf("%d creates, fallback read %v; want 1 create and n1/c read twice by the fallback", creates, fb.pods)
	}
}

func dump(v *containerread.Verified) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// TestPrepareFailureIsTheFirstReadsThenTriedAgain: a reader Prepare could
// not start is reported by the first read of its node (not tried again at
// once, which would double the wait), and the read after it tries again.
func TestPrepareFailureIsTheFirstReadsThenTriedAgain(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	creates := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		creates++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf(`User "alice" cannot create resource "pods"`))
	})
	r := New(cs, nil, Options{Namespace: "ns"})
	defer r.Close()
	r.Prepare(context.Background(), []string{"n1", "n1", ""})
	read := func() *containerread.Verified {
		return r.ReadContainers(context.Background(), []containerread.Request{request(consumer("n1", "containerd://"+cid, true), false, "/etc/cfg")}, containerread.Options{})[0]
	}
	if got := read(); got == nil || got.Err == nil || got.Err.Reason != containerread.VerifyForbidden {
		t.Fatalf("first read: %+v, want the prepared reader's error", got)
	}
	mu.Lock()
	afterFirst := creates
	mu.Unlock()
	if afterFirst != 1 {
		t.Fatalf("%d creates by Prepare and the first read, want 1 (the first read reports Prepare's failure)", afterFirst)
	}
	if got := read(); got == nil || got.Err == nil {
		t.Fatalf("second read: %+v, want an error", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if creates != 2 {
		t.Fatalf("%d creates after the second read, want 2 (it tries again)", creates)
	}
}

// fakeRuntime runs a process named name (a shell script: its comm is the
// script's name) with args, as the node script finds a runtime; uid is its
// user.
func fakeRuntime(t *testing.T, uid uint32, name string, args ...string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmsync-runtime-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
}

// fakeContainer runs sleep in a cgroup named like a pod's container ID
// (under a "kubepods" directory of the pids hierarchy, or of the unified
// one on cgroup v2), as the node script finds a container's main process;
// it returns its PID.
func fakeContainer(t *testing.T, id string) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	startIn(t, id, cmd)
	return cmd.Process.Pid
}

// startIn starts cmd and moves it into the cgroup of the fake container
// id (made when missing, removed at the end of the test).
func startIn(t *testing.T, id string, cmd *exec.Cmd) {
	t.Helper()
	root := "/sys/fs/cgroup/pids"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root = "/sys/fs/cgroup"
	}
	dir := filepath.Join(root, "cmsync-test-kubepods", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("a cgroup for the fake container (the node script finds containers by their cgroup): %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// every process of the cgroup, the children cmd forked included
		// (gone already when another process of the same container's
		// cleanup removed it)
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, pid := range strings.Fields(string(procs)) {
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		_ = cmd.Wait()
		for i := 0; i < 100; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(10 * time.Millisecond) // the killed children leave the cgroup as they are reaped
		}
		_ = os.Remove(filepath.Dir(dir))
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatalf("moving the fake container into its cgroup: %v", err)
	}
}

// TestNodeScriptFindsTheMainProcess: of a container's processes, the node
// script reports the earliest started: not a child the main process
// forked, nor a process started later from outside (an exec, a child of
// the runtime's shim). (A child that shares its parent's start time, which
// this test cannot force, is left out by its parent.) A process whose name
// holds a newline and ") " upsets no other record, and leaves its own
// container's main process unknown rather than taken for an exec; a cgroup
// named with two IDs and a space is neither container's.
func TestNodeScriptFindsTheMainProcess(t *testing.T) {
	asNode(t)
	id1, id2 := strings.Repeat("5a", 32), strings.Repeat("6b", 32)
	// the odd one first, so that its stat line comes before the others
	// (a process renames only itself)
	odd := exec.Command("sh", "-c", `printf 'x\n) 1 2 ) 3' >/proc/$$/comm && echo renamed && read -r x`)
	oddIn, err := odd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer oddIn.Close()
	oddOut, err := odd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, id2, odd)
	if b := make([]byte, 8); func() bool { n, _ := io.ReadFull(oddOut, b); return n < 8 }() {
		t.Fatal("the odd process did not rename itself")
	}
	if comm := readFile(t, fmt.Sprintf("/proc/%d/comm", odd.Process.Pid)); !strings.Contains(comm, "\n) ") {
		t.Fatalf("comm = %q", comm)
	}
	// a cgroup whose name holds two requested IDs, made by a container
	// that may make cgroups: its process, older than id1's main, is
	// neither's
	id3 := strings.Repeat("7c", 32)
	startIn(t, id1+" "+id3, exec.Command("sleep", "60"))
	time.Sleep(30 * time.Millisecond)
	// the main process forks its child once it is in the container
	main := exec.Command("sh", "-c", "read -r x; sleep 60 & wait")
	in, err := main.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, id1, main)
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // a start time later than main's (clock ticks of 10 ms)
	startIn(t, id1, exec.Command("sleep", "60"))
	// an exec beside the odd process, whose unreadable stat line leaves
	// its container's main process unknown: not the exec's
	startIn(t, id2, exec.Command("sleep", "60"))
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(readFile(t, filepath.Join("/proc", strconv.Itoa(main.Process.Pid), "task", strconv.Itoa(main.Process.Pid), "children")), " ") {
		if time.Now().After(deadline) {
			t.Fatal("the main process forked no child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	nr := &nodeBatch{node: "n1", containers: []containerPaths{{req: 0, id: id1, env: true}, {req: 1, id: id3}, {req: 2, id: id2}}}
	for _, shell := range shells(t) {
		no, _ := runNodeScript(t, shell, nr, filepath.Join(t.TempDir(), "scratch"), t.TempDir())
		if got, want := no.pids[id1], strconv.Itoa(main.Process.Pid); got != want {
			t.Errorf("%s: main process of the container = %q, want %s (child and exec'd process: %v)", shell[0], got, want, no.pids)
		}
		if len(no.pids) != 1 {
			t.Errorf("%s: main processes %v, want id1's alone (id2's is unknown, id3 has none)", shell[0], no.pids)
		}
		if _, ok := no.env[id1]; !ok {
			t.Errorf("%s: no environment read for id1", shell[0])
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNodeScriptReadsTheRuntimesSpec runs the real node script beside a
// containerd whose state directory is set in its configuration (a decoy
// in a table) and a CRI-O whose run root a drop-in overrides (and another
// sets in another table): each
// container's environment is the one in its OCI spec; a container with no
// spec is reported without one.
func TestNodeScriptReadsTheRuntimesSpec(t *testing.T) {
	asNode(t)
	tmp := t.TempDir()
	ctrd, crio := filepath.Join(tmp, "ctrd state"), filepath.Join(tmp, "crio")
	writeFile(t, filepath.Join(tmp, "config.toml"), "version = 3\nroot = \"/nowhere\"\n  state   =  \""+ctrd+"\"\n[grpc]\n  state = \"/wrong\"\n")
	writeFile(t, filepath.Join(tmp, "crio.conf"), "[crio]\nrunroot = \"/wrong\"\n[crio.runtime]\n")
	writeFile(t, filepath.Join(tmp, "crio.d", "10-root.conf"), "[crio]\n\trunroot = '"+crio+"'\n")
	writeFile(t, filepath.Join(tmp, "crio.d", "20-image.conf"), "[crio.image]\nrunroot = \"/wrong\"\n")
	fakeRuntime(t, 0, "containerd", "--config", filepath.Join(tmp, "config.toml"))
	fakeRuntime(t, 0, "crio", "--config="+filepath.Join(tmp, "crio.conf"), "-d", filepath.Join(tmp, "crio.d"))
	// any user may run a program named containerd: only root's count
	nobody := filepath.Join(tmp, "nobody")
	fakeRuntime(t, 65534, "containerd", "--state", nobody)
	id1, id2, id3, id4 := cid, strings.Repeat("ab", 32), strings.Repeat("cd", 32), strings.Repeat("ef", 32)
	pid1, pid2 := fakeContainer(t, id1), fakeContainer(t, id2)
	fakeContainer(t, id4)
	bundle := filepath.Join(ctrd, "io.containerd.runtime.v2.task", "k8s.io", id1)
	writeFile(t, filepath.Join(bundle, "config.json"), `{"ociVersion":"1.2.0","process":{"args":["sh"],"env":["PATH=/bin","V=from-spec","W=a=b"]}}`)
	writeFile(t, filepath.Join(bundle, "init.pid"), strconv.Itoa(pid1))
	userdata := filepath.Join(crio, "overlay-containers", id2, "userdata")
	writeFile(t, filepath.Join(userdata, "config.json"), `{"process":{"env":["V=crio"]}}`)
	writeFile(t, filepath.Join(userdata, "pidfile"), strconv.Itoa(pid2))
	// a spec whose pid file names another process is not this container's
	forged := filepath.Join(ctrd, "io.containerd.runtime.v2.task", "k8s.io", id4)
	writeFile(t, filepath.Join(forged, "config.json"), `{"process":{"env":["V=forged"]}}`)
	writeFile(t, filepath.Join(forged, "init.pid"), strconv.Itoa(pid1))
	id5 := strings.Repeat("12", 32)
	pid5 := fakeContainer(t, id5)
	writeFile(t, filepath.Join(nobody, "io.containerd.runtime.v2.task", "k8s.io", id5, "config.json"), `{"process":{"env":["V=forged"]}}`)
	writeFile(t, filepath.Join(nobody, "io.containerd.runtime.v2.task", "k8s.io", id5, "init.pid"), strconv.Itoa(pid5))
	nr := &nodeBatch{node: "n1", containers: []containerPaths{{req: 0, id: id1, env: true}, {req: 1, id: id2, env: true}, {req: 2, id: id3, env: true},
		{req: 3, id: id4, env: true}, {req: 4, id: id5, env: true}}}
	for _, shell := range shells(t) {
		no, _ := runNodeScript(t, shell, nr, filepath.Join(t.TempDir(), "scratch"), tmp)
		if got := no.env[id1]; got["V"] != "from-spec" || got["W"] != "a=b" || len(got) != 3 {
			t.Errorf("%s: containerd's container env = %v", shell[0], got)
		}
		if got := no.env[id2]; got["V"] != "crio" {
			t.Errorf("%s: CRI-O's container env = %v", shell[0], got)
		}
		if !no.noEnv[id3] || no.env[id3] != nil {
			t.Errorf("%s: a container with neither a spec nor a process has an environment: %v", shell[0], no.env[id3])
		}
		if _, ok := no.specPath[id4]; ok || no.env[id4]["V"] == "forged" {
			t.Errorf("%s: a spec whose pid file names another process was read: %v", shell[0], no.env[id4])
		}
		if _, ok := no.specPath[id5]; ok || no.env[id5]["V"] == "forged" {
			t.Errorf("%s: the spec of a runtime another user runs was read: %v", shell[0], no.env[id5])
		}
		found := map[string]runtimeDir{}
		for _, rt := range no.runtimes {
			if strings.HasPrefix(rt.dir, tmp) {
				found[rt.kind] = rt
			}
		}
		if found["containerd"].dir != ctrd || found["containerd"].source != "config" || found["crio"].dir != crio || found["crio"].source != "config" {
			t.Errorf("%s: runtimes = %+v", shell[0], no.runtimes)
		}
	}
}

// TestContainerEnvSaysWhereItWasRead: the spec's environment is taken as
// it is; /proc/PID/environ stands in with the reason no spec was read; a
// spec that is not understood is an error that quotes none of it.
func TestContainerEnvSaysWhereItWasRead(t *testing.T) {
	env := map[string]string{"V": "x"}
	rts := []runtimeDir{{kind: "containerd", pid: "7", dir: "/run/k3s/containerd", source: "flag"}}
	cases := []struct {
		name    string
		no      *nodeOutput
		read    bool
		from    string
		errPart string
	}{
		{name: "spec", no: &nodeOutput{env: map[string]map[string]string{cid: env}, specPath: map[string]string{cid: "/s/config.json"}}, read: true},
		{name: "environ", no: &nodeOutput{env: map[string]map[string]string{cid: env}, runtimes: rts}, read: true,
			from: "read from the main process (/proc/PID/environ), as the runtime's OCI spec of the container is not under containerd's /run/k3s/containerd (flag)"},
		{name: "no runtime", no: &nodeOutput{env: map[string]map[string]string{cid: env}}, read: true, from: "no containerd or CRI-O process was found on the node"},
		{name: "bad spec", no: &nodeOutput{specPath: map[string]string{cid: "/s/config.json"}, specErr: map[string]string{cid: "the runtime's OCI spec is not valid JSON"}},
			errPart: "not valid JSON (/s/config.json)"},
	}
	for _, c := range cases {
		v := &containerread.Verified{}
		containerEnv(v, cid, c.no)
		if v.EnvRead != c.read || !strings.Contains(v.EnvNote, c.from) || (c.from == "") != (v.EnvNote == "") || !strings.Contains(v.EnvErr, c.errPart) {
			t.Errorf("%s: read %v, from %q, err %q", c.name, v.EnvRead, v.EnvNote, v.EnvErr)
		}
	}
	if _, err := specEnv([]byte(`{"process":{"env":["SECRET=hunter2"`)); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a truncated spec: %v", err)
	}
}
