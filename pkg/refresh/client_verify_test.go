package refresh

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread/readtest"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// podsOnOneNode are ConfigMap ns/cfg (K: new) and n running pods p0..pN-1
// of node n1 mounting it at /etc/cfg, and an Executor whose container of
// pod i shows K as shown(i).
func podsOnOneNode(n int, shown func(i int) string) ([]runtime.Object, *readtest.Executor) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"K": "new"}}
	objs := []runtime.Object{cm}
	ex := &readtest.Executor{Containers: map[string]*readtest.Container{}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
		ContainerID: "containerd://0", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			Status: running})
		ex.Containers["ns/"+name+"/app"] = &readtest.Container{Volumes: map[string]readtest.Volume{"/etc/cfg": {Target: "..ts", Files: map[string][]byte{"K": []byte(shown(i))}}}}
	}
	return objs, ex
}

// TestVerifyPodMergesConcurrentCalls: pods verified at once by a wait are
// read together (one LIST of the pods and one GET of the ConfigMap, not
// one of each per pod), and each caller gets the items of its own pod
// only, with the state its own container shows.
func TestVerifyPodMergesConcurrentCalls(t *testing.T) {
	const n = 20
	objs, ex := podsOnOneNode(n, func(i int) string {
		if i%2 == 1 {
			return "old" // odd pods still show the previous value
		}
		return "new"
	})
	client := fake.NewClientset(objs...)
	// a containerread.Reader that reads all containers of one Verify: merged
	reader := containerread.ExecReader{Executor: ex, Concurrency: 4}
	v := &ClusterVerifier{Client: client, Executor: ex, Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Reader: reader}}
	client.ClearActions()
	key := []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}}
	// p-gone no longer exists and asks for a ConfigMap deleted since:
	// no items for it, and no error for the others
	calls := map[string][]inspect.ObjectKey{"p-gone": {{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "deleted"}}}
	for i := range n {
		calls[fmt.Sprintf("p%d", i)] = key
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	byPod := map[string][]inspect.Use{}
	for pod, objects := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items, err := v.VerifyPod(context.Background(), "ns", pod, objects)
			if err != nil {
				t.Errorf("%s: %v", pod, err)
			}
			mu.Lock()
			defer mu.Unlock()
			byPod[pod] = items
		}()
	}
	wg.Wait()
	if len(byPod["p-gone"]) != 0 {
		t.Errorf("a pod that no longer exists got %+v", byPod["p-gone"])
	}
	got := make([][]inspect.Use, n)
	for i := range n {
		got[i] = byPod[fmt.Sprintf("p%d", i)]
	}
	for i, items := range got {
		want := inspect.StateInSync
		if i%2 == 1 {
			want = inspect.StatePending
		}
		if len(items) != 1 || items[0].Pod.Name != fmt.Sprintf("p%d", i) || items[0].State != want {
			t.Errorf("p%d got %+v, want its own use %s", i, items, want)
		}
	}
	count := map[string]int{}
	for _, a := range client.Actions() {
		count[a.GetVerb()+" "+a.GetResource().Resource]++
	}
	if count["get configmaps"] > 2 || count["get pods"]+count["list pods"] > 2*(podListAbove+1) {
		t.Errorf("requests %v for %d pods verified at once: want them merged", count, n)
	}
}

// preparingReader is a containerread.Reader whose prepared nodes get
// ready when ready is closed: until then AwaitPrepared waits, and so does
// a read, as the node reader's waits for its pod to run. entered is sent
// when either starts waiting; it counts its reads.
type preparingReader struct {
	containerread.ExecReader
	ready   chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	reads   []int // containers per read
}

func (p *preparingReader) Prepare(context.Context, []string) {}

func (p *preparingReader) AwaitPrepared(ctx context.Context) { p.wait(ctx) }

func (p *preparingReader) wait(ctx context.Context) {
	select {
	case p.entered <- struct{}{}:
	default:
	}
	select {
	case <-p.ready:
	case <-ctx.Done():
	}
}

