package reconcile

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// DefaultWorkers is how many namespaces are acted on at once by default.
// A round spends most of its time waiting (for the API server, the
// containers' reads, its annotated pods), and neither a restart held by the
// limit nor one whose rollout goes on keeps its worker (verifying.go):
// --max-concurrent-restarts, not the workers, bounds the disruption. Ten
// let a release across ten namespaces go at once.
const DefaultWorkers = 10

// The loop's work moves in three steps:
//   - noteChange (the informers) and requeueAt (a round putting work back)
//     add to pending and arm the namespace's debounce;
//   - dispatch hands the namespaces whose debounce elapsed to the queue,
//     client-go's workqueue: a namespace queued twice is there once, and a
//     namespace queued while a worker acts on it is handed out again once
//     that worker is done, never to two workers at once;
//   - a worker (work) takes the namespace's pending changes and acts on
//     them in one round (roundIn), which first checks the actions earlier
//     rounds handed over (verifying.go).

// dispatch queues the namespaces due at Clock, in name order, and returns
// when the next falls due (zero: none pending).
func (l *Loop) dispatch() time.Time {
	l.mu.Lock()
	due, next := l.bounce.Due(l.Clock())
	l.mu.Unlock()
	for _, ns := range slices.Sorted(maps.Keys(due)) {
		l.queue.Add(ns)
	}
	return next
}

// putDue adds changes due at once (the resume's, --sync-existing's). An
// edit of the same object seen while they were read is kept, with every
// use concerned: one change, acted on in the same round. A retry put
// back for some workloads only (held, unread) keeps its limit, widened by
// the workloads the check adds: a workload already acted on for the
// retry's edit is not acted on again for it.
func (l *Loop) putDue(changes map[inspect.ObjectKey]*pending) {
	l.mu.Lock()
	for k, p := range changes {
		if q := l.pending[k]; q != nil {
			q.checked = joinChecked(q, p)
			q.change, q.existing, q.due = merge(p.change, q.change), true, time.Time{}
			if q.only != nil && p.only != nil {
				q.only = joinTold(maps.Clone(q.only), p.only)
			} else {
				q.only = nil
			}
			q.recordEdits = joinTold(q.recordEdits, p.recordEdits)
		} else {
			l.pending[k] = p
		}
		l.bounce.After(k.Namespace, l.Clock())
	}
	l.mu.Unlock()
}

// startWorkers starts Workers workers; the function it returns shuts the
// queue down and waits for the rounds under way to end.
func (l *Loop) startWorkers(ctx context.Context) (stop func()) {
	var wg sync.WaitGroup
	for range l.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l.work(ctx) {
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.queue.ShutDown()
			wg.Wait()
		})
	}
}

// work acts on the next queued namespace; false once the queue is shut
// down.
func (l *Loop) work(ctx context.Context) bool {
	ns, shutdown := l.queue.Get()
	if shutdown {
		return false
	}
	defer l.queue.Done(ns)
	if ctx.Err() != nil { // shutting down: the changes stay pending, reported as interrupted
		return true
	}
	l.resumeDue(ctx, ns)
	changes := l.take(ns)
	if len(changes) == 0 && !l.handedOverIn(ns) { // taken by the round before (an edit made while it ran)
		return true
	}
	defer l.untake(ns)
	l.roundIn(ctx, ns, changes)
	l.poke() // the round may have put work back: dispatch again
	return true
}

// take moves the pending changes of namespace ns to the round about to
// act on them. An edit seen since the namespace was queued is taken too:
// the round reads the namespace as it is now, and so are the changes put
// back until later (a retry's backoff, a hold's end): what the round does
// covers them. When none is due (a round that checks what was handed over),
// none is taken: a retry is not tried again before its time.
func (l *Loop) take(ns string) map[inspect.ObjectKey]*pending {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[inspect.ObjectKey]*pending{}
	var later time.Time
	due := false
	for k, p := range l.pending {
		if k.Namespace == ns {
			out[k] = p
			if p.due.After(l.Clock()) {
				later = earliest(later, p.due)
			} else {
				due = true
			}
		}
	}
	if !due { // nothing due: a round for what was handed over only
		if !later.IsZero() {
			l.bounce.After(ns, later) // this round took the namespace's turn
		}
		return map[inspect.ObjectKey]*pending{}
	}
	for k := range out {
		delete(l.pending, k)
	}
	l.taken[ns] = out
	return out
}

// handedOverIn tells whether actions handed over in ns wait for a check.
func (l *Loop) handedOverIn(ns string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.verifying[ns]) > 0
}

func (l *Loop) untake(ns string) {
	l.mu.Lock()
	delete(l.taken, ns)
	l.mu.Unlock()
}
