package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// roundIn checks the actions earlier rounds handed over, then reads the
// namespace once, keeps the uses that read a changed key of a workload
// that may be acted on, and has the refresh engine make them current.
func (l *Loop) roundIn(ctx context.Context, ns string, changes map[inspect.ObjectKey]*pending) {
	defer l.endStep(ns, len(changes) > 0)
	defer l.closeRound(ns, l.openRound(ns))
	l.verifyHandedOver(ctx, ns) // before the changes: a restart it sees complete no longer holds theirs
	if len(changes) == 0 {
		return
	}
	l.restarts.beginRound(ns)
	l.joinPutBack(changes)
	l.leaveToVerifications(ns, changes)
	keys := slices.SortedFunc(maps.Keys(changes), compareKeys)
	if l.ignoreOutOfScope(ns, changes, keys) {
		l.restarts.settle(ns, l.Now()) // its changes are dropped: nothing is owed there
		return
	}
	for _, k := range keys {
		if p := changes[k]; !p.existing && !p.retry {
			first := p.first
			l.emit(Event{Kind: EventChange, Object: &k, Keys: p.change.Keys, Edits: p.edits, FirstEdit: &first, Message: changeMessage(p.change)})
		}
	}
	rd := l.read(ctx, ns, changes, keys)
	if (rd == nil || (len(rd.kept) > 0 || len(rd.named) > 0) && !l.act(ctx, rd)) && (ctx.Err() != nil || l.anyPending(keys)) {
		return // nothing decided, the changes put back: the restarts owed stay as they were
	}
	l.restarts.settle(ns, l.Now()) // decided, or the changes dropped (reported) for good
}

// anyPending tells whether a change of one of keys is pending: put back
// by the round (a failure that may pass), or edited since.
func (l *Loop) anyPending(keys []inspect.ObjectKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(keys, func(k inspect.ObjectKey) bool { return l.pending[k] != nil })
}

// joinPutBack merges into the round's changes the copies put back since
// they were taken (by the verifications that just ended: a restart that
// timed out is verified again, never sent again) of the objects the round
// acts on: one change per object, knowing what was sent for it. A new
// edit seen meanwhile stays pending, for the next round.
func (l *Loop) joinPutBack(changes map[inspect.ObjectKey]*pending) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, q := range changes {
		if p := l.pending[k]; p != nil && p.retry {
			q.join(*p)
			delete(l.pending, k)
		}
	}
}

// leaveToVerifications drops from each change's workloads (a retry's
// only) those whose restart or eviction for the same edit of the object,
// or a later one, is handed over and not verified yet: its new pods read
// that edit, its verification says how it ends and puts the workload back
// to be verified again (never sent again) if it times out. Acting on it
// here would restart it twice for one change. A check of every use (a
// resume's) is left only to a verification of every use: one of a live
// edit verifies, and verifies again, the uses of that edit's keys, and an
// edit no leader acted on, of a key only an env var reads, would be left
// to nothing if its rollout does not complete.
func (l *Loop) leaveToVerifications(ns string, changes map[inspect.ObjectKey]*pending) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, p := range changes {
		if p.only == nil {
			continue
		}
		for _, v := range l.verifying[ns] {
			// a check of every use (a resume's, --sync-existing's) is
			// covered only by a verification of one: the others verify
			// the uses of their edits' keys alone
			if vp := v.changes[k]; vp != nil && vp.edit >= p.edit && (vp.existing || !p.existing) {
				for _, w := range v.workloadsOf(k) {
					delete(p.only, w)
				}
			}
		}
	}
}

// roundRead is what a round read of its namespace: the uses of the changed
// objects (items), those it may act on (kept), the restarts Reloader's
// reload lists ask for (named) and the workloads' annotations (meta).
type roundRead struct {
	ns      string
	changes map[inspect.ObjectKey]*pending
	keys    []inspect.ObjectKey
	snap    *inspect.Snapshot
	items   []inspect.Use
	kept    []inspect.Use
	named   []refresh.Action
	meta    map[inspect.WorkloadRef]subjectMeta
}

