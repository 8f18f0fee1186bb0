package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/controller"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

const uninstallLong = `Remove what the controller keeps in the cluster besides its manifests:
the records (kubectl-cmsync.io/applied-digest) on the Deployments,
StatefulSets, DaemonSets, Argo Rollouts and pods of -n (or -A), the refresh annotation on
pods (removing it restarts nothing), and, with -A, the key Secret with its
watermark and the Lease. kubectl.kubernetes.io/restartedAt stays on the templates: it is
kubectl's, and removing it would roll every workload once more.

Stop the controller first (kubectl delete -k deploy/controller, or scale it
to zero), or it writes them again. Each change is printed as it is made; a
run that fails part way says what it changed, and running it again finishes
it.`

const uninstallExample = `  # What would be removed in every namespace (server dry run)
  kubectl cmsync controller uninstall -A --dry-run

  # Remove it all, the controller having been installed in cmsync-system
  kubectl delete -k deploy/controller && kubectl cmsync controller uninstall -A`

// UninstallOptions holds the flags of `kubectl cmsync controller uninstall`.
type UninstallOptions struct {
	Connection
	genericiooptions.IOStreams
	AllNamespaces                      bool
	KeyNamespace, KeySecret, LeaseName string
	DryRun                             bool
}

// NewCmdUninstall builds `kubectl cmsync controller uninstall`.
func NewCmdUninstall(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UninstallOptions{Connection: newConnection(flags), IOStreams: streams, KeyNamespace: "cmsync-system",
		KeySecret: "kubectl-cmsync-controller-key", LeaseName: "kubectl-cmsync-controller"}
	cmd := &cobra.Command{
		Use:                   "uninstall [-n NS | -A] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove the controller's records, key Secret and Lease",
		Long:                  uninstallLong,
		Example:               uninstallExample,
		Args:                  cobra.NoArgs,
		RunE:                  runOptions(o),
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Remove the records in all namespaces.")
	fs.StringVar(&o.KeyNamespace, "key-namespace", o.KeyNamespace, "The namespace of the controller's Lease and key Secret.")
	fs.StringVar(&o.KeySecret, "key-secret", o.KeySecret, "The key Secret to delete.")
	fs.StringVar(&o.LeaseName, "lease-name", o.LeaseName, "The Lease to delete.")
	fs.BoolVar(&o.DryRun, "dry-run", false, "Send every change as a server dry run: print what would be removed, change nothing.")
	return cmd
}

// Complete resolves the namespace and connects.
func (o *UninstallOptions) Complete(args []string) error {
	_, err := o.complete(o.AllNamespaces, args, true)
	return err
}

// Validate checks the names.
func (o *UninstallOptions) Validate() error {
	for _, v := range []struct{ flag, value string }{{"--key-namespace", o.KeyNamespace}, {"--key-secret", o.KeySecret}, {"--lease-name", o.LeaseName}} {
		if v.value == "" {
			return usageError("%s must not be empty", v.flag)
		}
	}
	return nil
}

// Run removes them, printing each change.
func (o *UninstallOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	suffix := ""
	if o.DryRun {
		suffix = " (server dry run)"
	}
	rollouts := func(ns string) dynamic.ResourceInterface { return refresh.RolloutsOf(o.Client, ns) }
	u := &controller.Uninstall{Client: o.Client, Rollouts: rollouts, Namespace: o.Namespace, KeyNamespace: o.KeyNamespace, KeySecret: o.KeySecret,
		LeaseName: o.LeaseName, DryRun: o.DryRun, Done: func(what string) { fmt.Fprintln(o.Out, what+suffix) }}
	n, err := u.Run(ctx)
	if err != nil {
		return explainAPIError(err, o.server(), o.Namespace)
	}
	fmt.Fprintf(o.Out, "%d objects changed%s\n", n, suffix)
	return nil
}
