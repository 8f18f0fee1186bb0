package nodereader

import (
	"time"
)

// A reader pod is root on its node (hostPID, SYS_PTRACE): whoever may
// exec into it has the node. A one-shot command keeps its pods until it
// ends; watch and the controller read now and then for as long as they
// run, so with Options.IdleTimeout a node's reader pod is deleted once
// no read has used it for that long, and exists only while reads come.
//
// What counts as use, under r.mu: a read, from podFor until its exec is
// over (readerPod.reads), and a start under way (Prepare's or a read's:
// its ready is still open); a pod is idle from the end of its last read,
// or from its start. The janitor removes an idle pod from r.pods under
// that lock and only then deletes it: a read that comes after does not
// find it and starts a new one, and no read is using it.

// release ends one read's use of rp.
func (r *Reader) release(rp *readerPod) {
	r.mu.Lock()
	rp.reads--
	rp.lastUsed = r.opts.Clock.Now()
	r.mu.Unlock()
}

// startJanitor starts the janitor once, with the first reader pod, when
// there is an IdleTimeout; r.mu is held and Close has not been called.
// It stops with r.bg (Close), which waits for it.
func (r *Reader) startJanitor() {
	if r.opts.IdleTimeout <= 0 || r.janitorDone != nil {
		return
	}
	r.janitorDone = make(chan struct{})
	// a pod is deleted at most a quarter of the timeout late
	tick := r.opts.Clock.NewTicker(max(r.opts.IdleTimeout/4, 100*time.Millisecond))
	go func() {
		defer close(r.janitorDone)
		defer tick.Stop()
		for {
			select {
			case <-r.bg.Done():
				return
			case <-tick.C():
				r.deleteIdle()
			}
		}
	}()
}

// deleteIdle deletes the reader pods idle for IdleTimeout or more. A
// failed deletion is left alone: the pod is out of r.pods (no read uses
// it again), its deadline ends it, and Close deletes what is left with
// this run's label.
func (r *Reader) deleteIdle() {
	for _, name := range r.takeIdle(r.opts.Clock.Now()) {
		_ = r.deleteWithin(r.bg, name)
	}
}

// takeIdle removes from r.pods the pods idle at now and returns their
// names.
func (r *Reader) takeIdle(now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil // Close deletes them
	}
	var names []string
	for node, rp := range r.pods {
		if rp.reads > 0 || !isReady(rp) || rp.name == "" || now.Sub(rp.lastUsed) < r.opts.IdleTimeout {
			continue
		}
		delete(r.pods, node)
		rp.endSession()
		names = append(names, rp.name)
	}
	return names
}
