package reconcile

import (
	"time"
)

// Debouncer coalesces events by key, trailing with a maximum wait: a key is
// due Quiet after its last event, or MaxWait after its first, whichever
// comes first. Ten edits in five seconds with Quiet 2 s make one action,
// 2 s after the last edit; a stream of edits that never pauses is still
// acted on every MaxWait. It holds no timer: the caller asks Due with the
// time now and sleeps until the time it returns. Not safe for concurrent
// use.
type Debouncer[K comparable] struct {
	Quiet, MaxWait time.Duration
	pending        map[K]*burst
}

type burst struct {
	first, last time.Time
	events      int
	// at, when set, is when a retry falls due (After)
	at time.Time
}

// Add records an event of key at now.
func (d *Debouncer[K]) Add(key K, now time.Time) {
	if d.pending == nil {
		d.pending = map[K]*burst{}
	}
	b := d.pending[key]
	if b == nil {
		b = &burst{first: now}
		d.pending[key] = b
	}
	if !b.at.IsZero() { // an edit during a retry's backoff: a burst from now
		b.first, b.at = now, time.Time{}
	}
	b.last, b.events = now, b.events+1
}

// After makes key due at at: a retry after a backoff. An event of key
// added meanwhile makes it due as any burst (the edit is acted on, and the
// retry with it); a key already pending stays due when it was, or at at
// when that is earlier and it waits for another retry.
func (d *Debouncer[K]) After(key K, at time.Time) {
	if d.pending == nil {
		d.pending = map[K]*burst{}
	}
	switch b := d.pending[key]; {
	case b == nil:
		d.pending[key] = &burst{first: at, last: at, events: 1, at: at}
	case !b.at.IsZero() && at.Before(b.at):
		b.at = at // the earliest retry
	}
}

// Due removes and returns the keys due at now, with the number of events
// each coalesced, and returns the time the next pending key falls due
// (zero when none is pending).
func (d *Debouncer[K]) Due(now time.Time) (due map[K]int, next time.Time) {
	for k, b := range d.pending {
		at := d.dueAt(b)
		if !at.After(now) {
			if due == nil {
				due = map[K]int{}
			}
			due[k] = b.events
			delete(d.pending, k)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return due, next
}

// Pending returns the number of keys waiting.
func (d *Debouncer[K]) Pending() int { return len(d.pending) }

func (d *Debouncer[K]) dueAt(b *burst) time.Time {
	if !b.at.IsZero() {
		return b.at
	}
	at := b.last.Add(d.Quiet)
	if d.MaxWait > 0 {
		if limit := b.first.Add(d.MaxWait); limit.Before(at) {
			return limit
		}
	}
	return at
}
