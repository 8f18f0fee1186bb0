package refresh

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Verifier re-reads and re-verifies the uses of some objects in one
// namespace: the wait loop's view of the cluster.
type Verifier interface {
	// VerifyPods verifies only the uses for which want is true (the others
	// are returned without a state): the wait loop execs into the pods of
	// open actions only.
	VerifyPods(ctx context.Context, namespace string, objects []inspect.ObjectKey, want func(inspect.Use) bool) ([]inspect.Use, error)
	// VerifyPod verifies the uses of the objects by one pod, read afresh
	// (the pod and the objects, not the namespace): the wait of an
	// annotate action, one pod at a time as soon as its patch is
	// acknowledged.
	VerifyPod(ctx context.Context, namespace, pod string, objects []inspect.ObjectKey) ([]inspect.Use, error)
}

// RolloutChecker says whether a workload's rollout has finished, the way
// `kubectl rollout status` does.
type RolloutChecker interface {
	RolloutDone(ctx context.Context, kind, namespace, name string) (done bool, message string, err error)
}

// Progress is reported after every poll of the wait loop and every
// verification of an annotated pod, and (Refresher.Apply) every eviction
// event. Wait and PodWaits call it from several goroutines, one call at a
// time; Refresher.Apply serializes its evictions' calls with them.
type Progress struct {
	Current, Total int
	Elapsed        time.Duration
	// Event is one line of the evictions (a pod evicted, a refusal and
	// its retry, a replacement Ready); the counts are zero then.
	Event string
}

// WaitOptions bound the wait.
type WaitOptions struct {
	Timeout time.Duration
	// Interval is the first pause between polls (default 250ms; 100ms
	// when the Verifier merges pod reads); it doubles up to MaxInterval
	// (default 8x Interval; 1s when merged).
	Interval    time.Duration
	MaxInterval time.Duration
	// FirstDelay is the pause before the first poll of restarts and
	// evictions (default 500ms).
	FirstDelay time.Duration
	// PodDelay is the pause between an annotate patch being acknowledged
	// and the first read of its pod (default 300ms: the kubelet rewrites
	// an annotated pod's volumes within 0.2-0.6 s, and the exec takes
	// 0.1 s or more to start; a read that comes too early costs one more
	// exec); negative for none. The pod is read again Interval later,
	// doubling up to MaxInterval, until current or the timeout.
	PodDelay time.Duration
	// Concurrency bounds the annotated pods read at once (default 16),
	// unless the Verifier merges their reads (MergesPodReads).
	Concurrency int
	Now         func() time.Time
	// Sleep pauses for a duration or until ctx is done (default: a timer
	// of the real clock); a simulation passes one of its virtual clock.
	Sleep    func(context.Context, time.Duration)
	Progress func(Progress)
	// Serial waits for the annotated pods one at a time, in the order
	// added, once every patch is sent (Finish), instead of beside the
	// others and the patches (a simulation's clock then replays).
	Serial bool
	// ChangedAgain, when set, tells whether the data of an object changed
	// again after the plan. A restarted workload's new pod that is stale
	// only for such an object read it after the restart was sent, so at
	// least the data planned for: the restart is reached, and the newer
	// edit is a change of its own. nil: a restart waits for the newest data.
	ChangedAgain func(inspect.ObjectKey) bool
	// Hooks sends an annotated pod's reload hook once the pod is verified
	// current (nil: a hook is reported not sent).
	Hooks HookSender
}

// settled reports whether an observed use counts as current: in-sync or
// current, or n/a when there is really nothing to check (a read found
// nothing to compare, an init container that has not run yet, no
// container at all). An n/a that only says the container is not running
// now (terminated, its pod terminating or completed) proves nothing about
// what it sees: never current.
func settled(it inspect.Use) bool {
	switch it.State {
	case inspect.StateInSync, inspect.StateCurrent:
		return true
	case inspect.StateNA:
		return it.Verified || it.Container == nil || it.Container.Type == inspect.ContainerInit || it.Mode == inspect.ModeUnmounted
	}
	return false
}

