package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
		Bare pods, Jobs, OnDelete workloads and re-created immutable ConfigMaps are
		reported as manual, with what to do. With --wait (the default) the result is
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
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces bool
	Selector      string
	Secrets       bool
	IncludeSystem bool
	Strategy      string
	DryRun        string
	Yes           bool
	MaxRestarts   int
	Wait          bool
	Timeout       time.Duration
	Output        string
	Verify        VerifyFlags
	// RestartVia is --restart-via (template or evict); MaxUnavailable how
	// many pods of a workload are evicted at once.
	RestartVia     string
	MaxUnavailable int

	// Set by Complete.
	Namespace  string
	Names      []inspect.ObjectKey
	Client     kubernetes.Interface
	RESTConfig *rest.Config
	Executor   inspect.Executor
	Patcher    refresh.Patcher
	Evictor    refresh.Evictor
	Rollouts   refresh.RolloutChecker
	Observer   refresh.Observer
	// Access checks the plan's permissions before anything is sent (nil:
	// no check).
	Access refresh.AccessReviewer
	Now    func() time.Time
	// StdinTerminal and ErrTerminal tell whether a person is there to ask
	// and to show progress to.
	StdinTerminal bool
	ErrTerminal   bool
}

// NewRefreshOptions returns options with defaults.
func NewRefreshOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RefreshOptions {
	o := &RefreshOptions{ConfigFlags: flags, IOStreams: streams, Strategy: string(refresh.StrategyAuto), DryRun: string(refresh.DryRunNone),
		MaxRestarts: -1, Wait: true, Timeout: 5 * time.Minute, Now: time.Now,
		RestartVia: string(refresh.RestartViaTemplate), MaxUnavailable: 1}
	// the verify flags' defaults, from the one place that declares them
	o.Verify.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), false)
	return o
}

// NewCmdRefresh builds `kubectl cmsync refresh`.
func NewCmdRefresh(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRefreshOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "refresh [NAME | configmap/NAME | secret/NAME ...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Make every consumer of a ConfigMap or Secret current, with the least disruption",
		Long:                  refreshLong,
		Example:               refreshExample,
		RunE:                  runOptions(o),
	}
	addSelectionFlags(cmd, &o.AllNamespaces, &o.Selector, &o.Secrets, &o.IncludeSystem)
	fs := cmd.Flags()
	fs.StringVar(&o.Strategy, "strategy", o.Strategy, "auto: annotate pods with a pending mount and restart workloads with a stale env or subPath consumer; annotate: only annotate pods; restart: roll out every owning workload.")
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, `Must be "none", "client", or "server". client: observe the pods the plan depends on (read-only execs into those with env or subPath uses, as --verify does; none with --strategy restart), print the plan, change nothing; server: also send the patches with dryRun=All.`)
	fs.Lookup("dry-run").NoOptDefVal = string(refresh.DryRunClient)
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Restart workloads without asking.")
	fs.IntVar(&o.MaxRestarts, "max-restarts", o.MaxRestarts, "Refuse a plan that restarts more workloads than this (-1: no limit).")
	fs.BoolVar(&o.Wait, "wait", o.Wait, "Wait until every refreshed consumer is verified current.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long --wait waits.")
	fs.StringVarP(&o.Output, "output", "o", "", "Output format: one of (wide, json, yaml); wide names every consumer pod.")
	fs.StringVar(&o.RestartVia, "restart-via", o.RestartVia, "How a workload with a stale env or subPath consumer is restarted. template: set kubectl.kubernetes.io/restartedAt on its pod template (kubectl rollout restart); evict: evict the consumers' pods through the Eviction API, honouring PodDisruptionBudgets, and never change the template (no GitOps drift).")
	fs.IntVar(&o.MaxUnavailable, "max-unavailable", o.MaxUnavailable, "With --restart-via=evict: how many pods of a workload are evicted at once; the next batch waits until their replacements are Ready.")
	o.Verify.AddFlags(fs, false)
	return cmd
}

