package reconcile

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Config is what a Loop watches and how it acts.
type Config struct {
	// Namespace is the namespace watched, "" for all.
	Namespace string
	// Names, when set, are the only objects whose changes are acted on.
	Names         []inspect.ObjectKey
	PodSelector   string
	Secrets       bool
	IncludeSystem bool
	// Scope narrows what is handled: namespaces by labels and names,
	// ConfigMaps and Secrets by labels, workloads by kind (scope.go).
	Scope Scope
	// RequireOptIn acts only on workloads that opt in (Select).
	RequireOptIn bool
	// ReloaderOnChange is the on-change policy of the workloads opted in
	// through Reloader's annotations (OnChangeFor): OnChangeRestart ("")
	// or OnChangeRemount; a workload's own AnnotationOnChange wins.
	ReloaderOnChange string
	// SyncExisting makes every selected consumer current once at start;
	// otherwise what was stale before the loop started is left alone.
	SyncExisting bool
	// Debounce is the quiet time after the last edit in a namespace,
	// MaxWait the longest a namespace's changes wait (see Debouncer).
	// The edits of one namespace are acted on together, so that a release
	// that edits several objects a workload reads makes one action on it,
	// not one per object.
	Debounce, MaxWait time.Duration
	// MaxConcurrentRestarts bounds the restarts (and evictions) under way
	// at once, in every namespace: those sent and not yet seen complete
	// count too. The others are held and tried again.
	MaxConcurrentRestarts int
	// Workers is how many namespaces are acted on at once (default
	// DefaultWorkers): a namespace whose reads are slow holds one worker,
	// not every other namespace (a round hands its rollouts over after
	// VerifyInRound). One namespace is never acted on by two workers at
	// once.
	Workers int
	// MinRestartInterval is the shortest time between two restarts of one
	// workload; RestartRate (per second, 0: no limit) and RestartBurst
	// bound the restarts of all workloads together. A restart they hold
	// back is deferred until it may go (see pacer).
	MinRestartInterval time.Duration
	RestartRate        float64
	RestartBurst       int
	// UnderWay are restarts an earlier leader sent, with when, whose
	// rollouts may not be complete: the gate counts them against
	// MaxConcurrentRestarts until it sees them complete, as its own.
	UnderWay map[refresh.Target]time.Time
	// VerifyInRound is the longest a round waits for its restarts and
	// evictions to be verified (default DefaultVerifyInRound; not past
	// Refresh.Timeout) before it returns its worker: later rounds of the
	// namespace verify those still pending (verifying.go). Its annotated
	// pods are waited for as the engine waits.
	VerifyInRound time.Duration
	// RolloutWait is how long a change waits for a workload's rollout in
	// progress before it is reported stuck and dropped.
	RolloutWait time.Duration
	// DigestKey, when set, keys the records kept on the consumers made
	// current (AnnotationApplied; see record.go).
	DigestKey []byte
	// Resume, with DigestKey, compares the records with the objects at
	// start and checks the consumers whose objects changed since.
	Resume bool
	// Watermark is the time up to which an earlier loop acted on every
	// change (zero: none did): at Resume, a consumer with no record whose
	// object changed since is checked rather than recorded as current.
	Watermark time.Time
	// Shadow decides every round as the acting loop would, restart
	// windows and pacing included, and sends nothing (Refresh.DryRun must
	// be client): the gate holds what it would hold, and the pacer counts
	// the restarts it would have sent, so that what it reports is what it
	// would have done. pkg/shadow compares that with a peer's restarts.
	Shadow bool
	// Refresh is the engine's configuration (Strategy auto, Yes and Wait).
	Refresh refresh.Config
	Now     func() time.Time
}

