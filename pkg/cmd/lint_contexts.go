package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/lint"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// runContexts is lint --cluster over several contexts: the manifests read
// once, then each context asked at once (at most --context-concurrency,
// objects that name no namespace in that context's), then one report with
// a CONTEXT column (a `context` field in JSON/YAML) and a summary per
// context and for all. A context that cannot be asked is one error line;
// the others still print, and the exit code is the worst of them.
func (o *LintOptions) runContexts(ctx context.Context, docs []lint.Document, files int) error {
	results := make([][]lint.ManifestUse, len(o.contextNames))
	index := contextIndex(o.contextNames)
	errs, bufs := forEachContext(ctx, o.contextNames, o.Contexts.Concurrency, func(ctx context.Context, name string, errOut io.Writer) error {
		c := o.inContext(name, errOut)
		if err := c.Complete(nil); err != nil {
			return err
		}
		if err := c.reach(ctx); err != nil {
			return err
		}
		items, err := c.lint(ctx, docs)
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Context = name
		}
		results[index[name]] = append([]lint.ManifestUse{}, items...) // non-nil: asked
		return c.check(items)
	})
	items, read := mergeLintResults(o.contextNames, results)
	if err := o.print(items); err != nil {
		return err
	}
	switch {
	case len(read) > 0 && len(items) == 0:
		fmt.Fprintln(o.ErrOut, noLintUsesMessage(len(docs), files))
	case len(items) > 0 && o.tableOutput():
		for _, l := range lintContextSummaries(read, items, files, o.Output == "wide") {
			fmt.Fprintln(o.ErrOut, l)
		}
	}
	printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
	return contextsExit(errs)
}

// inContext is o for the one context name, saying on errOut what lint
// says on stderr.
func (o *LintOptions) inContext(name string, errOut io.Writer) *LintOptions {
	c := *o
	c.Connection = newConnection(flagsFor(o.ConfigFlags, name))
	c.ErrOut = errOut
	c.Contexts, c.contextNames = ContextFlags{}, nil
	return &c
}

// reach asks the context's API server for its version: a context is
// reported only once it answered, even when the manifests hold every
// object they reference and no GET would reach it.
func (o *LintOptions) reach(ctx context.Context) error {
	if o.Client == nil || o.Client.Discovery().RESTClient() == nil {
		return nil // a test's Getter
	}
	if err := o.Client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return explainAPIError(err, o.server(), o.Namespace)
	}
	return nil
}

// mergeLintResults is the items of every context asked, in the order of
// names, and the names of the contexts asked.
func mergeLintResults(names []string, results [][]lint.ManifestUse) (items []lint.ManifestUse, read []string) {
	read = []string{}
	for i, r := range results {
		if r == nil {
			continue
		}
		items = append(items, r...)
		read = append(read, names[i])
	}
	return items, read
}

// lintContextSummaries is the summary line of each context of names, in
// that order ("NAME: U uses in F files: ..."), then of them all ("all N
// contexts: ...").
func lintContextSummaries(names []string, items []lint.ManifestUse, files int, wide bool) []string {
	byContext := map[string][]lint.ManifestUse{}
	for _, it := range items {
		byContext[it.Context] = append(byContext[it.Context], it)
	}
	lines := make([]string, 0, len(names)+1)
	for _, n := range names {
		lines = append(lines, n+": "+lintCounts(byContext[n], files))
	}
	return append(lines, fmt.Sprintf("all %s: %s", render.Plural(len(names), "context"), lintSummary(items, files, wide)))
}
