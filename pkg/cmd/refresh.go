package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

var (
	refreshLong = templates.LongDesc(`
		Make every consumer of the selected ConfigMaps (and Secrets) current with the
		least disruptive action, then prove it.

		With --strategy auto (the default) a pod whose every use is a mounted volume
		gets the annotation kubectl-cmsync.io/refreshed-at bumped at once, so the
		kubelet rewrites its volumes within about a second without restarting
		anything (harmless where they are already current); a pod with an env or
		subPath use is observed via exec first: its pending volumes are annotated, and
		a workload with a stale env or subPath consumer is restarted the way 'kubectl
		rollout restart' does, once however many of its pods or ConfigMaps need it.
		Bare pods, Jobs, OnDelete workloads, re-created immutable ConfigMaps and
		controllers other than the built-in ones (matched by API group and kind: an
		apps.kruise.io StatefulSet is not an apps/v1 one) are reported as manual,
		with what to do. With --wait (the default) the result is
		verified by exec, each annotated pod as soon as its patch is acknowledged.

		With --restart-via=evict the pods of stale consumers are evicted through the
		Eviction API instead, one at a time (--max-unavailable), each replacement Ready
		before the next, honouring PodDisruptionBudgets: the workload's template is never
		changed, so GitOps tools (Argo CD, Flux) see no drift.`)

	refreshExample = templates.Examples(`
		# Show what would be done, change nothing (reads by exec the containers with env or subPath uses)
		kubectl cmsync refresh app-config --dry-run=client

		# Refresh every consumer of one ConfigMap, restarting workloads without asking
		kubectl cmsync refresh app-config --yes

		# Only bump pod annotations (never restart anything)
		kubectl cmsync refresh app-config --strategy annotate

		# Restart every workload that consumes a Secret, at most 3 of them
		kubectl cmsync refresh secret/db-credentials --strategy restart --max-restarts 3 --yes

		# Restart stale env consumers by evicting their pods (no template change, PDBs honoured)
		kubectl cmsync refresh app-config --restart-via=evict --yes`)
)

var refreshFormats = []string{"", "wide", "json", "yaml"}

// RefreshOptions holds the flags and state of `kubectl cmsync refresh`.
type RefreshOptions struct {
	Connection
	genericiooptions.IOStreams

	Selection
	RestartFlags
	Strategy string
	DryRun   string
	Yes      bool
	Wait     bool
	Timeout  time.Duration
	// ReloadHookVia is --reload-hook-via (refresh.HookVias).
	ReloadHookVia string
	// ReloadHookHostNetwork is --reload-hook-host-network.
	ReloadHookHostNetwork bool
	Output                string
	Verify                VerifyFlags
	Contexts              ContextFlags

	// Args are the arguments, completed again in each context.
	Args []string
	// contextNames are the contexts refreshed (nil: one, as kubectl's
	// --context).
	contextNames []string

	// Set by Complete: the objects and workloads the arguments name.
	Names     []inspect.ObjectKey
	Workloads []inspect.WorkloadKey
	// Templates reads the named workloads (nil: the client); tests
	// replace it.
	Templates inspect.TemplateReader
	// Cluster is how the refresh reaches the cluster: Complete sets each
	// edge a test left nil to the client's adapter.
	Cluster refresh.Cluster
	// StdinTerminal and ErrTerminal tell whether a person is there to ask
	// and to show progress to.
	StdinTerminal bool
	ErrTerminal   bool
}

// NewRefreshOptions returns options with defaults.
func NewRefreshOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RefreshOptions {
	o := &RefreshOptions{Connection: newConnection(flags), IOStreams: streams, Strategy: string(refresh.StrategyAuto), DryRun: string(refresh.DryRunNone),
		RestartFlags: defaultRestartFlags(), Wait: true, Timeout: 5 * time.Minute, ReloadHookVia: refresh.HookViaProxy}
	// the verify flags' defaults, from the one place that declares them
	o.Verify.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), false)
	return o
}

