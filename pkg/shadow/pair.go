package shadow

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is what cmsync would have done to one workload for one change.
type Action string

const (
	ActRemount  Action = "remount"
	ActHook     Action = "hook" // remounted, then its reload hook
	ActRestart  Action = "restart"
	ActEvict    Action = "evict"
	ActManual   Action = "manual"
	ActWindow   Action = "deferred-window" // held until its restart window opens
	ActPaced    Action = "deferred-pace"   // held by the pacing
	ActDeferred Action = "deferred"        // held for a rollout under way or the limit: restarted after
	ActSkip     Action = "skip"            // excluded, paused, not opted in
	ActNone     Action = ""
)

// restarts tells whether the action restarts the workload's pods.
func (a Action) restarts() bool { return a == ActRestart || a == ActEvict || a == ActDeferred }

// Class is how the peer's action and cmsync's compare.
type Class string

const (
	ClassAgree Class = "agree"
	// ClassSpared: the peer restarted, cmsync would only remount.
	ClassSpared Class = "spared"
	// ClassPeerMissed: cmsync would restart (a stale env or subPath
	// consumer), at once or once its hold ends, the peer did nothing.
	ClassPeerMissed Class = "peer-missed"
	// ClassUnreadKey: the peer restarted for a change of keys no
	// container reads.
	ClassUnreadKey Class = "unread-key"
	// ClassOutsideWindow: the peer restarted while cmsync would hold the
	// restart until the workload's restart window opens.
	ClassOutsideWindow Class = "outside-window"
	// ClassOverPace: the peer restarted while cmsync's pacing would hold
	// the restart.
	ClassOverPace Class = "over-pace"
	// ClassDiffer: the peer restarted a workload cmsync would leave alone
	// for another reason (excluded, not opted in, manual).
	ClassDiffer Class = "differ"
)

// classOrder ranks the classes: a change's class is its workloads' first.
var classOrder = []Class{ClassPeerMissed, ClassOutsideWindow, ClassOverPace, ClassUnreadKey, ClassSpared, ClassDiffer, ClassAgree}

// Object is a ConfigMap or Secret.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (o Object) String() string { return strings.ToLower(o.Kind) + "/" + o.Name }

// Decision is what cmsync would have done for one change.
type Decision struct {
	Object Object    `json:"object"`
	Keys   []string  `json:"keys,omitempty"`
	At     time.Time `json:"at"` // the first edit
	// Ignored says why nothing was done at all; Unread: because no
	// consumer reads the changed keys.
	Ignored   string             `json:"ignored,omitempty"`
	Unread    bool               `json:"unread,omitempty"`
	Workloads []WorkloadDecision `json:"workloads,omitempty"`
}

