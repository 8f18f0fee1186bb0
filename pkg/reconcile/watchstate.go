package reconcile

import "time"

// syncedVersion is what the watermark asks of an informer: the resource
// version it last listed or watched up to (cache.SharedIndexInformer).
type syncedVersion interface {
	LastSyncResourceVersion() string
}

// watchState is what the loop knows of one informer's watch: the last
// resource version seen, the moment it was known in sync (seen: the look
// before the one that found the version moved, since the move may have
// come right after it), when it was last looked at (polled), and, once
// its watch failed, the version it had then.
type watchState struct {
	inf          syncedVersion
	rv           string
	seen, polled time.Time
	broken       bool
	// brokenAt is the version the informer had when its watch failed:
	// another one means it listed or watched again since
	brokenAt string
}

// watchOf registers the informer of what.
func (l *Loop) watchOf(what string, inf syncedVersion) *watchState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watches == nil {
		l.watches = map[string]*watchState{}
	}
	now := l.Now()
	st := &watchState{inf: inf, rv: inf.LastSyncResourceVersion(), seen: now, polled: now}
	l.watches[what] = st
	return st
}

// watchFailed marks st's watch as failed: the edits made since st was
// last known in sync may not have been seen. A failure after the
// informer listed or watched again (its version moved since the failure
// before, which the loop has not looked at yet) is a cut of its own: the
// informer was in sync at that list, no earlier than the last look, and
// only a move past this failure's version ends the cut.
func (l *Loop) watchFailed(st *watchState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rv := st.inf.LastSyncResourceVersion()
	switch {
	case !st.broken:
		st.broken, st.brokenAt = true, rv
	case rv != st.brokenAt:
		st.rv, st.seen, st.brokenAt = rv, st.polled, rv
	}
}

// lastInSync is the earliest moment an informer whose watch failed was
// last known in sync (zero: every watch is well), with l.mu held. An
// informer is known in sync when its resource version moves (an event, a
// bookmark, a list); one whose version moved since its watch failed has
// listed or watched again, and every edit since is delivered to it.
func (l *Loop) lastInSync() time.Time {
	now := l.Now()
	var at time.Time
	for _, st := range l.watches {
		rv := st.inf.LastSyncResourceVersion()
		if st.broken && rv != st.brokenAt {
			st.broken = false
		}
		if !st.broken && rv != st.rv {
			st.rv, st.seen = rv, st.polled
		}
		st.polled = now
		if st.broken && (at.IsZero() || st.seen.Before(at)) {
			at = st.seen
		}
	}
	return at
}
