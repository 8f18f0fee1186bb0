package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// Selection holds the flags that pick the objects and pods status, refresh,
// watch and the dashboard look at.
type Selection struct {
	AllNamespaces bool
	Selector      string
	Secrets       bool
	IncludeSystem bool
}

// addSelectionFlags registers the selection flags.
func addSelectionFlags(fs *pflag.FlagSet, s *Selection) {
	fs.BoolVarP(&s.AllNamespaces, "all-namespaces", "A", false, "Look in all namespaces.")
	fs.StringVarP(&s.Selector, "selector", "l", "", "Only pods matching this label selector (e.g. -l app=web).")
	fs.BoolVar(&s.Secrets, "secrets", false, "Include Secrets (their values are never printed).")
	fs.BoolVar(&s.IncludeSystem, "include-system", false, "Show system ConfigMaps projected into every pod (kube-root-ca.crt).")
}

// validateSelector rejects a -l that does not parse before anything is
// read: a usage error, not the API server's.
func (s *Selection) validateSelector() error {
	if _, err := labels.Parse(s.Selector); err != nil {
		return usageError("invalid -l %q: %v", s.Selector, err)
	}
	return nil
}

// validateNames rejects objects named with -A: a name means one namespace.
func (s *Selection) validateNames(names []inspect.ObjectKey) error {
	if s.AllNamespaces && len(names) > 0 {
		return usageError("a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE")
	}
	return nil
}

// validateTargets is validateNames for objects and workloads.
func (s *Selection) validateTargets(t Targets) error {
	if s.AllNamespaces && len(t.Workloads) > 0 {
		return usageError("a workload cannot be named across all namespaces; drop -A and use -n NAMESPACE")
	}
	return s.validateNames(t.Objects)
}

// RestartFlags are how refresh, watch and the dashboard restart a workload
// with a stale env or subPath consumer.
type RestartFlags struct {
	// RestartVia is --restart-via (template or evict); MaxUnavailable how
	// many pods of a workload are evicted at once.
	RestartVia     string
	MaxUnavailable int
	// MaxRestarts refuses a plan that restarts more workloads (-1: no
	// limit).
	MaxRestarts int
}

// addHookFlag registers --reload-hook-via with its default, via, and
// --reload-hook-host-network.
func addHookFlag(fs *pflag.FlagSet, p *string, hostNetwork *bool, via string) {
	*p = via
	fs.StringVar(p, "reload-hook-via", via, "How the reload hook of a pod ("+refresh.ReloadHookAnnotation+") is sent once its remount is verified current. direct: to the pod's IP address (from inside the cluster's network); proxy: through the API server's pod proxy (needs pods/proxy).")
	fs.BoolVar(hostNetwork, strings.TrimPrefix(refresh.HookHostNetworkFlag, "--"), *hostNetwork, "Send reload hooks to pods with hostNetwork too. Their address is the node's: the request reaches whatever listens on that port of the node, not only the pod (refused by default, the hook's outcome invalid).")
}

// validateHookVia checks --reload-hook-via.
func validateHookVia(v string) error {
	if !slices.Contains(refresh.HookVias, v) {
		return usageError(`invalid --reload-hook-via %q: must be "direct" or "proxy"`, v)
	}
	return nil
}

func defaultRestartFlags() RestartFlags {
	return RestartFlags{RestartVia: string(refresh.RestartViaTemplate), MaxUnavailable: 1, MaxRestarts: -1}
}

// addFlags registers --restart-via and --max-unavailable, and with
// withLimit --max-restarts (watch has no limit: each round restarts what
// it must, --max-concurrent-restarts at a time).
func (r *RestartFlags) addFlags(fs *pflag.FlagSet, withLimit bool) {
	if withLimit {
		fs.IntVar(&r.MaxRestarts, "max-restarts", r.MaxRestarts, "Refuse a plan that restarts more workloads than this (-1: no limit).")
	}
	fs.StringVar(&r.RestartVia, "restart-via", r.RestartVia, "How a workload with a stale env or subPath consumer is restarted. template: set kubectl.kubernetes.io/restartedAt on its pod template (kubectl rollout restart); evict: evict the consumers' pods through the Eviction API, honouring PodDisruptionBudgets, and never change the template (no GitOps drift).")
	fs.IntVar(&r.MaxUnavailable, "max-unavailable", r.MaxUnavailable, "With --restart-via=evict: how many pods of a workload are evicted at once; the next batch waits until their replacements are Ready.")
}

// validate checks the restart flags.
func (r *RestartFlags) validate() error {
	if r.MaxRestarts < -1 {
		return usageError("--max-restarts must be -1 (no limit) or more, got %d", r.MaxRestarts)
	}
	if !slices.Contains(refresh.RestartVias, refresh.RestartVia(r.RestartVia)) {
		return usageError("invalid --restart-via %q: must be one of template, evict", r.RestartVia)
	}
	if r.MaxUnavailable < 1 {
		return usageError("--max-unavailable must be 1 or more, got %d", r.MaxUnavailable)
	}
	return nil
}

