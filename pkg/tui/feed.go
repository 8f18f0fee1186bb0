package tui

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
)

// Scope is what the dashboard watches: the status command's selection.
type Scope struct {
	// Namespace to watch; "" for all namespaces.
	Namespace     string
	PodSelector   string
	Secrets       bool
	IncludeSystem bool
	// Names and Workloads narrow the rows as status's arguments do: the
	// named ConfigMaps and Secrets, the uses of the named workloads' pods
	// (both: the named workloads' uses of the named objects).
	Names     []inspect.ObjectKey
	Workloads []inspect.SelectedWorkload
}

// Narrowed tells whether the scope names objects or workloads.
func (s Scope) Narrowed() bool { return len(s.Names) > 0 || len(s.Workloads) > 0 }

// MinRedraw is the shortest time between two snapshots sent to the model:
// informer events are coalesced to at most 10 redraws per second.
const MinRedraw = 100 * time.Millisecond

// Edit is a data change of a ConfigMap or Secret seen by the watch while
// the dashboard runs.
type Edit struct {
	Key inspect.ObjectKey
	// At is when the API recorded the change (the newest managedFields time
	// of an update that touched data), Seen when the watch delivered it.
	At, Seen        time.Time
	ResourceVersion string
}

// dataMsg is a coalesced view of the informer caches.
type dataMsg struct {
	feed    *Feed
	snap    *inspect.Snapshot
	items   []inspect.Use
	changes []Edit
	// errs are the watch errors by resource, empty when all are connected.
	errs map[string]string
	// notes say which optional kinds RBAC denies and what the rows do
	// without them (as status's notes), in order.
	notes  []string
	synced bool
	err    error
	at     time.Time
}

// Feed is the live data of the dashboard: client-go shared informers for
// pods, ConfigMaps, ReplicaSets, Jobs and (when shown) Secrets, whose
// events wake one tea.Cmd at a time.
type Feed struct {
	client kubernetes.Interface
	scope  Scope
	ctx    context.Context
	cancel context.CancelFunc
	now    func() time.Time

	pods    cache.SharedIndexInformer
	cms     cache.SharedIndexInformer
	rss     cache.SharedIndexInformer
	jobs    cache.SharedIndexInformer
	secrets cache.SharedIndexInformer
	factory informers.SharedInformerFactory
	// factories: the one above and the pods' (with the selector)
	factories []informers.SharedInformerFactory

	dirty chan struct{}

	mu      sync.Mutex
	changes []Edit
	errs    map[string]string
	errRV   map[string]string
	// denied: optional kinds whose LIST RBAC forbids -> the note
	denied map[string]string
	last   time.Time
}

// NewFeed builds the informers of a scope; Start runs them.
func NewFeed(client kubernetes.Interface, scope Scope, now func() time.Time) *Feed {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Feed{client: client, scope: scope, ctx: ctx, cancel: cancel, now: now, dirty: make(chan struct{}, 1),
		errs: map[string]string{}, errRV: map[string]string{}, denied: map[string]string{}}
	opts := []informers.SharedInformerOption{informers.WithTransform(inspect.Trim)}
	if scope.Namespace != "" {
		opts = append(opts, informers.WithNamespace(scope.Namespace))
	}
	s.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	// The pod selector applies to pods only: a second factory.
	podOpts := append(opts[:len(opts):len(opts)], informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = scope.PodSelector
	}))
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, podOpts...)
	s.pods = podFactory.Core().V1().Pods().Informer()
	s.cms = s.factory.Core().V1().ConfigMaps().Informer()
	s.rss = s.factory.Apps().V1().ReplicaSets().Informer()
	s.jobs = s.factory.Batch().V1().Jobs().Informer()
	s.watch("pods", s.pods)
	s.watch("configmaps", s.cms)
	s.watch("replicasets", s.rss)
	s.watch("jobs", s.jobs)
	if scope.Secrets {
		s.secrets = s.factory.Core().V1().Secrets().Informer()
		s.watch("secrets", s.secrets)
	}
	s.factories = []informers.SharedInformerFactory{s.factory, podFactory}
	return s
}

// Scope returns what the source watches.
func (s *Feed) Scope() Scope { return s.scope }

// syncPoll is how often Start checks whether the informers have synced.
const syncPoll = 50 * time.Millisecond

