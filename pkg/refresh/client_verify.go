package refresh

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/coalesce"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// ClusterVerifier re-reads one namespace and verifies the uses of the given
// objects by running pods (terminating pods are left out).
type ClusterVerifier struct {
	Client   kubernetes.Interface
	Executor containerread.Executor
	Verify   inspect.VerifyOptions
	Secrets  bool
	// PodSelector is the user's -l: pods outside it are never touched.
	PodSelector string

	batches coalesce.Keyed[batchKey, *podJob] // VerifyPod's, by queue (batchKey)
	gather  sync.Once                         // sets batches.Gather and Ready

	mu sync.Mutex
	// listed holds, by queue, the pods listed while its batch waited for
	// the readers (awaitReaders), for that batch alone
	listed map[batchKey][]corev1.Pod
}

// batchKey is a queue of VerifyPod's batches: a namespace, and whether its
// batches read sibling Secrets.
type batchKey struct {
	namespace string
	secrets   bool
}

// VerifyPods implements Verifier.
func (c *ClusterVerifier) VerifyPods(ctx context.Context, namespace string, objects []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error) {
	snap, err := inspect.Load(ctx, c.Client, inspect.LoadOptions{Namespace: namespace, PodSelector: c.PodSelector, Secrets: c.Secrets || inspect.NamesSecret(objects),
		OnlyUsed: true, Also: objects}) // the namespace's other objects' data is not needed
	if err != nil {
		return nil, err
	}
	live := snap.Pods[:0]
	for _, p := range snap.Pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
	}
	snap.Pods = live
	return c.verify(ctx, snap, objects, want)
}

// verify reads by exec the uses of objects in snap that want picks.
func (c *ClusterVerifier) verify(ctx context.Context, snap *inspect.Snapshot, objects []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error) {
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: objects, Secrets: true, IncludeSystem: true})
	if err != nil {
		return nil, err
	}
	var picked []inspect.Use
	for _, it := range items {
		if want(it) {
			picked = append(picked, it)
		}
	}
	return inspect.Verify(ctx, picked, snap, c.Executor, c.Verify), nil
}

// VerifyPod implements Verifier. With a containerread.Reader that reads many
// containers at once (the node reader), the calls for one namespace made
// while a read runs are merged into the next (internal/coalesce): a wait
// that verifies each pod as soon as its own patch is acknowledged then
// costs, per poll, one read of the pods, one GET of each object and one
// read of each node, not one of each per pod. With the exec reader (one
// exec per container anyway) each pod is read on its own, so that a slow
// one does not hold the others back. A pod that no longer exists (or left
// -l) yields no items: the wait says its uses are gone.
func (c *ClusterVerifier) VerifyPod(ctx context.Context, namespace, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	if !c.MergesPodReads() {
		return c.verifyOne(ctx, namespace, pod, objects)
	}
	j := &podJob{pod: pod, objects: objects}
	c.gather.Do(func() {
		c.batches.Gather = batchGather
		if pr, ok := c.Verify.Reader.(containerread.Preparer); ok {
			// the pods due while the prepared readers start are read
			// together once they run
			c.batches.Ready = func(ctx context.Context, k batchKey) { c.awaitReaders(ctx, pr, k) }
		}
	})
	// a batch reads sibling Secrets only if all of its pods may
	key := batchKey{namespace: namespace, secrets: inspect.NamesSecret(objects)}
	c.batches.Do(ctx, key, j, func(ctx context.Context, jobs []*podJob) { c.verifyBatch(ctx, key, jobs) })
	return j.items, j.err
}

// readersStarting is how often awaitReaders looks at the readers and the
// queue while the readers start.
const readersStarting = 10 * time.Millisecond

