package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Connection is one kube context's side of the dashboard: its name and
// API server for the header, its watches and its actions.
type Connection struct {
	// Context and Server name the cluster in the header.
	Context, Server string
	// NewFeed starts watching a scope (NewFeed over a clientset).
	NewFeed func(Scope) *Feed
	Actions Actions
}

// Switch connects to the kube context name: its Connection, and scope as
// that context reads it (the named workloads read there). It is called
// inside a tea.Cmd; an error leaves the dashboard on its context.
type Switch func(name string, scope Scope) (Connection, Scope, error)

// switchedMsg is the answer of a Switch.
type switchedMsg struct {
	name  string
	conn  Connection
	scope Scope
	err   error
}

// nextContext is the context after the current one in name order, the
// first after the last; after a failed switch, the one after that context
// (a broken context does not stop the cycle).
func (m *Model) nextContext() string {
	from := m.conn.Context
	if m.failedContext != "" {
		from = m.failedContext
	}
	i := slices.Index(m.opts.Contexts, from)
	return m.opts.Contexts[(i+1)%len(m.opts.Contexts)]
}

// switchTo connects to the context name, unless a refresh is being
// planned or applied (its plan and its wait are of this context).
func (m *Model) switchTo(name string) tea.Cmd {
	switch {
	case m.opts.Switch == nil || len(m.opts.Contexts) < 2:
		m.setError("the kubeconfig has one context (%s): there is none to switch to", orDash(m.conn.Context))
		return nil
	case !slices.Contains(m.opts.Contexts, name):
		m.setError("context %q not found in the kubeconfig; the contexts are: %s", name, strings.Join(m.opts.Contexts, ", "))
		return nil
	case m.planning || m.applying:
		m.setError("a refresh is running in context %s: wait for its result before switching", m.conn.Context)
		return nil
	case name == m.conn.Context:
		m.status, m.statusErr = "already on context "+name, false
		return nil
	}
	m.status, m.statusErr = "connecting to context "+name+"...", false
	sw, scope := m.opts.Switch, m.scope
	return func() tea.Msg {
		conn, s, err := sw(name, scope)
		return switchedMsg{name: name, conn: conn, scope: s, err: err}
	}
}

// onSwitched watches the new context from its objects screen; a failed
// switch stays where it was.
func (m *Model) onSwitched(msg switchedMsg) tea.Cmd {
	if msg.err != nil {
		m.failedContext = msg.name
		m.setError("could not switch to context %s (still on %s): %v", msg.name, m.conn.Context, msg.err)
		return nil
	}
	m.conn, m.gen, m.failedContext = msg.conn, m.gen+1, ""
	m.screen, m.plan, m.current = objectsScreen, nil, inspect.ObjectKey{}
	m.status, m.statusErr = fmt.Sprintf("switched to context %s", msg.conn.Context), false
	return m.watch(msg.scope)
}
