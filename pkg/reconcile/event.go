package reconcile

import (
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// EventKind is what one log line reports.
type EventKind string

const (
	// EventReady: the caches are synced; changes from now on are acted on.
	EventReady EventKind = "ready"
	// EventResume: the records on the consumers were compared with the
	// objects at start (how many are current, recorded, to check).
	EventResume EventKind = "resume"
	// EventChange: a ConfigMap or Secret changed (after the debounce: the
	// edits it coalesced and the keys they touched).
	EventChange EventKind = "change"
	// EventIgnored: a change no selected consumer reads (no action).
	EventIgnored EventKind = "ignored"
	// EventSkip: a workload left alone (paused, opted out, not opted in).
	EventSkip EventKind = "skip"
	// EventAction: an action of the plan is sent (or, with --dry-run,
	// would be).
	EventAction EventKind = "action"
	// EventDeferred: a restart held back (the workload's previous rollout
	// is not complete, or the restart limit is reached); it is tried again.
	// Reported once per edit and kind of reason, not at every retry.
	EventDeferred EventKind = "deferred"
	// EventResult: how an action ended, verified or not.
	EventResult EventKind = "result"
	// EventRetry: a round or an action failed for a reason that may pass
	// (an API server restarting, a timeout, 429 or 5xx); the change is
	// tried again after a backoff (Message says when and which attempt),
	// until it succeeds or the object changes again.
	EventRetry EventKind = "retry"
	// EventError: a round or an action failed for good (forbidden, not
	// found, invalid), or a watch failed; what it means is in Message. A
	// failed change is not tried again until an object it reads changes.
	EventError EventKind = "error"
)

// Event is one line of the log: -o json prints it as one JSON object.
type Event struct {
	Time time.Time `json:"time"`
	Kind EventKind `json:"event"`
	// Object is the ConfigMap or Secret the event is about.
	Object *inspect.ObjectKey `json:"object,omitempty"`
	// Keys are the changed keys (EventChange) or those its consumers read.
	Keys []string `json:"keys,omitempty"`
	// Edits is how many edits one change coalesced; FirstEdit (of
	// EventChange) is when the first of them was seen, on the loop's Now.
	Edits     int        `json:"edits,omitempty"`
	FirstEdit *time.Time `json:"firstEdit,omitempty"`
	// Action is the action of EventAction, EventDeferred and EventResult.
	Action *refresh.Action `json:"action,omitempty"`
	// Target is the workload of EventSkip.
	Target *refresh.Target `json:"target,omitempty"`
	// Outcome, Detail, CurrentAfter and SinceChange are an EventResult's:
	// SinceChange from the first edit the action answers to until the
	// action's consumers were verified current.
	Outcome      refresh.Outcome `json:"outcome,omitempty"`
	CurrentAfter *time.Duration  `json:"currentAfterNs,omitempty"`
	SinceChange  *time.Duration  `json:"sinceChangeNs,omitempty"`
	// Until is when a deferred restart is tried again, where that is
	// known (a restart window, the pace); Window is the restart window
	// that defers it.
	Until  *time.Time `json:"until,omitempty"`
	Window string     `json:"window,omitempty"`
	// Hold is what holds an EventDeferred's restart back.
	Hold HoldKind `json:"hold,omitempty"`
	// ReloadHook is what became of an annotated pod's reload hook
	// (EventResult); its Message says it too.
	ReloadHook *refresh.HookResult `json:"reloadHook,omitempty"`
	Message    string              `json:"message,omitempty"`
}

// Round is what one round did: the events it emitted, in order, about its
// namespace's objects and workloads (an event of no object, such as a
// failed watch, is in none). Loop.Round receives it at the round's end.
type Round struct {
	Namespace string
	// Started and Ended are on the loop's Clock.
	Started, Ended time.Time
	Events         []Event
}

// namespace is the namespace an event is about ("" for none).
func (e Event) namespace() string {
	switch {
	case e.Object != nil:
		return e.Object.Namespace
	case e.Action != nil:
		return e.Action.Target.Namespace
	case e.Target != nil:
		return e.Target.Namespace
	}
	return ""
}
