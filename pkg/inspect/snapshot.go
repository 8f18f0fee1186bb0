package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Snapshot holds everything the pure functions of this package read: the
// result of one paginated LIST per kind.
type Snapshot struct {
	Pods        []corev1.Pod
	ConfigMaps  map[ObjectKey]*corev1.ConfigMap
	Secrets     map[ObjectKey]*corev1.Secret
	ReplicaSets map[NamespacedName]*appsv1.ReplicaSet
	Jobs        map[NamespacedName]*batchv1.Job
	// Nodes is nil when nodes could not be read (no RBAC): defaults apply.
	Nodes map[string]*corev1.Node
	// KubeletConfigs holds what /configz said per node (--kubelet-config).
	KubeletConfigs map[string]KubeletTiming
	// SecretsListed tells whether Secrets were loaded (--secrets).
	SecretsListed bool
	// Unread marks objects known not to have been read, whatever
	// SecretsListed says (a Secret a per-pod snapshot did not fetch): what
	// they hold is unknown, never absent.
	Unread map[ObjectKey]bool
	// Templates are the pod templates of the workloads (LoadOptions.Workloads):
	// who will consume an object when no pod of theirs runs now.
	Templates []WorkloadTemplate
	// Denied are the optional kinds RBAC did not let Load list (Secrets,
	// ReplicaSets, Jobs, workloads, nodes): what they would have told is
	// left out, and the commands say so in a note (see Notes).
	Denied []*ListError

	// objects caches Object per key (see Object); mu guards it, as
	// Object may be called from concurrent goroutines.
	mu      sync.Mutex
	objects map[ObjectKey]Object
}

// WorkloadTemplate is the pod template of a workload that may run pods
// later: a Deployment, StatefulSet, DaemonSet, a ReplicaSet or Job no
// controller owns, a CronJob.
type WorkloadTemplate struct {
	Kind, Namespace, Name string
	// State says why it may run no pod now ("0 replicas", "suspended",
	// "next run by schedule ..."), for the reason.
	State string
	Spec  corev1.PodSpec
}

// NamespacedName identifies a namespaced object of a known kind.
type NamespacedName struct{ Namespace, Name string }

// Object is the content of a ConfigMap or Secret, independent of its kind.
type Object struct {
	Kind, Namespace, Name string
	Exists                bool
	Immutable             bool
	// Data is what a volume writes: a ConfigMap's data and binaryData, a
	// Secret's data.
	Data map[string][]byte
	// BinaryKeys marks the ConfigMap keys that come from binaryData (they
	// never become environment variables).
	BinaryKeys map[string]bool
	// LastChange is the newest managedFields time, else the creation time.
	LastChange      time.Time
	ResourceVersion string
	UID             string
	// Unread: the object was not read (a Secret while Secrets were not
	// listed), so nothing is known of it: Exists and Data say nothing.
	// What it could provide must be treated as unknown, never as absent.
	Unread bool
}

// Object returns the object named by k, with Exists false when the snapshot
// does not hold it, and Unread set for a Secret when Secrets were not
// listed. The result is converted once per key and cached: it is shared,
// so callers must not modify its maps. Safe for concurrent use; the
// snapshot's ConfigMaps and Secrets must not change once Object was called.
func (s *Snapshot) Object(k ObjectKey) Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objects[k]; ok {
		return o
	}
	if s.objects == nil {
		s.objects = map[ObjectKey]Object{}
	}
	o := s.convert(k)
	s.objects[k] = o
	return o
}

func (s *Snapshot) convert(k ObjectKey) Object {
	o := Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	if s.Unread[k] {
		o.Unread = true
		return o
	}
	switch k.Kind {
	case KindConfigMap:
		if cm, ok := s.ConfigMaps[k]; ok {
			return ConfigMapObject(cm)
		}
	case KindSecret:
		if sec, ok := s.Secrets[k]; ok {
			return SecretObject(sec)
		}
		o.Unread = !s.SecretsListed
	}
	return o
}

// ConfigMapObject converts a ConfigMap.
func ConfigMapObject(cm *corev1.ConfigMap) Object {
	o := Object{Kind: KindConfigMap, Namespace: cm.Namespace, Name: cm.Name, Exists: true,
		Immutable: cm.Immutable != nil && *cm.Immutable, Data: map[string][]byte{}, BinaryKeys: map[string]bool{},
		LastChange: lastChange(cm.ObjectMeta), ResourceVersion: cm.ResourceVersion, UID: string(cm.UID)}
	for k, v := range cm.Data {
		o.Data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		o.Data[k] = v
		o.BinaryKeys[k] = true
	}
	return o
}

