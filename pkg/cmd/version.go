package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/version"
)

var (
	versionLong = templates.LongDesc(`
		Print the version, git commit and build date of kubectl cmsync, and the version
		of the Kubernetes API server when one answers within a few seconds. An
		unreachable cluster is reported, never an error.`)

	versionExample = templates.Examples(`
		# Client and server versions
		kubectl cmsync version

		# Only the client, without contacting any cluster
		kubectl cmsync version --client

		# As JSON, for scripts
		kubectl cmsync version -o json`)
)

// serverVersionTimeout bounds the wait for the API server: `version` must
// answer promptly even when the kubeconfig points at a cluster that is down.
const serverVersionTimeout = 3 * time.Second

// VersionDocument is what `version -o json|yaml` prints; the shape of
// `kubectl version -o json` plus the reason when the server did not answer.
type VersionDocument struct {
	ClientVersion version.Info              `json:"clientVersion"`
	ServerVersion *apimachineryversion.Info `json:"serverVersion,omitempty"`
	ServerError   string                    `json:"serverError,omitempty"`
	// SupportedServers is the range of Kubernetes versions this client is
	// tested against; ServerWarning is set when the server is outside it.
	SupportedServers string `json:"supportedServers"`
	ServerWarning    string `json:"serverWarning,omitempty"`
}

// VersionOptions holds the flags and state of `kubectl cmsync version`.
type VersionOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Output     string
	ClientOnly bool
	Timeout    time.Duration

	// ServerVersion asks the API server for its version; set by Complete,
	// replaced in tests.
	ServerVersion func(ctx context.Context) (*apimachineryversion.Info, error)
}

// NewCmdVersion builds `kubectl cmsync version`.
func NewCmdVersion(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{ConfigFlags: flags, IOStreams: streams, Timeout: serverVersionTimeout}
	cmd := &cobra.Command{
		Use:                   "version [--client] [-o json|yaml]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the client and server version information",
		Long:                  versionLong,
		Example:               versionExample,
		Args:                  cobra.NoArgs,
		ValidArgsFunction:     cobra.NoFileCompletions,
		RunE:                  runOptions(o),
	}
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "Print the client version only; do not contact the cluster.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: one of (json, yaml).")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete sets up the call to the API server.
func (o *VersionOptions) Complete(args []string) error {
	if o.ServerVersion == nil {
		o.ServerVersion = o.askServer
	}
	return nil
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error {
	return validateOutput(o.Output, []string{"", "json", "yaml"})
}

// Run prints the versions. It fails only when it cannot write.
func (o *VersionOptions) Run(ctx context.Context) error {
	doc := VersionDocument{ClientVersion: version.Get(), SupportedServers: version.SupportedServers()}
	if !o.ClientOnly {
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		sv, err := o.ServerVersion(ctx)
		if err != nil {
			doc.ServerError = err.Error()
		} else {
			doc.ServerVersion = sv
			doc.ServerWarning = version.ServerWarning(sv.GitVersion)
		}
	}
	if doc.ServerWarning != "" {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", doc.ServerWarning)
	}
	if o.Output != "" {
		return printDocument(o.Out, doc, o.Output)
	}
	c := doc.ClientVersion
	_, err := fmt.Fprintf(o.Out, "Client Version: %s\nGit Commit: %s\nBuild Date: %s\nGo Version: %s\nPlatform: %s\nSupported Servers: %s\n",
		c.Version, c.GitCommit, c.BuildDate, c.GoVersion, c.Platform, doc.SupportedServers)
	if err != nil || o.ClientOnly {
		return err
	}
	if doc.ServerVersion != nil {
		_, err = fmt.Fprintf(o.Out, "Server Version: %s\n", doc.ServerVersion.GitVersion)
	} else {
		_, err = fmt.Fprintf(o.Out, "Server Version: unavailable (%s)\n", doc.ServerError)
	}
	return err
}

// askServer reads /version from the API server of the kubeconfig, giving up
// when ctx ends.
func (o *VersionOptions) askServer(ctx context.Context) (*apimachineryversion.Info, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster: %v", err)
	}
	cfg.Timeout = o.Timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	body, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, explainAPIError(err, cfg.Host, "")
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("the API server at %s sent an unreadable version: %v", cfg.Host, err)
	}
	return &info, nil
}

// serverVersionWarning asks the API server for its version at once, while
// the caller reads the cluster (one round trip fewer in series), and
// returns the wait for its answer: the warning when the server is outside
// the supported range, "" otherwise or when it did not answer (status
// never fails for that).
func serverVersionWarning(ctx context.Context, c kubernetes.Interface) func() string {
	if c == nil || c.Discovery().RESTClient() == nil {
		return func() string { return "" }
	}
	answer := make(chan string, 1)
	go func() {
		body, err := c.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
		var info apimachineryversion.Info
		if err != nil || json.Unmarshal(body, &info) != nil {
			answer <- ""
			return
		}
		answer <- version.ServerWarning(info.GitVersion)
	}()
	return func() string { return <-answer }
}