// Loop is the continuous refresh. Run it once.
type Loop struct {
	Config
	Client kubernetes.Interface
	// Cluster are the refresh engine's edges.
	Cluster refresh.Cluster
	// Annotations reads the workloads' annotations for Select.
	Annotations WorkloadAnnotations
	// Named lists the workloads that carry Reloader's reload annotations
	// (namedRestarts); nil: no workload is restarted for an object its pod
	// spec does not read.
	Named NamedWorkloads
	// Emit receives every event, one at a time.
	Emit func(Event)
	// Round, when set, receives each round's events at its end (see
	// Round): one call per round, for a summary such as an alert. It is
	// called on the round's worker and must not block.
	Round func(Round)
	// Acted, when set, is told after each step the time up to which every
	// change was acted on (actedUntil), for the next loop's Watermark.
	Acted func(until time.Time)
	// QueueMetrics, when set, receives the metrics of the namespace queue
	// (depth, wait, round duration).
	QueueMetrics workqueue.MetricsProvider
	// Clock times the debounce and the events (default time.Now, local and
	// monotonic); Now is the API server's, for the times measured against
	// what the cluster wrote (an event's SinceChange).
	Clock func() time.Time

	emitMu sync.Mutex // guards rounds, roundFrom and handing too
	// rounds are the events of the rounds under way, by namespace (for
	// Round; nil without it)
	rounds map[string][]Event
	// roundFrom is when a round under way began that joined the events of
	// an earlier one (joinRound); handing is the verification a round
	// under way handed over, whose events wait for it (verifying.go)
	roundFrom map[string]time.Time
	handing   map[string]*verification
	mu        sync.Mutex // guards pending, bounce, taken, steps, verifying, resumeIncomplete, resumeAgain, unwritten
	pending   map[inspect.ObjectKey]*pending
	edits     uint64            // the edits seen, numbering each pending's last (pending.edit)
	bounce    Debouncer[string] // by namespace
	wake      chan struct{}
	pace      *pacer
	// resumeIncomplete: the resume could not check some consumers (a
	// namespace or workload not read); the watermark stays at Watermark
	resumeIncomplete bool
	// resumeAgain are the namespaces whose resume failed for a cause that
	// may pass: resumed again once their backoff passed (resumeDue)
	resumeAgain map[string]resumeRetry
	// unwritten are the records whose write failed, by subject: this
	// leader's record of them until a write succeeds (recordOf)
	unwritten map[subject]Record
	// held are the records of the namespaces whose resume is owed, not
	// written (holdRecord): this leader's record of them for its rounds,
	// never what a resume compares, dropped when the resume ends
	held map[subject]Record
	// sentWith are the digests the rounds of restarts that timed out
	// unverified read, by subject: their new pods read those once their
	// rollouts end (restartingWith); gone once a record is written
	sentWith map[subject]Record
	// watches are the informers' states, by what they watch: the
	// watermark never passes the moment one whose watch failed was last
	// known in sync, until it has listed again (actedUntil)
	watches map[string]*watchState
	// retries times the retries of a namespace's transient failures
	// (exponential per namespace, forgotten once a round completes)
	retries workqueue.TypedRateLimiter[string]
	// namespaceLabels are the labels of a namespace as its informer has
	// them (nil without Scope.Namespaces: see namespaceOutOfScope)
	namespaceLabels func(ns string) (map[string]string, bool)
	// steps are the backoff steps taken by the rounds under way, by
	// namespace (retryLater)
	steps map[string]*retryStep
	// queue hands the due namespaces to the workers (see queue.go);
	// taken are the changes the rounds under way took, by namespace
	queue workqueue.TypedInterface[string]
	taken map[string]map[inspect.ObjectKey]*pending
	// verifying are the actions rounds sent and handed over, not verified
	// yet, by namespace (verifying.go)
	verifying map[string][]*verification
	// restarts are the restarts under way (Gate's count)
	restarts inFlight
	// jitter spreads the retries' backoff (wait.Jitter; a simulation's
	// is drawn from its seed)
	jitter func(time.Duration, float64) time.Duration
}

