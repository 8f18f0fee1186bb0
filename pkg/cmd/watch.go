package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

var (
	watchLong = templates.LongDesc(`
		Watch ConfigMaps (and, with --secrets, Secrets) and, whenever one changes,
		make the consumers that read a changed key current, with the least
		disruption: the same engine as 'refresh --strategy auto'. A pod whose
		changed uses are all mounted volumes gets its annotation bumped (the
		kubelet rewrites the volumes at once, no restart); a workload with a
		stale env or subPath consumer is restarted once (or its pods evicted,
		--restart-via=evict); every action is verified. A key no consumer reads
		is no reason to act.

		Edits are coalesced per namespace: the changes of a namespace are acted
		on together --debounce after its last edit, or --max-wait after its
		first, so a release that edits several objects restarts a workload
		once. At most
		--max-concurrent-restarts workloads are restarted at once, and a workload
		whose previous rollout is not complete is not restarted again until it
		is (a rollout stuck past its progress deadline, or not complete after
		--rollout-wait, is reported and left alone). --min-restart-interval and
		--restart-rate pace restarts, whatever asked for them. A failure that may
		pass (the API server restarting, a timeout) is tried again after a
		backoff. What was stale before watch started is left alone unless
		--sync-existing.

		A workload is left alone with kubectl-cmsync.io/paused=true or
		kubectl-cmsync.io/watch=false; with --require-opt-in only workloads with
		kubectl-cmsync.io/watch=true (or one of Reloader's annotations) are acted
		on. Reloader's annotations keep their meaning (reloader.stakater.com/auto,
		configmap.reloader.stakater.com/reload, secret.reloader.stakater.com/reload,
		reloader.stakater.com/search with reloader.stakater.com/match, the exclude
		and ignore annotations), except that a consumer that only mounts the object
		is refreshed without a restart. --namespace-selector, --ignore-namespaces,
		--resource-label-selector and --ignore-workload-kinds narrow what is
		handled at all; a change out of scope is logged as ignored.

		One line per change, action and result; -o json prints each as one JSON
		object per line. With --alert-webhook (or $CMSYNC_ALERT_WEBHOOK), each
		round that acted or failed is also posted as one message to a Slack,
		Teams or Google Chat webhook, or as JSON (--alert-format). It runs until
		interrupted.`)

	watchExample = templates.Examples(`
		# Keep the consumers of every ConfigMap of the current namespace current
		kubectl cmsync watch

		# Only one ConfigMap, and Secrets too, logging JSON lines
		kubectl cmsync watch app-config secret/db-credentials -o json

		# Log what would be done, change nothing
		kubectl cmsync watch -A --dry-run

		# Only workloads annotated kubectl-cmsync.io/watch=true; evict instead of rolling out
		kubectl cmsync watch -A --require-opt-in --restart-via=evict`)
)

// WatchOptions holds the flags and state of `kubectl cmsync watch`.
type WatchOptions struct {
	Connection
	genericiooptions.IOStreams

	Selection
	ScopeFlags
	RestartFlags
	Alert                 AlertFlags
	DryRun                string
	SyncExisting          bool
	RequireOptIn          bool
	ReloaderOnChange      string
	Debounce              time.Duration
	MaxWait               time.Duration
	MaxConcurrentRestarts int
	Workers               int
	RolloutWait           time.Duration
	// MinRestartInterval, RestartRate and RestartBurst pace restarts
	// (reconcile.Config).
	MinRestartInterval time.Duration
	RestartRate        float64
	RestartBurst       int
	Timeout            time.Duration
	// ReloadHookVia is --reload-hook-via (refresh.HookVias).
	ReloadHookVia string
	// ReloadHookHostNetwork is --reload-hook-host-network.
	ReloadHookHostNetwork bool
	Output                string
	Verify                VerifyFlags
	Shadow                ShadowFlags

	// Set by Complete.
	Names    []inspect.ObjectKey
	Executor containerread.Executor
}

// NewWatchOptions returns options with defaults.
func NewWatchOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *WatchOptions {
	o := &WatchOptions{Connection: newConnection(flags), IOStreams: streams, DryRun: string(refresh.DryRunNone), Debounce: 2 * time.Second,
		MaxWait: 30 * time.Second, MaxConcurrentRestarts: 2, Workers: reconcile.DefaultWorkers, RolloutWait: 10 * time.Minute, RestartBurst: 10, Timeout: 5 * time.Minute, RestartFlags: defaultRestartFlags(),
		Alert: defaultAlertFlags(), ReloadHookVia: refresh.HookViaProxy, Shadow: defaultShadowFlags()}
	o.Verify.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), false)
	o.Verify.ReaderIdleTimeout = DefaultReaderIdleTimeout
	return o
}

// NewCmdWatch builds `kubectl cmsync watch`.
func NewCmdWatch(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewWatchOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "watch [NAME | configmap/NAME | secret/NAME ...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Keep the consumers of ConfigMaps and Secrets current as they change, restarting only what must be",
		Long:                  watchLong,
		Example:               watchExample,
		RunE:                  runOptions(o),
	}
	o.addFlags(cmd, false)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json (one JSON object per line).")
	return cmd
}

