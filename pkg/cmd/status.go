package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

var (
	statusLong = templates.LongDesc(`
		Show every pod and container that consumes a ConfigMap (or, with --secrets, a
		Secret), how it consumes it (volume, items, projected, subPath, subPathExpr, env,
		envFrom) and whether the kubelet will hot-update that use: when, or why not.

		Whole-volume and projected mounts update by themselves within the kubelet's
		resync period plus its cache delay; subPath mounts and environment variables
		never update until the container restarts; immutable objects never change.

		With no NAME, every ConfigMap in scope that has consumers is shown.`)

	statusExample = templates.Examples(`
		# Consumers of every ConfigMap in the current namespace
		kubectl cmsync status

		# One ConfigMap, and one Secret
		kubectl cmsync status app-config secret/db-credentials

		# Everything in the cluster, with node, delay and reason columns
		kubectl cmsync status -A --secrets -o wide

		# Fail (exit 3) when a consumer is missing its object or will break on change
		kubectl cmsync status --check`)
)

// Output formats of status.
var statusFormats = []string{"", "wide", "json", "yaml"}

// StatusOptions holds the flags and state of `kubectl cmsync status`.
type StatusOptions struct {
	Connection
	genericiooptions.IOStreams

	Selection
	Output        string
	GroupBy       string
	Unused        bool
	NoHeaders     bool
	Check         bool
	KubeletConfig bool
	Verify        VerifyFlags
	Contexts      ContextFlags

	Args []string

	// Set by Complete: the contexts read, when more than one.
	contextNames []string

	// Set by Complete: the objects and workloads the arguments name.
	Names     []inspect.ObjectKey
	Workloads []inspect.WorkloadKey

	// LoadSnapshot reads the cluster; tests replace it.
	LoadSnapshot func(ctx context.Context, o inspect.LoadOptions) (*inspect.Snapshot, error)
	// Templates reads the named workloads (nil: the client); tests
	// replace it.
	Templates inspect.TemplateReader
}

// NewStatusOptions returns options with defaults.
func NewStatusOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *StatusOptions {
	o := &StatusOptions{Connection: newConnection(flags), IOStreams: streams}
	// The verify flags' defaults, from the one place that declares them.
	o.Verify.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), true)
	return o
}

// NewCmdStatus builds `kubectl cmsync status`.
func NewCmdStatus(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "status [NAME | configmap/NAME | secret/NAME | WORKLOAD/NAME ...] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show who consumes each ConfigMap and Secret, how, and whether it will hot-update",
		Long:                  statusLong,
		Example:               statusExample,
		RunE:                  runOptions(o),
	}
	fs := cmd.Flags()
	addSelectionFlags(fs, &o.Selection)
	fs.StringVarP(&o.Output, "output", "o", "", "Output format: one of (wide, json, yaml).")
	fs.StringVar(&o.GroupBy, "group-by", groupByPod, "Table rows: pod (one row per use) or workload (one row per object, workload, container and mode, with N/M pods).")
	fs.BoolVar(&o.Unused, "unused", false, "Also show ConfigMaps (and Secrets) that no pod consumes.")
	fs.BoolVar(&o.NoHeaders, "no-headers", false, "Do not print table headers.")
	fs.BoolVar(&o.Check, "check", false, "Exit 3 when a required object or key is missing or a subPath breaks on change (with --verify also when a consumer is pending, stale, broken or unverifiable).")
	fs.BoolVar(&o.KubeletConfig, "kubelet-config", false, "Read each node's kubelet configuration (/configz) for the real sync period and strategy; needs get on nodes/proxy.")
	o.Verify.AddFlags(fs, true)
	o.Contexts.addFlags(cmd)
	return cmd
}

// Complete resolves the namespace, the names and the client; with several
// contexts only their names, each context being completed when it is read.
func (o *StatusOptions) Complete(args []string) error {
	o.Args = args
	names, err := o.Contexts.contexts(o.ConfigFlags)
	if err != nil {
		return err
	}
	if o.contextNames = names; len(names) > 0 {
		t, err := parseTargets(args, "")
		o.Names, o.Workloads = t.Objects, t.Workloads
		return err
	}
	t, err := o.completeTargets(o.AllNamespaces, args, o.LoadSnapshot == nil)
	if err != nil {
		return err
	}
	o.Names, o.Workloads = t.Objects, t.Workloads
	if o.LoadSnapshot == nil {
		mc, err := metadata.NewForConfig(o.RESTConfig)
		if err != nil {
			return err
		}
		o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
			// status reads: owners as metadata only, LISTs from the watch
			// cache, pods streamed (docs/performance.md)
			lo.Metadata, lo.FromCache = mc, true
			// pods decoded one at a time from the response
			lo.PodREST = o.Client.CoreV1().RESTClient()
			return inspect.Load(ctx, o.Client, lo)
		}
	}
	return nil
}