// Complete resolves namespace, names and the cluster edges.
func (o *RefreshOptions) Complete(args []string) error {
	ns, err := resolveNamespace(o.ConfigFlags, o.AllNamespaces)
	if err != nil {
		return err
	}
	o.Namespace = ns
	if o.Names, err = parseNames(args, ns); err != nil {
		return err
	}
	if o.Client == nil {
		var err error
		if o.RESTConfig, o.Client, err = newClient(o.ConfigFlags); err != nil {
			return err
		}
	}
	if o.Executor == nil {
		ex, err := o.Verify.executor(o.RESTConfig)
		if err != nil {
			return err
		}
		o.Executor = ex
	}
	if o.Patcher == nil {
		o.Patcher = refresh.ClientPatcher{Client: o.Client}
	}
	if o.Evictor == nil {
		o.Evictor = refresh.ClientEvictor{Client: o.Client}
	}
	if o.Rollouts == nil {
		o.Rollouts = refresh.ClusterRollout{Client: o.Client}
	}
	if o.Access == nil {
		o.Access = refresh.SelfAccessReviewer{Client: o.Client}
	}
	if o.Observer == nil {
		o.Observer = refresh.ClusterObserver{Client: o.Client, Executor: o.Executor, Verify: o.verifyOptions(), Secrets: o.Secrets, PodSelector: o.Selector}
	}
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
	// before anything is read: a bad -l is a usage error, not the API
	// server's
	if _, err := labels.Parse(o.Selector); err != nil {
		return usageError("invalid -l %q: %v", o.Selector, err)
	}
	ok := false
	for _, s := range refresh.Strategies {
		ok = ok || string(s) == o.Strategy
	}
	if !ok {
		return usageError("invalid --strategy %q: must be one of auto, annotate, restart", o.Strategy)
	}
	switch refresh.DryRun(o.DryRun) {
	case refresh.DryRunNone, refresh.DryRunClient, refresh.DryRunServer:
	default:
		return usageError(`invalid --dry-run %q: must be "none", "client", or "server"`, o.DryRun)
	}
	if err := validateOutput(o.Output, refreshFormats); err != nil {
		return err
	}
	if o.AllNamespaces && len(o.Names) > 0 {
		return usageError("a ConfigMap or Secret cannot be named across all namespaces; drop -A and use -n NAMESPACE")
	}
	if o.Timeout <= 0 {
		return usageError("--timeout must be positive, got %s", o.Timeout)
	}
	if o.MaxRestarts < -1 {
		return usageError("--max-restarts must be -1 (no limit) or more, got %d", o.MaxRestarts)
	}
	ok = false
	for _, v := range refresh.RestartVias {
		ok = ok || string(v) == o.RestartVia
	}
	if !ok {
		return usageError("invalid --restart-via %q: must be one of template, evict", o.RestartVia)
	}
	if o.MaxUnavailable < 1 {
		return usageError("--max-unavailable must be 1 or more, got %d", o.MaxUnavailable)
	}
	return o.Verify.Validate()
}

