package nodereader

import (
	"context"
	"sync"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// A wait verifies each pod on its own, as soon as its own patch is
// acknowledged: many small reads of one node at once. One read runs per
// node at a time; the reads asked for meanwhile wait and are merged into
// the next one. So a node is read by one exec per round however many pods
// ask, and no reader runs its /proc scan twice at once.

// job is one caller's share of a node read: its containers and where
// their results go.
type job struct {
	ctx context.Context
	nr  *nodeRead
	out []*inspect.Verified
	// fallback marks, by request like out, the containers to read with
	// Options.Fallback (their node has no reader)
	fallback []bool
	done     chan struct{}
}

// nodeQueue serialises the reads of one node.
type nodeQueue struct {
	mu      sync.Mutex
	pending []*job
	running bool
}

func (r *Reader) queue(node string) *nodeQueue {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.reads[node]
	if q == nil {
		q = &nodeQueue{}
		r.reads[node] = q
	}
	return q
}

// read queues j and returns once it has been read (or its context ended:
// its containers are then left to the caller's "no result").
func (q *nodeQueue) read(ctx context.Context, j *job, run func(ctx context.Context, merged *nodeRead, jobs []*job)) {
	j.done = make(chan struct{})
	q.mu.Lock()
	q.pending = append(q.pending, j)
	if !q.running {
		q.running = true
		go q.loop(run)
	}
	q.mu.Unlock()
	select {
	case <-j.done:
	case <-ctx.Done():
		<-j.done // its read is bounded by the exec timeout
	}
}

// loop runs the queued jobs, merged, until none is left.
func (q *nodeQueue) loop(run func(ctx context.Context, merged *nodeRead, jobs []*job)) {
	for {
		q.mu.Lock()
		jobs := q.pending
		q.pending = nil
		if len(jobs) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		ctx, stop := anyLive(jobs)
		run(ctx, merge(jobs), jobs)
		stop()
		for _, j := range jobs {
			close(j.done)
		}
	}
}

// anyLive is a context that ends when every job's context has ended.
func anyLive(jobs []*job) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(jobs[0].ctx))
	stop := make(chan struct{})
	go func() {
		for _, j := range jobs {
			select {
			case <-j.ctx.Done():
			case <-stop:
				return
			}
		}
		cancel()
	}()
	return ctx, func() { close(stop); cancel() }
}

// merge is one node read of every job's containers, each path once.
func merge(jobs []*job) *nodeRead {
	if len(jobs) == 1 {
		return jobs[0].nr
	}
	m := &nodeRead{node: jobs[0].nr.node}
	seen := map[string]bool{}
	for _, j := range jobs {
		m.containers = append(m.containers, j.nr.containers...)
		for _, p := range j.nr.paths {
			if !seen[p] {
				seen[p] = true
				m.paths = append(m.paths, p)
			}
		}
	}
	return m
}
