// Package tui is the interactive dashboard (`kubectl cmsync dashboard`): a
// Bubble Tea program over live informer data. The rows come from
// pkg/inspect and the actions from the commands' own code (the Actions
// interface), so the dashboard decides nothing the commands do not.
// All cluster I/O runs inside tea.Cmds, never in Update or View.
package tui

import (
	"context"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Actions is what the dashboard does to the cluster beyond watching it.
// pkg/cmd implements it with the code of `status --verify`, `diff` and
// `refresh`. Every method is called inside a tea.Cmd.
type Actions interface {
	// Verify observes the containers of items (one exec per container,
	// bounded concurrency) and returns them with their state.
	Verify(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use) []inspect.Use
	// Diff is the output of `kubectl cmsync diff` for these uses (Secrets
	// as HMACs), without colour.
	Diff(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use) (string, error)
	// Plan observes the consumers of the objects and plans their refresh
	// with the engine of `refresh` (strategy auto), refusing as it does
	// before anything is changed; Text is that command's table.
	Plan(ctx context.Context, snap *inspect.Snapshot, keys []inspect.ObjectKey) (Plan, error)
	// Apply sends the plan's patches (or evictions) and waits until the
	// consumers it changed are current, reporting each round and each
	// eviction to progress.
	Apply(ctx context.Context, plan Plan, progress func(refresh.Progress)) []refresh.Result
}

// Plan is the refresh engine's plan (which Apply runs) with the objects it
// was made for and its printed form.
type Plan struct {
	*refresh.Plan
	Keys []inspect.ObjectKey
	Text string
}