// awaitReaders waits for the readers the refresh prepared. While they
// start, once more pods are queued than a batch would GET one by one
// (podListAbove), it lists the namespace's pods for the batch taken next:
// under load a LIST of a few hundred pods takes as long as a read of the
// node, and it then runs beside the readers' start rather than after it.
// The pods' specs and container IDs are what the batch takes from the
// list, and a patch does not change them; the read of the node comes after
// the wait, after every patch the batch verifies.
func (c *ClusterVerifier) awaitReaders(ctx context.Context, pr containerread.Preparer, k batchKey) {
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		pr.AwaitPrepared(ctx)
	}()
	tick := time.NewTicker(readersStarting)
	defer tick.Stop()
	for c.batches.Queued(k) <= podListAbove {
		select {
		case <-ready:
			return
		case <-tick.C:
		}
	}
	list, err := c.Client.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: c.PodSelector})
	<-ready
	if err != nil {
		return // the batch lists them itself
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listed == nil {
		c.listed = map[batchKey][]corev1.Pod{}
	}
	c.listed[k] = list.Items
}

// takeListed returns the named pods listed by awaitReaders for the queue
// k, once, each once; ok is false when there is no such list or a named
// pod is not in it (created since: the batch reads afresh).
func (c *ClusterVerifier) takeListed(k batchKey, names []string) (pods []corev1.Pod, ok bool) {
	c.mu.Lock()
	list, found := c.listed[k]
	delete(c.listed, k)
	c.mu.Unlock()
	if !found {
		return nil, false
	}
	byName := map[string]*corev1.Pod{}
	for i := range list {
		byName[list[i].Name] = &list[i]
	}
	for _, n := range names {
		p, ok := byName[n]
		if !ok {
			return nil, false
		}
		if p != nil {
			pods = append(pods, *p)
			byName[n] = nil // a pod asked twice is in the batch once
		}
	}
	return pods, true
}

// MergesPodReads tells Wait whether concurrent VerifyPod calls are merged
// (a containerread.Reader is set: it reads all the containers of one Verify at
// once): every waiting pod may then call at once, the batches bound the
// reads.
func (c *ClusterVerifier) MergesPodReads() bool { return c.Verify.Reader != nil }

// podJob is one VerifyPod call: what it asks and what it gets.
type podJob struct {
	pod     string
	objects []inspect.ObjectKey
	items   []inspect.Use
	err     error
}

// verifyOne verifies the uses of objects by one pod, read afresh: one GET
// of the pod and one of each object, then one read of its containers.
func (c *ClusterVerifier) verifyOne(ctx context.Context, namespace, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	pods, err := c.getPods(ctx, namespace, []string{pod})
	if err != nil || len(pods) == 0 {
		return nil, err
	}
	snap, err := c.podSnapshot(ctx, pods, objects)
	if err != nil {
		return nil, err
	}
	return c.verify(ctx, snap, objects, func(it inspect.Use) bool { return it.Pod.Name == pod && it.Object.Namespace == namespace })
}

// verifyBatch reads the jobs' pods and objects once and verifies every
// job's uses with one Verify, then hands each job its own items. When the
// batch fails (an object one of them asks for is gone), each job is
// verified on its own, so that one job's error is its own.
func (c *ClusterVerifier) verifyBatch(ctx context.Context, k batchKey, jobs []*podJob) {
	namespace := k.namespace
	if err := c.tryBatch(ctx, k, jobs); err != nil {
		for _, j := range jobs {
			j.items, j.err = c.verifyOne(ctx, namespace, j.pod, j.objects)
		}
	}
}

// tryBatch is verifyBatch's one read for all the jobs.
func (c *ClusterVerifier) tryBatch(ctx context.Context, k batchKey, jobs []*podJob) error {
	namespace := k.namespace
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.pod
	}
	pods, listed := c.takeListed(k, names)
	if !listed {
		var err error
		if pods, err = c.getPods(ctx, namespace, names); err != nil {
			return err
		}
	}
	asked, objects := askedBy(jobs, pods)
	if len(objects) == 0 {
		return nil // every pod is gone: no items
	}
	snap, err := c.podSnapshot(ctx, pods, objects)
	if err != nil {
		return err
	}
	items, err := c.verify(ctx, snap, objects, func(it inspect.Use) bool {
		return it.Object.Namespace == namespace && asked[it.Pod.Name][it.Key()]
	})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		for _, it := range items {
			if it.Pod.Name == j.pod && slices.Contains(j.objects, it.Key()) {
				j.items = append(j.items, it)
			}
		}
	}
	return nil
}