// NewCmdRefresh builds `kubectl cmsync refresh`.
func NewCmdRefresh(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRefreshOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "refresh [NAME | configmap/NAME | secret/NAME | WORKLOAD/NAME ...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Make every consumer of a ConfigMap or Secret current, with the least disruption",
		Long:                  refreshLong,
		Example:               refreshExample,
		RunE:                  runOptions(o),
	}
	fs := cmd.Flags()
	addSelectionFlags(fs, &o.Selection)
	fs.StringVar(&o.Strategy, "strategy", o.Strategy, "auto: annotate pods with a pending mount and restart workloads with a stale env or subPath consumer; annotate: only annotate pods; restart: roll out every owning workload.")
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, `Must be "none", "client", or "server". client: observe the pods the plan depends on (read-only execs into those with env or subPath uses, as --verify does; none with --strategy restart), print the plan, change nothing; server: also send the patches with dryRun=All.`)
	fs.Lookup("dry-run").NoOptDefVal = string(refresh.DryRunClient)
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Restart workloads without asking.")
	fs.BoolVar(&o.Wait, "wait", o.Wait, "Wait until every refreshed consumer is verified current.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits.")
	fs.StringVarP(&o.Output, "output", "o", "", "Output format: one of (wide, json, yaml); wide names every consumer pod.")
	o.RestartFlags.addFlags(fs, true)
	addHookFlag(fs, &o.ReloadHookVia, &o.ReloadHookHostNetwork, refresh.HookViaProxy)
	o.Verify.AddFlags(fs, false)
	o.Contexts.addFlags(cmd)
	return cmd
}

// validateDryRun checks --dry-run (refresh and watch).
func validateDryRun(v string) error {
	switch refresh.DryRun(v) {
	case refresh.DryRunNone, refresh.DryRunClient, refresh.DryRunServer:
		return nil
	}
	return usageError(`invalid --dry-run %q: must be "none", "client", or "server"`, v)
}

// Complete resolves namespace, names and the cluster edges; with several
// contexts only their names, each context being completed when planned.
func (o *RefreshOptions) Complete(args []string) error {
	o.Args = args
	names, err := o.Contexts.contexts(o.ConfigFlags)
	if err != nil {
		return err
	}
	if o.contextNames = names; len(names) > 0 {
		t, err := parseTargets(args, "")
		o.Names, o.Workloads = t.Objects, t.Workloads
		o.StdinTerminal = isTerminal(o.In)
		return err
	}
	t, err := o.completeTargets(o.AllNamespaces, args, o.Client == nil)
	if err != nil {
		return err
	}
	o.Names, o.Workloads = t.Objects, t.Workloads
	if o.Cluster.Executor == nil {
		if o.Cluster.Executor, err = o.Verify.executor(o.RESTConfig); err != nil {
			return err
		}
	}
	cc := refresh.ClientCluster(o.Client, o.Cluster.Executor, o.verifyOptions(), o.Secrets || len(o.Workloads) > 0, o.Selector)
	cc.Hooks = refresh.NewHookSender(o.ReloadHookVia, o.Client)
	o.Cluster = orClient(o.Cluster, cc)
	o.StdinTerminal = isTerminal(o.In)
	o.ErrTerminal = isTerminal(o.ErrOut)
	return nil
}

func (o *RefreshOptions) verifyOptions() inspect.VerifyOptions {
	vo := o.Verify.Options(nil)
	vo.Now = o.Now
	return vo
}

// Validate checks flags and arguments.
func (o *RefreshOptions) Validate() error {
	if err := o.validateSelector(); err != nil {
		return err
	}
	if !slices.Contains(refresh.Strategies, refresh.Strategy(o.Strategy)) {
		return usageError("invalid --strategy %q: must be one of auto, annotate, restart", o.Strategy)
	}
	if err := validateDryRun(o.DryRun); err != nil {
		return err
	}
	if err := validateHookVia(o.ReloadHookVia); err != nil {
		return err
	}
	if err := validateOutput(o.Output, refreshFormats); err != nil {
		return err
	}
	if err := o.validateTargets(Targets{Objects: o.Names, Workloads: o.Workloads}); err != nil {
		return err
	}
	if o.Timeout <= 0 {
		return usageError("--timeout must be positive, got %s", o.Timeout)
	}
	if err := o.RestartFlags.validate(); err != nil {
		return err
	}
	return o.Verify.Validate()
}