// The backoff of a namespace whose round failed for a transient reason (an
// API server restarting, a timeout, 429 or 5xx): 1 s, doubling to at most
// 5 min, each with up to 20% jitter.
const (
	RetryBase   = time.Second
	RetryMax    = 5 * time.Minute
	retryJitter = 0.2
)

// pending is the coalesced change of one object.
type pending struct {
	change Change
	edits  int
	first  time.Time
	// due is when a change put back falls due (a retry's backoff, a
	// hold's end; zero: at once, or at the debounce): a round of its
	// namespace before then leaves it pending
	due time.Time
	// made is the earliest its edits may have been made: the object's
	// last write, when before first (an edit made during a cut of the
	// watch reaches the loop when the informer lists again); it holds the
	// watermark back, and first stays when the loop saw the change
	made time.Time
	// edit numbers the last edit merged into it (Loop.edits): a requeue
	// of a copy taken before a later edit carries nothing of what was
	// told or attempted for the edits before to the later one
	edit uint64
	// deferredSince is when a restart for it was first held back because
	// of a rollout under way; heldSince, for any reason (the rechecks'
	// backoff grows from it).
	deferredSince, heldSince time.Time
	// told are the deferrals already reported, with the time each said
	// (firstDeferral)
	told map[string]time.Time
	// existing: every use is concerned (--sync-existing)
	existing bool
	// recordEdits are the workloads (by Kind/Name) whose record of the
	// object differs from what they read now (resume): an edit made while
	// no leader acted on it, to which their on-change policy applies as to
	// a live edit (editedFor)
	recordEdits map[string]bool
	// checked are the workloads (by Kind/Name) of only that a check (a
	// resume's, no edit of theirs) brought into a change whose edit had
	// already had its round, which concerned every use: each is checked
	// (acted on where stale), not restarted by its on-change policy for
	// that edit's keys (editedFor), which its round acted on already. A
	// new edit concerns every use again and clears it.
	checked map[string]bool
	// unreadSince is when the first attempt that could not read a
	// workload's consumers for a cause that may pass was made, by workload
	// (Kind/Name), on the loop's Clock (retryUnread)
	unreadSince map[string]time.Time
	// only limits a retry to the workloads whose restart was held back
	// (by Kind/Name); nil: every use. retry: the change was reported.
	only  map[string]bool
	retry bool
	// recheck are the workloads (by Kind/Name) whose action for this
	// change was sent and not verified within --timeout: they are verified
	// again, never restarted again for the same change
	recheck map[string]bool
}