// read reads the namespace once and keeps the uses that read a changed key
// of a workload that may be acted on; nil when the round cannot go on (it
// was reported, and put back when the failure may pass).
func (l *Loop) read(ctx context.Context, ns string, changes map[inspect.ObjectKey]*pending, keys []inspect.ObjectKey) *roundRead {
	rd := &roundRead{ns: ns, changes: changes, keys: keys}
	var err error
	// pods, owners, ConfigMaps and Secrets listed (the cache keeps only
	// digests of the objects' values); of the objects, only those a pod
	// uses and the changed ones are kept, so that a round holds the data
	// its consumers read, not its namespace's
	rd.snap, err = inspect.Load(ctx, l.Client, l.loadOptions(ns, keys))
	if err != nil {
		l.failed(changes, keys, fmt.Errorf("reading namespace %s: %w", ns, err))
		return nil
	}
	if changes, keys = l.objectsInScope(rd.snap, changes, keys); len(keys) == 0 {
		return nil
	}
	rd.changes, rd.keys = changes, keys
	rd.items = l.build(rd.snap, keys)
	rd.named, err = l.namedRestarts(ctx, ns, rd.snap, changes)
	if err != nil && refresh.Transient(err) { // the namespace is not read whole: the round is tried again
		l.failed(changes, keys, fmt.Errorf("listing the workloads of namespace %s: %w", ns, err))
		return nil
	}
	if err != nil {
		l.emit(Event{Kind: EventError, Message: fmt.Sprintf("reading the workloads of namespace %s: %v; a workload that names an object edited now "+
			"in Reloader's reload annotation without reading it in its pod spec is not restarted for this edit: `kubectl rollout restart` it by hand", ns, err)})
	}
	rd.kept = l.concerned(rd.items, changes, keys, rd.named)
	rd.kept, rd.meta = l.selected(ctx, rd.snap, rd.kept, l.emit)
	if err := transientMeta(rd.meta); err != nil {
		l.failed(changes, keys, err)
		return nil
	}
	rd.kept = l.afterRollouts(ctx, rd.kept, changes)
	return rd
}

// act has the refresh engine plan and apply what makes the kept uses
// current, with the named restarts, the on-change policy and the gate, and
// records what it made current. False when it decided nothing (the plan
// failed: reported, and put back when the failure may pass).
func (l *Loop) act(ctx context.Context, rd *roundRead) bool {
	onRestart := restartsOnChange(rd.meta, rd.ns, l.ReloaderOnChange)
	spared := restarting(rd.named) // no early annotation: folded into their restarts
	for wk := range onRestart {
		spared[wk] = true
	}
	cluster := l.Cluster // the hooks' workload reads answered from the round's
	cluster.Annotations = readAnnotations{meta: rd.meta, next: cluster.Annotations}
	cfg := l.Refresh
	cfg.HandOver = l.VerifyInRound // what is not verified by then is verified by later rounds (verifying.go)
	r := &refresh.Refresher{Config: cfg, Cluster: cluster, Restarting: spared, ChangedAgain: l.changedAgain, HookInSync: true}
	plan, err := r.Plan(ctx, rd.snap, rd.kept)
	if err != nil {
		l.results(plan.Abandon(), rd.changes, rd.snap)
		l.failed(rd.changes, rd.keys, err)
		return false
	}
	now := l.digestsOf(rd.snap)
	plan.Actions = withNamed(plan.Actions, rd.named, rd.items)
	plan.Actions = l.policyRestarts(ctx, plan.Actions, onRestart, rd.items, rd.changes, l.madeCurrent(rd, now))
	plan.Actions = noRestartAgain(plan.Actions, rd.changes)
	unread := l.retryUnread(rd, plan)
	for _, a := range unread {
		l.restarts.undecided(a.Target)
	}
	held := append(l.gate(ctx, plan, rd.changes, rd.meta), unread...)
	for i := range plan.Actions {
		if a := plan.Actions[i]; a.Action != refresh.ActionNone {
			l.emit(Event{Kind: EventAction, Action: &a, Message: a.Reason})
		}
	}
	all := r.Apply(ctx, plan, nil)
	l.restarts.sent(all)
	l.pace.sent(all, l.Now(), l.Shadow)
	results := l.handOver(rd, all, held, now)
	l.results(results, rd.changes, rd.snap)
	l.retryFailed(ctx, rd.ns, rd.changes, rd.kept, results)
	l.recheckTimedOut(rd.ns, rd.changes, rd.kept, results, nil)
	l.record(ctx, rd.snap, withRestarted(rd.kept, func() []inspect.Use { return l.allItems(rd.snap) }, all), rd.meta, append(all, heldResults(held)...), rd.changes, now)
	return ctx.Err() == nil
}