// SecretObject converts a Secret.
func SecretObject(s *corev1.Secret) Object {
	o := Object{Kind: KindSecret, Namespace: s.Namespace, Name: s.Name, Exists: true,
		Immutable: s.Immutable != nil && *s.Immutable, Data: map[string][]byte{}, BinaryKeys: map[string]bool{},
		LastChange: lastChange(s.ObjectMeta), ResourceVersion: s.ResourceVersion, UID: string(s.UID)}
	for k, v := range s.Data {
		o.Data[k] = v
	}
	return o
}

func lastChange(m metav1.ObjectMeta) time.Time {
	t := m.CreationTimestamp.Time
	for _, f := range m.ManagedFields {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// Keys returns the object's keys in order.
func (o Object) Keys() []string {
	keys := make([]string, 0, len(o.Data))
	for k := range o.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadOptions selects what Load reads.
type LoadOptions struct {
	// Namespace to read; empty means all namespaces.
	Namespace string
	// PodSelector is a label selector on pods.
	PodSelector string
	// Secrets loads Secrets too.
	Secrets bool
	// Nodes reads nodes for the TTL annotation; a Forbidden answer is not
	// an error (the defaults apply).
	Nodes bool
	// Workloads reads the workloads' pod templates (Snapshot.Templates);
	// a Forbidden answer leaves them out.
	Workloads bool
	// PageSize is the LIST page size (default 500).
	PageSize int64
	// Metadata, when set, lists the owner kinds (ReplicaSets, Jobs) as
	// metadata only (PartialObjectMetadataList): the owner walk reads
	// nothing else. Not used with Workloads, whose templates need specs.
	Metadata metadata.Interface
	// FromCache serves the LISTs from the API server's watch cache
	// (resourceVersion=0, resourceVersionMatch=NotOlderThan) instead of a
	// quorum read of etcd: cheaper for the API server, but the answer may
	// lag the newest writes by the cache's delay (normally milliseconds).
	FromCache bool
	// PodREST, when set (a core/v1 REST client), lists the pods through it
	// and decodes them one at a time from the response (see streamPods):
	// the PodList of 10,000 pods is never in memory whole. The fake
	// clientset has none: without it the pods are listed as other kinds.
	PodREST rest.Interface
	// PodSink, when set, takes the pods instead of Snapshot.Pods, which
	// stays empty: Load calls it once, when the ConfigMaps, Secrets and
	// nodes are in the snapshot, and gives each pod (trimmed, see TrimPod)
	// to the function it returns, from one goroutine, once the LIST of the
	// pod's owner kind is in too. Pods are then never all in memory (a
	// Builder takes them one at a time). It is called even when there are
	// no pods; not at all when the ConfigMap or Secret LIST failed (Load
	// returns that error); it may have taken pods when a later LIST fails
	// (Load returns the error all the same). Meanwhile the pod LIST's
	// response waits unread: a ConfigMap, Secret or owner LIST slower than
	// the API server's request timeout (60 s by default) would cut it.
	PodSink func(*Snapshot) func(*corev1.Pod) error
	// OnlyUsed keeps a ConfigMap or Secret only when a pod listed uses it
	// (Uses) or Also names it; the others are dropped as each page of their
	// LIST is read, so the snapshot holds none of their data (a namespace's
	// Helm release Secrets, the bundles and certificates no pod mounts).
	// The pods are then listed first, and the objects once the pods are in.
	// A dropped object is absent from the snapshot: ask it only of objects
	// a pod uses or Also names. Not with PodSink, which needs the objects
	// before the pods.
	OnlyUsed bool
	// Also are the objects OnlyUsed keeps whether a pod uses them or not.
	Also []ObjectKey
}

// Load reads a Snapshot with one paginated LIST per kind. The kinds are
// listed concurrently; ReplicaSets and Jobs only once a pod owned by one
// has been read (or with Workloads), nodes only when there are pods.
func Load(ctx context.Context, c kubernetes.Interface, o LoadOptions) (*Snapshot, error) {
	if o.OnlyUsed && o.PodSink != nil {
		return nil, errors.New("inspect: OnlyUsed needs the pods before the objects, a PodSink the objects before the pods")
	}
	l := newLoader(ctx, c, o)
	if o.OnlyUsed {
		if err := l.listPods(); err != nil {
			l.wg.Wait() // the owner LISTs the pods started
			return nil, err
		}
		l.used = usedObjects(l.s.Pods, o.Also)
	}
	if o.Workloads {
		l.listReplicaSets()
		l.listJobs()
	}
	// Nodes are listed beside the pods, and dropped when there are none.
	if o.Nodes {
		l.runBase("nodes", l.listNodes)
	}
	l.runBase("configmaps", l.listConfigMaps)
	if o.Secrets {
		l.runBase("secrets", l.listSecrets)
	}
	if o.Workloads {
		l.run("workloads", func() error {
			var err error
			l.templates, err = loadTemplates(ctx, c, l.ns, l.list, l.deny)
			return err
		})
	}
	if !o.OnlyUsed {
		l.run("pods", l.listPods)
	}
	l.wg.Wait()
	if l.firstErr != nil {
		return nil, l.firstErr
	}
	return l.finish(), nil
}

// listOrder is the order of the kinds whose error Load returns: each LIST
// runs in its own goroutine and fills its own map, all run to their end (an
// error comes back at once), and the error returned is that of the first
// kind in this order, whatever finished first: the same answer every time
// (pods before configmaps).
var listOrder = map[string]int{"pods": 0, "configmaps": 1, "secrets": 2, "replicasets": 3, "jobs": 4, "workloads": 5, "nodes": 6}

// deniedOrder is the order of Snapshot.Denied: the order of the kinds, not
// of their answers.
var deniedOrder = map[string]int{"secrets": 0, "replicasets": 1, "jobs": 2, "deployments": 3, "statefulsets": 4, "daemonsets": 5, "cronjobs": 6, "nodes": 7}

// loader is the state of one Load: the LISTs running, the first error in
// listOrder, the owner kinds listed on demand and the pod sink.
type loader struct {
	ctx      context.Context
	c        kubernetes.Interface
	o        LoadOptions
	ns       string
	pageSize int64
	s        *Snapshot

	wg        sync.WaitGroup
	errMu     sync.Mutex // guards firstErr, firstKind and s.Denied
	firstErr  error
	firstKind int

	// base: the LISTs a pod's uses are predicted from (ConfigMaps, Secrets,
	// nodes), which a PodSink waits for
	base       sync.WaitGroup
	baseFailed atomic.Bool

	// the owner kinds, each listed once; done is closed when its LIST ended
	rsOnce, jobsOnce sync.Once
	rsDone, jobsDone chan struct{}

	nodes     map[string]*corev1.Node
	templates []WorkloadTemplate
	// used are the objects OnlyUsed keeps (nil: all)
	used map[ObjectKey]bool

	// the sink's pod function, made once the base LISTs have ended
	sinkOnce sync.Once
	sink     func(*corev1.Pod) error
	sunk     int
}

func newLoader(ctx context.Context, c kubernetes.Interface, o LoadOptions) *loader {
	s := &Snapshot{ConfigMaps: map[ObjectKey]*corev1.ConfigMap{}, Secrets: map[ObjectKey]*corev1.Secret{},
		ReplicaSets: map[NamespacedName]*appsv1.ReplicaSet{}, Jobs: map[NamespacedName]*batchv1.Job{}, SecretsListed: o.Secrets}
	ps := o.PageSize
	if ps == 0 {
		ps = 500
	}
	return &loader{ctx: ctx, c: c, o: o, ns: o.Namespace, pageSize: ps, s: s, firstKind: len(listOrder),
		rsDone: make(chan struct{}), jobsDone: make(chan struct{})}
}

// list is one paginated LIST (a listFunc); an expired continue token is
// handled as listPaged says.
func (l *loader) list(resource string, selector string, fn func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object) error) error {
	lo := metav1.ListOptions{LabelSelector: selector, Limit: l.pageSize}
	if l.o.OnlyUsed && (resource == "configmaps" || resource == "secrets") {
		// a page's objects are all decoded before the unused are dropped:
		// smaller pages, so that a namespace's data is not in memory whole
		// (but when a page expires, and the LIST is made again whole)
		lo.Limit = min(lo.Limit, usedPage)
	}
	if l.o.FromCache {
		lo.ResourceVersion, lo.ResourceVersionMatch = "0", metav1.ResourceVersionMatchNotOlderThan
	}
	if err := eachListItem(l.ctx, lo, fn, each); err != nil {
		return &ListError{Resource: resource, Namespace: l.o.Namespace, Err: err}
	}
	return nil
}

// run runs one LIST in its own goroutine, keeping its error if its kind
// comes first in listOrder.
func (l *loader) run(kind string, fn func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := fn(); err != nil {
			l.errMu.Lock()
			if listOrder[kind] < l.firstKind {
				l.firstErr, l.firstKind = err, listOrder[kind]
			}
			l.errMu.Unlock()
		}
	}()
}

// runBase is run for a LIST the pod sink waits for.
func (l *loader) runBase(kind string, fn func() error) {
	l.base.Add(1)
	l.run(kind, func() error {
		defer l.base.Done()
		err := fn()
		if err != nil {
			l.baseFailed.Store(true)
		}
		return err
	})
}

// deny records a Forbidden LIST of an optional kind (from any goroutine).
func (l *loader) deny(err error) bool {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.s.deny(err)
}

// listOwners lists one owner kind once: as metadata only where that is
// all the owner walk reads, whole for status --workloads. keep gets the
// metadata, and the object when it was listed whole. done is closed when
// the LIST has ended.
func (l *loader) listOwners(once *sync.Once, done chan struct{}, gvr schema.GroupVersionResource, whole func(context.Context, metav1.ListOptions) (runtime.Object, error), keep func(metav1.ObjectMeta, runtime.Object)) {
	once.Do(func() {
		l.run(gvr.Resource, func() error {
			defer close(done)
			var err error
			if l.o.Metadata != nil && !l.o.Workloads {
				err = listOwnerMeta(l.o.Metadata, gvr, l.ns, l.list, func(m metav1.ObjectMeta) { keep(m, nil) })
			} else {
				err = l.list(gvr.Resource, "", whole, func(obj runtime.Object) error {
					m := obj.(metav1.Object)
					keep(metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace()}, obj)
					return nil
				})
			}
			if l.deny(err) {
				// the owner walk stops at this owner
				return nil
			}
			return err
		})
	})
}

