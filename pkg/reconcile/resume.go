package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// heldResults are the held actions as results that did not complete: their
// consumers are not recorded current.
func heldResults(held []refresh.Action) []refresh.Result {
	out := make([]refresh.Result, 0, len(held))
	for _, a := range held {
		out = append(out, refresh.Result{Action: a, Outcome: refresh.OutcomeNotApplied, Error: "held back"})
	}
	return out
}

// completed tells whether a result leaves its consumers as current as
// cmsync can make them: nothing to do, or the action applied (verified,
// or unverifiable and applied all the same). A manual action, a failure,
// a timeout, a held restart or one whose verification is still pending
// is not: the next controller checks again.
func completed(r refresh.Result) bool {
	switch {
	case r.Action.Action == refresh.ActionNone:
		return true
	case r.Action.Action == refresh.ActionManual || r.Error != "" || r.Pending:
		return false
	}
	return r.Outcome == refresh.OutcomeCurrent || r.Outcome == refresh.OutcomeApplied || r.Outcome == refresh.OutcomeUnverifiable
}

// record writes, on each subject of the round's uses whose actions all
// completed, the digests of the objects the round made current. Nothing is
// recorded without DigestKey or in a dry run.
// now are the digests of what the snapshot's consumers read (digestsOf).
func (l *Loop) record(ctx context.Context, snap *inspect.Snapshot, kept []inspect.Use, meta map[inspect.WorkloadRef]subjectMeta, results []refresh.Result,
	changes map[inspect.ObjectKey]*pending, now func() map[subject]Record) {
	if !l.recording(ctx) {
		return
	}
	bySubject := recordable(kept, results)
	leaveUndelivered(bySubject, snap, changes, replacedBy(results))
	if len(bySubject) > 0 {
		l.forgetUnwritten(kept[0].Object.Namespace, now())
		l.writeRecords(ctx, bySubject, now(), replacedBy(results), func(s subject) (string, bool) {
			return l.recordOf(s, meta, snap), true
		})
	}
}

// leaveUndelivered drops from the subjects' objects (record keys) those
// the round's snapshot holds at another version than the change it acts
// on: an edit the watch has not delivered yet (a cut), which the round
// did not check for the uses the change does not concern. The round that
// acts on that edit records them. A workload a completed restart replaced
// read the snapshot's data, and keeps them.
func leaveUndelivered(bySubject map[subject][]string, snap *inspect.Snapshot, changes map[inspect.ObjectKey]*pending, replaced map[string]bool) {
	for s, keys := range bySubject {
		if replaced[onlyKey(s.workload)] {
			continue
		}
		bySubject[s] = slices.DeleteFunc(keys, func(k string) bool {
			o := recordObject(s.Namespace, k)
			p, v := changes[o], snap.Object(o).ResourceVersion
			return p != nil && p.change.Version != "" && v != "" && v != p.change.Version
		})
	}
}

// forgetUnwritten drops the records not written, and the digests kept of
// restarts that timed out (sentWith), of the subjects of ns that no longer
// read anything (now: every subject with a pod in the round's snapshot): a
// pod replaced, a workload deleted.
func (l *Loop) forgetUnwritten(ns string, now map[subject]Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, kept := range []map[subject]Record{l.unwritten, l.held, l.sentWith} {
		for s := range kept {
			if _, reads := now[s]; s.Namespace == ns && !reads {
				delete(kept, s)
			}
		}
	}
}

// digestsOf computes, once and when first asked, the digests of what the
// snapshot's consumers read.
func (l *Loop) digestsOf(snap *inspect.Snapshot) func() map[subject]Record {
	return sync.OnceValue(func() map[subject]Record { return digests(l.DigestKey, snap, l.allItems(snap)) })
}

// recording tells whether records are written: with DigestKey, in a real
// run that goes on.
func (l *Loop) recording(ctx context.Context) bool {
	return len(l.DigestKey) > 0 && !l.dryRun() && ctx.Err() == nil
}