// Run watches until ctx ends. It returns an error only when the watch
// cannot start (an object kind it cannot list); a failed round is an
// EventError and the loop goes on.
func (l *Loop) Run(ctx context.Context) error {
	l.defaults()
	if err := l.canList(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(l.Client, 0, informers.WithNamespace(l.Namespace))
	l.objectInformers(factory) // trimmed as they are read (informers.go)
	synced := []cache.InformerSynced{l.watchKind("ConfigMaps", factory.Core().V1().ConfigMaps().Informer())}
	if l.watchSecrets() {
		synced = append(synced, l.watchKind("Secrets", factory.Core().V1().Secrets().Informer()))
	}
	if l.Scope.Namespaces != nil {
		synced = append(synced, l.watchNamespaces(ctx))
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // interrupted while starting
	}
	l.emit(Event{Kind: EventReady, Message: l.readyMessage()})
	stop := l.startWorkers(ctx)
	defer stop()
	switch {
	case l.Resume && len(l.DigestKey) > 0:
		l.putDue(l.resume(ctx, factory))
	case l.SyncExisting:
		l.putDue(l.existing(factory))
	}
	for {
		next := l.dispatch()
		if l.Acted != nil && ctx.Err() == nil {
			l.Acted(l.actedUntil())
			// idle, the watermark still moves: a new leader then checks
			// only what changed since shortly before
			if at := l.Clock().Add(actedEvery); next.IsZero() || next.After(at) {
				next = at
			}
		}
		if !l.sleep(ctx, next) {
			stop()
			l.dropPending()
			l.dropVerifications()
			return nil
		}
	}
}

// settle acts on every change that is due at Clock, round after round,
// until none is; it returns when the next change falls due (zero: none
// pending). It is the loop's step between its input (noteChange, the
// informers' handlers) and its output (the events, the engine's actions)
// with no worker running: the unit tests drive the loop through these two.
// Run dispatches the same way and leaves the rounds to its workers.
func (l *Loop) settle(ctx context.Context) (next time.Time) {
	for ctx.Err() == nil {
		next = l.dispatch()
		if l.queue.Len() == 0 {
			return next
		}
		for l.queue.Len() > 0 && ctx.Err() == nil {
			l.work(ctx)
		}
	}
	return time.Time{}
}

// actedEvery is the longest an idle loop with Acted waits before it tells
// it again.
const actedEvery = 30 * time.Second

// watermarkMargin is how far behind the clock the watermark stays: an
// edit reaches the informers a moment after the API server recorded it.
const watermarkMargin = 10 * time.Second

// actedUntil is the time up to which every change was acted on: the first
// edit of the oldest change still pending (a held restart, a retry), else
// now, less watermarkMargin (an edit is seen a moment after it is made); no
// later than the Watermark this loop started from while a check of
// existing state is pending, or when its resume could not check them all.
func (l *Loop) actedUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.Now().Add(-watermarkMargin)
	if l.resumeIncomplete && !l.Watermark.IsZero() && l.Watermark.Before(w) {
		w = l.Watermark
	}
	if at := l.lastInSync(); !at.IsZero() && at.Add(-watermarkMargin).Before(w) {
		w = at.Add(-watermarkMargin)
	}
	oldest := func(ps map[inspect.ObjectKey]*pending) {
		for _, p := range ps {
			// first is when the edit was seen: it was made up to a moment before (or at made, after a cut)
			if at := earliest(p.first, p.made).Add(-watermarkMargin); at.Before(w) {
				w = at
			}
			if p.existing && !l.Watermark.IsZero() && l.Watermark.Before(w) {
				w = l.Watermark
			}
		}
	}
	oldest(l.pending)
	for _, ps := range l.taken { // the rounds under way have not acted yet
		oldest(ps)
	}
	for _, vs := range l.verifying { // sent, not verified nor recorded yet
		for _, v := range vs {
			oldest(v.changes)
		}
	}
	return w
}

// dropPending reports the changes not acted on when the loop ends.
func (l *Loop) dropPending() {
	l.mu.Lock()
	left := l.pending
	l.pending = map[inspect.ObjectKey]*pending{}
	l.mu.Unlock()
	for _, k := range slices.SortedFunc(maps.Keys(left), compareKeys) {
		// said, not alerted: a new leader resumes them, and watch's user reads the line
		l.emitIn(Event{Kind: EventError, Object: &k, Keys: left[k].change.Keys, Message: "interrupted before it was acted on: " + finishHint(k)}, false)
	}
}

// sleep waits for a new change or until next (zero: no change pending);
// false when ctx ended.
func (l *Loop) sleep(ctx context.Context, next time.Time) bool {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(max(next.Sub(l.Clock()), time.Millisecond))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-l.wake:
	case <-timer:
	}
	return true
}