func (l *loader) listReplicaSets() {
	l.listOwners(&l.rsOnce, l.rsDone, appsv1.SchemeGroupVersion.WithResource("replicasets"), func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return l.c.AppsV1().ReplicaSets(l.ns).List(ctx, lo)
	}, func(m metav1.ObjectMeta, obj runtime.Object) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			rs = &appsv1.ReplicaSet{ObjectMeta: m}
		}
		l.s.ReplicaSets[NamespacedName{m.Namespace, m.Name}] = rs
	})
}

func (l *loader) listJobs() {
	l.listOwners(&l.jobsOnce, l.jobsDone, batchv1.SchemeGroupVersion.WithResource("jobs"), func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return l.c.BatchV1().Jobs(l.ns).List(ctx, lo)
	}, func(m metav1.ObjectMeta, obj runtime.Object) {
		j, ok := obj.(*batchv1.Job)
		if !ok {
			j = &batchv1.Job{ObjectMeta: m}
		}
		l.s.Jobs[NamespacedName{m.Namespace, m.Name}] = j
	})
}

// listNodes keeps the nodes aside: they go into the snapshot only when
// there are pods. They are optional: without them the default timing
// applies.
func (l *loader) listNodes() error {
	m := map[string]*corev1.Node{}
	err := l.list("nodes", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return l.c.CoreV1().Nodes().List(ctx, lo)
	}, func(obj runtime.Object) error {
		n := obj.(*corev1.Node)
		m[n.Name] = n
		return nil
	})
	if err == nil {
		l.nodes = m
	}
	l.deny(err)
	return nil
}