// recordable are, by subject, the objects (record keys) of the uses kept
// whose actions all completed. An action that did not complete keeps from
// the record the objects its consumers read, on each subject it concerns:
// a pod's, or for a workload's restart every one of the workload's; the
// objects whose own actions completed are recorded all the same, so that
// the next controller does not take their edits for new ones.
func recordable(kept []inspect.Use, results []refresh.Result) map[subject][]string {
	bySubject := map[subject][]string{}
	byPod := map[string]subject{}
	for _, it := range kept {
		s := subjectOf(it)
		byPod[it.Pod.Name] = s
		if k := recordKey(it.Key()); !slices.Contains(bySubject[s], k) {
			bySubject[s] = append(bySubject[s], k)
		}
	}
	for _, r := range results {
		if completed(r) {
			continue
		}
		var subjects []subject
		for _, c := range r.Consumers {
			subjects = append(subjects, byPod[c.Pod])
		}
		if r.Target.Kind != "Pod" { // a workload's restart: none of its pods is done
			for s := range bySubject {
				if onlyKey(s.workload) == r.Target.Kind+"/"+r.Target.Name {
					subjects = append(subjects, s)
				}
			}
		}
		for _, s := range subjects {
			notDone(bySubject, s, r.Consumers)
		}
	}
	return bySubject
}

// withRestarted adds to kept the uses of all (every use of the snapshot,
// built only when a restart completed) by the workloads a completed
// rollout restart of results replaced: their
// new pods read every object the template reads when they start, so the
// restart made them current with all of them as the snapshot has them (or
// newer), not only with the objects whose edits it was sent for. Without
// it an edit the watch delivers late (a cut, then a relist) of another
// object the restart's pods already read looks new, and restarts the
// workload again.
func withRestarted(kept []inspect.Use, all func() []inspect.Use, results []refresh.Result) []inspect.Use {
	restarted := replacedBy(results)
	if len(restarted) == 0 {
		return kept
	}
	out := slices.Clone(kept) // recordable counts an object once per subject
	for _, it := range all() {
		if restarted[onlyKey(it.Workload)] {
			out = append(out, it)
		}
	}
	return out
}

// notDone takes from subject s's objects those the consumers of an action
// that did not complete read; all of them when it names no consumer.
func notDone(bySubject map[subject][]string, s subject, consumers []refresh.Consumer) {
	if len(consumers) == 0 {
		delete(bySubject, s)
		return
	}
	keys := slices.DeleteFunc(bySubject[s], func(k string) bool {
		return slices.ContainsFunc(consumers, func(c refresh.Consumer) bool {
			return recordKey(inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}) == k
		})
	})
	if len(keys) == 0 {
		delete(bySubject, s)
		return
	}
	bySubject[s] = keys
}

// writeRecords writes on each subject its record updated with the digests
// (now) of its objects (bySubject) that no change pending since concerns;
// old reads the record it has (false: it could not be read, and is left).
// replaced are the workloads (Kind/Name) whose pods a completed restart
// replaced (replacedBy). Nothing is written in a namespace whose resume is
// still owed (holdRecord).
func (l *Loop) writeRecords(ctx context.Context, bySubject map[subject][]string, now map[subject]Record, replaced map[string]bool, old func(subject) (string, bool)) {
	for _, s := range slices.SortedFunc(maps.Keys(bySubject), compareSubjects) {
		was, ok := old(s)
		if !ok {
			continue
		}
		var held Record // the versions its new pods read, when replaced
		if replaced[onlyKey(s.workload)] {
			held = now[s]
		}
		if r, changed := updated(ParseRecord(was), now[s], l.unchangedSince(s, bySubject[s], held)); changed && !l.holdRecord(s, r) {
			l.writeRecord(ctx, s, r)
		}
	}
}

// unchangedSince keeps the objects (record keys) of subject s with no
// change pending for s: one edited after the round's snapshot is recorded
// by the round that acts on that edit, not by this one, whose digest
// already holds it. A retry of other workloads only (a restart of theirs
// held back this round) is no change for s: s completed, and is recorded.
// Nor is an object recorded while an action of s for it is still being
// verified (a restart handed over by an earlier round): a later round that
// remounted s's volumes did not make its env current, and the record would
// tell the next leader that it did. A change pending of the version a
// restart's new pods read (held: the entries of a subject a restart
// replaced) is no change for s: the watch delivered late (a cut, then a
// relist) an edit its snapshot already held.
func (l *Loop) unchangedSince(s subject, keys []string, held Record) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		o := recordObject(s.Namespace, k)
		p := l.pending[o]
		later := p != nil && !(p.retry && p.only != nil && !p.only[onlyKey(s.workload)]) && !heldBy(held, k, p.change.Version)
		return later || l.verifyingFor(s, o)
	})
}