// Start runs the informers until Stop.
func (s *Feed) Start() {
	for _, f := range s.factories {
		f.Start(s.ctx.Done())
	}
	// An informer can sync after the snapshot that read its last event, or
	// with no event at all (an empty list): nothing would wake Next again
	// and the header would stay "syncing". One more snapshot once synced.
	go func() {
		if wait.PollUntilContextCancel(s.ctx, syncPoll, true, func(context.Context) (bool, error) { return s.synced(), nil }) == nil {
			s.poke()
		}
	}()
}

// Stop ends every watch of the source. It does not wait for the informers'
// goroutines (a LIST may be in flight): it is called from Update.
func (s *Feed) Stop() {
	s.cancel()
	go func() {
		for _, f := range s.factories {
			f.Shutdown()
		}
	}()
}

func (s *Feed) watch(resource string, inf cache.SharedIndexInformer) {
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		s.mu.Lock()
		if note, optional := deniedNote[resource]; optional && apierrors.IsForbidden(err) {
			// least privilege: the rows go on without this kind
			s.denied[resource] = fmt.Sprintf("note: %s: cannot list %s (forbidden)", note, resource)
			s.mu.Unlock()
			s.poke()
			return
		}
		s.errs[resource] = fmt.Sprintf("watch %s: %v", resource, err)
		s.errRV[resource] = inf.LastSyncResourceVersion()
		s.mu.Unlock()
		s.poke()
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
		UpdateFunc: func(oldObj, newObj any) {
			if c, ok := dataChange(oldObj, newObj); ok {
				c.Seen = s.now()
				s.mu.Lock()
				s.changes = append(s.changes, c)
				s.mu.Unlock()
			}
			s.poke()
		},
	})
}

func (s *Feed) poke() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// Next waits for the next informer events, at most once per MinRedraw, and
// returns a snapshot of the caches with the report rows built from it. The
// model re-arms it after every dataMsg, so one is in flight at a time.
func (s *Feed) Next() tea.Cmd {
	return func() tea.Msg {
		select {
		case <-s.dirty:
		case <-s.ctx.Done():
			return nil
		}
		s.mu.Lock()
		wait := MinRedraw - time.Since(s.last)
		s.mu.Unlock()
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-s.ctx.Done():
				return nil
			}
		}
		select { // events that came meanwhile are in this snapshot
		case <-s.dirty:
		default:
		}
		msg := s.read()
		s.mu.Lock()
		s.last = time.Now()
		s.mu.Unlock()
		return msg
	}
}

// deniedNote says what the rows do without an optional kind RBAC denies:
// the permission table's (pkg/rbac), for the kinds the dashboard watches.
var deniedNote = map[string]string{
	"replicasets": rbac.Optional["replicasets"],
	"jobs":        rbac.Optional["jobs"],
	"secrets":     rbac.Optional["secrets"],
}

// synced tells whether every informer has synced; one of a kind RBAC
// denies never will, and is not waited for. Each snapshot carries it: a
// refresh is planned only from a synced one (a cache read before its
// informer synced may lack pods, and a plan from it would leave them out).
func (s *Feed) synced() bool {
	s.mu.Lock()
	denied := maps.Clone(s.denied)
	s.mu.Unlock()
	ok := s.pods.HasSynced() && s.cms.HasSynced()
	for r, inf := range map[string]cache.SharedIndexInformer{"replicasets": s.rss, "jobs": s.jobs, "secrets": s.secrets} {
		if inf != nil && denied[r] == "" {
			ok = ok && inf.HasSynced()
		}
	}
	return ok
}