func (l *loader) listConfigMaps() error {
	return l.list("configmaps", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return l.c.CoreV1().ConfigMaps(l.ns).List(ctx, lo)
	}, func(obj runtime.Object) error {
		cm := obj.(*corev1.ConfigMap)
		keepObject(l.used, l.s.ConfigMaps, ObjectKey{KindConfigMap, cm.Namespace, cm.Name}, cm)
		return nil
	})
}

func (l *loader) listSecrets() error {
	err := l.list("secrets", "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return l.c.CoreV1().Secrets(l.ns).List(ctx, lo)
	}, func(obj runtime.Object) error {
		sec := obj.(*corev1.Secret)
		keepObject(l.used, l.s.Secrets, ObjectKey{KindSecret, sec.Namespace, sec.Name}, sec)
		return nil
	})
	if l.deny(err) {
		// Forbidden: Secrets are left unread (skipped), ConfigMaps go on
		l.s.Secrets = map[ObjectKey]*corev1.Secret{}
		l.s.SecretsListed = false
		return nil
	}
	return err
}

// listPods lists the pods, streamed through PodREST when it is set.
func (l *loader) listPods() error {
	var err error
	if l.o.PodREST != nil {
		lo := metav1.ListOptions{LabelSelector: l.o.PodSelector, Limit: l.pageSize}
		if l.o.FromCache {
			lo.ResourceVersion, lo.ResourceVersionMatch = "0", metav1.ResourceVersionMatchNotOlderThan
		}
		if err = streamPods(l.ctx, l.o.PodREST, l.ns, lo, l.addPod); err != nil {
			err = &ListError{Resource: "pods", Namespace: l.o.Namespace, Err: err}
		}
	} else {
		err = l.list("pods", l.o.PodSelector, func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return l.c.CoreV1().Pods(l.ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			return l.addPod(obj.(*corev1.Pod))
		})
	}
	if errors.Is(err, errNoSink) {
		return nil // the base LIST's error is the answer
	}
	return err
}