// WorkloadDecision is cmsync's action on one workload; Pods are the pods it
// remounts or restarts, Desired those the workload runs by its spec (0:
// unknown), which bounds them.
type WorkloadDecision struct {
	Workload Workload `json:"workload"`
	Action   Action   `json:"action"`
	Pods     int      `json:"pods,omitempty"`
	Desired  int      `json:"desired,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	// AlreadyCurrent: the pods already read the change when the round
	// came; Action is what cmsync would have done had it come first, which
	// counts only where a peer restarted the workload.
	AlreadyCurrent bool `json:"alreadyCurrent,omitempty"`
	// RemountPolicy is what cmsync's least disruptive policy (on-change:
	// remount) would do instead, where that differs from Action: a remount
	// of RemountPods pods where only the policy restarts.
	RemountPolicy Action `json:"remountPolicy,omitempty"`
	RemountPods   int    `json:"remountPods,omitempty"`
}

// remount is what the remount policy would do to the workload, and to how
// many pods.
func (wd WorkloadDecision) remount() (Action, int) {
	if wd.RemountPolicy == "" {
		return wd.Action, wd.pods()
	}
	if wd.Desired > 0 {
		return wd.RemountPolicy, min(wd.RemountPods, wd.Desired)
	}
	return wd.RemountPolicy, wd.RemountPods
}

// pods are the pods of the decision, at most the workload's desired pods:
// while a rollout is under way (the peer's, often) cmsync's plan lists the
// old revision's pods and the new one's, and remounts both.
func (wd WorkloadDecision) pods() int {
	if wd.Desired > 0 {
		return min(wd.Pods, wd.Desired)
	}
	return wd.Pods
}

// Row is one change, the peer's restarts beside cmsync's decision.
type Row struct {
	Time   time.Time `json:"time"`
	Object Object    `json:"object"`
	Keys   []string  `json:"keys,omitempty"`
	Class  Class     `json:"class"`
	// PeerPods and CmsyncPods are the pods each restarted; Spared those
	// the peer restarted and cmsync would not have.
	PeerPods   int `json:"peerPods"`
	CmsyncPods int `json:"cmsyncPods"`
	Spared     int `json:"spared"`
	// SparedByRemount are the pods the peer restarted that cmsync's
	// remount policy (on-change: remount) would not have: Spared and more.
	SparedByRemount int           `json:"sparedByRemount"`
	Ignored         string        `json:"ignored,omitempty"`
	Workloads       []WorkloadRow `json:"workloads,omitempty"`
}

// WorkloadRow is one workload of a change.
type WorkloadRow struct {
	Workload Workload `json:"workload"`
	// Peer is how the peer restarted it ("" : it did not); Restarts how
	// many times within the window.
	Peer       Strategy `json:"peer,omitempty"`
	Restarts   int      `json:"peerRestarts,omitempty"`
	Cmsync     Action   `json:"cmsync,omitempty"`
	PeerPods   int      `json:"peerPods"`
	CmsyncPods int      `json:"cmsyncPods"`
	// Remounted are the pods cmsync would remount without a restart.
	Remounted int    `json:"remounted,omitempty"`
	Class     Class  `json:"class"`
	Reason    string `json:"reason,omitempty"`
	// RemountPolicy is what the remount policy would do where it differs
	// from Cmsync (a remount where only the policy restarts: the
	// application must re-read its files, or it stays stale), and
	// RemountClass how that compares with the peer.
	RemountPolicy   Action `json:"remountPolicy,omitempty"`
	RemountClass    Class  `json:"remountClass,omitempty"`
	SparedByRemount int    `json:"sparedByRemount,omitempty"`
}

// Slack is how long before a change's first edit as cmsync saw it a
// peer's marker still counts for it (the peer may see the edit first).
const Slack = 2 * time.Second

// Pair pairs a change with the markers seen within window after its first
// edit (and before until, the object's next change; zero: none): those
// made for its object, and the restarts by an unknown hand of the
// workloads cmsync decided on. It classifies each workload and the change.
func Pair(d Decision, markers []Marker, window time.Duration, until time.Time) Row {
	row := Row{Time: d.At, Object: d.Object, Keys: d.Keys, Ignored: d.Ignored}
	byWorkload := map[Workload]*WorkloadRow{}
	var order []Workload
	get := func(w Workload) *WorkloadRow {
		if r := byWorkload[w]; r != nil {
			return r
		}
		byWorkload[w] = &WorkloadRow{Workload: w}
		order = append(order, w)
		return byWorkload[w]
	}
	current := map[Workload]bool{}
	remount := map[Workload]Action{}
	for _, wd := range d.Workloads {
		r := get(wd.Workload)
		current[wd.Workload] = wd.AlreadyCurrent
		r.Cmsync, r.Reason = wd.Action, wd.Reason
		if act, _ := wd.remount(); act != wd.Action {
			r.RemountPolicy, remount[wd.Workload] = act, act
		}
		if wd.Action.restarts() {
			r.CmsyncPods = wd.pods()
		} else if wd.Action == ActRemount || wd.Action == ActHook {
			r.Remounted = wd.pods()
		}
	}
	seen := map[Workload]map[time.Time]bool{}
	for _, m := range markers {
		if !inWindow(m.At, d.At, window, until) || m.Workload.Namespace != d.Object.Namespace {
			continue
		}
		_, decided := byWorkload[m.Workload]
		if !m.For(d.Object.Kind, d.Object.Name) && (m.Known() || !decided) {
			continue
		}
		r := get(m.Workload)
		if r.Peer == "" || m.Known() && r.Peer == StrategyRestartedAt {
			r.Peer = m.Strategy
		}
		r.PeerPods = max(r.PeerPods, m.Pods)
		if seen[m.Workload] == nil {
			seen[m.Workload] = map[time.Time]bool{}
		}
		seen[m.Workload][m.At.Truncate(time.Second)] = true // one restart may show several markers
		r.Restarts = len(seen[m.Workload])
	}
	row.Class = ClassAgree
	for _, w := range order {
		r := byWorkload[w]
		if current[w] && r.Peer == "" {
			// current before cmsync's round, restarted by no peer: nothing for either
			*r = WorkloadRow{Workload: w, Reason: "its pods already read the change"}
		}
		r.Class = classify(r.Peer != "", r.Restarts, r.Cmsync, d.Unread)
		alt := r.Class
		if act, ok := remount[w]; ok && r.Cmsync != ActNone {
			alt = classify(r.Peer != "", r.Restarts, act, d.Unread)
			r.RemountClass = alt
		}
		row.PeerPods += r.PeerPods
		row.CmsyncPods += r.CmsyncPods
		if r.Class == ClassSpared || r.Class == ClassUnreadKey {
			row.Spared += r.PeerPods
		}
		if alt == ClassSpared || alt == ClassUnreadKey {
			r.SparedByRemount = r.PeerPods
			row.SparedByRemount += r.PeerPods
		}
		if slices.Index(classOrder, r.Class) < slices.Index(classOrder, row.Class) {
			row.Class = r.Class
		}
		row.Workloads = append(row.Workloads, *r)
	}
	return row
}

// inWindow tells whether a marker seen at at belongs to a change first
// edited at first.
func inWindow(at, first time.Time, window time.Duration, until time.Time) bool {
	if at.Before(first.Add(-Slack)) || at.After(first.Add(window)) {
		return false
	}
	return until.IsZero() || at.Before(until.Add(-Slack))
}

// classify compares the peer's action on one workload (restarted, how
// many times) with cmsync's; unread: the change's keys are read by no
// consumer.
func classify(peer bool, restarts int, act Action, unread bool) Class {
	switch {
	case !peer && act.restarts():
		return ClassPeerMissed
	case !peer:
		return ClassAgree
	case act == ActWindow:
		return ClassOutsideWindow
	case act == ActPaced || act.restarts() && restarts > 1:
		return ClassOverPace
	case act.restarts():
		return ClassAgree
	case act == ActRemount || act == ActHook:
		return ClassSpared
	case unread || act == ActNone:
		return ClassUnreadKey
	}
	return ClassDiffer
}

// Peer says what the peer did for a row, in a few words.
func (r Row) Peer() string {
	var s []string
	for _, w := range r.Workloads {
		if w.Peer != "" {
			s = append(s, fmt.Sprintf("restarted %s (%s)", w.Workload, w.Peer))
		}
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// Cmsync says what cmsync would have done for a row, in a few words.
func (r Row) Cmsync() string {
	var s []string
	for _, w := range r.Workloads {
		switch {
		case w.Cmsync == ActNone:
		case w.Remounted > 0:
			s = append(s, fmt.Sprintf("%s %d pods of %s", w.Cmsync, w.Remounted, w.Workload))
		case w.RemountPolicy != "":
			s = append(s, fmt.Sprintf("%s %s (%s with on-change: remount)", w.Cmsync, w.Workload, w.RemountPolicy))
		default:
			s = append(s, fmt.Sprintf("%s %s", w.Cmsync, w.Workload))
		}
	}
	if len(s) == 0 {
		if r.Ignored != "" {
			return "ignore: " + r.Ignored
		}
		return "nothing"
	}
	return strings.Join(s, ", ")
}