// addFlags registers the flags watch and controller share (controller:
// the in-cluster defaults' wording).
func (o *WatchOptions) addFlags(cmd *cobra.Command, controller bool) {
	fs := cmd.Flags()
	addSelectionFlags(fs, &o.Selection)
	o.ScopeFlags.addFlags(fs)
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, `Must be "none", "client", or "server". client: log the changes and what would be done, change nothing; server: also send the patches with dryRun=All.`)
	fs.Lookup("dry-run").NoOptDefVal = string(refresh.DryRunClient)
	if controller {
		fs.BoolVar(&o.SyncExisting, "sync-existing", false, "At start, check the consumers with no record too (by default they are recorded and left alone; those whose objects changed since their record are always checked).")
		fs.BoolVar(&o.RequireOptIn, "require-opt-in", o.RequireOptIn, "Act only on workloads annotated "+reconcile.AnnotationWatch+"=true or with one of Reloader's annotations (--require-opt-in=false: every workload not opted out).")
	} else {
		fs.BoolVar(&o.SyncExisting, "sync-existing", false, "At start, make every selected consumer current once (by default only changes seen while watching are acted on).")
		fs.BoolVar(&o.RequireOptIn, "require-opt-in", o.RequireOptIn, "Act only on workloads annotated "+reconcile.AnnotationWatch+"=true or with one of Reloader's annotations.")
	}
	fs.StringVar(&o.ReloaderOnChange, "reloader-on-change", reconcile.OnChangeRestart, "What a change does to a workload opted in through Reloader's annotations: "+
		reconcile.OnChangeRestart+" (restart on every change, as Reloader does) or "+reconcile.OnChangeRemount+" (volumes remounted, env and subPath uses restarted); its own "+
		reconcile.AnnotationOnChange+" annotation wins.")
	fs.DurationVar(&o.Debounce, "debounce", o.Debounce, "Act on the changes of a namespace this long after its last edit (edits in between are coalesced).")
	fs.DurationVar(&o.MaxWait, "max-wait", o.MaxWait, "Act on the changes of a namespace at the latest this long after its first edit, even if the edits go on.")
	fs.IntVar(&o.MaxConcurrentRestarts, "max-concurrent-restarts", o.MaxConcurrentRestarts, "Restart (or evict the pods of) at most this many workloads at once, in all namespaces: a restart whose rollout is not complete yet counts; the others wait and are checked again.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Act on this many namespaces at once (a namespace whose reads are slow holds one, not the others; a round does not wait for rollouts).")
	fs.DurationVar(&o.RolloutWait, "rollout-wait", o.RolloutWait, "How long a change waits for a workload's rollout in progress before it is reported and left alone.")
	fs.DurationVar(&o.MinRestartInterval, "min-restart-interval", o.MinRestartInterval, "Restart one workload at most once per this interval (from its last restart, whoever made it); a restart held back waits until the interval ends (0: no interval).")
	fs.Float64Var(&o.RestartRate, "restart-rate", o.RestartRate, "Restart at most this many workloads per second, all together, in bursts of --restart-burst; a restart held back waits for its turn (0: no limit).")
	fs.IntVar(&o.RestartBurst, "restart-burst", o.RestartBurst, "How many restarts --restart-rate lets through at once.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long an action is waited for to be verified, from its send: a round waits for its restarts and evictions at most 5s, and later rounds of its namespace verify them until then.")
	o.RestartFlags.addFlags(fs, false)
	if controller {
		addHookFlag(fs, &o.ReloadHookVia, &o.ReloadHookHostNetwork, refresh.HookViaDirect) // in the cluster's network
	} else {
		addHookFlag(fs, &o.ReloadHookVia, &o.ReloadHookHostNetwork, refresh.HookViaProxy)
	}
	o.Verify.AddFlags(fs, false)
	o.Verify.AddIdleFlag(fs)
	o.Alert.addFlags(fs)
	o.Shadow.addFlags(fs)
}