// onlyKey names a workload in a change's `only` set, as an action's
// Target does (its kind qualified with the group when not built in).
func onlyKey(w inspect.WorkloadRef) string { return w.GroupKind() + "/" + w.Name }

// compareKeys orders objects by namespace, kind and name: a total order,
// so that what is said of several objects comes in one order every time.
func compareKeys(a, b inspect.ObjectKey) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name))
}

func changeMessage(c Change) string {
	switch {
	case c.Deleted:
		return "deleted"
	case c.Created:
		return "created"
	}
	return "keys changed: " + strings.Join(c.Keys, ", ")
}

// build returns the uses of the changed objects. An object that is gone
// and that no pod consumes has no uses: it is reported and left out.
func (l *Loop) build(snap *inspect.Snapshot, keys []inspect.ObjectKey) []inspect.Use {
	names := slices.Clone(keys)
	for len(names) > 0 {
		items, err := inspect.Build(snap, inspect.BuildOptions{Names: names, Secrets: l.Secrets && snap.SecretsListed, IncludeSystem: l.IncludeSystem})
		var nf *inspect.NotFoundError
		if !errors.As(err, &nf) {
			if err != nil {
				l.failed(nil, names, err)
				return nil
			}
			return items
		}
		l.emit(Event{Kind: EventIgnored, Object: &nf.Key, Message: "gone, and no pod consumes it"})
		names = slices.DeleteFunc(names, func(k inspect.ObjectKey) bool { return k == nf.Key })
	}
	return nil
}

// concerned keeps the uses that read a changed key (every use for
// --sync-existing) and reports each object none of whose uses does and no
// named restart is for.
func (l *Loop) concerned(items []inspect.Use, changes map[inspect.ObjectKey]*pending, keys []inspect.ObjectKey, named []refresh.Action) []inspect.Use {
	kept, acted := concernedItems(items, changes)
	for _, a := range named {
		for _, c := range a.Consumers {
			acted[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}] = true
		}
	}
	for _, k := range keys {
		if acted[k] || changes[k].existing || changes[k].retry {
			continue
		}
		msg := "no pod consumes it"
		if slices.ContainsFunc(items, func(it inspect.Use) bool { return it.Key() == k }) {
			msg = "no consumer reads the changed keys"
		}
		l.emit(Event{Kind: EventIgnored, Object: &k, Keys: changes[k].change.Keys, Message: msg})
	}
	return kept
}

// concernedItems returns the items that a change concerns (Concerns; for a
// change of --sync-existing, every item of the object; for a workload
// verified again after its action timed out, every item of its: a restart
// that was to make every use of its pods current and whose rollout does
// not complete leaves stale what it was to make current, whatever key) and
// the objects that have at least one.
func concernedItems(items []inspect.Use, changes map[inspect.ObjectKey]*pending) ([]inspect.Use, map[inspect.ObjectKey]bool) {
	var kept []inspect.Use
	acted := map[inspect.ObjectKey]bool{}
	for _, it := range items {
		p := changes[it.Key()]
		if p == nil || it.Pod.Name == "" || (p.only != nil && !p.only[onlyKey(it.Workload)]) {
			continue
		}
		if _, ok := Concerns(it, p.change); ok || p.existing || p.recheck[onlyKey(it.Workload)] {
			kept = append(kept, it)
			acted[it.Key()] = true
		}
	}
	return kept, acted
}

// failed reports a round that could not be completed for keys: a
// transient failure is tried again after the namespace's backoff, any
// other is reported and left until an object changes again.
func (l *Loop) failed(changes map[inspect.ObjectKey]*pending, keys []inspect.ObjectKey, err error) {
	if changes != nil && refresh.Transient(err) {
		only := map[inspect.ObjectKey]map[string]bool{}
		for _, k := range keys {
			only[k] = changes[k].only
		}
		l.retryLater(keys[0].Namespace, changes, only, err.Error(), false)
		return
	}
	for _, k := range keys {
		l.emit(Event{Kind: EventError, Object: &k, Message: fmt.Sprintf("%v; not tried again until it changes again: %s", err, finishHint(k))})
	}
}

