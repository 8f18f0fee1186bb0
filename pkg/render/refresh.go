package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// NothingToRefresh is what the plan table says of an empty plan.
const NothingToRefresh = "Nothing consumes the selected objects: nothing to refresh."

// PlanTable prints the plan of refresh; wide names every consumer.
func PlanTable(out io.Writer, plan []refresh.Action, wide bool) error {
	if len(plan) == 0 {
		fmt.Fprintln(out, NothingToRefresh)
		return nil
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "NAMESPACE\tACTION\tTARGET\tCONSUMERS\tREASON")
	for _, a := range plan {
		fmt.Fprintln(w, Row(a.Target.Namespace, string(a.Action), a.Target.String(), Consumers(a.Consumers, a.Target, wide), WithWarnings(a.Reason, a.Warnings)))
	}
	return w.Flush()
}

// ResultsTable prints what refresh did, one row per action; wide names
// every consumer.
func ResultsTable(out io.Writer, results []refresh.Result, wide bool) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "NAMESPACE\tACTION\tTARGET\tCONSUMERS\tRESULT\tCURRENT-AFTER\tDETAIL")
	for _, r := range results {
		after := "-"
		if r.CurrentAfter != nil {
			after = r.CurrentAfter.Duration.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintln(w, Row(r.Target.Namespace, string(r.Action.Action), r.Target.String(), Consumers(r.Consumers, r.Target, wide), string(r.Outcome), after, Detail(r)))
	}
	return w.Flush()
}

// Detail is the DETAIL cell of a result: the error, what an evict evicted,
// what an annotate knew before, else the detail or the reason.
func Detail(r refresh.Result) string {
	detail := r.Detail
	if r.Error != "" {
		detail = r.Error
	}
	if r.Action.Action == refresh.ActionEvict && r.Error == "" && len(r.Evicted) > 0 {
		detail = strings.TrimSuffix(Evicted(r)+"; "+detail, "; ")
	}
	if detail == "" {
		detail = WithWarnings(r.Reason, r.Warnings)
	}
	if r.Action.Action == refresh.ActionAnnotate && (r.Outcome == refresh.OutcomeCurrent || r.Outcome == refresh.OutcomeTimeout || r.Outcome == refresh.OutcomeUnverifiable || r.Outcome == refresh.OutcomeApplied) {
		// what was known before: a pending mount, or nothing (annotated
		// without a prior exec)
		detail = strings.TrimSuffix(PastTense(refresh.ActionAnnotate)+" ("+r.Before()+"); "+r.Detail, "; ")
	}
	return detail
}

// Consumers is the CONSUMERS cell of an action. The consumers of one pod
// are named POD/CONTAINER:MODE[:WHERE], WHERE being the mount path or the
// variable ($NAME, $PREFIX* for envFrom), the first three and "+N more";
// those of several pods are summarised as the workload and its pod count
// ("deployment/web (12 pods)"), so that the column does not grow with the
// workload. wide names every consumer.
func Consumers(cs []refresh.Consumer, target refresh.Target, wide bool) string {
	var parts []string
	seen := map[string]bool{}
	pods := map[string]bool{}
	for _, c := range cs {
		s := fmt.Sprintf("%s/%s:%s", c.Pod, c.Container, c.Mode)
		if w := c.Where(); w != "" {
			s += ":" + w
		}
		if c.Pod == "" {
			s = strings.ToLower(c.Object.Kind) + "/" + c.Object.Name
		} else {
			pods[c.Pod] = true
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	switch {
	case wide:
	case len(pods) > 1 && isWorkload(target.Kind):
		return fmt.Sprintf("%s (%s)", target, Plural(len(pods), "pod"))
	case len(pods) > 1:
		return Plural(len(pods), "pod")
	case len(parts) > 3:
		return strings.Join(parts[:3], ",") + fmt.Sprintf(",+%d more", len(parts)-3)
	}
	return strings.Join(parts, ",")
}

// isWorkload tells a workload target from a pod or an object.
func isWorkload(kind string) bool {
	return kind != "" && kind != "Pod" && kind != inspect.KindConfigMap && kind != inspect.KindSecret
}

// WithWarnings is a reason followed by its warnings.
func WithWarnings(reason string, warnings []string) string {
	for _, w := range warnings {
		reason += " (warning: " + w + ")"
	}
	return reason
}

// Evicted names the pods an evict action evicted and their replacements.
func Evicted(r refresh.Result) string {
	s := PastTense(refresh.ActionEvict) + " " + strings.Join(r.Evicted, ", ")
	if len(r.Replacements) > 0 {
		s += "; replaced by " + strings.Join(r.Replacements, ", ")
	}
	return s
}

// PastTense is the verb of what an action did to a consumer: annotated,
// restarted, evicted; none and manual as they are.
func PastTense(a refresh.ActionKind) string {
	switch a {
	case refresh.ActionAnnotate:
		return "annotated"
	case refresh.ActionRestart:
		return "restarted"
	case refresh.ActionEvict:
		return "evicted"
	}
	return string(a)
}

// ResultLine says in one line what a refresh changed and what it did not
// (the dashboard's status line after a refresh); bad is true when
// something failed or is not current.
func ResultLine(results []refresh.Result) (line string, bad bool) {
	if len(results) == 0 {
		return "refresh: nothing consumes the selected objects: nothing to do", false
	}
	count := map[string]int{}
	var order []string
	var slowest time.Duration
	for _, r := range results {
		s, isBad := resultWords(r)
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
		bad = bad || isBad
		if r.Outcome == refresh.OutcomeCurrent && r.CurrentAfter != nil && r.CurrentAfter.Duration > slowest {
			slowest = r.CurrentAfter.Duration
		}
	}
	var parts []string
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
	}
	line = "refresh: " + strings.Join(parts, ", ")
	if slowest > 0 {
		line += fmt.Sprintf(" (all current after %s)", slowest.Round(10*time.Millisecond))
	}
	return line, bad
}

// resultWords is what ResultLine counts a result as, and whether it is bad.
func resultWords(r refresh.Result) (string, bool) {
	switch {
	case r.Action.Action == refresh.ActionNone && refresh.AnyUnverifiable(r.Consumers):
		// nothing left to do, but not proven current (refresh exits 3)
		return "unverifiable (not changed)", true
	case r.Action.Action == refresh.ActionNone:
		return "already current", false
	case r.Action.Action == refresh.ActionManual:
		return "manual (not changed)", true
	case r.Outcome == refresh.OutcomeCurrent:
		return PastTense(r.Action.Action) + " current", false
	case r.Outcome == refresh.OutcomeFailed:
		return fmt.Sprintf("%s failed", r.Action.Action), true
	}
	return fmt.Sprintf("%s %s", PastTense(r.Action.Action), r.Outcome), r.Outcome != refresh.OutcomeApplied
}