// Validate checks flags and arguments.
func (o *StatusOptions) Validate() error {
	if err := validateOutput(o.Output, statusFormats); err != nil {
		return err
	}
	switch o.GroupBy {
	case "", groupByPod:
	case groupByWorkload:
		if o.Output == "json" || o.Output == "yaml" {
			return usageError("--group-by=workload groups the table; -o %s always has one item per use (group them with jq), drop one of the two", o.Output)
		}
	default:
		return usageError("invalid --group-by %q: use pod or workload", o.GroupBy)
	}
	if err := o.validateTargets(Targets{Objects: o.Names, Workloads: o.Workloads}); err != nil {
		return err
	}
	return o.Verify.Validate()
}

// The Go runtime's soft memory limits for status (GOMEMLIMIT overrides):
// with the collector's default (collect when the heap doubles) a process
// whose live heap peaks at L grows to about 2L. statusMemoryLimit holds
// status with the pods in memory (--verify, --kubelet-config; about 120
// MiB live at 10,000 pods) near 210 MiB; statusStreamMemoryLimit holds
// status whose pods stream into the report (about 50-75 MiB live at 10,000
// pods) near 135-145 MiB, in the same wall time (docs/performance.md).
const (
	statusMemoryLimit       = 150 << 20
	statusStreamMemoryLimit = 90 << 20
)

// statusResult is what status found in one context, before it is printed.
type statusResult struct {
	Items []inspect.Use
	Idle  []inspect.SelectedWorkload
	// WantSecrets: Secrets were asked for (the object column is OBJECT).
	WantSecrets bool
}

// Run reads the cluster (each context, with several), prints the report
// and applies --check.
func (o *StatusOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	setStatusMemoryLimit(!o.Verify.Enabled && !o.KubeletConfig, max(1, min(len(o.contextNames), o.Contexts.Concurrency)))
	if len(o.contextNames) > 0 {
		return o.runContexts(ctx)
	}
	r, err := o.collect(ctx)
	if err != nil {
		return err
	}
	printWarnings(o.ErrOut, inspect.GroupWarnings(r.Items))
	if err := printReport(o.Out, r.Items, o.printOptions(r.WantSecrets, nil)); err != nil {
		return err
	}
	o.noteEmpty(r)
	return o.check(r.Items)
}

// setStatusMemoryLimit sets the Go runtime's soft memory limit of status
// (GOMEMLIMIT overrides), for n contexts read at once.
func setStatusMemoryLimit(stream bool, n int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(statusMemoryLimit)
	if stream {
		limit = statusStreamMemoryLimit
	}
	debug.SetMemoryLimit(limit * int64(n))
}

func (o *StatusOptions) printOptions(wantSecrets bool, contexts []string) printOptions {
	return printOptions{Format: o.Output, AllNamespaces: o.AllNamespaces, NoHeaders: o.NoHeaders, Verify: o.Verify.Enabled,
		Secrets: wantSecrets, Now: o.Now(), GroupBy: o.GroupBy, Contexts: contexts}
}

// noteEmpty says which selected workloads run no pod, and that nothing
// consumes what was asked for.
func (o *StatusOptions) noteEmpty(r statusResult) {
	noteIdle(o.ErrOut, r.Idle, r.Items)
	if len(r.Items) == 0 && len(r.Idle) == 0 && (o.Output == "" || o.Output == "wide") {
		fmt.Fprintln(o.ErrOut, noConsumersMessage(o.Namespace, o.Secrets, o.Workloads))
	}
}

// check is --check: the failures on stderr, and exit 3.
func (o *StatusOptions) check(items []inspect.Use) error {
	if !o.Check {
		return nil
	}
	failed := CheckFailures(items, o.Verify.Enabled)
	if len(failed) == 0 {
		return nil
	}
	fmt.Fprintf(o.ErrOut, "check failed: %d of %d uses need attention:\n", len(failed), len(items))
	for _, f := range failed {
		fmt.Fprintf(o.ErrOut, "  %s\n", f)
	}
	return &ExitError{Code: ExitCheck}
}