func (l *Loop) defaults() {
	if l.Now == nil {
		l.Now = time.Now
	}
	if l.Refresh.Now == nil {
		l.Refresh.Now = l.Now
	}
	if l.Emit == nil {
		l.Emit = func(Event) {}
	}
	if l.Clock == nil {
		l.Clock = time.Now
	}
	if l.RolloutWait <= 0 {
		l.RolloutWait = 10 * time.Minute
	}
	l.pending = map[inspect.ObjectKey]*pending{}
	l.bounce = Debouncer[string]{Quiet: l.Debounce, MaxWait: l.MaxWait}
	l.wake = make(chan struct{}, 1)
	l.retries = workqueue.NewTypedItemExponentialFailureRateLimiter[string](RetryBase, RetryMax)
	l.steps = map[string]*retryStep{}
	l.resumeAgain = map[string]resumeRetry{}
	l.unwritten, l.held = map[subject]Record{}, map[subject]Record{}
	l.sentWith = map[subject]Record{}
	l.pace = newPacer(l.MinRestartInterval, l.RestartRate, l.RestartBurst)
	if l.jitter == nil {
		l.jitter = wait.Jitter
	}
	if l.Workers <= 0 {
		l.Workers = DefaultWorkers
	}
	l.queue = workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "namespaces", MetricsProvider: l.QueueMetrics})
	l.taken = map[string]map[inspect.ObjectKey]*pending{}
	l.verifying = map[string][]*verification{}
	l.roundFrom, l.handing = map[string]time.Time{}, map[string]*verification{}
	if l.VerifyInRound <= 0 {
		l.VerifyInRound = DefaultVerifyInRound
	}
	l.restarts.reset() // under its lock: the controller's gauge reads it (Restarts)
	l.restarts.mu.Lock()
	defer l.restarts.mu.Unlock()
	for t, at := range l.UnderWay {
		if l.Now().Sub(at) < l.RolloutWait { // an older one is not a restart under way: its pods are unavailable for another reason
			l.restarts.move(t, moveSeen, at)
		}
	}
}

// changedAgain tells whether an edit of k's data was seen since its
// namespace's round took its changes: a new change of k is pending (not a
// change put back by the round itself).
func (l *Loop) changedAgain(k inspect.ObjectKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending[k]
	return p != nil && !p.retry
}

func (l *Loop) watchSecrets() bool { return l.Secrets || inspect.NamesSecret(l.Names) }

// loadOptions are what a round or a resume reads of ns: its pods, and of
// its ConfigMaps and Secrets those a pod uses or changed names (the others'
// data, often most of a namespace's, is dropped as it is listed).
func (l *Loop) loadOptions(ns string, changed []inspect.ObjectKey) inspect.LoadOptions {
	return inspect.LoadOptions{Namespace: ns, PodSelector: l.PodSelector, Secrets: l.watchSecrets(), OnlyUsed: true, Also: changed}
}

// canList asks for one object of each watched kind, so that a missing
// permission is an error at start, not an informer retrying forever.
func (l *Loop) canList(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: 1}
	l.objectListOptions(&opts)
	if _, err := l.Client.CoreV1().ConfigMaps(l.Namespace).List(ctx, opts); err != nil {
		return &refresh.CallError{Verb: "list", Resource: "configmaps", Namespace: l.Namespace, Err: err}
	}
	if l.watchSecrets() {
		if _, err := l.Client.CoreV1().Secrets(l.Namespace).List(ctx, opts); err != nil {
			return &refresh.CallError{Verb: "list", Resource: "secrets", Namespace: l.Namespace, Err: err}
		}
	}
	if l.Scope.Namespaces != nil {
		opts := metav1.ListOptions{Limit: 1}
		l.namespaceListOptions(&opts)
		if _, err := l.Client.CoreV1().Namespaces().List(ctx, opts); err != nil {
			return fmt.Errorf("cannot list namespaces, which --namespace-selector watches (a ClusterRole with %s and %s grants it): %w",
				rbac.RoleRule("list", "namespaces"), rbac.RoleRule("watch", "namespaces"), err)
		}
	}
	return nil
}

func (l *Loop) readyMessage() string {
	what := "ConfigMaps"
	if l.watchSecrets() {
		what = "ConfigMaps and Secrets"
	}
	where := "in namespace " + l.Namespace
	if l.Namespace == "" {
		where = "in all namespaces"
	}
	return fmt.Sprintf("watching %s %s%s (debounce %s, at most %s)", what, where, l.scopeMessage(), l.Debounce, l.MaxWait)
}