// retryFailed puts back, for their workloads only, the changes whose
// actions failed for a transient reason, or were not started after another
// failed (evictions: refresh.ApplyEvictions); a failed eviction that will
// not pass is said once, with the command that finishes it.
// The next round verifies again before it acts, so a consumer made current
// meanwhile costs nothing, and a pod already evicted (terminating: its
// uses not applicable) or replaced is not evicted again.
func (l *Loop) retryFailed(ctx context.Context, ns string, changes map[inspect.ObjectKey]*pending, kept []inspect.Use, results []refresh.Result) {
	if ctx.Err() != nil { // interrupted, not failed: the next leader resumes it from the records
		return
	}
	only, why := workloadsOf(changes, kept, results, func(r refresh.Result) bool { return r.Transient })
	if len(only) > 0 {
		at := l.retryLater(ns, changes, only, why, false)
		for _, r := range results {
			if isRestart(r.Action) && r.Transient {
				l.restarts.owe(r.Target, moveFail, Hold{Until: at}, l.Now())
			}
		}
	}
	for _, r := range results {
		if r.Action.Action != refresh.ActionEvict || r.Outcome != refresh.OutcomeFailed || r.Transient {
			continue
		}
		for _, k := range consumedObjects(r.Action, changes) {
			l.emit(Event{Kind: EventError, Object: &k, Message: fmt.Sprintf("%s: pods %s not evicted (%s); not tried again until it changes again: %s",
				r.Target, strings.Join(r.NotEvicted, ", "), r.Error, finishHint(k))})
		}
	}
}

// recheckTimedOut puts back the changes whose actions were sent and not
// verified within --timeout (a slow rollout, pods slow to become ready):
// their workloads are verified again after a backoff, and reported current
// once they are; an action is never sent twice for one change. actedOn
// (nil: none) tells the workloads of an object that a newer change acts
// on (or holds) on its own: they are left to it.
func (l *Loop) recheckTimedOut(ns string, changes map[inspect.ObjectKey]*pending, kept []inspect.Use, results []refresh.Result, actedOn func(inspect.ObjectKey, string) bool) {
	only, why := workloadsOf(changes, kept, results, func(r refresh.Result) bool { return r.Outcome == refresh.OutcomeTimeout })
	for k, ws := range only {
		for w := range ws {
			switch {
			case actedOn != nil && actedOn(k, w):
				delete(ws, w)
			case changes[k].recheck[w]: // timed out again when verified again: once is enough
				delete(ws, w)
				l.emit(Event{Kind: EventError, Object: &k, Message: fmt.Sprintf("%s is still not current after its action for this change timed out twice; not tried again until it changes: %s", w, finishHint(k))})
			}
		}
		if len(ws) == 0 {
			delete(only, k)
		}
	}
	if len(only) > 0 {
		l.retryLater(ns, changes, only, why+"; verified again, not sent again", true)
	}
}

// workloadsOf are, per changed object, the workloads (by onlyKey) of the
// results match picks, and the last such result's error or detail.
func workloadsOf(changes map[inspect.ObjectKey]*pending, kept []inspect.Use, results []refresh.Result, match func(refresh.Result) bool) (map[inspect.ObjectKey]map[string]bool, string) {
	workloadOf := workloadsByPod(kept)
	only := map[inspect.ObjectKey]map[string]bool{}
	var why string
	for _, r := range results {
		if !match(r) {
			continue
		}
		why = r.Target.String() + ": " + cmp.Or(r.Error, r.Detail, string(r.Outcome))
		for _, c := range r.Consumers {
			k := inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
			if changes[k] == nil {
				continue
			}
			if only[k] == nil {
				only[k] = map[string]bool{}
			}
			only[k][workloadOfConsumer(r, c, workloadOf)] = true
		}
	}
	return only, why
}

// workloadsByPod maps the pods of the uses to their workloads (onlyKey).
func workloadsByPod(uses []inspect.Use) map[string]string {
	out := map[string]string{}
	for _, it := range uses {
		out[it.Pod.Name] = onlyKey(it.Workload)
	}
	return out
}

// workloadOfConsumer is the workload (onlyKey) that result r acted on for
// consumer c: its target, or for a pod's action the pod's workload.
func workloadOfConsumer(r refresh.Result, c refresh.Consumer, workloadOf map[string]string) string {
	if w := workloadOf[c.Pod]; r.Target.Kind == "Pod" && w != "" {
		return w
	}
	return r.Target.Kind + "/" + r.Target.Name
}