// read copies the caches into an inspect.Snapshot and builds the rows.
func (s *Feed) read() dataMsg {
	// The changes are taken before the caches are read: client-go updates a
	// store before it calls the handler, so a change taken after the lists
	// could belong to an edit the lists do not have yet (and its uses would
	// be verified against the old content and closed as untouched). Taken
	// first, such an edit comes again with the next snapshot.
	s.mu.Lock()
	changes := s.changes
	s.changes = nil
	s.mu.Unlock()
	// Synced is asked before the caches are read too: a cache read before
	// its informer synced may lack objects, and must not be shown as live.
	synced := s.synced()
	snap := &inspect.Snapshot{ConfigMaps: map[inspect.ObjectKey]*corev1.ConfigMap{}, Secrets: map[inspect.ObjectKey]*corev1.Secret{},
		ReplicaSets: map[inspect.NamespacedName]*appsv1.ReplicaSet{}, Jobs: map[inspect.NamespacedName]*batchv1.Job{},
		SecretsListed: s.secrets != nil}
	pods := s.pods.GetStore().List()
	snap.Pods = make([]corev1.Pod, 0, len(pods))
	for _, o := range pods {
		snap.Pods = append(snap.Pods, *o.(*corev1.Pod))
	}
	sort.Slice(snap.Pods, func(i, j int) bool {
		a, b := &snap.Pods[i], &snap.Pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for _, o := range s.cms.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		snap.ConfigMaps[inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: cm.Namespace, Name: cm.Name}] = cm
	}
	if s.secrets != nil {
		for _, o := range s.secrets.GetStore().List() {
			sec := o.(*corev1.Secret)
			snap.Secrets[inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: sec.Namespace, Name: sec.Name}] = sec
		}
	}
	for _, o := range s.rss.GetStore().List() {
		rs := o.(*appsv1.ReplicaSet)
		snap.ReplicaSets[inspect.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}] = rs
	}
	for _, o := range s.jobs.GetStore().List() {
		j := o.(*batchv1.Job)
		snap.Jobs[inspect.NamespacedName{Namespace: j.Namespace, Name: j.Name}] = j
	}
	s.mu.Lock()
	var notes []string
	for _, r := range []string{"secrets", "replicasets", "jobs"} {
		if n := s.denied[r]; n != "" {
			notes = append(notes, n)
		}
	}
	secretsDenied := s.denied["secrets"] != ""
	s.mu.Unlock()
	if secretsDenied {
		snap.SecretsListed = false
	}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: s.scope.Names, Workloads: s.scope.Workloads,
		Secrets: s.scope.Secrets && !secretsDenied, IncludeSystem: s.scope.IncludeSystem, Unused: true})
	s.mu.Lock()
	// a resource whose cache moved on since its last error is connected again
	for r, rv := range s.errRV {
		if inf := s.informer(r); inf != nil && inf.LastSyncResourceVersion() != rv {
			delete(s.errs, r)
			delete(s.errRV, r)
		}
	}
	errs := maps.Clone(s.errs)
	s.mu.Unlock()
	return dataMsg{feed: s, snap: snap, items: items, changes: changes, errs: errs, notes: notes, synced: synced, err: err, at: s.now()}
}

func (s *Feed) informer(resource string) cache.SharedIndexInformer {
	switch resource {
	case "pods":
		return s.pods
	case "configmaps":
		return s.cms
	case "replicasets":
		return s.rss
	case "jobs":
		return s.jobs
	case "secrets":
		return s.secrets
	}
	return nil
}

// dataChange reports an update of a ConfigMap's or Secret's data.
func dataChange(oldObj, newObj any) (Edit, bool) {
	switch n := newObj.(type) {
	case *corev1.ConfigMap:
		o, ok := oldObj.(*corev1.ConfigMap)
		if !ok || (maps.Equal(o.Data, n.Data) && maps.EqualFunc(o.BinaryData, n.BinaryData, bytes.Equal)) {
			return Edit{}, false
		}
		return Edit{Key: inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: n.Namespace, Name: n.Name},
			At: inspect.ConfigMapObject(n).LastChange, ResourceVersion: n.ResourceVersion}, true
	case *corev1.Secret:
		o, ok := oldObj.(*corev1.Secret)
		if !ok || maps.EqualFunc(o.Data, n.Data, bytes.Equal) {
			return Edit{}, false
		}
		return Edit{Key: inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: n.Namespace, Name: n.Name},
			At: inspect.SecretObject(n).LastChange, ResourceVersion: n.ResourceVersion}, true
	}
	return Edit{}, false
}

// ProbeInterval is how often the API server is asked for its version while
// connected; ProbeRetry while it is not.
const (
	ProbeInterval = 10 * time.Second
	ProbeRetry    = 2 * time.Second
	probeTimeout  = 5 * time.Second
)

// probeMsg says whether the API server answered.
type probeMsg struct {
	feed *Feed
	err  error
}

// Probe asks the API server for its version after a pause. Informers retry
// an unreachable server quietly (a streaming list backs off without
// reporting), so this is what tells the header the connection state.
func (s *Feed) Probe(after time.Duration) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-time.After(after):
		case <-s.ctx.Done():
			return nil
		}
		ctx, cancel := context.WithTimeout(s.ctx, probeTimeout)
		defer cancel()
		var err error
		if rc := s.client.Discovery().RESTClient(); rc != nil {
			err = rc.Get().AbsPath("/version").Do(ctx).Error()
		} else {
			_, err = s.client.Discovery().ServerVersion()
		}
		if s.ctx.Err() != nil {
			return nil
		}
		return probeMsg{feed: s, err: err}
	}
}