// trim keeps the informers' caches small and free of values: the loop
// reads names, annotations, the time of the last change and whether a
// value changed, so the managed fields go but for the newest entry's time
// (inspect's LastChange), and each ConfigMap and Secret value is kept as
// its SHA-256. The cache then holds 32 bytes a key, whatever the data's
// size; a round lists its namespace's objects for their values.
func trim(obj any) (any, error) {
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		meta := m.GetObjectMeta()
		meta.SetManagedFields(newestChange(meta.GetManagedFields()))
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		for k, v := range o.Data {
			o.Data[k] = sha(v)
		}
		o.StringData = nil
	case *corev1.ConfigMap:
		for k, v := range o.Data {
			o.Data[k] = string(sha([]byte(v)))
		}
		for k, v := range o.BinaryData {
			o.BinaryData[k] = sha(v)
		}
	}
	return obj, nil
}

func sha(v []byte) []byte {
	sum := sha256.Sum256(v)
	return sum[:]
}

// newestChange keeps of the managed fields only the time of the newest
// entry, which is what inspect reads of them.
func newestChange(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var newest *metav1.Time
	for _, f := range fields {
		if f.Time != nil && (newest == nil || f.Time.After(newest.Time)) {
			newest = f.Time
		}
	}
	if newest == nil {
		return nil
	}
	return []metav1.ManagedFieldsEntry{{Time: newest}}
}

// watchKind registers the change handlers on one informer, and reports
// its watch failing (client-go retries it meanwhile).
func (l *Loop) watchKind(what string, inf cache.SharedIndexInformer) cache.InformerSynced {
	st := l.watchOf(what, inf)
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		l.watchFailed(st)
		l.emit(Event{Kind: EventError, Message: fmt.Sprintf("watching %s: %v (retried; changes meanwhile are seen once it is back)", what, err)})
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				l.noteChange(inspect.Object{}, objectOf(obj))
			}
		},
		UpdateFunc: func(oldObj, newObj any) { l.noteChange(objectOf(oldObj), objectOf(newObj)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			old := objectOf(obj)
			gone := old
			gone.Exists, gone.Data, gone.BinaryKeys = false, nil, nil
			l.noteChange(old, gone)
		},
	})
	return inf.HasSynced
}

func objectOf(obj any) inspect.Object {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return inspect.ConfigMapObject(o)
	case *corev1.Secret:
		return inspect.SecretObject(o)
	}
	return inspect.Object{}
}

// noteChange records a change of one object, if it is selected and changed
// anything a consumer can read.
func (l *Loop) noteChange(old, cur inspect.Object) {
	c := Diff(old, cur)
	if c.Empty() || !l.selects(c.Object) {
		return
	}
	now := l.Now()
	l.mu.Lock()
	p := l.pending[c.Object]
	if p == nil {
		p = &pending{change: Change{Object: c.Object}, first: now}
		l.pending[c.Object] = p
	}
	if !cur.LastChange.IsZero() && cur.LastChange.Before(now) {
		p.made = earliest(p.made, cur.LastChange)
	}
	p.change = merge(p.change, c)
	p.edits++
	l.edits++
	p.edit = l.edits
	p.only, p.retry, p.told, p.recheck, p.checked = nil, false, nil, nil, nil // a new edit concerns every use again
	p.unreadSince = nil                                                       // and its reads are attempted anew
	p.deferredSince, p.heldSince, p.due = time.Time{}, time.Time{}, time.Time{}
	l.editedAgain(c)
	l.bounce.Add(c.Object.Namespace, l.Clock())
	l.mu.Unlock()
	l.poke()
}