// collect loads the snapshot and builds the report's uses, verified with
// --verify and redacted.
func (o *StatusOptions) collect(ctx context.Context) (statusResult, error) {
	stream := !o.Verify.Enabled && !o.KubeletConfig
	versionWarning := serverVersionWarning(ctx, o.Client)
	selected, err := o.workloads(ctx, o.Templates, o.Workloads)
	if err != nil {
		return statusResult{}, err
	}
	// a workload's uses are of ConfigMaps and Secrets alike
	secrets := o.Secrets || len(selected) > 0
	wantSecrets := secrets || inspect.NamesSecret(o.Names)
	lo := inspect.LoadOptions{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: wantSecrets, Nodes: true,
		Workloads: len(selected) == 0 && (o.Unused || len(o.Names) > 0)}
	bo := inspect.BuildOptions{Names: o.Names, Secrets: secrets, IncludeSystem: o.IncludeSystem, Unused: o.Unused, Workloads: selected}
	var builder *inspect.Builder
	if stream {
		// Nothing after the report reads the pods (--verify execs into
		// them, --kubelet-config reads their nodes first): each goes into
		// the report as it streams in and is dropped, so that the pods are
		// never all in memory (docs/performance.md).
		lo.PodSink = func(s *inspect.Snapshot) func(*corev1.Pod) error {
			bo.Secrets = secrets && s.SecretsListed
			builder = inspect.NewBuilder(s, bo)
			return func(p *corev1.Pod) error {
				builder.Add(p)
				return nil
			}
		}
	}
	snap, err := o.loadSnapshot(ctx, o.LoadSnapshot, lo, inspect.NamesSecret(o.Names), o.ErrOut)
	if err != nil {
		return statusResult{}, err
	}
	if w := versionWarning(); w != "" {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	if o.KubeletConfig && o.Client != nil {
		readKubeletConfigs(ctx, o.Client, snap, o.ErrOut)
	}
	r := statusResult{WantSecrets: wantSecrets}
	var redactor *inspect.Redactor
	if builder != nil {
		r.Items, err = builder.Items()
		r.Idle = builder.Idle()
		redactor = builder.Redactor()
	} else { // the pods are in the snapshot
		bo.Secrets = secrets && snap.SecretsListed
		r.Items, r.Idle, err = inspect.BuildSelected(snap, bo)
		redactor = inspect.NewRedactor(snap)
	}
	if err != nil {
		return statusResult{}, explainNotFound(err)
	}
	if o.Verify.Enabled {
		if r.Items, err = o.Verify.Run(ctx, o.RESTConfig, snap, r.Items, o.ErrOut); err != nil {
			return statusResult{}, err
		}
	}
	inspect.NoteRestartWindows(r.Items, o.Now())
	// The output edge: no text derived from Secret data goes further.
	redactor.Redact(r.Items)
	return r, nil
}

func noConsumersMessage(ns string, secrets bool, workloads []inspect.WorkloadKey) string {
	if len(workloads) > 0 {
		return fmt.Sprintf("The pods of %s read none of the selected ConfigMaps or Secrets in namespace %q.", workloadList(workloads), ns)
	}
	what := "ConfigMaps"
	if secrets {
		what = "ConfigMaps or Secrets"
	}
	if ns == "" {
		return fmt.Sprintf("No pods consume %s in any namespace (add --unused to list the unused ones).", what)
	}
	return fmt.Sprintf("No pods consume %s in namespace %q (add --unused to list the unused ones, or -A for all namespaces).", what, ns)
}

// CheckFailures lists the uses that fail --check, one line each.
func CheckFailures(items []inspect.Use, verified bool) []string {
	var out []string
	for _, it := range items {
		why := ""
		switch {
		case it.Verdict == inspect.VerdictMissing && !it.Optional:
			why = "missing"
		case it.Verdict == inspect.VerdictBreaksOnChange:
			why = "breaks-on-change"
		}
		if verified && why == "" {
			switch it.State {
			case inspect.StatePending, inspect.StateStale, inspect.StateBroken, inspect.StateUnverifiable:
				why = string(it.State)
			}
		}
		if why == "" {
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s pod/%s %s %s (namespace %s): %s: %s", strings.ToLower(it.Object.Kind), it.Object.Name, it.Pod.Name, it.ContainerName(), it.Mode, it.Object.Namespace, why, render.Reason(it)))
	}
	return out
}

func validateOutput(format string, allowed []string) error {
	for _, f := range allowed {
		if format == f {
			return nil
		}
	}
	var names []string
	for _, f := range allowed {
		if f != "" {
			names = append(names, f)
		}
	}
	return usageError("unable to match a printer suitable for the output format %q, allowed formats are: %s", format, strings.Join(names, ","))
}

// readKubeletConfigs fills snap.KubeletConfigs from each node's /configz
// (--kubelet-config). A node that cannot be read keeps the defaults, with a
// warning that says why and which defaults were assumed.
func readKubeletConfigs(ctx context.Context, c kubernetes.Interface, snap *inspect.Snapshot, warn io.Writer) {
	var nodes []string
	for _, p := range snap.Pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	configs, errs := inspect.ReadKubeletConfigs(ctx, inspect.ClientKubeletConfig{Client: c}, nodes)
	snap.KubeletConfigs = configs
	seen := map[string]bool{}
	for _, n := range nodes {
		err := errs[n]
		if err == nil || seen[n] {
			continue
		}
		seen[n] = true
		why := rootCause(err)
		if apierrors.IsForbidden(err) {
			why = "needs get on nodes/proxy: " + why
		}
		fmt.Fprintf(warn, "warning: cannot read the kubelet configuration of node %q (%s); assuming %s\n", n, why, inspect.KubeletDefaultsAssumed)
	}
}
