package nodereader

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
)

const idle = time.Minute

// gatedExec is an Executor that records the reader pod of each exec and,
// while gate is set, holds the exec until gate is closed (a read in
// flight). Its reads fail: the tests look at the pods, not the results.
type gatedExec struct {
	mu      sync.Mutex
	pods    []string
	gate    chan struct{}
	entered chan struct{}
}

func (e *gatedExec) Exec(ctx context.Context, t containerread.Target, _ []string, _, _ io.Writer) error {
	e.mu.Lock()
	e.pods = append(e.pods, t.Pod)
	gate, entered := e.gate, e.entered
	e.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	return errors.New("no reader script in this test")
}

// hold makes the next execs wait until the returned func is called;
// each exec that starts is sent on the returned channel.
func (e *gatedExec) hold() (<-chan struct{}, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gate, e.entered = make(chan struct{}), make(chan struct{}, 8)
	gate := e.gate
	return e.entered, func() {
		e.mu.Lock()
		e.gate = nil
		e.mu.Unlock()
		close(gate)
	}
}

// since returns the reader pods of the execs after the first n, and how
// many execs there have been.
func (e *gatedExec) since(n int) ([]string, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.pods[n:]), len(e.pods)
}

func (e *gatedExec) last() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pods) == 0 {
		return ""
	}
	return e.pods[len(e.pods)-1]
}

// idleFx is a Reader with an IdleTimeout on a fake clientset whose reader
// pods get a name and run as soon as they are created, and a fake clock.
type idleFx struct {
	t       *testing.T
	cs      *fake.Clientset
	clk     *clocktesting.FakeClock
	ex      *gatedExec
	r       *Reader
	mu      sync.Mutex
	creates int
}

func newIdleFx(t *testing.T) *idleFx {
	f := &idleFx{t: t, cs: fake.NewClientset(), clk: clocktesting.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), ex: &gatedExec{}}
	f.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		f.mu.Lock()
		f.creates++
		p.Name = p.GenerateName + strconv.Itoa(f.creates)
		f.mu.Unlock()
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: containerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		err := f.cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
		return true, p, err
	})
	f.r = New(f.cs, f.ex, Options{Namespace: "ns", IdleTimeout: idle, Clock: f.clk})
	t.Cleanup(func() { f.close() })
	return f
}

// close closes the Reader, failing the test if Close does not return
// within 5 s (a janitor that does not stop).
func (f *idleFx) close() error {
	f.t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- f.r.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(5 * time.Second):
		f.t.Fatal("Close did not return within 5s: the janitor does not stop")
		return nil
	}
}

// read reads a container of node n1 (the read itself fails: gatedExec).
func (f *idleFx) read() {
	f.r.ReadContainers(context.Background(), []containerread.Request{request(consumer("n1", "containerd://"+cid, true), false, "/etc/cfg")}, containerread.Options{})
}

// pods are the names of the reader pods in the cluster.
func (f *idleFx) pods() []string {
	f.t.Helper()
	l, err := f.cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Name)
	}
	return out
}

// waitPods waits (in real time, the janitor runs on its own) until the
// reader pods are want.
func (f *idleFx) waitPods(what string, want ...string) {
	f.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(f.pods(), want) {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s: reader pods %v, want %v", what, f.pods(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recv waits at most 5 s for what on c.
func recv(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing within 5s", what)
	}
}

// TestIdleReaderDeletedThenMadeAgain: a reader pod no read has used for
// IdleTimeout is deleted by the janitor, not before; the next read of its
// node starts a new pod and reads on it; Close after the janitor deleted
// it is fine and stops the janitor.
func TestIdleReaderDeletedThenMadeAgain(t *testing.T) {
	f := newIdleFx(t)
	f.read()
	first := f.ex.last()
	if first == "" || !slices.Equal(f.pods(), []string{first}) {
		t.Fatalf("after a read: reader pods %v, exec in %q; want one pod, read on", f.pods(), first)
	}
	f.clk.Step(idle - time.Second)
	f.r.deleteIdle() // what the janitor does at a tick
	if !slices.Equal(f.pods(), []string{first}) {
		t.Fatalf("idle for less than the timeout: reader pods %v, want %s kept", f.pods(), first)
	}
	f.clk.Step(time.Second)
	f.waitPods("idle for the timeout")

	_, n := f.ex.since(0)
	f.read()
	on, _ := f.ex.since(n)
	if len(on) != 1 || on[0] == first || !slices.Equal(f.pods(), on) {
		t.Fatalf("a read after the deletion read on %v with reader pods %v; want one read, on a new pod (not %s)", on, f.pods(), first)
	}

	f.clk.Step(idle)
	f.waitPods("the second pod idle for the timeout")
	if err := f.close(); err != nil {
		t.Fatalf("Close after the janitor: %v", err)
	}
	f.closedClean()
}

// TestReaderInUseNotDeleted: a pod a read is using is kept however long
// the read takes, and is idle from the end of that read, not from its
// start.
func TestReaderInUseNotDeleted(t *testing.T) {
	f := newIdleFx(t)
	entered, release := f.ex.hold()
	done := make(chan struct{})
	go func() { defer close(done); f.read() }()
	recv(t, entered, "the read's exec")
	pod := f.ex.last()
	f.clk.Step(3 * idle)
	f.r.deleteIdle()
	if !slices.Equal(f.pods(), []string{pod}) {
		t.Fatalf("during a read: reader pods %v, want %s kept", f.pods(), pod)
	}
	release()
	<-done
	f.clk.Step(idle - time.Second)
	f.r.deleteIdle()
	if !slices.Equal(f.pods(), []string{pod}) {
		t.Fatalf("less than the timeout after the read: reader pods %v, want %s kept", f.pods(), pod)
	}
	f.clk.Step(time.Second)
	f.waitPods("idle for the timeout after the read")
}

// TestStartingReaderIsInUse: a start under way (Prepare's) is a use: the
// pod is idle from the end of its start, however long the start took.
func TestStartingReaderIsInUse(t *testing.T) {
	f := newIdleFx(t)
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	f.cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		entered <- struct{}{}
		<-gate
		return false, nil, nil // on to the reactor that makes it run
	})
	prepared := make(chan struct{})
	go func() { defer close(prepared); f.r.Prepare(context.Background(), []string{"n1"}) }()
	recv(t, entered, "Prepare's create")
	f.clk.Step(3 * idle)
	f.r.deleteIdle()
	close(gate)
	<-prepared
	f.waitPods("the prepared reader started", "cmsync-reader-1")
	f.r.mu.Lock()
	rp := f.r.pods["n1"]
	f.r.mu.Unlock()
	<-rp.ready
	f.r.deleteIdle()
	if !slices.Equal(f.pods(), []string{"cmsync-reader-1"}) {
		t.Fatalf("just started after a long start: reader pods %v, want it kept", f.pods())
	}
	f.clk.Step(idle)
	f.waitPods("idle for the timeout after its start")
}