// rechecked tells whether a is for a change whose earlier action timed out.
func rechecked(a refresh.Action, changes map[inspect.ObjectKey]*pending) bool {
	for _, k := range consumedObjects(a, changes) {
		if len(changes[k].recheck) > 0 {
			return true
		}
	}
	return false
}

// noRestartAgain turns the restart or eviction of a workload whose action
// for the same change already timed out into a manual action: it was
// restarted once for it, and what keeps it from being current is for a
// person to see (a rollout that does not progress, pods that crash).
func noRestartAgain(actions []refresh.Action, changes map[inspect.ObjectKey]*pending) []refresh.Action {
	for i, a := range actions {
		if a.Action != refresh.ActionRestart && a.Action != refresh.ActionEvict {
			continue
		}
		for _, k := range consumedObjects(a, changes) {
			if changes[k].recheck[a.Target.Kind+"/"+a.Target.Name] {
				actions[i].Action = refresh.ActionManual
				actions[i].Reason = fmt.Sprintf("the %s of %s for this change was sent and it is still not current: not sent again; see `%s` and its pods' events",
					a.Action, a.Target, rolloutStatusCommand(a.Target))
				break
			}
		}
	}
	return actions
}

// retryLater puts the changes back (each for the workloads of only[k]; nil:
// every use), due after the namespace's next backoff, and reports it; with
// recheck those workloads are verified again, never restarted again.
func (l *Loop) retryLater(ns string, changes map[inspect.ObjectKey]*pending, only map[inspect.ObjectKey]map[string]bool, why string, recheck bool) time.Time {
	attempt, delay := l.takeStep(ns, !recheck)
	at := l.Clock().Add(delay)
	for _, k := range slices.SortedFunc(maps.Keys(only), compareKeys) {
		p := *changes[k]
		p.only = only[k]
		if recheck {
			p.recheck = joinTold(maps.Clone(p.recheck), maps.Clone(only[k]))
		}
		l.requeueAt(p, at)
		l.emit(Event{Kind: EventRetry, Object: &k, Keys: p.change.Keys,
			Message: fmt.Sprintf("%s; tried again in %s (attempt %d)", why, delay.Round(100*time.Millisecond), attempt)})
	}
	return at
}

// takeStep is the backoff step of the round in ns: taken at its first
// change put back, the same for the others (one step a round, however many
// of its changes are put back); failed: put back for a transient failure.
func (l *Loop) takeStep(ns string, failed bool) (attempt int, delay time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.steps[ns]
	if st == nil {
		st = &retryStep{attempt: l.retries.NumRequeues(ns) + 1, delay: l.jitter(l.retries.When(ns), retryJitter)}
		l.steps[ns] = st
	}
	st.failed = st.failed || failed
	return st.attempt, st.delay
}

// endStep ends the round in ns: unless it put changes back for a
// transient failure, the namespace answered and its backoff starts over;
// a round that took no change and put none back (it only checked what
// was handed over) says nothing of it.
func (l *Loop) endStep(ns string, took bool) {
	l.mu.Lock()
	st := l.steps[ns]
	delete(l.steps, ns)
	l.mu.Unlock()
	if st == nil && !took {
		return
	}
	if st == nil || !st.failed {
		l.retries.Forget(ns)
	}
}

// retryStep is the backoff a round takes when it puts changes back.
type retryStep struct {
	attempt int
	delay   time.Duration
	// failed: a change was put back for a transient failure (not only to
	// verify a timed-out action again): the backoff goes on growing
	failed bool
}

// finishHint is the command that makes the consumers of k current.
func finishHint(k inspect.ObjectKey) string {
	return fmt.Sprintf("`kubectl cmsync refresh %s/%s -n %s` finishes it", strings.ToLower(k.Kind), k.Name, k.Namespace)
}

