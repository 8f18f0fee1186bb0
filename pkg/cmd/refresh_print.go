package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

func (o *RefreshOptions) printPlan(plan []refresh.Action) error {
	if o.Output != "" {
		return printDocument(o.Out, refreshDoc(inspect.KindRefreshPlan, plan), o.Output)
	}
	return printPlanTable(o.Out, plan)
}

func refreshDoc(kind string, items any) map[string]any {
	return map[string]any{"apiVersion": inspect.APIVersion, "kind": kind, "items": items}
}

func printPlanTable(out io.Writer, plan []refresh.Action) error {
	if len(plan) == 0 {
		fmt.Fprintln(out, "Nothing consumes the selected objects: nothing to refresh.")
		return nil
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "NAMESPACE\tACTION\tTARGET\tCONSUMERS\tREASON")
	for _, a := range plan {
		fmt.Fprintln(w, printableRow(a.Target.Namespace, string(a.Action), a.Target.String(), consumersColumn(a.Consumers), reasonWithWarnings(a.Reason, a.Warnings)))
	}
	return w.Flush()
}

func (o *RefreshOptions) printResults(results []refresh.Result) error {
	if o.Output != "" {
		kind := inspect.KindRefreshResult
		return printDocument(o.Out, refreshDoc(kind, results), o.Output)
	}
	w := printers.GetNewTabWriter(o.Out)
	fmt.Fprintln(w, "NAMESPACE\tACTION\tTARGET\tCONSUMERS\tRESULT\tCURRENT-AFTER\tDETAIL")
	for _, r := range results {
		after := "-"
		if r.CurrentAfter != nil {
			after = r.CurrentAfter.Duration.Round(10 * time.Millisecond).String()
		}
		detail := r.Detail
		if r.Error != "" {
			detail = r.Error
		}
		if r.Action.Action == refresh.ActionEvict && r.Error == "" && len(r.Evicted) > 0 {
			detail = strings.TrimSuffix(evictedSummary(r)+"; "+detail, "; ")
		}
		if detail == "" {
			detail = reasonWithWarnings(r.Reason, r.Warnings)
		}
		if r.Action.Action == refresh.ActionAnnotate && (r.Outcome == refresh.OutcomeCurrent || r.Outcome == refresh.OutcomeTimeout || r.Outcome == refresh.OutcomeUnverifiable || r.Outcome == refresh.OutcomeApplied) {
			// what was known before: a pending mount, or nothing (annotated
			// without a prior exec)
			detail = strings.TrimSuffix("annotated ("+r.Before()+"); "+r.Detail, "; ")
		}
		outcome := string(r.Outcome)
		fmt.Fprintln(w, printableRow(r.Target.Namespace, string(r.Action.Action), r.Target.String(), consumersColumn(r.Consumers), outcome, after, detail))
	}
	return w.Flush()
}