// poke wakes the loop to dispatch again.
func (l *Loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// selects tells whether the changes of k are acted on: a named object, or
// any when none is named; a system ConfigMap (kube-root-ca.crt, in every
// pod) only with IncludeSystem.
func (l *Loop) selects(k inspect.ObjectKey) bool {
	switch {
	case k.Name == "":
		return false
	case len(l.Names) > 0:
		return slices.Contains(l.Names, k)
	case k.Kind == inspect.KindConfigMap && inspect.SystemConfigMaps[k.Name]:
		return l.IncludeSystem
	}
	return true
}

// merge joins two successive changes of one object.
func merge(a, b Change) Change {
	keys := append(slices.Clone(a.Keys), b.Keys...)
	slices.Sort(keys)
	return Change{Object: b.Object, Keys: slices.Compact(keys), Version: cmp.Or(b.Version, a.Version),
		Created: (a.Created && !b.Deleted) || b.Created, Deleted: b.Deleted || (a.Deleted && !b.Created)}
}

// join merges p, a copy of a change put back (a retry, a verification's
// recheck), into q, the change of the same object pending or taken.
func (q *pending) join(p pending) {
	checked := joinChecked(q, &p)
	// a check (a resume's, taken by the round the copy joins) is joined as
	// a retry is: it concerns its workloads only and said nothing yet
	retry := q.retry || !edited(q)
	switch { // before only widens: the rechecks an earlier edit's copy brings depend on the later's
	case retry && p.edit > q.edit:
		p.recheck = joinTold(maps.Clone(p.recheck), rechecksKept(q.recheck, p.only))
	case retry && p.edit < q.edit:
		q.recheck = joinTold(q.recheck, rechecksKept(p.recheck, q.only))
	}
	if retry && q.only != nil {
		if p.only == nil { // a retry of every use widens it
			q.only = nil
		} else {
			maps.Copy(q.only, p.only)
		}
	}
	// Of one edit (no edit since p was taken), what was told, the
	// hold's clock and the rechecks of both still hold. Of two, those
	// of the later edit: the deferrals said of the earlier one say
	// nothing of the later (a copy requeued once its verification
	// ended, after a round acted on a later edit).
	same := retry && p.edit == q.edit
	switch {
	case same:
		q.told = joinTold(q.told, p.told)
		q.recheck = joinTold(q.recheck, p.recheck)
		q.deferredSince = earliest(q.deferredSince, p.deferredSince)
		q.heldSince = earliest(q.heldSince, p.heldSince)
	case retry && p.edit > q.edit:
		q.told, q.recheck, q.deferredSince, q.heldSince, q.unreadSince = p.told, p.recheck, p.deferredSince, p.heldSince, p.unreadSince
	}
	q.change = merge(p.change, q.change)
	if p.edit > q.edit { // the later edit's version
		q.change.Version = p.change.Version
	}
	q.edits += p.edits
	q.first, q.existing = p.first, q.existing || p.existing
	q.made = earliest(q.made, p.made)
	if p.due.IsZero() || p.due.Before(q.due) { // due at the earlier (zero: at once)
		q.due = p.due
	}
	q.recordEdits = joinTold(q.recordEdits, p.recordEdits)
	q.checked = checked
	if same { // no edit since: the attempts so far count
		q.unreadSince = p.unreadSince
	}
	q.edit = max(q.edit, p.edit)
}

// joinChecked is checked of q and p joined: the workloads of either
// that neither's edit concerns. An edit whose round is still to come (a
// change of every use) concerns them all: none is then checked only.
func joinChecked(q, p *pending) map[string]bool {
	qAll, qOf := editedWorkloads(q)
	pAll, pOf := editedWorkloads(p)
	if qAll || pAll {
		return nil
	}
	var out map[string]bool
	for _, only := range []map[string]bool{q.only, p.only} {
		for w := range only {
			if !qOf[w] && !pOf[w] {
				if out == nil {
					out = map[string]bool{}
				}
				out[w] = true
			}
		}
	}
	return out
}

// editedWorkloads are the workloads x's edit concerns: none when x is no
// edit (a check), every use (all) when x concerns every use, else those of
// its only not checked only.
func editedWorkloads(x *pending) (all bool, of map[string]bool) {
	switch {
	case !edited(x):
		return false, nil
	case x.only == nil:
		return true, nil
	}
	of = map[string]bool{}
	for w := range x.only {
		if !x.checked[w] {
			of[w] = true
		}
	}
	return false, of
}

// rechecksKept are the rechecks of an earlier edit's copy that stand for
// a later edit (whose retry concerns later only): those of the workloads
// the later one does not retry. The later edit's first round concerned
// every use, so a workload it does not retry was acted on for it, or had
// nothing to do; the earlier edit's action for it was sent, and it is
// verified again, never restarted again for the earlier edit's keys.
func rechecksKept(earlier, later map[string]bool) map[string]bool {
	if later == nil {
		return nil // a retry of every use: nothing was acted on for the later edit yet
	}
	var out map[string]bool
	for w := range earlier {
		if !later[w] {
			if out == nil {
				out = map[string]bool{}
			}
			out[w] = true
		}
	}
	return out
}

// requeue puts a change back, due after the debounce. An edit seen meanwhile is merged into it, and then every use is concerned
// again; two requeues of one object retry the workloads of both.
func (l *Loop) requeue(p pending) { l.requeueAt(p, time.Time{}) }

// requeueAt is requeue with the namespace due at at (a retry after a
// backoff) rather than after the debounce (at zero).
func (l *Loop) requeueAt(p pending, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p.retry, p.told, p.only, p.recheck = true, maps.Clone(p.told), maps.Clone(p.only), maps.Clone(p.recheck) // a copy shares no map with the round's
	p.recordEdits, p.unreadSince, p.checked = maps.Clone(p.recordEdits), maps.Clone(p.unreadSince), maps.Clone(p.checked)
	p.due = at
	if q := l.pending[p.change.Object]; q != nil {
		q.join(p)
	} else {
		l.pending[p.change.Object] = &p
	}
	if at.IsZero() {
		l.bounce.Add(p.change.Object.Namespace, l.Clock())
	} else {
		l.bounce.After(p.change.Object.Namespace, at)
	}
	l.poke()
}

// earliest is the earlier of two times, zero standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func joinTold[V any](a, b map[string]V) map[string]V {
	if a == nil {
		return b
	}
	maps.Copy(a, b)
	return a
}

