package cmd

import (
	"context"
	"io"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// runContexts is status over several contexts: each read at once (at most
// --context-concurrency), then one report with a CONTEXT column (a
// `context` field in JSON/YAML) and one summary line per context and for
// all. A context that cannot be read is one error line; the others still
// print, and the exit code is the worst of them.
func (o *StatusOptions) runContexts(ctx context.Context) error {
	results := make([]*statusResult, len(o.contextNames))
	index := map[string]int{}
	for i, n := range o.contextNames {
		index[n] = i
	}
	errs, bufs := forEachContext(ctx, o.contextNames, o.Contexts.Concurrency, func(ctx context.Context, name string, errOut io.Writer) error {
		c := o.inContext(name, errOut)
		r, err := c.runOne(ctx, name)
		results[index[name]] = r
		return err
	})
	items, read, wantSecrets := mergeStatusResults(o.contextNames, results)
	if err := printReport(o.Out, items, o.printOptions(wantSecrets, read)); err != nil {
		return err
	}
	printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
	return contextsExit(errs)
}

// inContext is o for the one context name, saying on errOut what status
// says on stderr.
func (o *StatusOptions) inContext(name string, errOut io.Writer) *StatusOptions {
	c := *o
	c.Connection = newConnection(flagsFor(o.ConfigFlags, name))
	c.Now = o.Now
	c.ErrOut = errOut
	c.Contexts, c.contextNames = ContextFlags{}, nil
	return &c
}

// runOne completes o in its context and reads it: the result (nil when
// the context could not be read) and the context's error, if any (an
// ExitError 3 for a failed --check).
func (o *StatusOptions) runOne(ctx context.Context, name string) (*statusResult, error) {
	if err := o.Complete(o.Args); err != nil {
		return nil, err
	}
	r, err := o.collect(ctx)
	if err != nil {
		return nil, err
	}
	for i := range r.Items {
		r.Items[i].Context = name
	}
	printWarnings(o.ErrOut, inspect.GroupWarnings(r.Items))
	o.noteEmpty(r)
	return &r, o.check(r.Items)
}

// mergeStatusResults is the uses of every context read, in the order of
// names (each context's uses in report order), the names of the contexts
// read, and whether any asked for Secrets.
func mergeStatusResults(names []string, results []*statusResult) (items []inspect.Use, read []string, wantSecrets bool) {
	read = []string{}
	for i, r := range results {
		if r == nil {
			continue
		}
		items = append(items, r.Items...)
		read = append(read, names[i])
		wantSecrets = wantSecrets || r.WantSecrets
	}
	return items, read, wantSecrets
}