// Run reads the selection, has the refresh engine plan it, asks, applies
// and prints.
func (o *RefreshOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.contextNames) > 0 {
		return o.runContexts(ctx)
	}
	defer o.Verify.Close(o.ErrOut)
	snap, items, err := o.selection(ctx)
	if err != nil {
		return err
	}
	r := o.refresher()
	plan, err := r.Plan(ctx, snap, items)
	if err != nil {
		return o.refused(plan, err)
	}
	if r.DryRun == refresh.DryRunClient {
		printWarnings(o.ErrOut, plan.Warnings)
		return o.printPlan(plan.Actions)
	}
	if len(plan.Beyond) > 0 && r.DryRun == refresh.DryRunNone { // allowed by --yes
		fmt.Fprintf(o.ErrOut, "Warning: restarting pods that -l %s does not select: %s\n", o.Selector, strings.Join(plan.Beyond, "; "))
	}
	if err := o.confirmPlan(plan); err != nil {
		return o.refused(plan, err)
	}
	results := r.Apply(ctx, plan, o.progress)
	if o.ErrTerminal && r.DryRun == refresh.DryRunNone && o.Wait {
		fmt.Fprintln(o.ErrOut) // after the \r progress line
	}
	printWarnings(o.ErrOut, plan.GroupWarnings(results))
	if err := o.printResults(results); err != nil {
		return err
	}
	return resultError(results, o.runInfo())
}

// selection reads the snapshot and builds the uses of the selected
// objects, printing a note per kind RBAC kept from being read.
// With workloads named, only their pods' uses are selected (of the named
// objects, when there are some too); a workload that runs no pod now is
// noted, and its template's rows of objects that do not exist are left
// to that note (there is no pod to act on).
func (o *RefreshOptions) selection(ctx context.Context) (*inspect.Snapshot, []inspect.Use, error) {
	selected, err := o.workloads(ctx, o.Templates, o.Workloads)
	if err != nil {
		return nil, nil, err
	}
	secrets := o.Secrets || len(selected) > 0
	lo := inspect.LoadOptions{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: secrets || inspect.NamesSecret(o.Names)}
	snap, err := o.loadSnapshot(ctx, nil, lo, inspect.NamesSecret(o.Names), o.ErrOut)
	if err != nil {
		return nil, nil, err
	}
	items, idle, err := inspect.BuildSelected(snap, inspect.BuildOptions{Names: o.Names, Secrets: secrets && snap.SecretsListed, IncludeSystem: o.IncludeSystem, Workloads: selected})
	if err != nil {
		return nil, nil, explainNotFound(err)
	}
	noteIdle(o.ErrOut, idle, items)
	items = slices.DeleteFunc(items, func(it inspect.Use) bool { return it.Pod.Name == "" && it.Verdict == inspect.VerdictMissing })
	return snap, items, nil
}

// refresher is the refresh engine over these flags and cluster edges.
func (o *RefreshOptions) refresher() *refresh.Refresher {
	vo := o.verifyOptions()
	if o.ErrTerminal {
		vo.Progress = o.ErrOut
	}
	cluster := o.Cluster
	if cluster.Workloads == nil {
		cluster.Workloads = refresh.ClientWorkloads{Client: o.Client}
	}
	return &refresh.Refresher{
		Config: refresh.Config{Strategy: refresh.Strategy(o.Strategy), RestartVia: refresh.RestartVia(o.RestartVia), MaxRestarts: o.MaxRestarts,
			MaxUnavailable: o.MaxUnavailable, DryRun: refresh.DryRun(o.DryRun), Selector: o.Selector, Yes: o.Yes, Wait: o.Wait,
			Timeout: o.Timeout, Concurrency: o.Verify.Concurrency, Verify: vo, Now: o.Now, HookHostNetwork: o.ReloadHookHostNetwork,
			GroupWarnings: true},
		Cluster: cluster,
	}
}

