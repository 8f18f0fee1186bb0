package nodereader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

// localSessions is a StdinExecutor that runs argv on this machine with
// shell, as if the reader pod were the host, and counts the execs.
type localSessions struct {
	shell []string
	mu    sync.Mutex
	execs int
	argv  []string // every exec's, one after another
	live  sync.WaitGroup
}

func (l *localSessions) Exec(ctx context.Context, t containerread.Target, argv []string, stdout, stderr io.Writer) error {
	return l.ExecStdin(ctx, t, argv, nil, stdout, stderr)
}

func (l *localSessions) ExecStdin(ctx context.Context, _ containerread.Target, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	l.mu.Lock()
	l.execs++
	l.argv = append(l.argv, argv...)
	l.mu.Unlock()
	l.live.Add(1)
	defer l.live.Done()
	cmd := exec.CommandContext(ctx, l.shell[0], append(l.shell[1:], argv[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = time.Second
	return cmd.Run()
}

func (l *localSessions) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.execs
}

// runningPods is a fake clientset whose reader pods run once created.
func runningPods() *fake.Clientset {
	cs := fake.NewClientset()
	n := 0
	var mu sync.Mutex
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		mu.Lock()
		n++
		p.Name = p.GenerateName + strconv.Itoa(n)
		mu.Unlock()
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: containerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		return true, p, cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	return cs
}

// swapVolume points the volume's ..data at a new directory holding a=v, as
// the kubelet's atomic writer does on an update.
func swapVolume(t *testing.T, dir, ts, v string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ts, "a"), v)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestSessionReadsTheNodeAsItIsWhenAsked runs the real session script
// (busybox sh, whose read has -t; dash, whose read has not) behind a
// Reader: every read of a node is a request to the session opened when
// its reader pod ran, not an exec, whatever its containers, and sees the
// volume the kubelet swapped after the read before; a session that broke
// is replaced; the sessions end with Close.
func TestSessionReadsTheNodeAsItIsWhenAsked(t *testing.T) {
	asNode(t)
	ids := []string{strings.Repeat("a1", 32), strings.Repeat("b2", 32)}
	for _, id := range ids {
		fakeContainer(t, id)
	}
	for name, shell := range map[string][]string{"busybox": {busybox(t), "sh"}, "dash": {dash(t)}} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			var reqs []containerread.Request
			var vols []string
			for i, id := range ids {
				p := consumer("n1", "containerd://"+id, true)
				p.Name, p.UID = "p"+strconv.Itoa(i), types.UID("8e1b2c3d-0000-4000-8000-00000000000"+strconv.Itoa(i))
				vol := filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~configmap", "cfg")
				atomicVolume(t, vol, map[string]string{"a": "v1"})
				reqs, vols = append(reqs, request(p, false, "/etc/cfg")), append(vols, vol)
			}
			ex := &localSessions{shell: shell}
			r := New(runningPods(), ex, Options{Namespace: "ns", KubeletRootDir: root})
			read := func(want string, reqs ...containerread.Request) {
				t.Helper()
				for i, v := range r.ReadContainers(context.Background(), reqs, containerread.Options{MaxBytes: 1 << 20, Timeout: 10 * time.Second}) {
					if v.Err != nil {
						t.Fatalf("read %d: %v", i, v.Err)
					}
					p := v.Paths["/etc/cfg"]
					if p == nil || p.Files["a"] == nil || string(p.Files["a"].Data) != want {
						t.Fatalf("read %d: %s, want a=%s", i, dump(v), want)
					}
				}
			}
			read("v1", reqs[0])
			swapVolume(t, vols[0], "..2030_01_01_00_00_00.000000001", "v2")
			read("v2", reqs[0])
			swapVolume(t, vols[1], "..2030_01_01_00_00_00.000000001", "v2")
			read("v2", reqs[1])
			read("v2", reqs[0], reqs[1])
			if n := ex.count(); n != 1 {
				t.Fatalf("%d execs for four reads of one node, want 1 session", n)
			}
			for _, a := range ex.argv {
				if strings.HasPrefix(a, "cmsync-") {
					t.Fatalf("a nonce in the session's command line, where any process of the node reads it: %q", a)
				}
			}
			// a session whose stream broke is replaced, and the read made
			r.mu.Lock()
			for _, rp := range r.pods {
				rp.session.close()
			}
			r.mu.Unlock()
			read("v2", reqs[1])
			if n := ex.count(); n != 2 {
				t.Fatalf("%d execs, want 2: the broken session replaced once", n)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan struct{})
			go func() { ex.live.Wait(); close(ended) }()
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("a session still runs after Close")
			}
		})
	}
}

// TestFrameWriter cuts a stream written a byte at a time into its reads,
// the end record's nonce inside a file's content left alone.
func TestFrameWriter(t *testing.T) {
	w := newFrameWriter("cmsync-n")
	stream := "one Z\x00cmsync-x\x00 Z\x00cmsync-n\x000\x00two\x00Z\x00cmsync-n\x001\x00"
	var got []frame
	for i := range len(stream) {
		if _, err := w.Write([]byte{stream[i]}); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-w.frames:
			got = append(got, f)
		default:
		}
	}
	if len(got) != 2 || string(got[0].out) != "one Z\x00cmsync-x\x00 " || got[0].status != "0" ||
		string(got[1].out) != "two\x00" || got[1].status != "1" {
		t.Fatalf("frames = %q", got)
	}
	if _, err := w.Write([]byte("Z\x00cmsync-n\x000\x00Z\x00cmsync-n\x000\x00")); err == nil {
		t.Fatal("two reads nobody asked for were taken")
	}
	if err := exitError("2"); err == nil || !strings.Contains(err.Error(), "exit code 2") {
		t.Fatalf("exitError(2) = %v", err)
	}
	if _, ok := sessionRequest(&nodeBatch{paths: []string{"/a\nb"}}, 0, "n1", "n2"); ok {
		t.Fatal("a path with a newline was made a request line")
	}
	if exitError("0") != nil {
		t.Fatal("exit status 0 is an error")
	}
	var b boundedBuffer
	b.n = 4
	_, _ = b.Write([]byte("abcdef"))
	if !bytes.Equal(b.Bytes(), []byte("abcd")) {
		t.Fatalf("bounded = %q", b.Bytes())
	}
}