// unverifiableForGood tells an observation that cannot succeed however long
// the wait (no shell in the image, exec forbidden, Secrets not read, a
// volume the kubelet cannot write) from a passing one.
func unverifiableForGood(it inspect.Use) bool {
	return it.State == inspect.StateUnverifiable && it.StateCause.Permanent()
}

// progress of one action in the wait loop.
type progress int

const (
	notYet progress = iota
	reached
	cannotVerify
	// replaced: current, but through a re-created pod, not the action
	replaced
)

// Wait verifies the consumers of every applied action until all are
// current or the timeout passes. Each annotated pod is read on its own,
// PodDelay after its patch was acknowledged, then again with a backoff
// until its mounts are in-sync (no polls: a slow pod does not hold the
// others back). Restarted workloads must finish their rollout and then
// their new pods must be in-sync or current; evicted pods' replacements
// likewise; these are verified again in polls. Results are updated in place
// and returned.
func Wait(ctx context.Context, results []Result, obs Verifier, rc RolloutChecker, o WaitOptions) []Result {
	w := NewPodWaits(ctx, obs, o)
	n := 0
	for _, r := range results {
		if r.Action.Action == ActionAnnotate && r.Outcome == OutcomeApplied {
			n++
		}
	}
	w.Expect(n)
	for i := range results {
		w.Add(&results[i])
	}
	return w.Finish(results, rc)
}

func (o *WaitOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = Pause
	}
	if o.Interval == 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.MaxInterval < o.Interval {
		o.MaxInterval = 8 * o.Interval
	}
	if o.FirstDelay == 0 {
		o.FirstDelay = 500 * time.Millisecond
	}
	if o.PodDelay == 0 {
		o.PodDelay = 300 * time.Millisecond
	}
	if o.Concurrency < 1 {
		o.Concurrency = 16
	}
}

// PodWaits is a Wait whose annotated pods are handed over one at a time
// (Add), each as soon as its patch is acknowledged, so that the first pods
// are verified while the last are still patched; Finish adds the polls of
// the restarts and evictions and waits for everything.
type PodWaits struct {
	ctx      context.Context
	obs      Verifier
	o        WaitOptions
	start    time.Time
	deadline time.Time
	sem      chan struct{}
	wg       sync.WaitGroup

	// serial are the waits of the annotated pods added, with Serial: run
	// in order by Finish, once every patch is sent
	serial []func()

	// hookedOnly: only the annotated pods with a reload hook are waited
	// for (a refresh without --wait: the hook must follow the remount),
	// and no restart or eviction is polled
	hookedOnly bool
	// handOver, when not zero, is when the polls of the restarts and
	// evictions stop, leaving those not verified pending (Config.HandOver)
	handOver time.Time

	mu sync.Mutex
	// the progress: done of total, the pods expected (Expect) or added,
	// and from Finish the polled actions
	added, expected, polled, done int
}

// NewPodWaits starts a wait of o.Timeout from now.
func NewPodWaits(ctx context.Context, obs Verifier, o WaitOptions) *PodWaits {
	merged := false
	if m, ok := obs.(interface{ MergesPodReads() bool }); ok && m.MergesPodReads() {
		merged = true
		if o.Interval == 0 {
			// a read costs one exec per node whatever the pods: a pod
			// read too early joins the next read soon
			o.Interval, o.MaxInterval = mergedInterval, max(o.MaxInterval, mergedMaxInterval)
		}
	}
	o.defaults()
	w := &PodWaits{ctx: ctx, obs: obs, o: o, start: o.Now(), sem: make(chan struct{}, o.Concurrency)}
	w.deadline = w.start.Add(o.Timeout)
	if merged {
		// its batches bound the reads: every pod joins the next one
		w.sem = nil
	}
	return w
}

// The backoff of a pod's reads when the Verifier merges them (the node
// reader): from 100 ms to 1 s.
const (
	mergedInterval    = 100 * time.Millisecond
	mergedMaxInterval = time.Second
)

