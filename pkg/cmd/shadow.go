package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

var shadowReportExample = templates.Examples(`
		# What cmsync would have done differently from Reloader, in this namespace, over the last day
		kubectl cmsync shadow report

		# Every namespace, the last week, as JSON
		kubectl cmsync shadow report -A --since 168h -o json`)

// NewCmdShadow builds `kubectl cmsync shadow` and its report.
func NewCmdShadow(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{Use: "shadow", Short: "What a --shadow controller recorded: cmsync's decisions beside a peer's restarts"}
	cmd.AddCommand(NewCmdShadowReport(flags, streams))
	return cmd
}

// ShadowReportOptions holds the flags of `kubectl cmsync shadow report`.
type ShadowReportOptions struct {
	Connection
	genericiooptions.IOStreams
	AllNamespaces   bool
	Since           time.Duration
	Output          string
	RecordNamespace string
	RecordName      string
}

// NewCmdShadowReport builds `kubectl cmsync shadow report`.
func NewCmdShadowReport(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ShadowReportOptions{Connection: newConnection(flags), IOStreams: streams, Since: 24 * time.Hour, RecordNamespace: "kubectl-cmsync", RecordName: shadow.DefaultRecordName}
	cmd := &cobra.Command{
		Use:     "report [-n NAMESPACE | -A] [--since 24h] [-o table|json|yaml]",
		Short:   "One row per change: the peer's restarts, cmsync's decision, the pods each restarted and how they differ",
		Example: shadowReportExample,
		Args:    cobra.NoArgs,
		RunE:    runOptions(o),
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "The changes of every namespace.")
	fs.DurationVar(&o.Since, "since", o.Since, "Only the changes of this last period.")
	fs.StringVarP(&o.Output, "output", "o", "table", "Output format: table, json or yaml.")
	fs.StringVar(&o.RecordNamespace, "record-namespace", o.RecordNamespace, "The namespace of the record's ConfigMap (the controller's, or watch's --shadow-namespace).")
	fs.StringVar(&o.RecordName, "record", o.RecordName, "The name of the record's ConfigMap (--shadow-record).")
	return cmd
}

// Complete resolves the namespace and the client.
func (o *ShadowReportOptions) Complete(args []string) error {
	_, err := o.complete(o.AllNamespaces, args, o.Client == nil)
	return err
}

// Validate checks the flags.
func (o *ShadowReportOptions) Validate() error {
	if o.Since <= 0 {
		return usageError("--since must be positive, got %s", o.Since)
	}
	return validateOutput(o.Output, []string{"table", "json", "yaml"})
}

// Run reads the record and prints the report.
func (o *ShadowReportOptions) Run(ctx context.Context) error {
	store := shadow.ConfigMapStore{Client: o.Client, Namespace: o.RecordNamespace, Name: o.RecordName}
	rows, dropped, err := store.Read(ctx)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no shadow record: configmap/%s not found in namespace %s; run `kubectl cmsync controller --shadow` (or `watch --shadow`) first, or point --record-namespace at the controller's namespace (the chart's release namespace; deploy/controller: cmsync-system) and --record at the record", o.RecordName, o.RecordNamespace)
	}
	if err != nil {
		return explainAPIError(err, o.server(), o.RecordNamespace)
	}
	r := shadow.NewReport(rows, o.Namespace, o.Now().Add(-o.Since), dropped)
	switch o.Output {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	return r.PrintTable(o.Out)
}