// addPod keeps one pod, or gives it to the sink once its owner kind is
// listed; the owner kinds are listed as soon as a pod needs them.
func (l *loader) addPod(pod *corev1.Pod) error {
	var owned chan struct{}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		switch ref.Kind {
		case "ReplicaSet":
			l.listReplicaSets()
			owned = l.rsDone
		case "Job":
			l.listJobs()
			owned = l.jobsDone
		}
	}
	if l.o.PodSink == nil {
		l.s.Pods = append(l.s.Pods, TrimPod(*pod))
		return nil
	}
	l.startSink()
	if l.sink == nil {
		return errNoSink
	}
	if owned != nil {
		<-owned
	}
	p := TrimPod(*pod)
	l.sunk++
	return l.sink(&p)
}

// keepObject puts obj in m under k: every object when used is nil (no
// OnlyUsed), else a copy of a used one, so that the page's items, the
// dropped among them, go with the page.
func keepObject[T any](used map[ObjectKey]bool, m map[ObjectKey]*T, k ObjectKey, obj *T) {
	switch {
	case used == nil:
		m[k] = obj
	case used[k]:
		c := *obj
		m[k] = &c
	}
}

// usedPage is the page size of the ConfigMaps' and Secrets' LISTs with
// OnlyUsed: a ConfigMap or Secret holds at most 1 MiB, so a page at most
// about 100 MiB in the worst case, and a few MiB in clusters as they are.
const usedPage = 100

// usedObjects are the objects the pods use, and also.
func usedObjects(pods []corev1.Pod, also []ObjectKey) map[ObjectKey]bool {
	used := make(map[ObjectKey]bool, len(also))
	for _, k := range also {
		used[k] = true
	}
	for i := range pods {
		for _, u := range Uses(&pods[i]) {
			used[u.Key()] = true
		}
	}
	return used
}

// startSink makes the sink's pod function once the base LISTs have ended.
func (l *loader) startSink() {
	l.sinkOnce.Do(func() {
		l.base.Wait()
		if l.baseFailed.Load() {
			return // Load fails with that LIST's error: no report
		}
		l.s.Nodes = l.nodes
		l.sink = l.o.PodSink(l.s)
	})
}

// finish orders what the LISTs gathered, once all have ended.
func (l *loader) finish() *Snapshot {
	s := l.s
	sort.SliceStable(s.Denied, func(i, j int) bool { return deniedOrder[s.Denied[i].Resource] < deniedOrder[s.Denied[j].Resource] })
	if l.o.Workloads {
		s.Templates = append(l.templates, ownerlessTemplates(s)...)
		sortTemplates(s.Templates)
	}
	if l.o.PodSink != nil {
		l.startSink() // no pods came
	}
	if len(s.Pods) > 0 || l.sunk > 0 {
		s.Nodes = l.nodes
	} else {
		s.Nodes = nil
	}
	return s
}

// errNoSink stops the pod LIST when a LIST the PodSink waits for failed.
var errNoSink = errors.New("a LIST the pod sink waits for failed")

