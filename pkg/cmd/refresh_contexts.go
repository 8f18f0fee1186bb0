package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// contextPlan is one context of a refresh over several: its options, its
// engine and its plan (nil when it could not be planned).
type contextPlan struct {
	name string
	o    *RefreshOptions
	r    *refresh.Refresher
	plan *refresh.Plan
	out  *bytes.Buffer // what it printed on stdout (a refused plan)
}

// runContexts is refresh over several contexts: every context planned
// first (at most --context-concurrency at once), changing nothing; any
// context that cannot be planned or whose plan is refused refuses them all.
// Then one confirmation for the restarts of every context (or --yes), and
// each context applied and printed under its name. The exit code is the
// worst of the contexts.
func (o *RefreshOptions) runContexts(ctx context.Context) error {
	plans, errs, bufs := o.planContexts(ctx)
	defer func() {
		for _, p := range plans {
			p.o.Verify.Close(o.ErrOut)
		}
	}()
	if err := contextsRefusal(o.contextNames, errs); err != nil {
		o.printContextOutputs(plans)
		printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
		return err
	}
	printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
	if refresh.DryRun(o.DryRun) == refresh.DryRunClient {
		return o.printContextPlans(o.Out, plans)
	}
	if err := o.confirmContexts(plans); err != nil {
		return err
	}
	results, errs, bufs := o.applyContexts(ctx, plans)
	if err := o.printContextResults(plans, results); err != nil {
		return err
	}
	printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
	return contextsExit(errs)
}

// inContext is o for the one context name: what it prints on stdout goes
// to out, on stderr to errOut.
func (o *RefreshOptions) inContext(name string, out, errOut io.Writer) *RefreshOptions {
	c := *o
	c.Connection = newConnection(flagsFor(o.ConfigFlags, name))
	c.Now = o.Now
	c.Out, c.ErrOut = out, errOut
	c.Contexts, c.contextNames = ContextFlags{}, nil
	return &c
}

// planContexts completes and plans every context, sending nothing: each
// context's plan, error (a refusal in kubectl's terms) and stderr.
func (o *RefreshOptions) planContexts(ctx context.Context) ([]*contextPlan, []error, []*bytes.Buffer) {
	plans := make([]*contextPlan, len(o.contextNames))
	for i, n := range o.contextNames {
		out := &bytes.Buffer{}
		plans[i] = &contextPlan{name: n, out: out, o: o.inContext(n, out, io.Discard)}
	}
	index := contextIndex(o.contextNames)
	errs, bufs := forEachContext(ctx, o.contextNames, o.Contexts.Concurrency, func(ctx context.Context, name string, errOut io.Writer) error {
		p := plans[index[name]]
		p.o.ErrOut = errOut
		if err := p.o.Complete(o.Args); err != nil {
			return err
		}
		p.o.ErrTerminal = false // the contexts' stderr is buffered
		snap, items, err := p.o.selection(ctx)
		if err != nil {
			return err
		}
		p.r = p.o.refresher()
		p.r.PlanOnly = true
		plan, err := p.r.Plan(ctx, snap, items)
		p.plan = plan
		if err != nil {
			return p.o.refused(plan, err)
		}
		if p.r.DryRun == refresh.DryRunClient || p.r.DryRun == refresh.DryRunNone && !o.Yes && plan.Restarts > 0 {
			printWarnings(errOut, plan.Warnings) // the plan is shown
		}
		if len(plan.Beyond) > 0 && p.r.DryRun == refresh.DryRunNone {
			fmt.Fprintf(errOut, "Warning: restarting pods that -l %s does not select: %s\n", o.Selector, strings.Join(plan.Beyond, "; "))
		}
		return nil
	})
	return plans, errs, bufs
}

func contextIndex(names []string) map[string]int {
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	return index
}

// contextsRefusal refuses a refresh over several contexts, before anything
// is sent, when any context could not be planned or refused its plan: nil
// when every context was planned. Its exit code is the worst of theirs.
func contextsRefusal(names []string, errs []error) error {
	var bad, good []string
	code := ExitOK
	for i, err := range errs {
		if err == nil {
			good = append(good, names[i])
			continue
		}
		bad = append(bad, fmt.Sprintf("%q", names[i]))
		code = max(code, ExitCode(err))
	}
	if len(bad) == 0 {
		return nil
	}
	msg := fmt.Sprintf("refused: context %s could not be planned or its plan was refused (see above); nothing was changed in any of the %d contexts", strings.Join(bad, ", "), len(names))
	if len(good) > 0 {
		msg += fmt.Sprintf(". Fix it and run again, or leave it out: --context %s", strings.Join(good, ","))
	}
	return &ExitError{Code: code, Err: fmt.Errorf("%s", msg)}
}