// Add starts the wait of r when it is an applied annotation (anything else
// is left to Finish).
func (w *PodWaits) Add(r *Result) {
	if r.Outcome != OutcomeApplied || r.Action.Action != ActionAnnotate || w.hookedOnly && !r.Action.Hook.sendable() {
		return
	}
	w.mu.Lock()
	w.added++
	w.mu.Unlock()
	wait := func() {
		if waitPod(w.ctx, r, w.obs, w.sem, w.deadline, w.o) {
			w.report(1)
		}
	}
	if w.o.Serial { // after every patch is sent, as the waits run beside the patches (Finish)
		w.mu.Lock()
		w.serial = append(w.serial, wait)
		w.mu.Unlock()
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		wait()
	}()
}

// Expect sets, for the progress, how many pods Add will be given (the
// patches still under way included).
func (w *PodWaits) Expect(n int) {
	w.mu.Lock()
	w.expected = n
	w.mu.Unlock()
}

func (w *PodWaits) report(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done += n
	if w.o.Progress != nil {
		w.o.Progress(Progress{Current: w.done, Total: max(w.expected, w.added) + w.polled, Elapsed: w.o.Now().Sub(w.start)})
	}
}

// Finish polls the applied restarts and evictions among results, waits for
// the pods added, and returns results (updated in place).
func (w *PodWaits) Finish(results []Result, rc RolloutChecker) []Result {
	var polled []int
	for i := range results {
		// an annotation's result is its pod's wait's (Add) until wg.Wait
		if r := &results[i]; r.Action.Action != ActionAnnotate && r.Outcome == OutcomeApplied && !w.hookedOnly {
			polled = append(polled, i)
		}
	}
	w.mu.Lock()
	w.expected, w.polled = w.added, len(polled) // the patches are all answered
	serial := w.serial
	w.serial = nil
	w.mu.Unlock()
	for _, wait := range serial {
		wait()
	}
	if len(polled) > 0 {
		poller{obs: w.obs, rollouts: rc, deadline: w.deadline, handOver: w.handOver, o: w.o, report: w.report}.pollRollouts(w.ctx, results, polled)
	}
	w.wg.Wait()
	return results
}

// Pause waits d or until ctx is done, on the real clock: the default of
// Config.Sleep.
func Pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitPod verifies one annotated pod: a first read PodDelay after its
// patch was acknowledged, then reads with a backoff until every consumer
// is in-sync, cannot be verified, or the deadline passes. Only a
// successful read after the patch makes it current; nothing observed
// before the patch counts. A pod verified current is then sent its reload
// hook, once. It reports whether the action is settled (current or
// unverifiable).
func waitPod(ctx context.Context, r *Result, obs Verifier, sem chan struct{}, deadline time.Time, o WaitOptions) bool {
	if o.PodDelay > 0 && r.AppliedAt != nil {
		o.Sleep(ctx, r.AppliedAt.Add(o.PodDelay).Sub(o.Now()))
	}
	objects := objectsOf(r.Consumers)
	interval, unread := o.Interval, time.Duration(0)
	for {
		var items []inspect.Use
		var err error
		items, err = verifyPod(ctx, r, obs, sem, objects)
		now := o.Now()
		p, detail, described := converged(*r, items, nil)
		if err != nil && p != reached {
			detail, described = "observe: "+err.Error(), nil
		}
		r.Detail = detail
		r.noteUnverifiable(described)
		switch p {
		case cannotVerify:
			r.Outcome = OutcomeUnverifiable
			return true
		case reached:
			r.Outcome = OutcomeCurrent
			d := metav1.Duration{Duration: now.Sub(r.AppliedAt.Time)}
			r.CurrentAfter = &d
			if r.Action.Hook.sendable() {
				sendHook(ctx, r, o.Hooks)
			}
			return true
		case replaced:
			r.Outcome = OutcomeCurrent
			return true
		}
		if !now.Before(deadline) || ctx.Err() != nil {
			timedOut(r, ctx)
			return false
		}
		// a pod read but not current yet is read again soon (the kubelet
		// is about to write it); one that could not be read, with a longer
		// backoff: a failed exec says nothing of the kubelet's progress
		if err != nil || r.unverifiable != nil {
			unread = min(max(2*unread, interval), unreadMaxInterval*o.MaxInterval)
		} else {
			unread = 0
		}
		o.Sleep(ctx, min(max(interval, unread), deadline.Sub(now)))
		if interval *= 2; interval > o.MaxInterval {
			interval = o.MaxInterval
		}
	}
}

