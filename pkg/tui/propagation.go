package tui

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Re-verification of pending uses backs off from FirstRecheck to MaxRecheck.
const (
	FirstRecheck = time.Second
	MaxRecheck   = 8 * time.Second
)

// verification is what the last verification of a use found.
type verification struct {
	State       inspect.State
	StateReason string
	// Cause and Fix group the unverifiable uses (inspect.GroupWarnings)
	Cause    inspect.StateCause
	Fix      string
	SyncedAt *time.Time
	At       time.Time
}

// track follows one hot-updating use from a data change of its object
// until the kubelet has written it.
type track struct {
	Change Edit
	// Expected is the core's delay estimate ("0-90s").
	Expected string
	// InSyncAt is when a verification first saw the use in sync; Took is
	// how long the kubelet took (its write time minus the change time).
	InSyncAt time.Time
	Took     time.Duration
	// Unaffected: the volume was last written before the change, and is
	// in sync: the change did not touch what this use reads.
	Unaffected bool
	WrittenAt  time.Time
	// Interval is the pause before the next re-verification.
	Interval time.Duration
}

// Done tells whether the use reached the change.
func (t *track) Done() bool { return !t.InSyncAt.IsZero() }

// newTrack starts following a use after a change of its object.
func newTrack(it inspect.Use, c Edit) *track {
	return &track{Change: c, Expected: inspect.FormatDelay(it.Delay), Interval: FirstRecheck}
}

// record records a verification of a tracked use. It returns whether the
// use must be verified again (still pending).
func (t *track) record(o verification) bool {
	switch o.State {
	case inspect.StateInSync:
		if t.Done() {
			return false
		}
		t.InSyncAt = o.At
		// The ..data directory is named after the second the kubelet wrote
		// it; the change time also has a one-second resolution.
		switch {
		case o.SyncedAt != nil && o.SyncedAt.Before(t.Change.At.Add(-time.Second)):
			t.Unaffected, t.WrittenAt = true, *o.SyncedAt
		case o.SyncedAt != nil:
			t.Took = max(o.SyncedAt.Sub(t.Change.At), 0)
		default:
			t.Took = max(o.At.Sub(t.Change.At), 0)
		}
		return false
	case inspect.StatePending:
		t.Interval = min(2*t.Interval, MaxRecheck)
		return true
	}
	return false
}

// describe is the detail line of a tracked use.
func (t *track) describe(now time.Time) string {
	if t.Unaffected {
		return fmt.Sprintf("in-sync: the change of %s did not touch what this use reads (the kubelet last wrote it at %s)",
			t.Change.At.UTC().Format("15:04:05"), t.WrittenAt.UTC().Format("15:04:05"))
	}
	if t.Done() {
		return fmt.Sprintf("in-sync: the kubelet took %s to write the change of %s", t.Took.Round(time.Second), t.Change.At.UTC().Format("15:04:05"))
	}
	exp := t.Expected
	if exp == "" {
		exp = "unknown"
	}
	return fmt.Sprintf("pending: changed %s ago, the kubelet is expected to write it within %s; re-checking", age(t.Change.At, now), exp)
}

// age is a kubectl-style age ("34s", "5m").
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
