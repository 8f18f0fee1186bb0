package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// runContexts is diff over several contexts: each compared at once (at
// most --context-concurrency; one at a time with KUBECTL_EXTERNAL_DIFF,
// which may be interactive), then each context's differences under its
// name. What a context says on stderr is prefixed with its name; the exit
// code is the worst of the contexts.
func (o *DiffOptions) runContexts(ctx context.Context) error {
	outs := make([]*bytes.Buffer, len(o.contextNames))
	for i := range outs {
		outs[i] = &bytes.Buffer{}
	}
	index := contextIndex(o.contextNames)
	limit := o.Contexts.Concurrency
	if o.ExternalDiff != "" {
		limit = 1
	}
	errs, bufs := forEachContext(ctx, o.contextNames, limit, func(ctx context.Context, name string, errOut io.Writer) error {
		c := *o
		c.Connection = newConnection(flagsFor(o.ConfigFlags, name))
		c.Out, c.ErrOut = outs[index[name]], errOut
		c.Contexts, c.contextNames = ContextFlags{}, nil
		if err := c.Complete(o.Args); err != nil {
			return err
		}
		return c.Run(ctx)
	})
	printHeaded(o.Out, o.contextNames, outs)
	printContextNotes(o.ErrOut, o.contextNames, errs, bufs)
	return contextsExit(errs)
}

// printHeaded writes each context's output under its heading, a blank line
// between two; contexts that printed nothing are left out.
func printHeaded(w io.Writer, names []string, outs []*bytes.Buffer) {
	first := true
	for i, n := range names {
		if outs[i].Len() == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		fmt.Fprintf(w, "%s\n%s", contextHeading(n), outs[i].Bytes())
	}
}