// Run observes, plans, asks, applies and waits.
func (o *RefreshOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	server := "(unknown server)"
	if o.RESTConfig != nil {
		server = o.RESTConfig.Host
	}
	wantSecrets := o.Secrets || inspect.NamesSecret(o.Names)
	snap, err := inspect.Load(ctx, o.Client, inspect.LoadOptions{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: wantSecrets})
	if err != nil {
		return explainAPIError(err, server, o.Namespace)
	}
	if le := deniedResource(snap, "secrets"); le != nil && inspect.NamesSecret(o.Names) {
		return explainAPIError(le, server, o.Namespace) // a Secret named but unreadable
	}
	for _, n := range deniedNotes(snap) {
		fmt.Fprintln(o.ErrOut, n)
	}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: o.Names, Secrets: o.Secrets && snap.SecretsListed, IncludeSystem: o.IncludeSystem})
	if err != nil {
		return explainNotFound(err)
	}
	dry := refresh.DryRun(o.DryRun)
	sel, err := labels.Parse(o.Selector) // checked by Validate
	if err != nil {
		return usageError("invalid -l %q: %v", o.Selector, err)
	}
	// The output edge: reasons derived from Secret data are redacted
	// before they reach the plan, and again in the results.
	redactor := inspect.NewRedactor(snap)
	pods := podsByKey(snap)
	// --strategy restart plans without observing: a client dry run of it
	// reads nothing from the containers (no exec at all).
	observed := !(dry == refresh.DryRunClient && o.Strategy == string(refresh.StrategyRestart))
	var notObserved map[string]bool
	restartable := items // whose workloads a restart may concern
	// early are the results of the pods annotated while the others are
	// observed (see annotateEarly); bail returns an error once they are in
	var early <-chan []refresh.Result
	bail := func(err error) error {
		if early != nil {
			res := <-early
			early = nil
			_ = o.printResults(res)
			fmt.Fprintf(o.ErrOut, "note: %d pods whose every use is a mounted volume were annotated meanwhile (harmless, nothing restarted): see the results above\n", len(res))
		}
		return err
	}
	if observed {
		vo := o.verifyOptions()
		if o.ErrTerminal {
			vo.Progress = o.ErrOut
		}
		if o.Strategy == string(refresh.StrategyRestart) {
			items = inspect.Verify(ctx, items, snap, o.Executor, vo)
		} else {
			// only the pods whose action depends on their state are read
			// first; the others' hot-updating mounts are annotated at once
			// and verified after
			need := refresh.ObservationNeeded(items)
			if dry == refresh.DryRunNone {
				items, early = o.annotateEarly(ctx, items, need, sel, pods, redactor)
			}
			items, notObserved = verifyPods(ctx, items, need, snap, o.Executor, vo)
			// pods annotated without observing are never restarted: their
			// workloads need not be read
			restartable = nil
			for _, it := range items {
				if need[refresh.PodKey(it.Object.Namespace, it.Pod.Name)] {
					restartable = append(restartable, it)
				}
			}
		}
	}
	items = redactor.Items(items)

	var workloads map[refresh.WorkloadKey]refresh.WorkloadInfo
	if o.Strategy != string(refresh.StrategyAnnotate) { // annotate restarts nothing
		if workloads, err = loadWorkloads(ctx, o.Client, restartable); err != nil {
			return bail(explainAPIError(err, server, o.Namespace))
		}
	}
	plan := refresh.Plan(refresh.PlanInput{Items: items, Pods: pods, Workload: workloads, Strategy: refresh.Strategy(o.Strategy), Observed: observed, NotObserved: notObserved, Selector: sel,
		RestartVia: refresh.RestartVia(o.RestartVia), MaxUnavailable: o.MaxUnavailable})
	counts := refresh.Counts(plan)
	// an evict action restarts a workload's pods as a restart does
	counts[refresh.ActionRestart] += counts[refresh.ActionEvict]

	if restarts := counts[refresh.ActionRestart]; o.MaxRestarts >= 0 && restarts > o.MaxRestarts {
		_ = o.printPlan(plan)
		return bail(&ExitError{Code: ExitRefused, Err: fmt.Errorf("refused: the plan restarts %d workloads, more than --max-restarts=%d; nothing was changed. Raise --max-restarts, narrow the selection (NAME, -l), or --strategy annotate to restart nothing", restarts, o.MaxRestarts)})
	}
	if dry == refresh.DryRunClient {
		return o.printPlan(plan)
	}
	if o.Access != nil {
		if missing := refresh.Missing(ctx, o.Access, refresh.Permissions(plan, dry)); len(missing) > 0 {
			_ = o.printPlan(plan)
			return bail(missingPermissionsError(missing, items))
		}
	}
	if beyond := outsideSelector(plan); len(beyond) > 0 && dry == refresh.DryRunNone {
		if !o.Yes {
			_ = o.printPlan(plan)
			return bail(&ExitError{Code: ExitRefused, Err: beyondSelectorError(o.Selector, beyond, "Add --yes to restart them anyway")})
		}
		fmt.Fprintf(o.ErrOut, "Warning: restarting pods that -l %s does not select: %s\n", o.Selector, strings.Join(beyond, "; "))
	}
	if restarts := counts[refresh.ActionRestart]; restarts > 0 {
		if dry == refresh.DryRunNone && !o.Yes {
			if !o.StdinTerminal {
				_ = o.printPlan(plan)
				return bail(&ExitError{Code: ExitRefused, Err: fmt.Errorf("refused: the plan restarts %d workloads and stdin is not a terminal to confirm it; add --yes to proceed, or --strategy annotate to restart nothing", restarts)})
			}
			_ = printPlanTable(o.ErrOut, plan)
			question := fmt.Sprintf("Restart %d workloads (their pods are replaced)? [y/N]: ", restarts)
			if o.RestartVia == string(refresh.RestartViaEvict) {
				question = fmt.Sprintf("Evict the pods of %d workloads (in the order shown; their controllers replace them)? [y/N]: ", restarts)
			}
			if !confirm(o.In, o.ErrOut, question) {
				return bail(&ExitError{Code: ExitRefused, Err: fmt.Errorf("refused: not confirmed; nothing was changed")})
			}
		}
	}
	deadline := o.Now().Add(o.Timeout)
	results := refresh.Apply(ctx, o.Patcher, plan, dry, o.Now)
	if counts[refresh.ActionEvict] > 0 {
		results = refresh.ApplyEvictions(ctx, o.Evictor, results, refresh.EvictOptions{MaxUnavailable: o.MaxUnavailable, DryRun: dry,
			Deadline: deadline, Now: o.Now, Progress: func(s string) { fmt.Fprintln(o.ErrOut, s) }})
	}
	if dry == refresh.DryRunNone && o.Wait {
		// --timeout bounds the evictions and the wait together
		wo := refresh.WaitOptions{Timeout: max(deadline.Sub(o.Now()), time.Millisecond), Now: o.Now, Concurrency: o.Verify.Concurrency}
		if o.ErrTerminal {
			wo.Progress = func(p refresh.Progress) {
				fmt.Fprintf(o.ErrOut, "\rwaiting: %d/%d current, %s elapsed ", p.Current, p.Total, p.Elapsed.Round(100*time.Millisecond))
			}
		}
		results = refresh.Wait(ctx, results, o.Observer, o.Rollouts, wo)
		if o.ErrTerminal {
			fmt.Fprintln(o.ErrOut)
		}
	}
	if early != nil {
		results = append(results, <-early...)
		sort.SliceStable(results, func(i, j int) bool { return refresh.Precedes(results[i].Action, results[j].Action) })
	}
	for i := range results {
		r := &results[i]
		r.Reason, r.Detail, r.Error, r.Warnings = redactor.String(r.Reason), redactor.String(r.Detail), redactor.String(r.Error), redactor.Strings(r.Warnings)
	}
	if err := o.printResults(results); err != nil {
		return err
	}
	return resultError(results, dry)
}