// TestCloseWaitsForJanitor: Close called while the janitor deletes a pod
// returns once the janitor has stopped, and leaves no pod.
func TestCloseWaitsForJanitor(t *testing.T) {
	f := newIdleFx(t)
	f.read()
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	f.cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { entered <- struct{}{}; <-gate }) // the janitor's deletion hangs
		return false, nil, nil
	})
	f.clk.Step(idle)
	recv(t, entered, "the janitor's deletion")
	closed := make(chan error, 1)
	go func() { closed <- f.r.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the janitor was still deleting", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once the janitor's deletion ended")
	}
	f.closedClean()
}

// TestEndedReaderReplacedAndReadAgain: a read whose reader pod has ended
// (its --reader-lifetime, reached while reads kept it from being idle) is
// made once more on a new pod, and the ended one is deleted.
func TestEndedReaderReplacedAndReadAgain(t *testing.T) {
	f := newIdleFx(t)
	f.read()
	first := f.ex.last()
	p, err := f.cs.CoreV1().Pods("ns").Get(context.Background(), first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}
	if _, err := f.cs.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, n := f.ex.since(0)
	f.read()
	on, _ := f.ex.since(n)
	if len(on) != 2 || on[0] != first || on[1] == first || !slices.Equal(f.pods(), on[1:]) {
		t.Fatalf("a read on an ended reader read on %v with reader pods %v; want %s, then a new pod, the only one left", on, f.pods(), first)
	}
}

// closedClean fails unless Close has stopped the janitor and left no
// reader pod.
func (f *idleFx) closedClean() {
	f.t.Helper()
	select {
	case <-f.r.janitorDone:
	default:
		f.t.Fatal("Close returned before the janitor stopped")
	}
	if got := f.pods(); len(got) != 0 {
		f.t.Fatalf("after Close: reader pods %v", got)
	}
}

// TestReadsDuringTheStartMakeOneBatch: the reads of a node that come while
// its reader pod starts wait for it together and are read by one exec,
// not a first exec for the earliest read and a second for the rest.
func TestReadsDuringTheStartMakeOneBatch(t *testing.T) {
	cs := fake.NewClientset()
	created := make(chan *corev1.Pod, 1)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		p.Name = p.GenerateName + "1"
		p.Status.Phase = corev1.PodPending
		err := cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
		created <- p
		return true, p, err
	})
	ex := &gatedExec{}
	r := New(cs, ex, Options{Namespace: "ns"})
	defer r.Close()
	const reads = 5
	var wg sync.WaitGroup
	for i := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := consumer("n1", "containerd://"+cid, true)
			p.Name = "consumer-" + strconv.Itoa(i)
			r.ReadContainers(context.Background(), []containerread.Request{request(p, false, "/etc/cfg")}, containerread.Options{})
		}()
	}
	var p *corev1.Pod
	select {
	case p = <-created:
	case <-time.After(5 * time.Second):
		t.Fatal("no reader pod created within 5s")
	}
	// every read queued behind the start
	deadline := time.Now().Add(5 * time.Second)
	for r.reads.Queued("n1") < reads {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reads queued for node n1", r.reads.Queued("n1"), reads)
		}
		time.Sleep(time.Millisecond)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: containerName,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	if err := cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if execs, n := ex.since(0); n != 1 {
		t.Fatalf("%d execs (%v) for %d reads that came during the start, want 1", n, execs, reads)
	}
}

// TestCloseListsOnlyWhenUnsure: a run whose creates all answered with
// their pods and whose deletions passed deletes its pods by name at
// Close, with no LIST (a round trip at the end of every command); a
// failed create makes Close list what is left of the run.
func TestCloseListsOnlyWhenUnsure(t *testing.T) {
	lists := func(cs *fake.Clientset) int {
		n := 0
		for _, a := range cs.Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	f := newIdleFx(t)
	f.read()
	before := lists(f.cs)
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	if got := lists(f.cs) - before; got != 0 || len(f.pods()) != 0 {
		t.Fatalf("Close sent %d LISTs and left %v; want none and no pod", got, f.pods())
	}

	g := newIdleFx(t)
	g.cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("http2: client connection lost")
	})
	g.read()
	before = lists(g.cs)
	if err := g.close(); err != nil {
		t.Fatal(err)
	}
	if got := lists(g.cs) - before; got != 1 {
		t.Fatalf("Close after a failed create sent %d LISTs, want 1", got)
	}
}
