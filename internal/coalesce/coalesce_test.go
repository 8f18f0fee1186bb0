package coalesce

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestQueueMerges: jobs queued while a batch runs are merged into the
// next, batches never overlap, and every caller returns after its job ran.
func TestQueueMerges(t *testing.T) {
	var mu sync.Mutex
	runs, inFlight, maxInFlight := 0, 0, 0
	ran := map[int]bool{}
	q := &Queue[int]{Run: func(_ context.Context, jobs []int) {
		mu.Lock()
		runs++
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond)
		mu.Lock()
		inFlight--
		for _, j := range jobs {
			ran[j] = true
		}
		mu.Unlock()
	}}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.Do(context.Background(), i)
			mu.Lock()
			defer mu.Unlock()
			if !ran[i] {
				t.Errorf("job %d returned before its batch ran", i)
			}
		}()
	}
	wg.Wait()
	if len(ran) != 20 || runs >= 20 || maxInFlight != 1 {
		t.Fatalf("ran %d jobs in %d batches, %d at once; want 20 in fewer batches, one at a time", len(ran), runs, maxInFlight)
	}
}

// TestBatchContextOutlivesOneCaller: a batch's context ends only when all
// of its callers' contexts have ended.
func TestBatchContextOutlivesOneCaller(t *testing.T) {
	running, gate, checked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	q := &Queue[string]{}
	var got []error
	q.Run = func(ctx context.Context, jobs []string) {
		if jobs[0] == "first" {
			close(running)
			<-gate // hold the queue so the next two are merged
			return
		}
		got = append(got, ctx.Err()) // the first caller has ended, the second not
		close(checked)
		<-ctx.Done()
		got = append(got, ctx.Err())
	}
	go q.Do(context.Background(), "first")
	<-running
	c1, cancel1 := context.WithCancel(context.Background())
	c2, cancel2 := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range []context.Context{c1, c2} {
		wg.Add(1)
		go func() { defer wg.Done(); q.Do(c, "merged") }()
	}
	for queued := 0; queued < 2; time.Sleep(time.Millisecond) { // both wait for the same batch
		q.mu.Lock()
		queued = len(q.pending)
		q.mu.Unlock()
	}
	cancel1()
	close(gate)
	<-checked
	cancel2()
	wg.Wait()
	if len(got) != 2 || got[0] != nil || got[1] == nil {
		t.Fatalf("batch context errors %v: want live while one caller waits, then ended", got)
	}
}

// TestKeyedQueuesRunApart: batches of different keys run at once.
func TestKeyedQueuesRunApart(t *testing.T) {
	var k Keyed[string, int]
	both := make(chan struct{}, 2)
	release := make(chan struct{})
	run := func(context.Context, []int) { both <- struct{}{}; <-release }
	var wg sync.WaitGroup
	for _, key := range []string{"a", "b"} {
		wg.Add(1)
		go func() { defer wg.Done(); k.Do(context.Background(), key, 1, run) }()
	}
	for range 2 {
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			t.Fatal("the two keys' batches did not run at once")
		}
	}
	close(release)
	wg.Wait()
}

// TestGatherMergesCallersThatStartTogether: with Gather, jobs queued just
// after the first one run in its batch.
func TestGatherMergesCallersThatStartTogether(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	q := &Queue[int]{Gather: 50 * time.Millisecond, Run: func(_ context.Context, jobs []int) {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(jobs))
	}}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); q.Do(context.Background(), i) }()
	}
	wg.Wait()
	if len(sizes) != 1 || sizes[0] != 10 {
		t.Fatalf("batches of %v, want one of 10", sizes)
	}
}

// TestReadyTakesTheJobsQueuedMeanwhile: the jobs queued while the first
// batch waits for Ready run in that one batch, not in a batch of the
// first job followed by one of the rest.
func TestReadyTakesTheJobsQueuedMeanwhile(t *testing.T) {
	ready := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	k := &Keyed[string, int]{Ready: func(ctx context.Context, key string) {
		if key != "node-a" {
			t.Errorf("Ready for key %q, want node-a", key)
		}
		select {
		case <-ready:
		case <-ctx.Done():
		}
	}}
	run := func(_ context.Context, jobs []int) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, jobs)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.Do(context.Background(), "node-a", i, run)
		}()
	}
	// every job queued (the queue holds them while Ready waits)
	for k.Queued("node-a") < 10 {
		time.Sleep(time.Millisecond)
	}
	close(ready)
	wg.Wait()
	if len(batches) != 1 || len(batches[0]) != 10 {
		t.Fatalf("batches %v, want one batch of the 10 jobs", batches)
	}
}

// TestReadyEndsWithTheCallers: a Ready that never comes returns when the
// contexts of the jobs waiting for it have ended, and the batch runs (Run
// sees the ended context and bounds itself).
func TestReadyEndsWithTheCallers(t *testing.T) {
	q := &Queue[int]{Ready: func(ctx context.Context) { <-ctx.Done() }}
	var got error
	q.Run = func(ctx context.Context, jobs []int) {
		select {
		case <-ctx.Done():
			got = ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	q.Do(ctx, 1)
	if got == nil {
		t.Fatal("the batch's context outlived its only caller's")
	}
}
