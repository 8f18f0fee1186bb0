// Package cmd holds the cobra commands of kubectl-cmsync, one file per verb,
// each with an Options struct and the Complete / Validate / Run pattern of
// kubectl's own commands.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// Exit codes (design.md, the contract).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitCheck   = 3
	ExitRefused = 4
)

// ExitError carries an exit code other than 1. A nil Err means the command
// already said everything it had to say.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks bad flags or arguments (exit 2).
func usageError(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// ExitCode maps an error returned by Execute to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// ErrorText is what the process prints on stderr for err returned by
// Execute: "error: " and the message, or nothing when the command already
// said everything (an ExitError without Err).
func ErrorText(err error) string {
	if err == nil || err.Error() == "" {
		return ""
	}
	if ee, ok := err.(*ExitError); ok && ee.Err == nil {
		return ""
	}
	return fmt.Sprintf("error: %v\n", err)
}

// NewCmdRoot builds `kubectl cmsync` with its subcommands.
func NewCmdRoot(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-cmsync",
		Short: "See which pods see a ConfigMap or Secret change, and make them see it now",
		Long: `kubectl cmsync maps every ConfigMap and Secret to the pods and workloads that
consume it, says for each use whether the kubelet will hot-update it (and when,
or why not), checks what each container really has, and refreshes consumers with
the least disruptive action.`,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl cmsync",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		// unknown subcommands reach RunE, which reports them as usage errors (exit 2)
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q for \"kubectl cmsync\"\nRun 'kubectl cmsync --help' for usage.", args[0])
			}
			return cmd.Help()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v\nSee '%s --help' for usage.", err, c.CommandPath())
	})
	flags.AddFlags(root.PersistentFlags())
	useContextList(root, flags)
	root.AddCommand(NewCmdStatus(flags, streams))
	root.AddCommand(NewCmdRefresh(flags, streams))
	root.AddCommand(NewCmdWatch(flags, streams))
	root.AddCommand(NewCmdController(flags, streams))
	root.AddCommand(NewCmdDiff(flags, streams))
	root.AddCommand(NewCmdLint(flags, streams))
	root.AddCommand(NewCmdDashboard(flags, streams))
	root.AddCommand(NewCmdMigrate(flags, streams))
	root.AddCommand(NewCmdShadow(flags, streams))
	root.AddCommand(NewCmdVersion(flags, streams))
	root.AddCommand(NewCmdCompletion(streams))
	registerCompletions(root, flags)
	return root
}

// options is what every command's Options implements: the kubectl pattern.
type options interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runOptions is the RunE of a command: Complete, Validate, Run.
func runOptions(o options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// Client-side rate limits. client-go's defaults (5 QPS, burst 10) would
// queue a refresh of 50 pods for seconds: one patch per pod, one exec per
// container; a burst of 300 sends the patches of 200 pods at once. The
// API server's priority and fairness still applies.
const (
	clientQPS   = 50
	clientBurst = 300
)

// apiClock is the API server's time, learnt from the Date header of its
// answers (every client newClient builds feeds it): the commands compare
// ages and deadlines with times the cluster wrote (managedFields, the
// refresh annotation, the kubelet's ..data directory) on the server's
// clock, not the client's.
var apiClock = inspect.NewServerClock(time.Now)

// newClient builds the REST config and clientset from the kubeconfig flags.
func newClient(flags *genericclioptions.ConfigFlags) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	timeout := cfg.Timeout
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newThrottleTransport(rt, timeout) })
	cfg.Wrap(apiClock.Wrap)
	cs, err := kubernetes.NewForConfig(protobufConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	return cfg, cs, nil
}

// protobufConfig is cfg speaking protobuf, which every built-in kind of the
// clientset supports: a LIST of 10,000 pods decodes several times faster
// and with less memory than JSON (hack/bench/status-scale.sh). The API
// server answers JSON where it has no protobuf.
func protobufConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c
}
