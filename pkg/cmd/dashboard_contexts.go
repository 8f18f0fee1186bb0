package cmd

import (
	"context"
	"io"
	"sync"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/tui"
)

// contextConnections are the contexts the dashboard switched to, each
// connected once (its client, executor and node reader kept until the
// dashboard ends, so that switching back costs nothing).
type contextConnections struct {
	mu   sync.Mutex
	opts map[string]*DashboardOptions
}

// get returns the options of the context name, connecting them with
// connect the first time.
func (cs *contextConnections) get(name string, connect func() (*DashboardOptions, error)) (*DashboardOptions, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.opts[name]; c != nil {
		return c, nil
	}
	c, err := connect()
	if err != nil {
		return nil, err
	}
	if cs.opts == nil {
		cs.opts = map[string]*DashboardOptions{}
	}
	cs.opts[name] = c
	return c, nil
}

// close deletes the node reader pods of every context switched to.
func (cs *contextConnections) close(errOut io.Writer) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.opts {
		c.Verify.Close(errOut)
	}
}

// switchContext is the dashboard's Switch: the options of the context
// (o's own for o's context), and the scope with the named workloads read
// again there. A workload that the context lacks refuses the switch.
func (o *DashboardOptions) switchContext(hmacKey []byte) tui.Switch {
	return func(name string, scope tui.Scope) (tui.Connection, tui.Scope, error) {
		c := o
		if name != o.Context {
			var err error
			if c, err = o.switched.get(name, func() (*DashboardOptions, error) { return o.inContext(name) }); err != nil {
				return tui.Connection{}, scope, err
			}
		}
		if len(scope.Workloads) > 0 {
			keys := make([]inspect.WorkloadKey, len(scope.Workloads))
			for i, w := range scope.Workloads {
				keys[i] = w.Key
			}
			selected, err := c.workloads(context.Background(), c.Templates, keys)
			if err != nil {
				return tui.Connection{}, scope, err
			}
			scope.Workloads = selected
		}
		return c.tuiConnection(hmacKey), scope, nil
	}
}

// inContext is o for the context name, connected: its own client,
// executor and node reader; the namespace and flags are o's.
func (o *DashboardOptions) inContext(name string) (*DashboardOptions, error) {
	c := &DashboardOptions{IOStreams: o.IOStreams, Selection: o.Selection, Timeout: o.Timeout, Verify: o.Verify, RestartFlags: o.RestartFlags,
		Context: name, Contexts: o.Contexts, Names: o.Names, Workloads: o.Workloads, Access: o.Access, Patcher: o.Patcher,
		Templates: o.Templates, ConnectContext: o.ConnectContext}
	c.Connection = newConnection(flagsFor(o.ConfigFlags, name))
	c.Namespace, c.Now = o.Namespace, o.Now
	c.Verify.node = nil // a node reader of its own, in its cluster
	connect := o.ConnectContext
	if connect == nil {
		connect = connectContext
	}
	if err := connect(c); err != nil {
		return nil, err
	}
	return c, nil
}

// connectContext connects c from the kubeconfig: its client and executor.
func connectContext(c *DashboardOptions) error {
	var err error
	if c.RESTConfig, c.Client, err = newClient(c.ConfigFlags); err != nil {
		return err
	}
	c.Executor, err = c.Verify.executor(c.RESTConfig)
	return err
}
