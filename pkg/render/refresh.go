package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// NothingToRefresh is what refresh says of an empty plan instead of its
// table.
const NothingToRefresh = "Nothing consumes the selected objects: nothing to refresh."

// Actions renders the plan of refresh: a row per action; Wide names every
// consumer.
type Actions struct {
	Items []refresh.Action
	Wide  bool
}

// Header is the plan's column titles.
func (Actions) Header() []string {
	return []string{"NAMESPACE", "ACTION", "TARGET", "CONSUMERS", "REASON"}
}

// Rows are a row per action, escaped.
func (p Actions) Rows() [][]string {
	rows := make([][]string, 0, len(p.Items))
	for _, a := range p.Items {
		rows = append(rows, Cells([]string{a.Target.Namespace, string(a.Action), a.Target.String(), Consumers(a.Consumers, a.Target, p.Wide), WithWarnings(a.Reason, a.Warnings)}))
	}
	return rows
}

// Results renders what refresh did: a row per action; Wide names every
// consumer.
type Results struct {
	Items []refresh.Result
	Wide  bool
}

// Header is the results' column titles.
func (Results) Header() []string {
	return []string{"NAMESPACE", "ACTION", "TARGET", "CONSUMERS", "RESULT", "CURRENT-AFTER", "DETAIL"}
}

// Rows are a row per result, escaped.
func (rs Results) Rows() [][]string {
	rows := make([][]string, 0, len(rs.Items))
	for _, r := range rs.Items {
		after := "-"
		if r.CurrentAfter != nil {
			after = r.CurrentAfter.Duration.Round(10 * time.Millisecond).String()
		}
		rows = append(rows, Cells([]string{r.Target.Namespace, string(r.Action.Action), r.Target.String(), Consumers(r.Consumers, r.Target, rs.Wide), string(r.Outcome), after, Detail(r)}))
	}
	return rows
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
	if h := r.Hook.String(); h != "" {
		detail = strings.TrimSuffix(detail+"; "+h, "; ")
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
