package reconcile

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// retryUnread takes out of the plan the manual steps of restartable
// workloads whose consumers could not be read for a cause that may pass
// (an exec that timed out, a pod or a reader pod not running yet, a node
// that did not answer), and puts their changes back, for those workloads
// only, after the namespace's backoff: the next attempt reads them again,
// and restarts the stale ones. A change is never left as a manual step
// that nothing tries again, nor retried for good: after unreadAttempts
// attempts for one change (a pod that stays not running, crash-looping on
// the very configuration being fixed) the step is left as the plan's
// manual step, said once. Such a step of a workload the plan restarts
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
	uses := make(map[inspect.UseID]inspect.Use, len(plan.Uses))
	for _, it := range plan.Uses {
		uses[it.ID()] = it
	}
	only := map[inspect.ObjectKey]map[string]bool{}
	var why string
	var out []refresh.Action
	plan.Actions = slices.DeleteFunc(plan.Actions, func(a refresh.Action) bool {
		reason, ok := unreadMayPass(a, uses)
		if !ok || triedUnread(a, rd.changes) >= unreadAttempts {
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
			p.unreadTries = maps.Clone(p.unreadTries) // the copy put back carries the count
			if p.unreadTries == nil {
				p.unreadTries = map[string]int{}
			}
			p.unreadTries[w]++
		}
		out = append(out, a)
		return true
	})
	if len(only) > 0 {
		l.retryLater(rd.ns, rd.changes, only, why, false)
	}
	return out
}

// unreadAttempts bounds the attempts to read a workload's consumers for
// one change (with the namespace's backoff, about four minutes).
const unreadAttempts = 8

// triedUnread is how many times a's consumers could not be read for the
// changes they read.
func triedUnread(a refresh.Action, changes map[inspect.ObjectKey]*pending) int {
	n := 0
	for _, c := range a.Consumers {
		if p := changes[inspect.ObjectKey{Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}]; p != nil {
			n = max(n, p.unreadTries[a.Target.Kind+"/"+a.Target.Name])
		}
	}
	return n
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
