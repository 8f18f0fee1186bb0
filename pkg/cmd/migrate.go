package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/migrate"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

// MigrateReloaderOptions are the options of `migrate reloader`.
type MigrateReloaderOptions struct {
	Connection
	genericiooptions.IOStreams

	Deployment string
	Output     string

	// Cluster is what Run reads; Complete sets the client's.
	Cluster migrate.Cluster
}

// NewCmdMigrate builds `kubectl cmsync migrate` and its subcommands.
func NewCmdMigrate(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Map another config reloader's settings onto cmsync's controller",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdMigrateReloader(flags, streams))
	return cmd
}

// NewCmdMigrateReloader builds `kubectl cmsync migrate reloader`.
func NewCmdMigrateReloader(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MigrateReloaderOptions{Connection: newConnection(flags), IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "reloader [-n NAMESPACE] [--deployment NAMESPACE/NAME] [-o values|flags|json]",
		Short: "Read the Stakater Reloader that runs in the cluster and print cmsync's equivalent",
		Long: `Finds the Reloader Deployment (by its image or labels, or --deployment), reads its
args and env, and prints the kubectl-cmsync chart's values (-o values, the default) or the
controller's flags (-o flags) on stdout; on stderr, the settings that map with a difference,
those cmsync does not support with what to do (the workloads that carry a custom annotation
name included), and every Reloader-annotated workload with what cmsync will do for it.
-o json prints all of it on stdout. It only reads. Exit 3 when something needs a person.`,
		Example: `  kubectl cmsync migrate reloader > values.yaml
  kubectl cmsync migrate reloader --deployment reloader/reloader-reloader -o flags`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&o.Deployment, "deployment", "", "Reloader's Deployment, NAMESPACE/NAME (default: found by its image or labels).")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "values", "Output format: values (the chart's values, YAML), flags (the controller's, one a line) or json (everything).")
	return cmd
}

// Complete implements options: -n, when given, narrows the workloads.
func (o *MigrateReloaderOptions) Complete(_ []string) error {
	if ns := o.ConfigFlags.Namespace; ns != nil {
		o.Namespace = *ns
	}
	if o.Cluster != nil {
		return nil
	}
	cfg, client, err := newClient(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.RESTConfig, o.Client, o.Cluster = cfg, client, migrate.ClientCluster{Client: client, Dynamic: dynamic.New(client.Discovery().RESTClient())}
	return nil
}

// Validate implements options.
func (o *MigrateReloaderOptions) Validate() error {
	switch o.Output {
	case "values", "flags", "json":
	default:
		return usageError("invalid -o %q: must be one of values, flags, json", o.Output)
	}
	if o.Deployment != "" {
		if ns, n, ok := strings.Cut(o.Deployment, "/"); !ok || ns == "" || n == "" || strings.Contains(n, "/") {
			return usageError("invalid --deployment %q: use NAMESPACE/NAME, e.g. --deployment reloader/reloader-reloader", o.Deployment)
		}
	}
	return nil
}

// Run implements options.
func (o *MigrateReloaderOptions) Run(ctx context.Context) error {
	r, err := migrate.Build(ctx, o.Cluster, migrate.Options{Deployment: o.Deployment, Namespace: o.Namespace})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("deployment %q not found: check --deployment NAMESPACE/NAME, or leave it out to find Reloader by its image and labels", o.Deployment)
		}
		return explainAPIError(err, o.server(), o.Namespace)
	}
	if err := o.print(r); err != nil {
		return err
	}
	if r.NeedsPerson() {
		return &ExitError{Code: ExitCheck}
	}
	return nil
}

func (o *MigrateReloaderOptions) print(r migrate.Report) error {
	switch o.Output {
	case "json":
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "flags":
		fmt.Fprintln(o.Out, strings.Join(r.Flags, "\n"))
	default:
		y, err := r.Values.YAML()
		if err != nil {
			return err
		}
		o.Out.Write(y)
	}
	render.MigrateReport(o.ErrOut, r)
	return nil
}