// confirmContexts asks once, for the restarts of every context, before a
// real run restarts anything, unless --yes.
func (o *RefreshOptions) confirmContexts(plans []*contextPlan) error {
	restarts, in := 0, 0
	for _, p := range plans {
		if p.plan.Restarts > 0 {
			restarts, in = restarts+p.plan.Restarts, in+1
		}
	}
	if restarts == 0 || o.Yes || refresh.DryRun(o.DryRun) != refresh.DryRunNone {
		return nil
	}
	what := fmt.Sprintf("%d workloads in %d of the %d contexts", restarts, in, len(plans))
	if !o.StdinTerminal {
		_ = o.printContextPlans(o.Out, plans)
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("refused: the plans restart %s and stdin is not a terminal to confirm them; nothing was changed in any context. Add --yes to proceed, or --strategy annotate to restart nothing", what)}
	}
	_ = o.printContextPlans(o.ErrOut, plans)
	question := fmt.Sprintf("Restart %s (their pods are replaced)? [y/N]: ", what)
	if o.RestartVia == string(refresh.RestartViaEvict) {
		question = fmt.Sprintf("Evict the pods of %s (in the order shown; their controllers replace them)? [y/N]: ", what)
	}
	if !confirm(o.In, o.ErrOut, question) {
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("refused: not confirmed; nothing was changed in any context")}
	}
	return nil
}

// applyContexts applies every context's plan, at most
// --context-concurrency at once: each context's results and error (what it
// changed and how to finish, when it failed part way).
func (o *RefreshOptions) applyContexts(ctx context.Context, plans []*contextPlan) ([][]refresh.Result, []error, []*bytes.Buffer) {
	results := make([][]refresh.Result, len(plans))
	index := contextIndex(o.contextNames)
	errs, bufs := forEachContext(ctx, o.contextNames, o.Contexts.Concurrency, func(ctx context.Context, name string, errOut io.Writer) error {
		i := index[name]
		p := plans[i]
		p.o.ErrOut = errOut
		results[i] = p.r.Apply(ctx, p.plan, p.o.progress)
		printWarnings(errOut, p.plan.GroupWarnings(results[i]))
		return resultError(results[i], p.o.runInfo())
	})
	return results, errs, bufs
}

// printContextOutputs prints, under each context's name, what it printed
// when refused (its plan); -o json|yaml: the plans of the contexts planned.
func (o *RefreshOptions) printContextOutputs(plans []*contextPlan) {
	if o.Output == "json" || o.Output == "yaml" {
		_ = o.printContextPlans(o.Out, plans)
		return
	}
	outs := make([]*bytes.Buffer, len(plans))
	for i, p := range plans {
		outs[i] = p.out
	}
	printHeaded(o.Out, o.contextNames, outs)
}

// contextHeading heads a context's part of a table output.
func contextHeading(name string) string { return fmt.Sprintf("=== context %s ===", name) }

// printContextPlans prints each context's plan under its name, or (-o
// json|yaml) one RefreshPlan whose items each carry `context`.
func (o *RefreshOptions) printContextPlans(w io.Writer, plans []*contextPlan) error {
	lists := map[string]any{}
	for _, p := range plans {
		if p.plan != nil && p.plan.Actions != nil {
			lists[p.name] = p.plan.Actions
		}
	}
	return o.printPerContext(w, inspect.KindRefreshPlan, lists, func(w io.Writer, name string) error {
		return printPlanTable(w, lists[name].([]refresh.Action), o.Output == "wide")
	})
}

// printContextResults prints each context's results under its name, or
// (-o json|yaml) one RefreshResult whose items each carry `context`.
func (o *RefreshOptions) printContextResults(plans []*contextPlan, results [][]refresh.Result) error {
	lists := map[string]any{}
	for i, p := range plans {
		lists[p.name] = results[i]
	}
	return o.printPerContext(o.Out, inspect.KindRefreshResult, lists, func(w io.Writer, name string) error {
		c := *o
		c.Out = w
		return c.printResults(lists[name].([]refresh.Result))
	})
}

// printPerContext prints the lists of the contexts (in the order of
// o.contextNames, those in lists only): -o json|yaml one document of kind
// whose items each carry `context`, else each table under its heading.
func (o *RefreshOptions) printPerContext(w io.Writer, kind string, lists map[string]any, table func(io.Writer, string) error) error {
	if o.Output == "json" || o.Output == "yaml" {
		items := []map[string]any{}
		for _, n := range o.contextNames {
			if l, ok := lists[n]; ok {
				tagged, err := withContext(n, l)
				if err != nil {
					return err
				}
				items = append(items, tagged...)
			}
		}
		return printDocument(w, refreshDoc(kind, items), o.Output)
	}
	first := true
	for _, n := range o.contextNames {
		if _, ok := lists[n]; !ok {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		fmt.Fprintln(w, contextHeading(n))
		if err := table(w, n); err != nil {
			return err
		}
	}
	return nil
}

// withContext is the items of list (a slice of the contract's objects)
// each with a `context` field.
func withContext(name string, list any) ([]map[string]any, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var items []map[string]any
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, err
	}
	for _, it := range items {
		it["context"] = name
	}
	return items, nil
}