// unreadMaxInterval bounds the backoff of the reads of an annotated pod
// that cannot be read, in MaxIntervals: 16 s at the defaults.
const unreadMaxInterval = 8

// verifyPod reads the pod of r, holding sem (when not nil) meanwhile.
func verifyPod(ctx context.Context, r *Result, obs Verifier, sem chan struct{}, objects []inspect.ObjectKey) ([]inspect.Use, error) {
	if sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return obs.VerifyPod(ctx, r.Target.Namespace, r.Target.Name, objects)
}

// timedOut marks a result the wait gave up on.
func timedOut(r *Result, ctx context.Context) {
	r.Outcome = OutcomeTimeout
	if r.Detail == "" {
		r.Detail = "not current yet"
	}
	if ctx.Err() != nil {
		r.Detail = "interrupted before it was verified: " + r.Detail
	}
}

// objectsOf lists the objects the consumers use, once each.
func objectsOf(cs []Consumer) []inspect.ObjectKey {
	var out []inspect.ObjectKey
	seen := map[inspect.ObjectKey]bool{}
	for _, c := range cs {
		k := inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// poller is what the polls of the restarts and evictions work with: the
// verifier, the rollouts' status, the deadline, the options and the
// progress report (report(n): n more actions are done).
type poller struct {
	obs      Verifier
	rollouts RolloutChecker
	deadline time.Time
	// handOver, when not zero, is when the polls stop and leave what is
	// not verified pending (Config.HandOver)
	handOver time.Time
	o        WaitOptions
	report   func(int)
}

// pollRollouts verifies the restarts and evictions among results (open)
// again at each poll until each is verified or the deadline passes (a
// timeout), or, with handOver, until handOver passes: those not verified
// by then are left pending (Result.Pending) for Recheck.
func (w poller) pollRollouts(ctx context.Context, results []Result, open []int) {
	interval := w.o.Interval
	rolled := map[int]bool{}
	if w.o.FirstDelay > 0 {
		w.o.Sleep(ctx, w.o.FirstDelay)
	}
	for len(open) > 0 {
		var now time.Time
		open, now = w.pollOnce(ctx, results, open, rolled)
		if len(open) == 0 {
			break
		}
		if !w.handOver.IsZero() && !now.Before(w.handOver) && ctx.Err() == nil {
			for _, i := range open {
				results[i].Pending, results[i].deadline = true, w.deadline
			}
			break
		}
		if !now.Before(w.deadline) || ctx.Err() != nil {
			for _, i := range open {
				timedOut(&results[i], ctx)
			}
			break
		}
		w.o.Sleep(ctx, interval)
		// most rollouts take seconds: poll fast first, then back off
		if interval *= 2; interval > w.o.MaxInterval {
			interval = w.o.MaxInterval
		}
	}
}

// pollOnce is one poll of the open restarts and evictions: a rollout's
// new pods have new names, so the namespace is read again each time. It
// returns those still open and the time of the poll; rolled remembers the
// restarts whose rollout was seen complete.
func (w poller) pollOnce(ctx context.Context, results []Result, open []int, rolled map[int]bool) ([]int, time.Time) {
	if w.rolloutsDone(ctx, results, open, rolled) {
		return w.converge(results, open, rolled, w.verifyOpen(ctx, results, open, rolled))
	}
	return w.converge(results, open, rolled, polled{})
}

// polled is what one poll read of the open actions' pods.
type polled struct {
	items []inspect.Use
	err   error
}

// rolloutsDone asks the rollout status of each open restart not yet seen
// rolled out, and tells whether any open action has pods to verify (an
// eviction, or a restart rolled out).
func (w poller) rolloutsDone(ctx context.Context, results []Result, open []int, rolled map[int]bool) bool {
	needVerify := false
	for _, i := range open {
		r := &results[i]
		if r.Action.Action == ActionRestart && !rolled[i] {
			done, msg, err := w.rollouts.RolloutDone(ctx, r.Target.Kind, r.Target.Namespace, r.Target.Name)
			switch {
			case err != nil:
				r.Detail = "rollout status: " + err.Error()
			case done:
				rolled[i] = true
			default:
				r.Detail = strings.TrimSpace(msg)
			}
		}
		if r.Action.Action == ActionEvict || rolled[i] {
			needVerify = true
		}
	}
	return needVerify
}

// verifyOpen reads the uses of the open actions' objects, namespace by
// namespace, verifying only the pods wanted says.
func (w poller) verifyOpen(ctx context.Context, results []Result, open []int, rolled map[int]bool) polled {
	byNS := map[string]map[inspect.ObjectKey]bool{}
	for _, i := range open {
		for _, k := range objectsOf(results[i].Consumers) {
			if byNS[k.Namespace] == nil {
				byNS[k.Namespace] = map[inspect.ObjectKey]bool{}
			}
			byNS[k.Namespace][k] = true
		}
	}
	var out polled
	for ns, set := range byNS {
		keys := make([]inspect.ObjectKey, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		got, err := w.obs.VerifyPods(ctx, ns, keys, func(it inspect.Use) bool { return wanted(results, open, rolled, it) })
		if err != nil {
			out.err = err
			continue
		}
		out.items = append(out.items, got...)
	}
	return out
}

// converge judges each open action against the poll's reads, reports the
// ones settled, and returns those still open and the time of the poll.
func (w poller) converge(results []Result, open []int, rolled map[int]bool, read polled) ([]int, time.Time) {
	now := w.o.Now()
	var still []int
	settledNow := 0
	for _, i := range open {
		r := &results[i]
		if r.Action.Action == ActionRestart && !rolled[i] {
			still = append(still, i)
			continue
		}
		if r.probe != "" {
			if read.err == nil && !r.probed(read.items) {
				r.probe = "" // read, or gone: every pod is read at the next poll
			}
			still = append(still, i)
			continue
		}
		p, detail, described := converged(*r, read.items, w.o.ChangedAgain)
		if read.err != nil && p != reached {
			detail, described = "observe: "+read.err.Error(), nil
		}
		r.noteUnverifiable(described)
		if p == notYet && described != nil && described.State == inspect.StateUnverifiable && r.Action.Action != ActionAnnotate {
			r.probe = described.Pod.Name
		}
		switch p {
		case cannotVerify:
			r.Outcome, r.Detail = OutcomeUnverifiable, detail
		case reached:
			r.Outcome = OutcomeCurrent
			d := metav1.Duration{Duration: now.Sub(r.AppliedAt.Time)}
			r.CurrentAfter = &d
			r.Detail = detail
		default:
			r.Detail = detail
			still = append(still, i)
			continue
		}
		settledNow++
	}
	w.report(settledNow)
	return still, now
}

// probed tells whether the poll's read of r's probe pod (items) still
// could not read it for a cause that may pass.
func (r *Result) probed(items []inspect.Use) bool {
	for _, it := range items {
		if it.Pod.Name == r.probe && it.Object.Namespace == r.Target.Namespace && it.State == inspect.StateUnverifiable && !it.StateCause.Permanent() {
			return true
		}
	}
	return false
}

// Recheck polls once the pending restarts and evictions among results
// (Pending: handed over by a wait with Config.HandOver): a restart's
// rollout status, then its new pods; an eviction's replacements. One
// verified (current or unverifiable) is no longer pending, nor one whose
// deadline (Timeout after its Apply started) has passed: a timeout. The
// others stay pending. It sleeps nowhere: the caller calls it again later.
// Results are updated in place and returned.
func Recheck(ctx context.Context, results []Result, obs Verifier, rc RolloutChecker, o WaitOptions) []Result {
	o.defaults()
	var open []int
	for i := range results {
		if results[i].Pending {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return results
	}
	still, now := poller{obs: obs, rollouts: rc, o: o, report: func(int) {}}.pollOnce(ctx, results, open, map[int]bool{})
	for _, i := range open {
		results[i].Pending = false
	}
	for _, i := range still {
		r := &results[i]
		if now.Before(r.deadline) && ctx.Err() == nil {
			r.Pending = true
			continue
		}
		timedOut(r, ctx)
	}
	return results
}

// wanted tells whether a use belongs to an open action of the polls: a
// pod of a workload whose rollout has finished, or an eviction's
// replacement (annotated pods are each read by waitPod).
func wanted(results []Result, open []int, rolled map[int]bool, it inspect.Use) bool {
	for _, i := range open {
		r := results[i]
		if it.Object.Namespace != r.Target.Namespace {
			continue
		}
		if r.probe != "" && it.Pod.Name != r.probe {
			continue
		}
		switch r.Action.Action {
		case ActionRestart:
			if rolled[i] && it.Workload.GroupKind() == r.Target.Kind && it.Workload.Name == r.Target.Name && r.Action.verified(it.Pod.Name) {
				return true
			}
		case ActionEvict:
			if r.replacementUIDs[it.Pod.UID] {
				return true
			}
		}
	}
	return false
}

// converged checks the consumers of one action against fresh observations;
// again is WaitOptions.ChangedAgain. It returns how far the action is, what
// the wait saw last, and the use that detail describes (nil for none).
func converged(r Result, items []inspect.Use, again func(inspect.ObjectKey) bool) (progress, string, *inspect.Use) {
	switch r.Action.Action {
	case ActionAnnotate:
		var renewed []string
		for _, c := range r.Consumers {
			it, how := find(items, c)
			switch how {
			case useGone:
				return notYet, fmt.Sprintf("pod %s: %s of %s %q by %s no longer found", c.Pod, consumerWhere(c), strings.ToLower(c.Object.Kind), c.Object.Name, c.Container), nil
			case useOfNewPod:
				if !contains(renewed, c.Pod) {
					renewed = append(renewed, c.Pod)
				}
			}
			if unverifiableForGood(it) {
				return cannotVerify, "annotated, but cannot be verified: " + describe(it), &it
			}
			if !settled(it) {
				return notYet, describe(it), &it
			}
		}
		if len(renewed) > 0 {
			return replaced, fmt.Sprintf("pod %s was re-created (new UID) after the plan: its replacement read the object when it started and is current; the annotation did not make it so", strings.Join(renewed, ", ")), nil
		}
		return reached, "", nil
	case ActionRestart:
		return restartConverged(r, items, again)
	case ActionEvict:
		return evictConverged(r, items)
	}
	return reached, "", nil
}

// restartConverged checks the pods of a restarted workload: each one the
// plan verifies replaced and settled (or stale only for an object whose
// data changed again after the plan, by again), and for a StatefulSet each
// planned pod seen.
func restartConverged(r Result, items []inspect.Use, again func(inspect.ObjectKey) bool) (progress, string, *inspect.Use) {
	seen := map[string]bool{}
	var superseded []string
	for _, it := range items {
		if it.Workload.GroupKind() != r.Target.Kind || it.Workload.Name != r.Target.Name || it.Object.Namespace != r.Target.Namespace {
			continue
		}
		if !coversObject(r.Consumers, it) || !r.Action.verified(it.Pod.Name) {
			continue
		}
		if old := r.podUIDs[it.Pod.Name]; old != "" && old == it.Pod.UID {
			return notYet, fmt.Sprintf("pod %s has not been replaced yet", it.Pod.Name), nil
		}
		seen[it.Pod.Name] = true
		switch {
		case unverifiableForGood(it):
			return cannotVerify, "rolled out, but cannot be verified: " + describe(it), &it
		case it.State == inspect.StateStale && again != nil && again(it.Key()):
			superseded = append(superseded, fmt.Sprintf("%s (%s/%s)", it.Pod.Name, strings.ToLower(it.Object.Kind), it.Object.Name))
		case !settled(it):
			return notYet, describe(it), &it
		}
	}
	if len(seen) == 0 && namedOnly(r.Consumers) {
		return reached, "rolled out; its pod spec does not read the object, so the rollout is all there is to verify", nil
	}
	if len(seen) == 0 {
		return notYet, "no running pod of " + r.Target.String() + " observed yet", nil
	}
	if r.Target.Kind == "StatefulSet" {
		// its pods keep their names: each one the plan replaces must be seen
		for _, p := range r.Pods {
			if !seen[p] && !contains(r.OutsideSelector, p) {
				return notYet, fmt.Sprintf("pod %s not observed yet", p), nil
			}
		}
	}
	var notes []string
	if len(r.OutsideSelector) > 0 {
		notes = append(notes, fmt.Sprintf("not verified: %s, outside -l", listPods(r.OutsideSelector)))
	}
	if len(superseded) > 0 {
		notes = append(notes, fmt.Sprintf("rolled out after the plan; the data changed again since, and %s read an earlier version: that edit is a change of its own",
			strings.Join(superseded, ", ")))
	}
	return reached, strings.Join(notes, "; "), nil
}

// Named tells whether a consumer of the action is ModeNamed: the action
// restarts a workload for Reloader's reload annotation.
func (a Action) Named() bool {
	return slices.ContainsFunc(a.Consumers, func(c Consumer) bool { return c.Mode == ModeNamed })
}

// namedOnly tells whether every consumer of a restart is ModeNamed.
func namedOnly(cs []Consumer) bool {
	for _, c := range cs {
		if c.Mode != ModeNamed {
			return false
		}
	}
	return len(cs) > 0
}

// evictConverged checks the replacements of an evict action: each must be
// observed, and its uses of the action's objects in-sync or current.
func evictConverged(r Result, items []inspect.Use) (progress, string, *inspect.Use) {
	seen := map[string]bool{}
	for _, it := range items {
		if !r.replacementUIDs[it.Pod.UID] || it.Object.Namespace != r.Target.Namespace || !coversObject(r.Consumers, it) {
			continue
		}
		seen[it.Pod.UID] = true
		if unverifiableForGood(it) {
			return cannotVerify, "evicted and replaced, but cannot be verified: " + describe(it), &it
		}
		if !settled(it) {
			return notYet, describe(it), &it
		}
	}
	if len(seen) < len(r.replacementUIDs) {
		return notYet, fmt.Sprintf("%d of %d replacement pods observed (%s)", len(seen), len(r.replacementUIDs), strings.Join(r.Replacements, ", ")), nil
	}
	return reached, "", nil
}

// verified reports whether the wait verifies the pod of this name for a
// restart: StatefulSet pods keep their names, so only the pods the restart
// replaces (not those below a partition) within -l count; other workloads'
// new pods have new names, and all count.
func (a Action) verified(pod string) bool {
	if a.Action != ActionRestart || a.Target.Kind != "StatefulSet" || len(a.Pods) == 0 {
		return true
	}
	return contains(a.Pods, pod) && !contains(a.OutsideSelector, pod)
}

func coversObject(cs []Consumer, it inspect.Use) bool {
	for _, c := range cs {
		if c.Object.Kind == it.Object.Kind && c.Object.Name == it.Object.Name {
			return true
		}
	}
	return false
}

// How a consumer was found among fresh observations.
type foundAs int

const (
	useGone     foundAs = iota // no use with its identity
	useSame                    // the same use of the same pod
	useOfNewPod                // the same use of a pod of the same name with another UID
)

// find looks up the consumer's use by its identity (namespace, pod,
// container, mode, object, volume and mount path, or variable). A pod of the
// same name with another UID is a re-created pod: reported as such, never
// taken for the one the plan saw. An unknown UID on either side matches.
func find(items []inspect.Use, c Consumer) (inspect.Use, foundAs) {
	want := c.ID()
	want.PodUID = ""
	var other *inspect.Use
	for i, it := range items {
		id := it.ID()
		uid := id.PodUID
		id.PodUID = ""
		if id != want {
			continue
		}
		if c.PodUID == "" || uid == "" || uid == c.PodUID {
			return it, useSame
		}
		if other == nil {
			other = &items[i]
		}
	}
	if other != nil {
		return *other, useOfNewPod
	}
	return inspect.Use{}, useGone
}

// consumerWhere is the mode and, where known, the mount path or variable.
func consumerWhere(c Consumer) string {
	if w := c.Where(); w != "" {
		return string(c.Mode) + " " + w
	}
	return string(c.Mode)
}

func describe(it inspect.Use) string {
	s := fmt.Sprintf("pod %s container %s %s of %s %q: %s", it.Pod.Name, it.ContainerName(), consumerWhere(ConsumerOf(it)), strings.ToLower(it.Object.Kind), it.Object.Name, it.State)
	if it.StateReason != "" {
		s += " (" + it.StateReason + ")"
	}
	return s
}
