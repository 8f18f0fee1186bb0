package tui

import "github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"

// Transform trims objects before the informers cache them: the trim of
// status, diff and refresh (inspect.Trim), so that the dashboard keeps of
// every object what the CLI keeps. It is an informer transform function: it
// may modify obj.
func Transform(obj any) (any, error) { return inspect.Trim(obj) }