// heldBy tells whether entry k of held was made of version v of its object.
func heldBy(held Record, k, v string) bool {
	e, ok := held[k]
	return ok && v != "" && parseEntry(e).version == v
}

// replacedBy are the workloads (Kind/Name) whose pods a completed rollout
// restart of results replaced, or a completed eviction of every pod it
// planned: the new pods read every object when they started.
func replacedBy(results []refresh.Result) map[string]bool {
	out := map[string]bool{}
	for _, r := range results {
		restart := r.Action.Action == refresh.ActionRestart || r.Action.Action == refresh.ActionEvict && len(r.NotEvicted) == 0
		if restart && r.Target.Kind != "Pod" && completed(r) {
			out[r.Target.Kind+"/"+r.Target.Name] = true
		}
	}
	return out
}

// verifyingFor tells whether an action of subject s (its workload's, or
// its own as a pod) for object o is handed over and not verified yet.
// l.mu is held.
func (l *Loop) verifyingFor(s subject, o inspect.ObjectKey) bool {
	for _, v := range l.verifying[s.Namespace] {
		if v.changes[o] == nil {
			continue
		}
		for _, r := range v.results {
			t := r.Target
			if t.Kind+"/"+t.Name == onlyKey(s.workload) || t.Kind == "Pod" && s.Kind == "Pod" && t.Name == s.Name {
				return true
			}
		}
	}
	return false
}

func compareSubjects(a, b subject) int {
	return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
}

// allItems are every use of the snapshot's watched objects by a pod.
func (l *Loop) allItems(snap *inspect.Snapshot) []inspect.Use {
	items, err := inspect.Build(snap, inspect.BuildOptions{Secrets: l.Secrets && snap.SecretsListed, IncludeSystem: l.IncludeSystem})
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(items, func(it inspect.Use) bool {
		return it.Pod.Name == "" || !l.selects(it.Key()) || l.objectOutOfScope(snap, it.Key()) != ""
	})
}

// recordOf is the subject's record as read this round: a workload's from
// the annotations Select read, a pod's from the snapshot; or the one this
// leader could not write on it (unwritten) or holds (holdRecord), which
// is newer.
func (l *Loop) recordOf(s subject, meta map[inspect.WorkloadRef]subjectMeta, snap *inspect.Snapshot) string {
	if r, ok := l.notWritten(s); ok {
		return r
	}
	return annotatedRecord(s, meta, snap)
}

// resumeRecordOf is the record a resume compares: recordOf without the
// records held while the resume was owed (holdRecord), which may hold an
// edit made while no leader acted as if it had been acted on.
func (l *Loop) resumeRecordOf(s subject, meta map[inspect.WorkloadRef]subjectMeta, snap *inspect.Snapshot) string {
	l.mu.Lock()
	r, ok := l.unwritten[s]
	l.mu.Unlock()
	if ok {
		return r.String()
	}
	return annotatedRecord(s, meta, snap)
}

// annotatedRecord is the record on the subject: its workload's annotation
// (meta), or its pod's (snap).
func annotatedRecord(s subject, meta map[inspect.WorkloadRef]subjectMeta, snap *inspect.Snapshot) string {
	if s.Kind != "Pod" {
		return meta[s.workload].workload[AnnotationApplied]
	}
	for i := range snap.Pods {
		if p := &snap.Pods[i]; p.Name == s.Name && p.Namespace == s.Namespace {
			return p.Annotations[AnnotationApplied]
		}
	}
	return ""
}

// notWritten is the record of s whose write failed, or that is held
// while its namespace's resume is owed (holdRecord), if any.
func (l *Loop) notWritten(s subject) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.held[s] // newer than a write that failed before
	if !ok {
		r, ok = l.unwritten[s]
	}
	return r.String(), ok
}