// runInfo is what the message of a run that failed part way needs.
func (o *RefreshOptions) runInfo() runInfo {
	run := runInfo{DryRun: refresh.DryRun(o.DryRun), Strategy: refresh.Strategy(o.Strategy), RestartVia: refresh.RestartVia(o.RestartVia),
		MaxUnavailable: o.MaxUnavailable, Selector: o.Selector, Now: o.Now()}
	if f := o.ConfigFlags; f != nil {
		if f.Context != nil {
			run.Context = *f.Context
		}
		if f.KubeConfig != nil {
			run.Kubeconfig = *f.KubeConfig
		}
	}
	return run
}

// refused prints what a refused plan would have done and the results of
// the pods annotated meanwhile, and returns err in kubectl's terms.
func (o *RefreshOptions) refused(plan *refresh.Plan, err error) error {
	var tooMany *refresh.TooManyRestartsError
	var beyond *refresh.BeyondSelectorError
	var denied *refresh.PermissionError
	var declined *refusal
	switch {
	case errors.As(err, &tooMany):
		err = &ExitError{Code: ExitRefused, Err: err}
	case errors.As(err, &beyond):
		err = &ExitError{Code: ExitRefused, Err: beyondSelectorError(o.Selector, beyond.Beyond, "Add --yes to restart them anyway")}
	case errors.As(err, &denied):
		err = missingPermissionsError(denied.Missing, denied.Items)
	case errors.As(err, &declined):
		err = &ExitError{Code: ExitRefused, Err: declined.err}
	default:
		err = explainAPIError(err, o.server(), o.Namespace)
	}
	early := plan.Abandon()
	showPlan := plan != nil && plan.Actions != nil && (declined == nil || declined.printPlan)
	if showPlan || len(early) > 0 {
		printWarnings(o.ErrOut, plan.GroupWarnings(early))
	}
	if showPlan {
		_ = o.printPlan(plan.Actions)
	}
	if len(early) > 0 {
		_ = o.printResults(early)
		fmt.Fprintf(o.ErrOut, "note: %d pods whose every use is a mounted volume were annotated meanwhile (harmless, nothing restarted): see the results above\n", len(early))
	}
	return err
}

// refusal is a plan the person did not confirm.
type refusal struct {
	err       error
	printPlan bool // the plan was not shown to them yet
}

func (r *refusal) Error() string { return r.err.Error() }

// confirmPlan asks before a real run restarts anything, unless --yes.
func (o *RefreshOptions) confirmPlan(plan *refresh.Plan) error {
	restarts := plan.Restarts
	if restarts == 0 || o.Yes || refresh.DryRun(o.DryRun) != refresh.DryRunNone {
		return nil
	}
	if !o.StdinTerminal {
		return &refusal{printPlan: true, err: fmt.Errorf("refused: the plan restarts %d workloads and stdin is not a terminal to confirm it; add --yes to proceed, or --strategy annotate to restart nothing", restarts)}
	}
	printWarnings(o.ErrOut, plan.Warnings)
	_ = printPlanTable(o.ErrOut, plan.Actions, o.Output == "wide")
	question := fmt.Sprintf("Restart %d workloads (their pods are replaced)? [y/N]: ", restarts)
	if o.RestartVia == string(refresh.RestartViaEvict) {
		question = fmt.Sprintf("Evict the pods of %d workloads (in the order shown; their controllers replace them)? [y/N]: ", restarts)
	}
	if !confirm(o.In, o.ErrOut, question) {
		return &refusal{err: fmt.Errorf("refused: not confirmed; nothing was changed")}
	}
	return nil
}

// progress prints each eviction event, and on a terminal the wait's count.
func (o *RefreshOptions) progress(p refresh.Progress) {
	switch {
	case p.Event != "" && o.ErrTerminal:
		fmt.Fprint(o.ErrOut, "\r\033[K", p.Event, "\n") // over a waiting line
	case p.Event != "":
		fmt.Fprintln(o.ErrOut, p.Event)
	case o.ErrTerminal:
		fmt.Fprintf(o.ErrOut, "\rwaiting: %d/%d current, %s elapsed ", p.Current, p.Total, p.Elapsed.Round(100*time.Millisecond))
	}
}

// confirm asks a yes/no question on a terminal.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