// listOwnerMeta lists one owner kind as metadata only.
func listOwnerMeta(mc metadata.Interface, gvr schema.GroupVersionResource, ns string, list listFunc, each func(metav1.ObjectMeta)) error {
	return list(gvr.Resource, "", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
		return mc.Resource(gvr).Namespace(ns).List(ctx, lo)
	}, func(obj runtime.Object) error {
		m := obj.(*metav1.PartialObjectMetadata)
		each(metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp, Labels: m.Labels, Annotations: keptOwnerAnnotations(m.Annotations)})
		return nil
	})
}

// deny records a Forbidden LIST in Denied and reports whether err was one.
func (s *Snapshot) deny(err error) bool {
	var le *ListError
	if err == nil || !apierrors.IsForbidden(err) || !errors.As(err, &le) {
		return false
	}
	s.Denied = append(s.Denied, le)
	return true
}

// ListError is a failed LIST, kept apart so the command can turn a
// Forbidden answer into the RBAC rule that grants it.
type ListError struct {
	Resource  string
	Namespace string
	Err       error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("listing %s: %v", e.Resource, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

type listFunc func(resource string, selector string, fn func(context.Context, metav1.ListOptions) (runtime.Object, error), each func(runtime.Object) error) error

// loadTemplates lists Deployments, StatefulSets, DaemonSets and CronJobs
// (ReplicaSets and Jobs are in the snapshot already) and keeps the pod
// templates that may run pods later. Forbidden kinds are skipped.
func loadTemplates(ctx context.Context, c kubernetes.Interface, ns string, list listFunc, deny func(error) bool) ([]WorkloadTemplate, error) {
	var out []WorkloadTemplate
	add := func(kind string, m metav1.ObjectMeta, state string, spec corev1.PodSpec) {
		out = append(out, WorkloadTemplate{Kind: kind, Namespace: m.Namespace, Name: m.Name, State: state, Spec: spec})
	}
	lists := []struct {
		resource string
		fn       func(context.Context, metav1.ListOptions) (runtime.Object, error)
		each     func(runtime.Object) error
	}{
		{"deployments", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().Deployments(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			d := obj.(*appsv1.Deployment)
			add("Deployment", d.ObjectMeta, replicas(d.Spec.Replicas), d.Spec.Template.Spec)
			return nil
		}},
		{"statefulsets", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().StatefulSets(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			d := obj.(*appsv1.StatefulSet)
			add("StatefulSet", d.ObjectMeta, replicas(d.Spec.Replicas), d.Spec.Template.Spec)
			return nil
		}},
		{"daemonsets", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().DaemonSets(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			d := obj.(*appsv1.DaemonSet)
			add("DaemonSet", d.ObjectMeta, "no node runs it now", d.Spec.Template.Spec)
			return nil
		}},
		{"cronjobs", func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return c.BatchV1().CronJobs(ns).List(ctx, lo)
		}, func(obj runtime.Object) error {
			cj := obj.(*batchv1.CronJob)
			state := "between runs (schedule " + cj.Spec.Schedule + ")"
			if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
				state = "suspended"
			}
			add("CronJob", cj.ObjectMeta, state, cj.Spec.JobTemplate.Spec.Template.Spec)
			return nil
		}},
	}
	for _, l := range lists {
		if err := list(l.resource, "", l.fn, l.each); err != nil && !deny(err) {
			return nil, err
		}
	}
	return out, nil
}

func replicas(r *int32) string {
	if r != nil && *r == 0 {
		return "scaled to 0 replicas"
	}
	return ""
}

// ownerlessTemplates are the templates of the ReplicaSets and Jobs of the
// snapshot that no controller owns.
func ownerlessTemplates(s *Snapshot) []WorkloadTemplate {
	var out []WorkloadTemplate
	for _, rs := range s.ReplicaSets {
		if metav1.GetControllerOf(rs) == nil {
			out = append(out, WorkloadTemplate{Kind: "ReplicaSet", Namespace: rs.Namespace, Name: rs.Name, State: replicas(rs.Spec.Replicas), Spec: rs.Spec.Template.Spec})
		}
	}
	for _, j := range s.Jobs {
		if metav1.GetControllerOf(j) == nil && j.Status.CompletionTime == nil && !jobFailed(j) {
			out = append(out, WorkloadTemplate{Kind: "Job", Namespace: j.Namespace, Name: j.Name, State: "no pod running now", Spec: j.Spec.Template.Spec})
		}
	}
	return out
}

func sortTemplates(ts []WorkloadTemplate) {
	sort.Slice(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
}

func jobFailed(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