// batchGather is how long a batch waits for more pods after the first:
// the pods whose first read is due together (patched in one burst) are
// read together.
const batchGather = 20 * time.Millisecond

// askedBy is, for the jobs whose pod still exists, the objects each pod
// asks for, and all of them once each.
func askedBy(jobs []*podJob, pods []corev1.Pod) (map[string]map[inspect.ObjectKey]bool, []inspect.ObjectKey) {
	asked := map[string]map[inspect.ObjectKey]bool{}
	for _, p := range pods {
		asked[p.Name] = map[inspect.ObjectKey]bool{}
	}
	var objects []inspect.ObjectKey
	seen := map[inspect.ObjectKey]bool{}
	for _, j := range jobs {
		if asked[j.pod] == nil {
			continue // gone, or outside -l
		}
		for _, k := range j.objects {
			asked[j.pod][k] = true
			if !seen[k] {
				seen[k] = true
				objects = append(objects, k)
			}
		}
	}
	return asked, objects
}

// podListAbove is the number of pods from which a batch LISTs the
// namespace (one request) rather than GET each pod.
const podListAbove = 8

// getPods reads the named pods afresh, leaving out those that no longer
// exist or are outside -l.
func (c *ClusterVerifier) getPods(ctx context.Context, namespace string, names []string) ([]corev1.Pod, error) {
	var sel labels.Selector = labels.Everything()
	if c.PodSelector != "" {
		var err error
		if sel, err = labels.Parse(c.PodSelector); err != nil {
			return nil, err
		}
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []corev1.Pod
	if len(want) > podListAbove {
		list, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: c.PodSelector})
		if err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			if want[p.Name] {
				out = append(out, p)
			}
		}
		return out, nil
	}
	for name := range want {
		p, err := c.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case sel.Matches(labels.Set(p.Labels)):
			out = append(out, *p)
		}
	}
	return out, nil
}

// podSnapshot is the snapshot of some pods: the pods, the objects asked
// for, and every other ConfigMap and Secret their specs reference (the sibling
// sources of a projected volume, the other envFrom sources): without them
// a sibling's files would look removed from the API. A Secret is read only
// when Secrets may be (--secrets, or one of the objects is a Secret it
// names); otherwise it is marked unread, never taken for absent.
func (c *ClusterVerifier) podSnapshot(ctx context.Context, pods []corev1.Pod, objects []inspect.ObjectKey) (*inspect.Snapshot, error) {
	snap := &inspect.Snapshot{Pods: pods, ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{},
		Secrets: map[inspect.ObjectKey]*corev1.Secret{}, SecretsListed: true, Unread: map[inspect.ObjectKey]bool{}}
	asked := map[inspect.ObjectKey]bool{}
	keys := append([]inspect.ObjectKey{}, objects...)
	for _, k := range objects {
		asked[k] = true
	}
	for i := range pods {
		for _, it := range inspect.Uses(&pods[i]) {
			if k := it.Key(); !asked[k] {
				asked[k] = true
				keys = append(keys, k)
			}
		}
	}
	readSecrets := c.Secrets || inspect.NamesSecret(objects)
	for _, k := range keys {
		switch k.Kind {
		case inspect.KindConfigMap:
			cm, err := c.Client.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err) && !slices.Contains(objects, k):
				// another source of the pod's volumes that a Role limited
				// by resourceNames does not grant: unknown, never absent
				snap.Unread[k] = true
			case err != nil:
				return nil, err
			default:
				snap.ConfigMaps[k] = cm
			}
		case inspect.KindSecret:
			if !readSecrets {
				snap.Unread[k] = true
				continue
			}
			sec, err := c.Client.CoreV1().Secrets(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case apierrors.IsForbidden(err):
				snap.Unread[k] = true // the uses say the Secret was not read
			case err != nil:
				return nil, err
			default:
				snap.Secrets[k] = sec
			}
		}
	}
	return snap, nil
}
