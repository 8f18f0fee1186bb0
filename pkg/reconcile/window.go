package reconcile

import (
	"cmp"
	"fmt"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/restartwindow"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// windowHold holds the restart (or eviction) of t outside the restart
// window its workload (or template) asks for, until the window opens: a
// Paced hold, so that the change is tried again then, and every change
// that waits meanwhile makes one restart. An annotation that cannot be
// read holds it for good (reported, see scheduleHold).
func windowHold(t refresh.Target, m subjectMeta, now time.Time) Hold {
	v := cmp.Or(m.workload[restartwindow.Annotation], m.template[restartwindow.Annotation])
	if v == "" {
		return Hold{}
	}
	s, err := restartwindow.Parse(v)
	if err != nil {
		return Hold{Reason: fmt.Sprintf("%s: %v", t, err), Kind: HoldInvalid, Stuck: true}
	}
	open, next := s.Open(now)
	if open {
		return Hold{}
	}
	if next.IsZero() { // a parsed schedule always opens within a week
		return Hold{Reason: fmt.Sprintf("%s: its %s %q never opens", t, restartwindow.Annotation, v), Kind: HoldInvalid, Stuck: true}
	}
	return Hold{Reason: fmt.Sprintf("%s restarts only in its %s %q, which opens at %s", t, restartwindow.Annotation, v, next.UTC().Format(time.RFC3339)),
		Kind: HoldWindow, Until: next, Window: v}
}

// windowCloses is when the restart window that m asks for, open at now,
// closes; zero without a window (or one that cannot be read, which holds
// the restart before this is asked).
func windowCloses(m subjectMeta, now time.Time) time.Time {
	v := cmp.Or(m.workload[restartwindow.Annotation], m.template[restartwindow.Annotation])
	if v == "" {
		return time.Time{}
	}
	s, err := restartwindow.Parse(v)
	if err != nil {
		return time.Time{}
	}
	return s.Closes(now)
}