// annotateEarly starts, while the other pods are observed, the annotation
// and the wait of the pods that need no observation and whose workloads
// have no pod that does (such a workload may be restarted, which would
// replace them). Only when nothing that follows can refuse the plan:
// --yes, no --max-restarts, and every permission the whole plan may need
// (patch on these pods; patch on the other pods and their workloads, or
// create pods/eviction) granted; otherwise everything is planned after the
// observation, as before. It returns the items left to plan and the
// channel of the early results (nil when nothing was started).
func (o *RefreshOptions) annotateEarly(ctx context.Context, items []inspect.Item, need map[string]bool, sel labels.Selector, pods map[string]*corev1.Pod, redactor *inspect.Redactor) ([]inspect.Item, <-chan []refresh.Result) {
	if !o.Yes || o.MaxRestarts >= 0 || len(need) == 0 {
		return items, nil
	}
	busy := map[refresh.WorkloadKey]bool{} // workloads with a pod observed first
	for _, it := range items {
		if need[refresh.PodKey(it.Object.Namespace, it.Pod.Name)] {
			busy[refresh.WorkloadKey{Kind: it.Workload.Kind, Namespace: it.Object.Namespace, Name: it.Workload.Name}] = true
		}
	}
	var now, rest []inspect.Item
	notObserved := map[string]bool{}
	for _, it := range items {
		k := refresh.PodKey(it.Object.Namespace, it.Pod.Name)
		if it.Pod.Name != "" && !need[k] && !busy[refresh.WorkloadKey{Kind: it.Workload.Kind, Namespace: it.Object.Namespace, Name: it.Workload.Name}] {
			now = append(now, it)
			notObserved[k] = true
		} else {
			rest = append(rest, it)
		}
	}
	if len(now) == 0 {
		return items, nil
	}
	plan := refresh.Plan(refresh.PlanInput{Items: redactor.Items(now), Pods: pods, Strategy: refresh.Strategy(o.Strategy),
		Observed: true, NotObserved: notObserved, Selector: sel})
	// the worst case of the rest: every pod annotated, every workload restarted
	worst := append([]refresh.Action{}, plan...)
	for _, it := range rest {
		worst = append(worst, refresh.Action{Action: refresh.ActionAnnotate, Target: refresh.Target{Kind: "Pod", Namespace: it.Object.Namespace, Name: it.Pod.Name}})
		if refresh.Restartable[it.Workload.Kind] && o.Strategy == string(refresh.StrategyAuto) {
			kind := refresh.ActionRestart
			if o.RestartVia == string(refresh.RestartViaEvict) {
				kind = refresh.ActionEvict
			}
			worst = append(worst, refresh.Action{Action: kind, Target: refresh.Target{Kind: it.Workload.Kind, Namespace: it.Object.Namespace, Name: it.Workload.Name}})
		}
	}
	if o.Access != nil && len(refresh.Missing(ctx, o.Access, refresh.Permissions(worst, refresh.DryRunNone))) > 0 {
		return items, nil // planned after the observation, and refused then if it must be
	}
	deadline := o.Now().Add(o.Timeout)
	done := make(chan []refresh.Result, 1)
	go func() {
		results := refresh.Apply(ctx, o.Patcher, plan, refresh.DryRunNone, o.Now)
		if o.Wait {
			results = refresh.Wait(ctx, results, o.Observer, o.Rollouts, refresh.WaitOptions{Timeout: max(deadline.Sub(o.Now()), time.Millisecond), Now: o.Now, Concurrency: o.Verify.Concurrency})
		}
		done <- results
	}()
	return rest, done
}

