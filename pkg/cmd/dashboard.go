package cmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/internal/containerread"
	"github.com/kubectl-cmsync/kubectl-cmsync/internal/text"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/tui"
)

var (
	dashboardLong = templates.LongDesc(`
		An interactive, live view of every ConfigMap (and, with --secrets or the s key,
		Secret) that pods consume: how each is used, whether its consumers have the
		current data, and a refresh of the laggards from the keyboard.

		The data comes from watches (no polling). When a ConfigMap changes while the
		dashboard runs, its hot-updating consumers are marked pending with the delay the
		kubelet is expected to take and are verified by exec until they have the change,
		showing how long the kubelet took. v verifies now, d shows the diff of one
		consumer (as kubectl cmsync diff), r shows the plan of kubectl cmsync refresh
		and applies it once confirmed.

		Arguments narrow it as they narrow status: ConfigMaps and Secrets by name,
		and workloads (deploy/web, sts/db...) whose pods' uses are shown. c switches
		to the next context of the kubeconfig, C to one typed by name.`)

	dashboardExample = templates.Examples(`
		# The current namespace
		kubectl cmsync dashboard

		# Every namespace, Secrets included
		kubectl cmsync ui -A --secrets

		# What one Deployment reads
		kubectl cmsync dashboard deploy/web -n shop`)
)

// DashboardOptions holds the flags and state of `kubectl cmsync dashboard`.
type DashboardOptions struct {
	Connection
	genericiooptions.IOStreams

	Selection
	Timeout time.Duration
	Verify  VerifyFlags
	RestartFlags

	// Set by Complete: the kubeconfig's context and all its contexts, the
	// objects and workloads the arguments name.
	Context   string
	Contexts  []string
	Names     []inspect.ObjectKey
	Workloads []inspect.WorkloadKey
	Executor  containerread.Executor
	// Access and Patcher replace the client's (tests); nil: the client's.
	Access  refresh.AccessReviewer
	Patcher refresh.Patcher
	// ProgramOptions are added to the Bubble Tea program's (tests).
	ProgramOptions []tea.ProgramOption
	// Templates reads the named workloads (nil: the client); tests
	// replace it.
	Templates inspect.TemplateReader
	// ConnectContext sets the client and executor of c, the options of
	// another context (c.Context); nil: from the kubeconfig. Tests
	// replace it.
	ConnectContext func(c *DashboardOptions) error

	// the contexts switched to, each connected once (dashboard_contexts.go)
	switched contextConnections
}

// NewDashboardOptions returns options with defaults.
func NewDashboardOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *DashboardOptions {
	o := &DashboardOptions{Connection: newConnection(flags), IOStreams: streams, Timeout: 5 * time.Minute, RestartFlags: defaultRestartFlags()}
	o.Verify.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError), false)
	return o
}

// NewCmdDashboard builds `kubectl cmsync dashboard` (alias ui).
func NewCmdDashboard(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewDashboardOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "dashboard [NAME | configmap/NAME | secret/NAME | WORKLOAD/NAME ...] [flags]",
		Aliases:               []string{"ui"},
		DisableFlagsInUseLine: true,
		Short:                 "Watch ConfigMap and Secret changes reach every pod, live, and refresh the laggards",
		Long:                  dashboardLong,
		Example:               dashboardExample,
		RunE:                  runOptions(o),
	}
	fs := cmd.Flags()
	addSelectionFlags(fs, &o.Selection)
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long a refresh waits for its consumers to be current.")
	o.RestartFlags.addFlags(fs, true)
	o.Verify.AddFlags(cmd.Flags(), false)
	return cmd
}

