package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// retryUnread takes out of the plan the manual steps of restartable
// workloads whose consumers could not be read for a cause that may pass
// (an exec that timed out, a pod or a reader pod not running yet, a node
// that did not answer), and puts their changes back, for those workloads
// only, after the namespace's backoff: the next attempt reads them again,
// and restarts the stale ones. A change is never left as a manual step
// that nothing tries again, nor retried for good: once unreadWait has
// passed since the first attempt that could not read a workload's
// consumers for one change (a pod that stays not running, crash-looping on
// the very configuration being fixed), whatever other edits made rounds of
// the namespace meanwhile, the step is left as the plan's manual step,
// said once. Such a step of a workload the plan restarts
// anyway is folded into the restart. It returns the steps it took out,
// which are not recorded as done.
func (l *Loop) retryUnread(rd *roundRead, plan *refresh.Plan) []refresh.Action {
	for _, a := range slices.Clone(plan.Actions) { // a workload restarted anyway: its new pods read everything
		if a.Action == refresh.ActionRestart {
			cs := foldUnknown(&plan.Actions, a.Target)
			i := slices.IndexFunc(plan.Actions, func(b refresh.Action) bool { return b.Action == refresh.ActionRestart && b.Target == a.Target })
			plan.Actions[i].Consumers = append(plan.Actions[i].Consumers, cs...)
		}
	}
	readAgain(rd.changes, plan.Actions)
	uses := make(map[inspect.UseID]inspect.Use, len(plan.Uses))
	for _, it := range plan.Uses {
		uses[it.ID()] = it
	}
	only := map[inspect.ObjectKey]map[string]bool{}
	var why string
	var out []refresh.Action
	now := l.Clock()
	plan.Actions = slices.DeleteFunc(plan.Actions, func(a refresh.Action) bool {
		reason, ok := unreadMayPass(a, uses)
		if !ok || unreadFor(a, rd.changes, now) >= unreadWait {
			return false
		}
		why = reason
		for _, c := range a.Consumers {
			k := inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}
			if rd.changes[k] == nil {
				continue
			}
			if only[k] == nil {
				only[k] = map[string]bool{}
			}
			w := a.Target.Kind + "/" + a.Target.Name
			only[k][w] = true
			p := rd.changes[k]
			p.unreadSince = maps.Clone(p.unreadSince) // the copy put back carries it
			if p.unreadSince == nil {
				p.unreadSince = map[string]time.Time{}
			}
			if _, ok := p.unreadSince[w]; !ok {
				p.unreadSince[w] = now
			}
		}
		out = append(out, a)
		return true
	})
	if len(only) > 0 {
		l.retryLater(rd.ns, rd.changes, only, why, false)
	}
	return out
}

// readAgain ends the unread time of the workloads that the round read and
// acts on (anything but a manual step): a read that succeeded starts the
// next failure's retries afresh. A restart sent once its consumers were
// read, whose verification then cannot read its new pods, has its own
// retries, not what is left of those its first reads had used. A
// workload with a manual step in the same plan (a pod that still cannot be
// read beside one evicted) keeps its time: its give-up is not put off by
// an action on its other pods, held or failing as it may be.
func readAgain(changes map[inspect.ObjectKey]*pending, actions []refresh.Action) {
	manual := map[refresh.Target]bool{}
	for _, a := range actions {
		if a.Action == refresh.ActionManual {
			manual[a.Target] = true
		}
	}
	for _, a := range actions {
		if a.Action == refresh.ActionManual || manual[a.Target] {
			continue
		}
		w := a.Target.Kind + "/" + a.Target.Name
		for _, c := range a.Consumers {
			p := changes[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}]
			if p == nil {
				continue
			}
			if _, ok := p.unreadSince[w]; !ok {
				continue
			}
			p.unreadSince = maps.Clone(p.unreadSince) // copies put back share it
			delete(p.unreadSince, w)
		}
	}
}

// unreadWait bounds the time a workload's consumers are tried again for
// one change, from the first attempt that could not read them: what the
// namespace's backoff takes for unreadAttempts attempts (1 s doubling:
// 255 s, about four minutes). Time, not rounds: an edit of another object
// makes a round of the namespace, and tries the read again, at once.
const (
	unreadAttempts = 8
	unreadWait     = (1<<unreadAttempts - 1) * RetryBase
)

// unreadFor is how long a's consumers have not been read, at now, for the
// changes they read: the shortest of those times, so that an edit first
// found unread now has its own retries even when another object's, read
// by the same workload, has had its time (zero before a first attempt
// failed).
func unreadFor(a refresh.Action, changes map[inspect.ObjectKey]*pending, now time.Time) time.Duration {
	d, seen := time.Duration(0), false
	for _, c := range a.Consumers {
		p := changes[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}]
		if p == nil {
			continue
		}
		since, ok := p.unreadSince[a.Target.Kind+"/"+a.Target.Name]
		if !ok {
			return 0
		}
		if e := now.Sub(since); !seen || e < d {
			d, seen = e, true
		}
	}
	return d
}

// unreadMayPass tells whether a is the manual step of a restartable
// workload whose every consumer could not be read for a cause that may
// pass (inspect.StateCause.Permanent says which cannot), and says why.
func unreadMayPass(a refresh.Action, uses map[inspect.UseID]inspect.Use) (string, bool) {
	if a.Action != refresh.ActionManual || !refresh.Restartable[a.Target.Kind] || len(a.Consumers) == 0 {
		return "", false
	}
	var why string
	for _, c := range a.Consumers {
		it, ok := uses[c.ID()]
		if !ok || it.State != inspect.StateUnverifiable || it.StateCause.Permanent() {
			return "", false
		}
		if why == "" {
			why = fmt.Sprintf("%s: cannot tell whether its %s use of %s %s is stale (%s)", a.Target, it.Mode, it.Object.Kind, it.Object.Name, it.StateReason)
		}
	}
	return why, true
}
