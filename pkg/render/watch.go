package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// Event renders one event of `watch` as a line of text: the time (UTC),
// the event, and EventText. It is a line, not a Table: events are printed
// as they happen, so there is no set of rows to align under a header.
func Event(e reconcile.Event) string {
	return e.Time.UTC().Format(time.RFC3339) + " " + fmt.Sprintf("%-8s", e.Kind) + " " + EventText(e)
}

// EventText is what an event is about and what it says, without its time
// and kind: the line of Event, and the message of the controller's
// Kubernetes Events (whose reason and time say the rest). Every name from
// the cluster goes through text.Printable; no value of a Secret is ever in
// an event.
func EventText(e reconcile.Event) string {
	var subject string
	switch {
	case e.Action != nil:
		subject = fmt.Sprintf("%s %s -n %s", e.Action.Action, e.Action.Target, e.Action.Target.Namespace)
	case e.Target != nil && e.Object != nil:
		subject = fmt.Sprintf("%s -n %s for %s", e.Target, e.Target.Namespace, objectName(*e.Object))
	case e.Object != nil:
		subject = fmt.Sprintf("%s -n %s", objectName(*e.Object), e.Object.Namespace)
	}
	msg := e.Message
	switch e.Kind {
	case reconcile.EventChange:
		if e.Edits > 1 {
			msg = fmt.Sprintf("%s (%d edits)", msg, e.Edits)
		}
	case reconcile.EventResult:
		msg = resultText(e)
	}
	if subject != "" {
		msg = subject + ": " + msg
	}
	return text.Printable(msg)
}

func objectName(k inspect.ObjectKey) string { return strings.ToLower(k.Kind) + "/" + k.Name }

// resultText is an action's outcome, with how long it took to be verified.
func resultText(e reconcile.Event) string {
	s := string(e.Outcome)
	if e.CurrentAfter != nil {
		s += " after " + e.CurrentAfter.Round(100*time.Millisecond).String()
	}
	if e.SinceChange != nil {
		s += fmt.Sprintf(" (%s after the first edit)", e.SinceChange.Round(100*time.Millisecond))
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
