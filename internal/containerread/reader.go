package containerread

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reader reads what containers show, all the containers of one
// VerifyUses at once: VerifyUses decides what to read in each
// container and compares what was read, the reader only reads. Every
// reader returns the same Verified, so the comparisons cannot tell them
// apart. ReadContainers returns one Verified per request, in order; what
// could not be read is a Verified with Err.
type Reader interface {
	ReadContainers(ctx context.Context, reqs []Request, o Options) []*Verified
}

// Preparer is a Reader that can get ready for the nodes it will
// read before the first read (the node reader starts its pods): a
// refresh prepares the nodes of the pods it patches while the patches go
// out. Prepare returns without waiting for the nodes to be ready; a
// failure is the first read's to report. AwaitPrepared waits until the
// nodes prepared so far are ready or have failed (or ctx ends): a caller
// that merges reads holds them until then, so that the reads due while
// the nodes get ready make one read, not a first of the earliest and a
// second of the rest.
type Preparer interface {
	Prepare(ctx context.Context, nodes []string)
	AwaitPrepared(ctx context.Context)
}

// Request is one container to read and its pod (nil when the
// pod is not in the snapshot): a reader outside the container finds the
// container, its volumes and its mounts through the pod.
type Request struct {
	ExecRequest
	Pod *corev1.Pod
}

// ExecReader is the Reader of one exec per container
// (ReadContainer), at most Concurrency at once, with the progress line.
type ExecReader struct {
	Executor      Executor
	Concurrency   int
	Progress      io.Writer
	ProgressAfter time.Duration
}

// ReadContainers implements Reader: one exec per container, at
// most Concurrency at once, with a progress line on Progress once they
// take longer than ProgressAfter.
func (e ExecReader) ReadContainers(ctx context.Context, reqs []Request, o Options) []*Verified {
	if e.Concurrency <= 0 {
		e.Concurrency = 16
	}
	if e.ProgressAfter <= 0 {
		e.ProgressAfter = 2 * time.Second
	}
	out := make([]*Verified, len(reqs))
	var wg sync.WaitGroup
	pr := &progressLine{w: e.Progress, total: len(reqs), after: e.ProgressAfter, start: time.Now()}
	sem := make(chan struct{}, e.Concurrency)
	stop := pr.tick(200 * time.Millisecond)
	for i, req := range reqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer pr.step()
			out[i] = readContainer(ctx, req.ExecRequest, e.Executor, o)
		}()
	}
	wg.Wait()
	stop()
	pr.clear()
	return out
}

// readContainer is one read; a panic in it is that container's failure,
// not the run's.
func readContainer(ctx context.Context, req ExecRequest, ex Executor, o Options) (obs *Verified) {
	defer func() {
		if r := recover(); r != nil {
			obs = &Verified{Err: &VerifyError{Reason: VerifyFailed, Message: fmt.Sprint("internal error: ", r)}}
		}
	}()
	if ctx.Err() != nil {
		return &Verified{Err: &VerifyError{Reason: VerifyFailed, Message: "interrupted"}}
	}
	return ReadContainer(ctx, ex, req, o)
}

// progressLine is the "\r"-rewritten "verifying: n/m containers" line,
// shown once the reads have taken longer than after, and only for two
// containers or more.
type progressLine struct {
	w     io.Writer
	total int
	after time.Duration
	start time.Time

	mu      sync.Mutex
	done    int
	printed bool
}

// tick prints the line every interval until stop is called.
func (p *progressLine) tick(interval time.Duration) (stop func()) {
	ticker := time.NewTicker(interval)
	stopTicker := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				p.print()
			case <-stopTicker:
				return
			}
		}
	}()
	return func() {
		ticker.Stop()
		close(stopTicker)
	}
}

func (p *progressLine) print() {
	if p.w == nil || p.total < 2 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.start) < p.after {
		return
	}
	p.printed = true
	fmt.Fprintf(p.w, "\rverifying: %d/%d containers", p.done, p.total)
}

// step counts one finished read.
func (p *progressLine) step() {
	p.mu.Lock()
	p.done++
	p.mu.Unlock()
}

// clear erases the line if it was shown.
func (p *progressLine) clear() {
	p.mu.Lock()
	if p.printed {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.mu.Unlock()
}