// existing is a change of every selected object that exists, for
// --sync-existing.
func (l *Loop) existing(factory informers.SharedInformerFactory) map[inspect.ObjectKey]*pending {
	out := map[inspect.ObjectKey]*pending{}
	add := func(list []any) {
		for _, obj := range list {
			o := objectOf(obj)
			k := inspect.ObjectKey{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
			if l.selects(k) && l.namespaceOutOfScope(k.Namespace) == "" {
				out[k] = &pending{change: Change{Object: k}, first: l.Now(), existing: true}
			}
		}
	}
	add(factory.Core().V1().ConfigMaps().Informer().GetStore().List())
	if l.watchSecrets() {
		add(factory.Core().V1().Secrets().Informer().GetStore().List())
	}
	return out
}

// emit hands one event to Emit (the loop and the informers' error
// handlers both report).
func (l *Loop) emit(e Event) { l.emitIn(e, true) }

// emitIn is emit; lone: an event outside any round of its namespace is a
// round of its own (for the alerts).
func (l *Loop) emitIn(e Event, lone bool) {
	if e.Time.IsZero() {
		e.Time = l.Clock() // in order: the server clock's estimate may step back
	}
	l.emitMu.Lock()
	l.Emit(e)
	ns := e.namespace()
	evs, inRound := l.rounds[ns]
	if inRound && ns != "" {
		l.rounds[ns] = append(evs, e)
	}
	lone = lone && !inRound && l.Round != nil && ns != ""
	l.emitMu.Unlock()
	if lone { // outside any round of its namespace (a rollout given up by another's gate, a resume): a round of its own
		l.Round(Round{Namespace: ns, Started: e.Time, Ended: e.Time, Events: []Event{e}})
	}
}
