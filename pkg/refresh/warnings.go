package refresh

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// The grouped warnings of a refresh (Config.GroupWarnings): a cause that
// leaves several uses unverifiable, outside any one pod (the reader
// namespace missing, exec forbidden), is said once with its fix, as
// status --verify and diff say it (inspect.GroupWarnings), and the plan's
// reasons and the results' details point to it.

// seeWarning is what a reason or detail says in place of a grouped cause.
func seeWarning(n int) string { return fmt.Sprintf("see warning %d", n) }

// unverifiableReason is why a use is unverifiable, as a reason of the
// plan quotes it: its warning when grouped, else its own reason.
func unverifiableReason(it inspect.Use) string {
	if it.Warning > 0 {
		return seeWarning(it.Warning)
	}
	return it.StateReason
}

// noteUnverifiable keeps the use the result's detail describes when that
// use is unverifiable, for GroupWarnings.
func (r *Result) noteUnverifiable(it *inspect.Use) {
	r.unverifiable = nil
	if it != nil && it.State == inspect.StateUnverifiable {
		u := *it
		r.unverifiable = &u
	}
}

// GroupWarnings numbers, over the whole run, the causes that left several
// uses unverifiable: the plan's warnings keep their numbers (its reasons
// name them); a result whose wait ended on an unverifiable read joins the
// warning of its cause, or, with other results of a new cause, a new one
// (inspect.GroupWarnings). The detail of each grouped result points to its
// warning instead of quoting the cause. Each warning counts its uses once,
// planned or waited for. The results are Apply's (redacted).
func (p *Plan) GroupWarnings(results []Result) []inspect.Warning {
	type key struct {
		cause inspect.StateCause
		fix   string
	}
	keyOf := func(it inspect.Use) key { return key{it.StateCause, it.StateFix} }
	var warnings []inspect.Warning
	number := map[key]int{}
	uses := map[int]map[inspect.UseID]bool{}
	add := func(n int, it inspect.Use) {
		if uses[n] == nil {
			uses[n] = map[inspect.UseID]bool{}
		}
		uses[n][it.ID()] = true
	}
	if p != nil {
		warnings = slices.Clone(p.Warnings)
		for _, it := range p.Uses {
			if it.Warning > 0 {
				number[keyOf(it)] = it.Warning
				add(it.Warning, it)
			}
		}
	}
	grouped := map[int]int{} // result index -> warning number
	var rest []inspect.Use
	var restAt []int
	for i, r := range results {
		u := r.unverifiable
		if u == nil || r.Outcome != OutcomeUnverifiable && r.Outcome != OutcomeTimeout {
			continue
		}
		if n, ok := number[keyOf(*u)]; ok {
			grouped[i] = n
			add(n, *u)
			continue
		}
		rest, restAt = append(rest, *u), append(restAt, i)
	}
	offset := len(warnings)
	warnings = append(warnings, inspect.GroupWarnings(rest)...)
	for j, it := range rest {
		if it.Warning > 0 {
			grouped[restAt[j]] = offset + it.Warning
			add(offset+it.Warning, it)
		}
	}
	for i := range warnings {
		warnings[i].Uses = max(warnings[i].Uses, len(uses[i+1]))
	}
	for i, n := range grouped {
		r := &results[i]
		r.Detail = strings.Replace(r.Detail, "("+r.unverifiable.StateReason+")", "("+seeWarning(n)+")", 1)
	}
	return warnings
}
