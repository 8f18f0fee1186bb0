// Package coalesce runs jobs in batches: a job queued while a batch runs
// waits and is merged with the others queued meanwhile into the next
// batch. Many small concurrent requests (a wait verifying each pod as soon
// as its own patch is acknowledged) then cost one round trip per batch,
// not one each, and a batch never runs twice at once.
package coalesce

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Queue serialises the batches of one key (one node, one namespace). The
// zero value is ready; Run must be set before the first Do.
type Queue[J any] struct {
	// Run runs one batch. Its context ends when every job's context has
	// ended: a batch is not cut short while one of its callers still waits.
	Run func(ctx context.Context, jobs []J)
	// Gather is how long a batch waits after its first job for others
	// (callers that start together would otherwise make a batch of one
	// followed by one of the rest).
	Gather time.Duration
	// Ready, when set, is waited for before each batch is taken: the jobs
	// queued while the batch's resource gets ready (a reader pod that is
	// starting) join that batch, not the next one. Its context ends when
	// every job queued by then has ended.
	Ready func(ctx context.Context)

	mu      sync.Mutex
	pending []*entry[J]
	running bool
}

type entry[J any] struct {
	ctx  context.Context
	job  J
	done chan struct{}
}

// Do queues j and returns once the batch that took it has run. A caller
// whose context ends still waits for that batch: Run must bound its own
// time (the batch's context ends with its last caller's).
func (q *Queue[J]) Do(ctx context.Context, j J) {
	e := &entry[J]{ctx: ctx, job: j, done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, e)
	if !q.running {
		q.running = true
		go q.loop()
	}
	q.mu.Unlock()
	<-e.done
}

// loop runs the queued jobs, merged, until none is left.
func (q *Queue[J]) loop() {
	for {
		if q.Gather > 0 {
			time.Sleep(q.Gather)
		}
		q.waitReady()
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		jobs := make([]J, len(batch))
		for i, e := range batch {
			jobs[i] = e.job
		}
		ctx, stop := anyLive(batch)
		q.Run(ctx, jobs)
		stop()
		for _, e := range batch {
			close(e.done)
		}
	}
}

// waitReady waits for Ready, for as long as one of the jobs queued now
// waits.
func (q *Queue[J]) waitReady() {
	if q.Ready == nil {
		return
	}
	q.mu.Lock()
	waiting := slices.Clone(q.pending)
	q.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	ctx, stop := anyLive(waiting)
	defer stop()
	q.Ready(ctx)
}

// anyLive is a context that ends when every entry's context has ended.
func anyLive[J any](batch []*entry[J]) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	stop := make(chan struct{})
	go func() {
		for _, e := range batch {
			select {
			case <-e.ctx.Done():
			case <-stop:
				return
			}
		}
		cancel()
	}()
	return ctx, func() { close(stop); cancel() }
}

// Keyed holds one Queue per key, each made on first use with run.
type Keyed[K comparable, J any] struct {
	// Gather is each queue's (see Queue).
	Gather time.Duration
	// Ready is each queue's (see Queue), for its key.
	Ready func(ctx context.Context, key K)

	mu     sync.Mutex
	queues map[K]*Queue[J]
}

// Do queues j on key's queue (see Queue.Do); run runs that queue's batches.
func (k *Keyed[K, J]) Do(ctx context.Context, key K, j J, run func(ctx context.Context, jobs []J)) {
	k.mu.Lock()
	if k.queues == nil {
		k.queues = map[K]*Queue[J]{}
	}
	q := k.queues[key]
	if q == nil {
		q = &Queue[J]{Run: run, Gather: k.Gather}
		if k.Ready != nil {
			q.Ready = func(ctx context.Context) { k.Ready(ctx, key) }
		}
		k.queues[key] = q
	}
	k.mu.Unlock()
	q.Do(ctx, j)
}

// Queued is how many jobs of key wait for a batch to take them.
func (k *Keyed[K, J]) Queued(key K) int {
	k.mu.Lock()
	q := k.queues[key]
	k.mu.Unlock()
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
