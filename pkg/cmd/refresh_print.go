package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// printPlan prints the plan as a table (-o wide: every consumer) or as the
// contract's document.
func (o *RefreshOptions) printPlan(plan []refresh.Action) error {
	if o.Output == "json" || o.Output == "yaml" {
		return printDocument(o.Out, refreshDoc(inspect.KindRefreshPlan, plan), o.Output)
	}
	return printPlanTable(o.Out, plan, o.Output == "wide")
}

// printPlanTable prints the plan's table (wide: every consumer), or that
// there is nothing to refresh.
func printPlanTable(out io.Writer, plan []refresh.Action, wide bool) error {
	if len(plan) == 0 {
		_, err := fmt.Fprintln(out, render.NothingToRefresh)
		return err
	}
	return render.PrintTable(out, render.Actions{Items: plan, Wide: wide}, false)
}

func refreshDoc(kind string, items any) map[string]any {
	return map[string]any{"apiVersion": inspect.APIVersion, "kind": kind, "items": items}
}

// printResults prints what refresh did as a table (-o wide: every consumer)
// or as the contract's document.
func (o *RefreshOptions) printResults(results []refresh.Result) error {
	if o.Output == "json" || o.Output == "yaml" {
		return printDocument(o.Out, refreshDoc(inspect.KindRefreshResult, results), o.Output)
	}
	return render.PrintTable(o.Out, render.Results{Items: results, Wide: o.Output == "wide"}, false)
}

// resultError maps results to the exit code: 1 when a patch failed (with
// what was and was not changed), 3 when consumers are not current.
func resultError(results []refresh.Result, run runInfo) error {
	dry := run.DryRun
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
				changed = append(changed, fmt.Sprintf("%s (%s %s)", r.Target, render.PastTense(refresh.ActionEvict), strings.Join(r.Evicted, ", ")))
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
		msg += finishText(results, run)
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
func missingPermissionsError(missing []refresh.Permission, items []inspect.Use) error {
	var b strings.Builder
	b.WriteString("cannot refresh: the credentials lack permissions the plan needs; nothing was changed:")
	for _, p := range missing {
		fmt.Fprintf(&b, "\n  %s: a Role with this rule grants it: %s", p.Describe(), rbac.RoleRule(p.Verb, p.Resource))
	}
	execNS := map[string]bool{}
	for _, it := range items {
		if it.StateCause == inspect.CauseExecForbidden && !execNS[it.Object.Namespace] {
			execNS[it.Object.Namespace] = true
			fmt.Fprintf(&b, "\n  get and create pods/exec in namespace %q (to verify the consumers): a Role with this rule grants it: %s",
				it.Object.Namespace, `{apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"]}`)
		}
	}
	b.WriteString("\nThe ClusterRole cmsync-refresh of deploy/rbac.yaml grants what refresh needs (with cmsync-secrets where Secrets are read).")
	return &ExitError{Code: ExitFailure, Err: errors.New(b.String())}
}

// beyondSelectorError refuses a restart that replaces pods -l does not
// select (refresh without --yes, and the dashboard always); yes says how to
// go ahead anyway.
func beyondSelectorError(selector string, beyond []string, yes string) error {
	return fmt.Errorf("refused: -l %s selects only some pods of the workloads to restart, and a restart replaces them all: %s; nothing was changed. %s, or --strategy annotate to restart nothing",
		selector, strings.Join(beyond, "; "), yes)
}