// Complete resolves the namespace, the arguments, the contexts and the
// client.
func (o *DashboardOptions) Complete(args []string) error {
	t, err := o.completeTargets(o.AllNamespaces, args, o.Client == nil)
	if err != nil {
		return err
	}
	o.Names, o.Workloads = t.Objects, t.Workloads
	if raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig(); err == nil {
		o.Context, o.Contexts = raw.CurrentContext, contextNames(raw)
		if o.ConfigFlags.Context != nil && *o.ConfigFlags.Context != "" {
			o.Context = *o.ConfigFlags.Context
		}
	}
	if o.Executor == nil {
		var err error
		if o.Executor, err = o.Verify.executor(o.RESTConfig); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the flags.
func (o *DashboardOptions) Validate() error {
	if o.Timeout <= 0 {
		return usageError("--timeout must be positive, got %s", o.Timeout)
	}
	if err := o.validateSelector(); err != nil {
		return err
	}
	if err := o.validateTargets(Targets{Objects: o.Names, Workloads: o.Workloads}); err != nil {
		return err
	}
	if err := o.RestartFlags.validate(); err != nil {
		return err
	}
	if !isTerminal(o.In) || !isTerminal(o.Out) {
		if len(o.ProgramOptions) == 0 {
			return errors.New("the dashboard needs a terminal (stdin and stdout); for scripts use 'kubectl cmsync status --verify -o json'")
		}
	}
	return o.Verify.Validate()
}

// dashboardMemoryLimit is the Go runtime's soft memory limit for the
// dashboard (GOMEMLIMIT overrides it).
const dashboardMemoryLimit = 100 << 20

// Run runs the dashboard until q or ctrl+c.
func (o *DashboardOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	defer o.Verify.Close(o.ErrOut) // the node reader's pods, kept while the dashboard is open
	defer o.switched.close(o.ErrOut)
	// a workload that does not exist is an error before the screen opens
	tuiOpts, err := o.TUIOptions(ctx)
	if err != nil {
		return err
	}
	// client-go logs reflector errors through klog, and main prints the API
	// server's warnings on stderr: on a full-screen program they would tear
	// the screen. The status line shows the errors.
	klog.SetLogger(logr.Discard())
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	// A soft memory limit: the informer caches are long-lived, every
	// snapshot is short-lived garbage; collect it before the heap doubles.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(dashboardMemoryLimit)
	}
	m := tui.New(tuiOpts)
	opts := append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out)}, o.ProgramOptions...)
	if _, err := tea.NewProgram(m, opts...).Run(); err != nil && !errors.Is(err, tea.ErrInterrupted) {
		return fmt.Errorf("dashboard: %w", err)
	}
	if quit, targets := m.Interrupted(); quit {
		return fmt.Errorf("dashboard: quit while a refresh was being applied: some of %s may have been changed and the rest were not; run kubectl cmsync refresh on the same objects to see where they are and finish the job (it changes nothing that is already current)",
			strings.Join(targets, ", "))
	}
	return nil
}

// TUIOptions are the dashboard model's options over these flags, the
// workloads the arguments name read (one GET each).
func (o *DashboardOptions) TUIOptions(ctx context.Context) (tui.Options, error) {
	selected, err := o.workloads(ctx, o.Templates, o.Workloads)
	if err != nil {
		return tui.Options{}, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	// a workload's uses are of ConfigMaps and Secrets alike, as in status
	secrets := o.Secrets || len(selected) > 0 || inspect.NamesSecret(o.Names)
	return tui.Options{
		Connection: o.tuiConnection(key),
		Scope: tui.Scope{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: secrets, IncludeSystem: o.IncludeSystem,
			Names: o.Names, Workloads: selected},
		Contexts: o.Contexts, Switch: o.switchContext(key), Now: o.Now, Timeout: o.Timeout,
	}, nil
}

// tuiConnection is the dashboard's side of o's context: its watches and
// its actions over o's client.
func (o *DashboardOptions) tuiConnection(hmacKey []byte) tui.Connection {
	return tui.Connection{Context: o.Context, Server: o.host(),
		NewFeed: func(s tui.Scope) *tui.Feed { return tui.NewFeed(o.Client, s, o.Now) },
		Actions: &dashboardActions{o: o, hmacKey: hmacKey}}
}

// dashboardActions are the dashboard's actions, made of the code of
// status --verify, diff and refresh.
type dashboardActions struct {
	o       *DashboardOptions
	hmacKey []byte
}

func (a *dashboardActions) verifyOptions() inspect.VerifyOptions {
	vo := a.o.Verify.Options(nil)
	vo.Now = a.o.Now
	return vo
}

// Verify implements tui.Actions.
func (a *dashboardActions) Verify(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use) []inspect.Use {
	// the output edge, as in status: reasons derived from Secret data are
	// redacted before they reach the screen
	return inspect.NewRedactor(snap).Items(inspect.Verify(ctx, items, snap, a.o.Executor, a.verifyOptions()))
}

// Diff implements tui.Actions with the renderer of `kubectl cmsync diff`.
func (a *dashboardActions) Diff(ctx context.Context, snap *inspect.Snapshot, items []inspect.Use) (string, error) {
	results := inspect.VerifyUses(ctx, items, snap, a.o.Executor, a.verifyOptions())
	var out bytes.Buffer
	r := diffRenderer{Out: &out, ErrOut: &out, HMACKey: a.hmacKey, Redact: inspect.NewRedactor(snap)}
	if _, err := r.render(results, ""); err != nil {
		return "", err
	}
	// file contents come from the cluster and the container: their control
	// characters are escaped line by line (an escape sequence in a
	// ConfigMap value must not reach the terminal under the dashboard)
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		lines[i] = screenLine(l)
	}
	return strings.Join(lines, "\n"), nil
}