func (p *preparingReader) ReadContainers(ctx context.Context, reqs []containerread.Request, o containerread.Options) []*containerread.Verified {
	p.wait(ctx)
	p.mu.Lock()
	p.reads = append(p.reads, len(reqs))
	p.mu.Unlock()
	return p.ExecReader.ReadContainers(ctx, reqs, o)
}

// TestVerifyPodWaitsForThePreparedReaders: the pods due while the readers
// a refresh prepared are starting are read together once they run: one
// read, not a first for the earliest pod and a second for the rest. Their
// pods are listed while the readers start, not after, and that list serves
// that batch alone.
func TestVerifyPodWaitsForThePreparedReaders(t *testing.T) {
	const n = 10
	objs, ex := podsOnOneNode(n, func(int) string { return "new" })
	reader := &preparingReader{ExecReader: containerread.ExecReader{Executor: ex, Concurrency: 4}, ready: make(chan struct{}), entered: make(chan struct{}, 1)}
	cs := fake.NewClientset(objs...)
	var podReqs atomic.Int32
	cs.PrependReactor("*", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "get" || a.GetVerb() == "list" {
			podReqs.Add(1)
		}
		return false, nil, nil
	})
	v := &ClusterVerifier{Client: cs, Executor: ex, Verify: inspect.VerifyOptions{MaxBytes: 1 << 20, Concurrency: 4, ExecTimeout: 5 * time.Second, Reader: reader}}
	key := []inspect.ObjectKey{{Kind: inspect.KindConfigMap, Namespace: "ns", Name: "cfg"}}
	var wg sync.WaitGroup
	verify := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if items, err := v.VerifyPod(context.Background(), "ns", fmt.Sprintf("p%d", i), key); err != nil || len(items) != 1 || items[0].State != inspect.StateInSync {
				t.Errorf("p%d: %+v, %v; want its use in-sync", i, items, err)
			}
		}()
	}
	// the first pod due, alone, waits for the readers; the others come
	// while it waits
	verify(0)
	select {
	case <-reader.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first pod's verification did not wait for the readers within 5s")
	}
	for i := 1; i < n; i++ {
		verify(i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for v.batches.Queued(batchKey{namespace: "ns"}) < n-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods queued while the readers start", v.batches.Queued(batchKey{namespace: "ns"}), n-1)
		}
		time.Sleep(time.Millisecond)
	}
	for podReqs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pods were not listed while the readers start")
		}
		time.Sleep(time.Millisecond)
	}
	close(reader.ready)
	wg.Wait()
	if len(reader.reads) != 1 || reader.reads[0] != n {
		t.Fatalf("reads of %v containers, want one read of all %d", reader.reads, n)
	}
	if k := podReqs.Load(); k != 1 {
		t.Fatalf("%d reads of the pods for the batch, want the one list made while the readers started", k)
	}
	verify(0)
	wg.Wait()
	if k := podReqs.Load(); k != 2 {
		t.Fatalf("%d reads of the pods after a second batch, want it to read its pod afresh", k)
	}
}

// TestTakeListed: the pods listed for one queue serve that queue's next
// batch alone, once, each pod once however many jobs ask for it, and not
// at all when a pod asked is not in the list.
func TestTakeListed(t *testing.T) {
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}
	k, other := batchKey{namespace: "ns"}, batchKey{namespace: "ns", secrets: true}
	v := &ClusterVerifier{listed: map[batchKey][]corev1.Pod{k: pods}}
	if _, ok := v.takeListed(other, []string{"a"}); ok {
		t.Fatal("another queue's list was taken")
	}
	got, ok := v.takeListed(k, []string{"a", "b", "a"})
	if !ok || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("takeListed = %v, %v; want a and b once each", got, ok)
	}
	if _, ok := v.takeListed(k, []string{"a"}); ok {
		t.Fatal("the list served a second batch")
	}
	v.listed = map[batchKey][]corev1.Pod{k: pods}
	if _, ok := v.takeListed(k, []string{"a", "c"}); ok {
		t.Fatal("a list without pod c served a batch that asks for it")
	}
}