// writeRecord patches a subject's record (its metadata only). A record it
// could not write is kept as this leader's record of the subject: a late
// delivery of an edit that the subject was made current with is no edit
// for it. A restarted controller has only the annotation, and checks the
// subject again.
func (l *Loop) writeRecord(ctx context.Context, s subject, r Record) {
	target := refresh.Target{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
	err := l.Cluster.Patcher.Patch(ctx, target, types.MergePatchType, recordPatch(r), false)
	failed := err != nil && !apierrors.IsNotFound(err) // gone: nothing left to record
	l.mu.Lock()
	if failed {
		l.unwritten[s] = r
	} else {
		delete(l.unwritten, s)
	}
	delete(l.sentWith, s)
	l.mu.Unlock()
	if failed {
		l.emit(Event{Kind: EventError, Target: &target, Message: fmt.Sprintf("cannot record what was made current (%s): %v; a restarted controller checks it again", AnnotationApplied, err)})
	}
}

// resume compares, in each namespace, the records of the selected
// consumers with the objects now, and returns the changes to check: the
// objects a consumer reads that changed since its record (for those
// consumers only). A consumer with no record of an object gets one, and
// is left alone (checked with SyncExisting).
func (l *Loop) resume(ctx context.Context, factory informers.SharedInformerFactory) map[inspect.ObjectKey]*pending {
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	for _, ns := range l.namespaces(factory) {
		if ctx.Err() != nil {
			break
		}
		l.resumeIn(ctx, ns, out, &n)
	}
	l.emit(Event{Kind: EventResume, Message: n.String()})
	return out
}

type resumeCounts struct{ current, recorded, changed int }

func (n resumeCounts) String() string {
	return fmt.Sprintf("%d consumers current by their record, %d recorded for the first time (left alone), %d changed since their record (checked)",
		n.current, n.recorded, n.changed)
}

// namespaces are those of the selected objects in the caches.
func (l *Loop) namespaces(factory informers.SharedInformerFactory) []string {
	if l.Namespace != "" {
		if l.namespaceOutOfScope(l.Namespace) != "" {
			return nil
		}
		return []string{l.Namespace}
	}
	set := map[string]bool{}
	for k := range l.existing(factory) {
		set[k.Namespace] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (l *Loop) resumeIn(ctx context.Context, ns string, out map[inspect.ObjectKey]*pending, n *resumeCounts) {
	snap, kept, meta, err := l.readForResume(ctx, ns)
	if err == nil {
		err = transientMeta(meta) // a consumer not read for a cause that may pass: as a namespace not read
	}
	if err != nil || anyUnread(meta) {
		l.mu.Lock()
		l.resumeIncomplete = true // the watermark stays where it was: the next leader checks again
		l.mu.Unlock()
	}
	if err != nil {
		l.resumeLater(ctx, ns, err)
		return
	}
	l.mu.Lock()
	delete(l.resumeAgain, ns)
	l.mu.Unlock()
	defer l.keepHeld(ns) // once compared: this leader's records of ns, as if their writes had failed
	now := digests(l.DigestKey, snap, kept)
	for _, s := range slices.SortedFunc(maps.Keys(now), compareSubjects) {
		old := ParseRecord(l.resumeRecordOf(s, meta, snap))
		differ, unknown := compare(old, now[s])
		edited := edits(old, now[s], differ) // recorded, and different now: an edit no leader acted on
		edited = l.notRestartedSince(snap, ns, meta[s.workload], edited)
		edited = createdSince(snap, ns, kept, s, edited)
		if l.SyncExisting {
			differ, unknown = append(differ, unknown...), nil
		}
		differ, unknown = l.changedSinceWatermark(snap, ns, differ, unknown)
		switch {
		case len(differ) > 0:
			n.changed++
		case len(unknown) > 0:
			n.recorded++
		default:
			n.current++
		}
		if r, changed := updated(old, now[s], unknown); changed && !l.dryRun() {
			l.writeRecord(ctx, s, r)
		}
		for _, k := range differ {
			o := recordObject(ns, k)
			l.checkAgain(out, s, o, snap.Object(o).LastChange, slices.Contains(edited, k))
		}
	}
}

// createdSince drops the edited objects (record keys) last written before
// every pod of s that reads them was created (both in whole seconds, the
// creation strictly after the write): those pods read the object as it is
// now. Evictions, or a restart, that the leader before made for the edit
// and whose record it could not write (gone, or the write refused) leave
// this: no edit no leader acted on, so the consumers are checked, not
// restarted again by their on-change policy. A pod older than the write,
// or not found, keeps the edit.
func createdSince(snap *inspect.Snapshot, ns string, kept []inspect.Use, s subject, edited []string) []string {
	if len(edited) == 0 {
		return edited
	}
	created := map[string]time.Time{}
	for _, p := range snap.Pods {
		if p.Namespace == ns {
			created[p.Name] = p.CreationTimestamp.Truncate(time.Second)
		}
	}
	return slices.DeleteFunc(edited, func(k string) bool {
		o := recordObject(ns, k)
		written := snap.Object(o).LastChange.Truncate(time.Second)
		found := false
		for _, it := range kept {
			if it.Key() != o || it.Pod.Name == "" || subjectOf(it) != s {
				continue
			}
			if at, ok := created[it.Pod.Name]; !ok || !at.After(written) {
				return false
			}
			found = true
		}
		return found && !written.IsZero()
	})
}

// notRestartedSince drops the edited objects (record keys) last written
// before the workload's last restart (its template's restartedAt, in whole
// seconds, strictly after the write): that restart was sent for the edit
// (the leader before, whose change cut its verification, so nothing was
// recorded) or replaced the pods after it all the same. Such an object is
// no edit no leader acted on: its consumers are checked, and restarted
// only if stale, not restarted again by their on-change policy.
func (l *Loop) notRestartedSince(snap *inspect.Snapshot, ns string, m subjectMeta, edited []string) []string {
	return slices.DeleteFunc(edited, func(k string) bool {
		return restartedAfter(m.template, snap.Object(recordObject(ns, k)).LastChange, l.Now())
	})
}

// restartedAfter tells whether a workload's pod template (its annotations)
// was restarted after written, an object's last write: its restartedAt, in
// whole seconds, strictly after the write, and not after now (a client
// whose clock is ahead). The pods of that restart read the object as it
// is now. False when either time is unknown.
func restartedAfter(template map[string]string, written, now time.Time) bool {
	at, err := time.Parse(time.RFC3339, template[refresh.RestartedAtAnnotation])
	if err != nil || written.IsZero() {
		return false
	}
	if at.After(now) {
		at = now
	}
	return at.After(written.Truncate(time.Second))
}

// holdRecord keeps r as this leader's record of s, unwritten, when the
// resume of s's namespace failed and is tried again, and tells whether it
// did. Until the resume has compared the records with what the pods read,
// no record of the namespace is written: an edit made while no leader
// acted is in the object the informers listed at start, so a live change
// of another of its keys, acted on first, would record the object as it
// is now, and the resume would find the record current and the edit gone.
// The rounds meanwhile read it (recordOf), so that an edit delivered again
// is no edit for a workload that read it; the resume does not.
func (l *Loop) holdRecord(s subject, r Record) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, owed := l.resumeAgain[s.Namespace]; !owed {
		return false
	}
	l.held[s] = r
	return true
}

// keepHeld ends the holding of ns's records once its resume compared the
// records on the cluster, or was given up: each stays this leader's
// record of its subject, as one whose write failed does (unwritten), so
// that its rounds still tell an edit delivered again from a new one; the
// next write of the subject replaces it.
func (l *Loop) keepHeld(ns string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepHeldLocked(ns)
}

func (l *Loop) keepHeldLocked(ns string) {
	for s, r := range l.held {
		if s.Namespace != ns {
			continue
		}
		l.unwritten[s] = r // newer than a write that failed before
		delete(l.held, s)
	}
}

// resumeRetry is a namespace's resume that failed for a cause that may
// pass: the attempts made, and when it is resumed again.
type resumeRetry struct {
	attempts int
	at       time.Time
}

// resumeLater says that the resume of ns failed, once, and resumes it
// again after a backoff (RetryBase doubling to RetryMax) while the failure
// may pass: an edit made while no leader ran is owed as much as one seen
// live. A failure that will not pass leaves its consumers to their next
// change.
func (l *Loop) resumeLater(ctx context.Context, ns string, err error) {
	again := refresh.Transient(err) && ctx.Err() == nil
	l.mu.Lock()
	r, failed := l.resumeAgain[ns]
	delete(l.resumeAgain, ns)
	if again {
		r.at = l.Clock().Add(l.jitter(min(RetryBase<<min(r.attempts, 9), RetryMax), retryJitter))
		r.attempts++
		l.resumeAgain[ns] = r
		l.bounce.After(ns, r.at)
	} else {
		l.keepHeldLocked(ns)
	}
	l.mu.Unlock()
	switch {
	case !again:
		l.emit(Event{Kind: EventError, Message: fmt.Sprintf("resuming in namespace %s: %v; its consumers are acted on at their next change", ns, err)})
	case !failed:
		l.emit(Event{Kind: EventError, Message: fmt.Sprintf("resuming in namespace %s: %v; resumed again after a backoff", ns, err)})
	}
}

// resumeDue resumes ns again when its resume failed for a cause that may
// pass and its backoff has passed: what it finds is acted on in the round
// about to run. A round before then (another change of ns) took the
// namespace's turn: the resume's is asked for again.
func (l *Loop) resumeDue(ctx context.Context, ns string) {
	l.mu.Lock()
	r, again := l.resumeAgain[ns]
	due := again && !l.Clock().Before(r.at)
	if again && !due {
		l.bounce.After(ns, r.at)
	}
	l.mu.Unlock()
	if !due {
		return
	}
	out := map[inspect.ObjectKey]*pending{}
	var n resumeCounts
	l.resumeIn(ctx, ns, out, &n)
	l.putDue(out)
}

// resumeAttempts bounds the reads of a namespace at the start of
// leadership: a new leader's first requests meet an API server that may be
// busy (the old leader's pod going, its own starting), and a consumer not
// read then waits for its next change.
const resumeAttempts = 4

// readForResume reads ns and the selected consumers' annotations, again
// after 1, 2 and 4 s while a read fails. After the last attempt a
// namespace that could not be read is an error; consumers whose
// annotations could not be read for good are left out, each reported then
// (not on the attempts before, which are read again), and those not read
// for a cause that may pass make resumeIn resume the namespace again
// later (transientMeta).
func (l *Loop) readForResume(ctx context.Context, ns string) (*inspect.Snapshot, []inspect.Use, map[inspect.WorkloadRef]subjectMeta, error) {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		snap, err := inspect.Load(ctx, l.Client, l.loadOptions(ns, nil))
		last := attempt == resumeAttempts || ctx.Err() != nil
		if err == nil {
			// an unread workload is news once no attempt is left; a skip
			// is news only for an object changed since the watermark (the
			// earlier loop did not see that edit, and nothing else says
			// that the workload is left alone for it)
			var skips []Event
			report := func(e Event) {
				switch {
				case last && e.Kind == EventError:
					l.emit(e)
				case e.Kind == EventSkip && l.writtenSinceWatermark(snap, e.Object):
					skips = append(skips, e)
				}
			}
			kept, meta := l.selected(ctx, snap, l.allItems(snap), report)
			if last || !anyUnread(meta) {
				for _, e := range skips {
					l.emit(e)
				}
				return snap, kept, meta, nil
			}
		} else if last {
			return nil, nil, nil, err
		}
		l.pause(ctx, delay)
		delay *= 2
	}
}

// writtenSinceWatermark tells whether object k of snap was written after
// the watermark (never at a first start, with no watermark).
func (l *Loop) writtenSinceWatermark(snap *inspect.Snapshot, k *inspect.ObjectKey) bool {
	return k != nil && !l.Watermark.IsZero() && snap.Object(*k).LastChange.After(l.Watermark)
}

// pause waits d or until ctx is done, on the engine's clock
// (refresh.Config.Sleep; the real one when unset).
func (l *Loop) pause(ctx context.Context, d time.Duration) {
	if l.Refresh.Sleep != nil {
		l.Refresh.Sleep(ctx, d)
		return
	}
	refresh.Pause(ctx, d)
}

// anyUnread tells whether a workload's annotations could not be read.
func anyUnread(meta map[inspect.WorkloadRef]subjectMeta) bool {
	for _, m := range meta {
		if m.err != nil {
			return true
		}
	}
	return false
}

// recordObject is the object of a record key in ns.
func recordObject(ns, recordKey string) inspect.ObjectKey {
	kind, name, _ := strings.Cut(recordKey, "/")
	if kind == "secret" {
		return inspect.ObjectKey{Kind: inspect.KindSecret, Namespace: ns, Name: name}
	}
	return inspect.ObjectKey{Kind: inspect.KindConfigMap, Namespace: ns, Name: name}
}

// checkAgain adds s's consumers of k to the changes to check; edit: s's
// record of k differs from what it reads now, an edit its on-change policy
// applies to (editedFor).
func (l *Loop) checkAgain(out map[inspect.ObjectKey]*pending, s subject, k inspect.ObjectKey, changed time.Time, edit bool) {
	p := out[k]
	if p == nil {
		// first is when the object changed: until it is checked, no
		// watermark passes that change
		first := l.Now()
		if !changed.IsZero() && changed.Before(first) {
			first = changed
		}
		p = &pending{change: Change{Object: k}, first: first, existing: true, only: map[string]bool{}}
		out[k] = p
	}
	p.only[onlyKey(s.workload)] = true
	if edit {
		if p.recordEdits == nil {
			p.recordEdits = map[string]bool{}
		}
		p.recordEdits[onlyKey(s.workload)] = true
	}
}

// changedSinceWatermark moves to differ the objects with no record that
// changed at or after Watermark: a leader before this one acted on every
// change up to it, so a change since then
// may have been made while no leader acted (a controller upgrade, the old
// leader's debounce) and is checked, never taken as current. Without a
// watermark (no controller acted with this key yet) they are recorded and
// left alone. The watermark is cut to the second, as managedFields' times
// are.
func (l *Loop) changedSinceWatermark(snap *inspect.Snapshot, ns string, differ, unknown []string) ([]string, []string) {
	if l.Watermark.IsZero() || len(unknown) == 0 {
		return differ, unknown
	}
	since := l.Watermark.Truncate(time.Second)
	var still []string
	for _, k := range unknown {
		if o := snap.Object(recordObject(ns, k)); !o.LastChange.Before(since) {
			differ = append(differ, k)
		} else {
			still = append(still, k)
		}
	}
	return differ, still
}

// afterRollouts holds back the checks of existing state (a resume, or
// --sync-existing) of a workload whose rollout is under way: its pods are
// half old, half new, and what a rollout in flight will make current is
// not a reason to act. They are checked again after a backoff
// (recheckAfter); a stuck
// rollout, or one still under way RolloutWait after the first hold, is
// checked at once (the plan says what it can do).
func (l *Loop) afterRollouts(ctx context.Context, items []inspect.Use, changes map[inspect.ObjectKey]*pending) []inspect.Use {
	holds := map[inspect.WorkloadRef]Hold{}
	retry := map[inspect.ObjectKey]map[string]bool{}
	kept := items[:0:0]
	for _, it := range items {
		p := changes[it.Key()]
		if p == nil || !p.existing || !recordedOnWorkload(it.Workload) || l.dryRun() {
			kept = append(kept, it)
			continue
		}
		h, seen := holds[it.Workload]
		if !seen {
			h = l.rolloutHold(ctx, refresh.Target{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name})
			h.Stuck = h.Stuck || l.waitedOn(p, h, l.Now())
			holds[it.Workload] = h
			if h.rollout() && !h.Stuck && p.firstDeferral(onlyKey(it.Workload), h, l.Now()) { // said once, not at every retry
				k := it.Key()
				l.emit(Event{Kind: EventDeferred, Object: &k, Target: &refresh.Target{Kind: it.Workload.GroupKind(), Namespace: k.Namespace, Name: it.Workload.Name},
					Hold: h.Kind, Message: h.Reason + "; checked once it completes"})
			}
		}
		if !h.rollout() || h.Stuck {
			kept = append(kept, it)
			continue
		}
		l.restarts.undecided(refresh.Target{Kind: it.Workload.GroupKind(), Namespace: it.Object.Namespace, Name: it.Workload.Name}) // checked once it completes
		if retry[it.Key()] == nil {
			retry[it.Key()] = map[string]bool{}
		}
		retry[it.Key()][onlyKey(it.Workload)] = true
	}
	for k, only := range retry {
		at := l.Clock().Add(l.recheckAfter(changes[k], l.Now())) // before the copy: it starts the hold's clock
		p := *changes[k]
		p.only = only
		l.requeueAt(p, at)
	}
	return kept
}