// screenLine makes one line of a file fit the dashboard's screen: the \r
// of a CRLF dropped, tabs expanded to the next multiple of 8 columns, every
// other control character escaped (see printable).
func screenLine(l string) string {
	l = strings.TrimSuffix(l, "\r")
	if strings.Contains(l, "\t") {
		var b strings.Builder
		col := 0
		for _, r := range l {
			if r == '\t' {
				n := 8 - col%8
				b.WriteString(strings.Repeat(" ", n))
				col += n
				continue
			}
			b.WriteRune(r)
			col++
		}
		l = b.String()
	}
	return text.Printable(l)
}

// refresher is the refresh engine of `refresh`, with --strategy auto and
// no --yes: the dashboard asks before anything restarts.
func (a *dashboardActions) refresher() *refresh.Refresher {
	o := a.o
	vo := a.verifyOptions()
	cluster := orClient(refresh.Cluster{Access: o.Access, Patcher: o.Patcher}, refresh.ClientCluster(o.Client, o.Executor, vo, o.Secrets, o.Selector))
	return &refresh.Refresher{
		Config: refresh.Config{Strategy: refresh.StrategyAuto, RestartVia: refresh.RestartVia(o.RestartVia), MaxRestarts: o.MaxRestarts,
			MaxUnavailable: o.MaxUnavailable, DryRun: refresh.DryRunNone, Selector: o.Selector, Wait: true, Timeout: o.Timeout,
			Concurrency: o.Verify.Concurrency, Verify: vo, Now: o.Now},
		Cluster: cluster,
	}
}

// Plan implements tui.Actions with the refresh engine of `refresh`: the
// same observation, plan and pre-checks (--max-restarts, permissions, -l),
// refused before anything is changed.
func (a *dashboardActions) Plan(ctx context.Context, snap *inspect.Snapshot, keys []inspect.ObjectKey) (tui.Plan, error) {
	// Secrets as the dashboard shows them now (`s` toggles them)
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: keys, Secrets: a.o.Secrets || snap.SecretsListed, IncludeSystem: a.o.IncludeSystem})
	if err != nil {
		return tui.Plan{}, err
	}
	planned, err := a.refresher().Plan(ctx, snap, items)
	var beyond *refresh.BeyondSelectorError
	var denied *refresh.PermissionError
	switch {
	case errors.As(err, &beyond):
		// as refresh refuses it without --yes, even on a terminal: one key
		// must not roll pods the user's -l left out
		return tui.Plan{}, beyondSelectorError(a.o.Selector, beyond.Beyond, "Run kubectl cmsync refresh with --yes to restart them anyway")
	case errors.As(err, &denied):
		return tui.Plan{}, fmt.Errorf("%w (the ClusterRole %s of deploy/rbac.yaml grants what refresh needs)", err, rbac.RoleRefresh)
	case err != nil:
		return tui.Plan{}, err
	}
	var table bytes.Buffer
	if err := printPlanTable(&table, planned.Actions, false); err != nil {
		return tui.Plan{}, err
	}
	return tui.Plan{Plan: planned, Keys: keys, Text: table.String()}, nil
}

// Apply implements tui.Actions: the patches or evictions and the wait of
// `refresh`, which verifies what the plan changed.
func (a *dashboardActions) Apply(ctx context.Context, plan tui.Plan, progress func(refresh.Progress)) []refresh.Result {
	return a.refresher().Apply(ctx, plan.Plan, progress)
}