// results reports how each action ended and, once verified, the time from
// the first edit it answers to; an edit whose consumers needed nothing
// (already current) ends in a result too, which says why.
func (l *Loop) results(results []refresh.Result, changes map[inspect.ObjectKey]*pending, snap *inspect.Snapshot) {
	for i := range results {
		res := results[i]
		if res.Action.Action == refresh.ActionNone {
			switch {
			case rechecked(res.Action, changes): // the timed-out action made it current after all
				l.emit(Event{Kind: EventResult, Action: &res.Action, Outcome: refresh.OutcomeCurrent,
					Message: "verified current after its action for this change timed out"})
			case !firstEdit(res.Consumers, changes).IsZero(): // nothing was done for a change seen: say why
				l.emit(noneResult(res.Action, firstEdit(res.Consumers, changes), snap))
			}
			continue
		}
		e := Event{Kind: EventResult, Action: &res.Action, Outcome: res.Outcome, Message: resultMessage(res), ReloadHook: res.Hook}
		if res.CurrentAfter != nil {
			d := res.CurrentAfter.Duration
			e.CurrentAfter = &d
			if first := firstEdit(res.Consumers, changes); res.AppliedAt != nil && !first.IsZero() {
				since := res.AppliedAt.Add(d).Sub(first)
				e.SinceChange = &since
			}
		}
		l.emit(e)
	}
}

// noneResult is the result of an action none for a change first edited
// at first: current when every consumer is (and, when its pod was
// created after that edit, that is why), else not-applied with the
// plan's reason (nothing consumes it, optional and absent, ...).
func noneResult(a refresh.Action, first time.Time, snap *inspect.Snapshot) Event {
	e := Event{Kind: EventResult, Action: &a, Outcome: refresh.OutcomeNotApplied, Message: a.Reason}
	for _, c := range a.Consumers {
		if c.State != inspect.StateCurrent && c.State != inspect.StateInSync && c.State != inspect.StateNA {
			return e
		}
	}
	e.Outcome = refresh.OutcomeCurrent
	if a.Target.Kind != "Pod" {
		return e
	}
	for i := range snap.Pods {
		p := &snap.Pods[i]
		if p.Name == a.Target.Name && p.Namespace == a.Target.Namespace && p.CreationTimestamp.After(first) {
			e.Message = fmt.Sprintf("%s: pod %s was created at %s, after the edit at %s, and read the new data when it started; nothing to do",
				a.Reason, p.Name, p.CreationTimestamp.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339))
			return e
		}
	}
	e.Message = a.Reason + ": verified, it reads the data of now; nothing to do"
	return e
}

// resultMessage is what the wait saw (or the error); the reason was the
// action's line.
func resultMessage(r refresh.Result) string {
	msg := r.Detail
	if r.Error != "" {
		msg = r.Error
	}
	if h := r.Hook.String(); h != "" {
		msg = strings.TrimPrefix(msg+"; "+h, "; ")
	}
	return msg
}

// firstEdit is the earliest first edit of the objects the consumers read.
func firstEdit(cs []refresh.Consumer, changes map[inspect.ObjectKey]*pending) time.Time {
	var first time.Time
	for _, c := range cs {
		p := changes[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}]
		if p != nil && !p.existing && (first.IsZero() || p.first.Before(first)) {
			first = p.first
		}
	}
	return first
}

// openRound starts collecting the events of the round in ns, for Round,
// and returns when it started. One namespace is never in two rounds at
// once (queue.go), so its events are this round's.
func (l *Loop) openRound(ns string) time.Time {
	if l.Round == nil {
		return time.Time{}
	}
	l.emitMu.Lock()
	if l.rounds == nil {
		l.rounds = map[string][]Event{}
	}
	l.rounds[ns] = []Event{}
	l.emitMu.Unlock()
	return l.Clock()
}

// closeRound hands the round's events to Round, with those of the
// earlier rounds whose handed-over actions it saw end; a round that
// handed actions over keeps its events for the round that sees them end,
// so that one Round tells an action and how it ended, as when the round
// waited for it.
func (l *Loop) closeRound(ns string, started time.Time) {
	if l.Round == nil {
		return
	}
	l.emitMu.Lock()
	evs := l.rounds[ns]
	delete(l.rounds, ns)
	if from, ok := l.roundFrom[ns]; ok {
		started = from
		delete(l.roundFrom, ns)
	}
	r := Round{Namespace: ns, Started: started, Ended: l.Clock(), Events: evs}
	v := l.handing[ns]
	delete(l.handing, ns)
	if v != nil {
		v.round = &r
	}
	l.emitMu.Unlock()
	if v == nil {
		l.Round(r)
	}
}