// orClient is c with each edge left nil taken from client (the client-go
// adapters of refresh.ClientCluster).
func orClient(c, client refresh.Cluster) refresh.Cluster {
	c.Executor = cmp.Or(c.Executor, client.Executor)
	c.Workloads = cmp.Or(c.Workloads, client.Workloads)
	c.Patcher = cmp.Or(c.Patcher, client.Patcher)
	c.Evictor = cmp.Or(c.Evictor, client.Evictor)
	c.Rollouts = cmp.Or(c.Rollouts, client.Rollouts)
	c.Verifier = cmp.Or(c.Verifier, client.Verifier)
	c.Access = cmp.Or(c.Access, client.Access)
	c.Annotations = cmp.Or(c.Annotations, client.Annotations)
	c.Hooks = cmp.Or(c.Hooks, client.Hooks)
	return c
}

// Connection is what the commands that read the cluster make of the
// kubeconfig flags: the namespace, the client and the clock.
type Connection struct {
	ConfigFlags *genericclioptions.ConfigFlags

	// Set by Complete.
	Namespace  string
	Client     kubernetes.Interface
	RESTConfig *rest.Config
	// Now is the API server's clock (apiClock): ages and deadlines are
	// compared with times the cluster wrote. Tests replace it.
	Now func() time.Time
}

func newConnection(flags *genericclioptions.ConfigFlags) Connection {
	return Connection{ConfigFlags: flags, Now: apiClock.Now}
}

// complete is the start of every Complete that reads the cluster: the
// namespace from -n or the kubeconfig context ("" with all namespaces),
// the objects args name in it and, when connect, the client and its REST
// config. A workload among args is a usage error: see completeTargets.
func (c *Connection) complete(all bool, args []string, connect bool) ([]inspect.ObjectKey, error) {
	t, err := c.completeTargets(all, args, connect)
	if err != nil {
		return nil, err
	}
	if len(t.Workloads) > 0 {
		return nil, usageError("%q names a workload, and this command takes ConfigMaps and Secrets only: use NAME, configmap/NAME or secret/NAME", t.Workloads[0].String())
	}
	return t.Objects, nil
}

// completeTargets is complete for the commands that take workloads too
// (status, refresh, diff, dashboard): the objects and workloads args name.
func (c *Connection) completeTargets(all bool, args []string, connect bool) (Targets, error) {
	ns, err := resolveNamespace(c.ConfigFlags, all)
	if err != nil {
		return Targets{}, err
	}
	c.Namespace = ns
	t, err := parseTargets(args, ns)
	if err != nil {
		return Targets{}, err
	}
	if connect {
		if c.RESTConfig, c.Client, err = newClient(c.ConfigFlags); err != nil {
			return Targets{}, err
		}
	}
	return t, nil
}

// workloads reads the workloads t names (resolveWorkloads) through
// reader, nil: the client's.
func (c *Connection) workloads(ctx context.Context, reader inspect.TemplateReader, keys []inspect.WorkloadKey) ([]inspect.SelectedWorkload, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if reader == nil {
		reader = inspect.ClientTemplates{Client: c.Client}
	}
	return resolveWorkloads(ctx, reader, keys, c.server())
}

// loadSnapshot reads the cluster with load (nil: inspect.Load over the
// client) and says what RBAC kept from being read: a failed read, or the
// Secrets a command names (namedSecret) that cannot be listed, is an error
// in kubectl's terms; every other kind denied is a note on errOut.
func (c *Connection) loadSnapshot(ctx context.Context, load func(context.Context, inspect.LoadOptions) (*inspect.Snapshot, error),
	lo inspect.LoadOptions, namedSecret bool, errOut io.Writer) (*inspect.Snapshot, error) {
	if load == nil {
		load = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
			return inspect.Load(ctx, c.Client, lo)
		}
	}
	snap, err := load(ctx, lo)
	if err != nil {
		return nil, explainAPIError(err, c.server(), c.Namespace)
	}
	if le := deniedResource(snap, "secrets"); le != nil && namedSecret {
		return nil, explainAPIError(le, c.server(), c.Namespace)
	}
	for _, n := range deniedNotes(snap) {
		fmt.Fprintln(errOut, n)
	}
	return snap, nil
}

// host is the API server's URL, "" before Complete connects.
func (c *Connection) host() string {
	if c.RESTConfig == nil {
		return ""
	}
	return c.RESTConfig.Host
}

// server names the API server in error messages.
func (c *Connection) server() string {
	if c.RESTConfig == nil {
		return "(unknown server)"
	}
	return c.host()
}

// resolveNamespace returns the namespace from -n or the kubeconfig context,
// or "" with -A.
func resolveNamespace(flags *genericclioptions.ConfigFlags, all bool) (string, error) {
	if all {
		return "", nil
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("cannot read the kubeconfig: %w\nFix it, or point --kubeconfig (or KUBECONFIG) at a valid one", err)
	}
	return ns, nil
}