// Complete resolves namespace, names, the client and the alerts' webhook.
func (o *WatchOptions) Complete(args []string) error {
	o.Alert.complete()
	var err error
	if o.Names, err = o.complete(o.AllNamespaces, args, o.Client == nil); err != nil {
		return err
	}
	if o.Executor == nil {
		if o.Executor, err = o.Verify.executor(o.RESTConfig); err != nil {
			return err
		}
	}
	if o.Shadow.Shadow && o.DryRun == string(refresh.DryRunNone) {
		o.DryRun = string(refresh.DryRunClient) // a shadow sends nothing
	}
	if o.Shadow.Shadow && o.Shadow.Namespace == "" && o.ConfigFlags != nil {
		if o.Shadow.Namespace, err = resolveNamespace(o.ConfigFlags, false); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks flags and arguments.
func (o *WatchOptions) Validate() error {
	if err := o.validateSelector(); err != nil {
		return err
	}
	if err := validateDryRun(o.DryRun); err != nil {
		return err
	}
	if v := o.ReloaderOnChange; v != "" && v != reconcile.OnChangeRestart && v != reconcile.OnChangeRemount {
		return usageError("--reloader-on-change must be %s or %s, got %q", reconcile.OnChangeRestart, reconcile.OnChangeRemount, v)
	}
	if err := o.Shadow.validate(o.DryRun, o.MaxWait); err != nil {
		return err
	}
	if err := validateOutput(o.Output, []string{"", "json"}); err != nil {
		return err
	}
	if err := o.validateNames(o.Names); err != nil {
		return err
	}
	if err := o.ScopeFlags.validate(o.Namespace, o.AllNamespaces); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--debounce", o.Debounce}, {"--max-wait", o.MaxWait}, {"--rollout-wait", o.RolloutWait}, {"--timeout", o.Timeout}} {
		if d.v <= 0 {
			return usageError("%s must be positive, got %s", d.name, d.v)
		}
	}
	if o.MaxWait < o.Debounce {
		return usageError("--max-wait (%s) must be at least --debounce (%s)", o.MaxWait, o.Debounce)
	}
	if o.Workers < 1 {
		return usageError("--workers must be 1 or more, got %d", o.Workers)
	}
	if o.MaxConcurrentRestarts < 1 {
		return usageError("--max-concurrent-restarts must be 1 or more, got %d", o.MaxConcurrentRestarts)
	}
	if o.MinRestartInterval < 0 || o.RestartRate < 0 {
		return usageError("--min-restart-interval and --restart-rate must not be negative, got %s and %g", o.MinRestartInterval, o.RestartRate)
	}
	if o.RestartRate > 0 && o.RestartBurst < 1 {
		return usageError("--restart-burst must be 1 or more with --restart-rate, got %d", o.RestartBurst)
	}
	if err := o.RestartFlags.validate(); err != nil {
		return err
	}
	if err := o.Alert.validate(); err != nil {
		return err
	}
	if err := validateHookVia(o.ReloadHookVia); err != nil {
		return err
	}
	return o.Verify.Validate()
}

// Run watches until interrupted, printing one line per event (and
// alerting, with --alert-webhook, once per round that acted or failed).
func (o *WatchOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer o.Verify.Close(o.ErrOut)
	emit := serialized(o.print)
	attach, stopAlerts := o.Alert.start(alertReport(emit), nil)
	defer stopAlerts() // after the loop: its last rounds' messages are flushed
	l := o.newLoop()
	l.Emit = o.startShadow(ctx, l.Now, emit, nil, nil)
	attach(l)
	if err := l.Run(ctx); err != nil {
		return explainAPIError(err, o.server(), o.Namespace)
	}
	return nil
}

// newLoop is the continuous refresh over these flags.
func (o *WatchOptions) newLoop() *reconcile.Loop {
	vo := o.Verify.Options(nil)
	vo.Now = o.Now
	scope, _ := o.ScopeFlags.scope() // checked by Validate
	rc := refresh.Config{Strategy: refresh.StrategyAuto, RestartVia: refresh.RestartVia(o.RestartVia), MaxRestarts: -1,
		MaxUnavailable: o.MaxUnavailable, DryRun: refresh.DryRun(o.DryRun), Selector: o.Selector, Yes: true, Wait: true,
		Timeout: o.Timeout, Concurrency: o.Verify.Concurrency, Verify: vo, Now: o.Now, HookHostNetwork: o.ReloadHookHostNetwork}
	cluster := refresh.ClientCluster(o.Client, o.Executor, vo, o.Secrets, o.Selector)
	cluster.Hooks = refresh.NewHookSender(o.ReloadHookVia, o.Client)
	return &reconcile.Loop{
		Config: reconcile.Config{Namespace: o.Namespace, Names: o.Names, PodSelector: o.Selector, Secrets: o.Secrets,
			IncludeSystem: o.IncludeSystem, Scope: scope, RequireOptIn: o.RequireOptIn, ReloaderOnChange: o.ReloaderOnChange, SyncExisting: o.SyncExisting, Debounce: o.Debounce,
			MaxWait: o.MaxWait, MaxConcurrentRestarts: o.MaxConcurrentRestarts, Workers: o.Workers, RolloutWait: o.RolloutWait, Refresh: rc, Now: o.Now,
			MinRestartInterval: o.MinRestartInterval, RestartRate: o.RestartRate, RestartBurst: o.RestartBurst, Shadow: o.Shadow.Shadow},
		Client:      o.Client,
		Cluster:     cluster,
		Annotations: refresh.ClientWorkloads{Client: o.Client}, Named: refresh.ClientWorkloads{Client: o.Client},
	}
}

// print writes one event: a line of text, or one JSON object.
func (o *WatchOptions) print(e reconcile.Event) {
	if o.Output == "json" {
		b, err := json.Marshal(e)
		if err == nil {
			fmt.Fprintln(o.Out, string(b))
			return
		}
	}
	fmt.Fprintln(o.Out, render.Event(e))
}