// verifyPods observes the uses of the pods in need (by refresh.PodKey) and
// returns every item, the others without a state, and the pods left
// unobserved.
func verifyPods(ctx context.Context, items []inspect.Item, need map[string]bool, snap *inspect.Snapshot, ex inspect.Executor, vo inspect.VerifyOptions) ([]inspect.Item, map[string]bool) {
	var picked []inspect.Item
	var at []int
	notObserved := map[string]bool{}
	for i, it := range items {
		k := refresh.PodKey(it.Object.Namespace, it.Pod.Name)
		if need[k] {
			picked, at = append(picked, it), append(at, i)
		} else if it.Pod.Name != "" {
			notObserved[k] = true
		}
	}
	if len(picked) > 0 {
		for j, it := range inspect.Verify(ctx, picked, snap, ex, vo) {
			items[at[j]] = it
		}
	}
	return items, notObserved
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

// loadWorkloads GETs each Deployment, StatefulSet and DaemonSet that owns a
// consumer: one GET per workload, not per pod.
func loadWorkloads(ctx context.Context, c kubernetes.Interface, items []inspect.Item) (map[refresh.WorkloadKey]refresh.WorkloadInfo, error) {
	out := map[refresh.WorkloadKey]refresh.WorkloadInfo{}
	for _, it := range items {
		k := refresh.WorkloadKey{Kind: it.Workload.Kind, Namespace: it.Object.Namespace, Name: it.Workload.Name}
		if !refresh.Restartable[k.Kind] {
			continue
		}
		if _, done := out[k]; done {
			continue
		}
		info, err := getWorkload(ctx, c, k)
		if err != nil {
			return nil, err
		}
		out[k] = info
	}
	return out, nil
}

func getWorkload(ctx context.Context, c kubernetes.Interface, k refresh.WorkloadKey) (refresh.WorkloadInfo, error) {
	var info refresh.WorkloadInfo
	var err error
	var uid types.UID
	var selector *metav1.LabelSelector
	switch k.Kind {
	case "Deployment":
		d, e := c.AppsV1().Deployments(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err = e; e == nil {
			info = refresh.WorkloadInfo{Exists: true, Paused: d.Spec.Paused}
			uid, selector = d.UID, d.Spec.Selector
		}
	case "StatefulSet":
		s, e := c.AppsV1().StatefulSets(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err = e; e == nil {
			info = refresh.WorkloadInfo{Exists: true, OnDelete: s.Spec.UpdateStrategy.Type == "OnDelete"}
			if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
				info.Partition = *ru.Partition
			}
			uid, selector = s.UID, s.Spec.Selector
		}
	case "DaemonSet":
		d, e := c.AppsV1().DaemonSets(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err = e; e == nil {
			info = refresh.WorkloadInfo{Exists: true, OnDelete: d.Spec.UpdateStrategy.Type == "OnDelete"}
			uid, selector = d.UID, d.Spec.Selector
		}
	}
	if err != nil && apierrors.IsNotFound(err) {
		return refresh.WorkloadInfo{}, nil
	}
	if err != nil {
		return info, &apiCallError{Verb: "get", Resource: strings.ToLower(k.Kind) + "s", Namespace: k.Namespace, Name: k.Name, Err: err}
	}
	if info.Pods, err = workloadPods(ctx, c, k, uid, selector); err != nil {
		return info, err
	}
	return info, nil
}

// workloadPods lists the live pods a workload owns, by its selector (not the
// user's -l): the pods a rollout restart replaces. A Deployment owns its
// pods through ReplicaSets.
func workloadPods(ctx context.Context, c kubernetes.Interface, k refresh.WorkloadKey, uid types.UID, ls *metav1.LabelSelector) ([]refresh.WorkloadPod, error) {
	if ls == nil {
		return nil, nil // unknown: the plan falls back to the consumers' pods
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("%s/%s has an invalid selector: %w", strings.ToLower(k.Kind), k.Name, err)
	}
	owners := map[types.UID]bool{uid: true}
	if k.Kind == "Deployment" {
		owners = map[types.UID]bool{}
		rss, err := c.AppsV1().ReplicaSets(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, &apiCallError{Verb: "list", Resource: "replicasets", Namespace: k.Namespace, Err: err}
		}
		for _, rs := range rss.Items {
			if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == uid {
				owners[rs.UID] = true
			}
		}
	}
	pods, err := c.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, &apiCallError{Verb: "list", Resource: "pods", Namespace: k.Namespace, Err: err}
	}
	out := []refresh.WorkloadPod{}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || !owners[ref.UID] || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, refresh.WorkloadPod{Name: p.Name, UID: string(p.UID), Labels: p.Labels})
	}
	return out, nil
}

// podsByKey indexes the snapshot's pods by refresh.PodKey, as the planner
// reads them.
func podsByKey(snap *inspect.Snapshot) map[string]*corev1.Pod {
	pods := make(map[string]*corev1.Pod, len(snap.Pods))
	for i := range snap.Pods {
		p := &snap.Pods[i]
		pods[refresh.PodKey(p.Namespace, p.Name)] = p
	}
	return pods
}