// notYet is a localSessions whose first execs fail as the kubelet's do
// while the container does not run yet, or with err when set.
type notYet struct {
	*localSessions
	mu   sync.Mutex
	left int
	err  error
}

func (n *notYet) ExecStdin(ctx context.Context, t containerread.Target, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	n.mu.Lock()
	fail := n.left > 0
	if fail {
		n.left--
	}
	n.mu.Unlock()
	if n.err != nil {
		n.localSessions.mu.Lock()
		n.execs++
		n.localSessions.mu.Unlock()
		return n.err
	}
	if fail {
		n.localSessions.mu.Lock()
		n.execs++
		n.localSessions.mu.Unlock()
		return errors.New(`container not found ("reader")`)
	}
	return n.localSessions.ExecStdin(ctx, t, argv, stdin, stdout, stderr)
}

// pendingPods is a fake clientset whose reader pods never say they run.
func pendingPods() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		p.Name = p.GenerateName + "1"
		return true, p, cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
	})
	return cs
}

// TestProbeOpensTheSessionBeforeTheStatusSays: the reader pod counts as
// running as soon as a session opens in it, retried while the kubelet
// answers that the container does not run yet, though the pod's status
// never says so; the first read goes through that session. A probe
// refused for another reason gives up at once, and the status decides.
func TestProbeOpensTheSessionBeforeTheStatusSays(t *testing.T) {
	asNode(t)
	id := strings.Repeat("c3", 32)
	fakeContainer(t, id)
	root := t.TempDir()
	p := consumer("n1", "containerd://"+id, true)
	atomicVolume(t, filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~configmap", "cfg"), map[string]string{"a": "v1"})
	ex := &notYet{localSessions: &localSessions{shell: []string{busybox(t), "sh"}}, left: 2}
	r := New(pendingPods(), ex, Options{Namespace: "ns", KubeletRootDir: root, StartTimeout: 20 * time.Second})
	defer r.Close()
	start := time.Now()
	got := r.ReadContainers(context.Background(), []containerread.Request{request(p, false, "/etc/cfg")}, containerread.Options{MaxBytes: 1 << 20, Timeout: 10 * time.Second})
	if got[0].Err != nil || got[0].Paths["/etc/cfg"] == nil || string(got[0].Paths["/etc/cfg"].Files["a"].Data) != "v1" {
		t.Fatalf("read: %s", dump(got[0]))
	}
	if n := ex.count(); n != 3 {
		t.Fatalf("%d execs, want 3: two refused while the container did not run, the session that served the read", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the read took %s: it waited for the status rather than the probe", d)
	}

	refused := &notYet{localSessions: &localSessions{shell: []string{busybox(t), "sh"}}, err: errors.New(`pods "cmsync-reader-1" is forbidden: User "u" cannot create resource "pods/exec"`)}
	r2 := New(pendingPods(), refused, Options{Namespace: "ns", KubeletRootDir: root, StartTimeout: time.Second})
	defer r2.Close()
	got = r2.ReadContainers(context.Background(), []containerread.Request{request(p, false, "/etc/cfg")}, containerread.Options{MaxBytes: 1 << 20, Timeout: 10 * time.Second})
	if got[0].Err == nil || got[0].Err.Reason != containerread.VerifyTimeout {
		t.Fatalf("read without a running reader: %v, want the start's timeout", got[0].Err)
	}
	if n := refused.count(); n != 1 {
		t.Fatalf("%d execs refused, want 1: the probe gives up on a refusal", n)
	}
}

// TestSessionRefusesAnEmptyLine: a request's lines become the node
// script's arguments by splitting at newlines, where an empty line would
// vanish and shift the others: the session ends instead (status 2), in
// busybox sh and in dash, and a well-formed request is answered.
func TestSessionRefusesAnEmptyLine(t *testing.T) {
	for _, shell := range shells(t) {
		for _, tc := range []struct {
			name, req string
			status    int
		}{
			{"well formed", "r\nn1\nn2\n100\n0\n1\n/nowhere\n", 0},
			{"an empty path", "r\nn1\nn2\n100\n0\n2\n/nowhere\n\n", 2},
			{"an empty container ID", "r\nn1\nn2\n100\n1\n1\n\n0\n/nowhere\n", 2},
		} {
			argv := append(shell[1:], "-c", sessionScript, "sh", "60", filepath.Join(t.TempDir(), "s"), t.TempDir(), verifyScriptText())
			cmd := exec.Command(shell[0], argv...)
			cmd.Stdin = strings.NewReader("n3\n" + tc.req)
			out, err := cmd.Output()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			frames := strings.Count(string(out), "Z\x00n3\x00")
			if status != tc.status || (status == 0) != (frames == 2) {
				t.Errorf("%s, %s: exit status %d with %d frames, want %d (%q)", shell[0], tc.name, status, frames, tc.status, out)
			}
		}
	}
}