// consumersColumn names each consumer POD/CONTAINER:MODE[:WHERE], WHERE being
// the mount path or the variable ($NAME, $PREFIX* for envFrom).
func consumersColumn(cs []refresh.Consumer) string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range cs {
		s := fmt.Sprintf("%s/%s:%s", c.Pod, c.Container, c.Mode)
		if w := c.Where(); w != "" {
			s += ":" + w
		}
		if c.Pod == "" {
			s = strings.ToLower(c.Object.Kind) + "/" + c.Object.Name
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	if len(parts) > 3 {
		return strings.Join(parts[:3], ",") + fmt.Sprintf(",+%d more", len(parts)-3)
	}
	return strings.Join(parts, ",")
}

func reasonWithWarnings(reason string, warnings []string) string {
	for _, w := range warnings {
		reason += " (warning: " + w + ")"
	}
	return reason
}

// resultError maps results to the exit code: 1 when a patch failed (with
// what was and was not changed), 3 when consumers are not current.
func resultError(results []refresh.Result, dry refresh.DryRun) error {
	var changed, failed, notSent, notCurrent []string
	for _, r := range results {
		if r.Outcome == refresh.OutcomeNotApplied && r.Error != "" && r.Action.Action != refresh.ActionEvict {
			notSent = append(notSent, r.Target.String())
		}
		switch r.Outcome {
		case refresh.OutcomeApplied, refresh.OutcomeCurrent, refresh.OutcomeTimeout, refresh.OutcomeUnverifiable:
			changed = append(changed, r.Target.String())
		case refresh.OutcomeFailed:
			failed = append(failed, fmt.Sprintf("%s (%s)", r.Target, r.Error))
			if len(r.Evicted) > 0 {
				changed = append(changed, fmt.Sprintf("%s (evicted %s)", r.Target, strings.Join(r.Evicted, ", ")))
			}
		}
		if r.Action.Action == refresh.ActionEvict && len(r.NotEvicted) > 0 && r.Outcome != refresh.OutcomeDryRun {
			notSent = append(notSent, fmt.Sprintf("%s: pods %s not evicted", r.Target, strings.Join(r.NotEvicted, ", ")))
		}
		switch {
		case r.Outcome == refresh.OutcomeTimeout:
			notCurrent = append(notCurrent, fmt.Sprintf("%s: timed out: %s", r.Target, r.Detail))
		case r.Outcome == refresh.OutcomeUnverifiable:
			notCurrent = append(notCurrent, fmt.Sprintf("%s: %s", r.Target, r.Detail))
		case r.Action.Action == refresh.ActionManual:
			notCurrent = append(notCurrent, fmt.Sprintf("%s: manual: %s", r.Target, r.Reason))
		case r.Action.Action == refresh.ActionNone && refresh.AnyUnverifiable(r.Consumers):
			// nothing left to do, but not proven current either
			notCurrent = append(notCurrent, fmt.Sprintf("%s: unverifiable: %s", r.Target, r.Reason))
		}
	}
	if dry != refresh.DryRunNone {
		if len(failed) > 0 {
			return fmt.Errorf("the server refused %d of the dry-run patches: %s", len(failed), strings.Join(failed, "; "))
		}
		return nil
	}
	if len(failed) > 0 || len(notSent) > 0 {
		msg := fmt.Sprintf("%d actions failed: %s", len(failed), strings.Join(failed, "; "))
		if len(failed) == 0 {
			msg = "interrupted"
		}
		if len(notSent) > 0 {
			msg += fmt.Sprintf("\nnot sent: %s", strings.Join(notSent, ", "))
		}
		if len(changed) > 0 {
			msg += fmt.Sprintf("\nchanged: %s", strings.Join(changed, ", "))
		} else {
			msg += "\nnothing was changed"
		}
		msg += "\nRunning the same command again is safe: it only acts on consumers that are still not current."
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s", msg)}
	}
	if len(notCurrent) > 0 {
		return &ExitError{Code: ExitCheck, Err: fmt.Errorf("%d actions left consumers not current:\n  %s", len(notCurrent), strings.Join(notCurrent, "\n  "))}
	}
	return nil
}

// missingPermissionsError says, before anything is sent, every permission
// the plan needs and the credentials lack, each with the Role rule that
// grants it; and exec, when the consumers could not be observed for it.
func missingPermissionsError(missing []refresh.Permission, items []inspect.Item) error {
	var b strings.Builder
	b.WriteString("cannot refresh: the credentials lack permissions the plan needs; nothing was changed:")
	for _, p := range missing {
		fmt.Fprintf(&b, "\n  %s: a Role with this rule grants it: %s", p.Describe(), RoleRule(p.Verb, p.Resource))
	}
	execNS := map[string]bool{}
	for _, it := range items {
		if it.StateCause == inspect.CauseExecForbidden && !execNS[it.Object.Namespace] {
			execNS[it.Object.Namespace] = true
			fmt.Fprintf(&b, "\n  get and create pods/exec in namespace %q (to verify the consumers): a Role with this rule grants it: %s",
				it.Object.Namespace, `{apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}`)
		}
	}
	b.WriteString("\nThe ClusterRoles cmsync-refresh and cmsync-verify of deploy/rbac.yaml grant what refresh needs.")
	return &ExitError{Code: ExitFailure, Err: errors.New(b.String())}
}

// evictedSummary names the pods an evict action evicted and their
// replacements.
func evictedSummary(r refresh.Result) string {
	s := "evicted " + strings.Join(r.Evicted, ", ")
	if len(r.Replacements) > 0 {
		s += "; replaced by " + strings.Join(r.Replacements, ", ")
	}
	return s
}

// outsideSelector lists, per restart, the pods it replaces beyond -l.
func outsideSelector(plan []refresh.Action) []string {
	var out []string
	for _, a := range plan {
		if a.Action == refresh.ActionRestart && len(a.OutsideSelector) > 0 {
			out = append(out, fmt.Sprintf("%s replaces %s", a.Target, strings.Join(a.OutsideSelector, ", ")))
		}
	}
	return out
}

// beyondSelectorError refuses a restart that replaces pods -l does not
// select (refresh without --yes, and the dashboard always); yes says how to
// go ahead anyway.
func beyondSelectorError(selector string, beyond []string, yes string) error {
	return fmt.Errorf("refused: -l %s selects only some pods of the workloads to restart, and a restart replaces them all: %s; nothing was changed. %s, or --strategy annotate to restart nothing",
		selector, strings.Join(beyond, "; "), yes)
}
