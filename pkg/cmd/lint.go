package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/lint"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/rbac"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

var (
	lintLong = templates.LongDesc(`
		Read manifests the way kubectl apply -f does (files, directories, stdin,
		multi-document YAML, JSON, List kinds) and say, for every ConfigMap and Secret
		use of every pod template, what the kubelet will do with a change: the same
		uses and verdicts as status, with the workload in place of the pod.

		Findings: error for a subPath onto a directory of a ConfigMap or Secret volume
		(empty after the first change), for a required key missing from an object, and
		for a required object that neither the manifests nor (with --cluster) the live
		cluster holds; warning for an env, envFrom or subPath use of a mutable object
		whose workload carries no hash of it (Helm checksum annotation, kustomize name
		suffix, Reloader annotation), so that a change never reaches it, and for an
		object that is not in the manifests (without --cluster); info for hot-updating
		uses with their delay and for immutable objects.`)

	lintExample = templates.Examples(`
		# Lint a directory of manifests, recursively
		kubectl cmsync lint -f deploy/ -R

		# Lint a Helm chart or a kustomization, failing CI on errors and warnings
		helm template my-release ./chart | kubectl cmsync lint -f - --strict
		kustomize build overlays/prod | kubectl cmsync lint -f - --check

		# Confirm absent references against the live cluster
		kubectl cmsync lint -f app.yaml --cluster -n shop

		# ... against every cluster the manifests are deployed to
		kubectl cmsync lint -f app.yaml --cluster -n shop --context prod-eu,prod-us

		# GitHub Actions annotations on the changed lines
		kubectl cmsync lint -f deploy/ -R -o github --check`)
)

var lintFormats = []string{"", "table", "wide", "json", "yaml", "github"}

// LintOptions holds the flags and state of `kubectl cmsync lint`.
type LintOptions struct {
	Connection
	genericiooptions.IOStreams

	Filenames []string
	Recursive bool
	Output    string
	Check     bool
	Strict    bool
	Cluster   bool
	NoHeaders bool
	Contexts  ContextFlags

	// Set by Complete: the contexts asked (--cluster), when more than one.
	contextNames []string

	// Getter reads objects from the cluster (--cluster), set by Complete;
	// tests replace it.
	Getter lint.Getter
}

// NewLintOptions returns options with defaults.
func NewLintOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *LintOptions {
	return &LintOptions{Connection: newConnection(flags), IOStreams: streams}
}

// NewCmdLint builds `kubectl cmsync lint`.
func NewCmdLint(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewLintOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "lint -f FILENAME [-R] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Check manifests for ConfigMap and Secret uses that will not see a change",
		Long:                  lintLong,
		Example:               lintExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("lint takes no arguments (got %q): name the manifests with -f FILE|DIR|-\nSee 'kubectl cmsync lint --help' for usage.", args[0])
			}
			return nil
		},
		RunE: runOptions(o),
	}
	fs := cmd.Flags()
	fs.StringSliceVarP(&o.Filenames, "filename", "f", nil, "Manifests to read: a file, a directory, or - for stdin (repeatable).")
	fs.BoolVarP(&o.Recursive, "recursive", "R", false, "Read the directories given with -f recursively.")
	fs.StringVarP(&o.Output, "output", "o", "", "Output format: one of (table, wide, json, yaml, github).")
	fs.BoolVar(&o.Check, "check", false, "Exit 3 when there is an error finding.")
	fs.BoolVar(&o.Strict, "strict", false, "Exit 3 when there is an error or a warning finding (implies --check).")
	fs.BoolVar(&o.Cluster, "cluster", false, "Ask the live cluster about ConfigMaps and Secrets the manifests do not hold (get on configmaps, and secrets).")
	fs.BoolVar(&o.NoHeaders, "no-headers", false, "Do not print table headers.")
	o.Contexts.addFlags(cmd)
	return cmd
}

// Complete resolves the namespace of objects that name none and, with
// --cluster, the client; with several contexts only their names, each
// context being completed when it is asked.
func (o *LintOptions) Complete(args []string) error {
	names, err := o.Contexts.contexts(o.ConfigFlags)
	if err != nil {
		return err
	}
	if o.contextNames = names; len(names) > 0 {
		if !o.Cluster {
			return usageError("lint reads several contexts only with --cluster: without it no cluster is asked; add --cluster, or drop --context/--all-contexts")
		}
		o.Check = o.Check || o.Strict
		return nil
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("cannot read the namespace from the kubeconfig: %w", err)
	}
	o.Namespace = ns
	if o.Strict {
		o.Check = true
	}
	if o.Cluster && o.Getter == nil {
		if o.RESTConfig, o.Client, err = newClient(o.ConfigFlags); err != nil {
			return err
		}
		o.Getter = lint.ClientGetter{Client: o.Client}
	}
	return nil
}

// Validate checks flags.
func (o *LintOptions) Validate() error {
	if len(o.Filenames) == 0 {
		return usageError("must specify -f: a manifest file, a directory, or - for stdin\nSee 'kubectl cmsync lint --help' for usage.")
	}
	return validateOutput(o.Output, lintFormats)
}

// Run reads the manifests, lints them (in each context, with several),
// prints the findings and applies --check / --strict.
func (o *LintOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	files, err := lint.Files(o.Filenames, o.Recursive)
	if err != nil {
		return err
	}
	docs, err := lint.ReadFiles(files, o.In)
	if err != nil {
		return parseErrors(err)
	}
	if len(o.contextNames) > 0 {
		return o.runContexts(ctx, docs, len(files))
	}
	items, err := o.lint(ctx, docs)
	if err != nil {
		return err
	}
	if err := o.print(items); err != nil {
		return err
	}
	if len(items) == 0 {
		fmt.Fprintln(o.ErrOut, noLintUsesMessage(len(docs), len(files)))
	} else if o.tableOutput() {
		fmt.Fprintln(o.ErrOut, lintSummary(items, len(files), o.Output == "wide"))
	}
	return o.check(items)
}

// lint lints docs: the set in o's namespace and, with --cluster, what the
// cluster says about the references the manifests lack.
func (o *LintOptions) lint(ctx context.Context, docs []lint.Document) ([]lint.ManifestUse, error) {
	set := lint.NewSet()
	if err := set.Add(docs, o.Namespace); err != nil {
		return nil, parseErrors(err)
	}
	var lo lint.Options
	if o.Cluster {
		var err error
		if lo.Live, err = o.lookUp(ctx, set.Missing()); err != nil {
			return nil, err
		}
	}
	return lint.Lint(set, lo), nil
}

func (o *LintOptions) tableOutput() bool {
	return o.Output == "" || o.Output == "table" || o.Output == "wide"
}

func noLintUsesMessage(docs, files int) string {
	return fmt.Sprintf("No ConfigMap or Secret uses in %d objects of %s.", docs, render.Plural(files, "file"))
}

// check is --check / --strict: the failures on stderr, and exit 3.
func (o *LintOptions) check(items []lint.ManifestUse) error {
	if !o.Check {
		return nil
	}
	failed := lint.Failed(items, o.Strict)
	if len(failed) == 0 {
		return nil
	}
	what := render.Plural(len(failed), "error")
	if o.Strict {
		what = fmt.Sprintf("%d errors and warnings", len(failed))
		if len(failed) == 1 {
			what = "1 error or warning"
		}
	}
	fmt.Fprintf(o.ErrOut, "check failed: %s:\n", what)
	for _, it := range failed {
		fmt.Fprintf(o.ErrOut, "  %s: %s: %s: %s\n    hint: %s\n", it.Source, it.Finding.Severity, it.Finding.Code, it.Finding.Message, it.Finding.Hint)
	}
	return &ExitError{Code: ExitCheck}
}

// lookUp asks the cluster about the references the manifests lack. A
// Forbidden answer stays with the item (a warning that says which rule is
// missing); an unreachable or rejecting API server ends the run.
func (o *LintOptions) lookUp(ctx context.Context, keys []inspect.ObjectKey) (map[inspect.ObjectKey]lint.Lookup, error) {
	live := lint.LookUp(ctx, o.Getter, keys)
	for k, l := range live {
		if l.Err == nil {
			continue
		}
		resource := "configmaps"
		if k.Kind == inspect.KindSecret {
			resource = "secrets"
		}
		if apierrors.IsForbidden(l.Err) {
			l.Err = fmt.Errorf("forbidden; a Role with this rule grants it: %s", rbac.RoleRule("get", resource))
			live[k] = l
			continue
		}
		return nil, explainAPIError(&refresh.CallError{Verb: "get", Resource: resource, Namespace: k.Namespace, Name: k.Name, Err: l.Err}, o.server(), k.Namespace)
	}
	return live, nil
}

// parseErrors lists every manifest that cannot be read, one per line
// (exit 1).
func parseErrors(err error) error {
	var lines []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		lines = append(lines, e.Error())
	}
	walk(err)
	var pe *lint.ParseError
	if len(lines) == 1 && !errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("cannot read the manifests:\n  %s\nFix the manifests (kubectl apply -f would reject them too) and run lint again", strings.Join(lines, "\n  "))
}

func (o *LintOptions) print(items []lint.ManifestUse) error {
	switch o.Output {
	case "json", "yaml":
		return printDocument(o.Out, lint.NewReport(items), o.Output)
	case "github":
		return printGitHub(o.Out, items)
	}
	return printLintTable(o.Out, items, lintTableOptions{Wide: o.Output == "wide", NoHeaders: o.NoHeaders, Contexts: len(o.contextNames) > 0})
}

// lintTableOptions: the columns of lint's table.
type lintTableOptions struct {
	Wide, NoHeaders bool
	// Contexts: the items come from several contexts, so the first column
	// is CONTEXT.
	Contexts bool
}

func printLintTable(out io.Writer, items []lint.ManifestUse, o lintTableOptions) error {
	if len(items) == 0 {
		return nil
	}
	w := printers.GetNewTabWriter(out)
	head := []string{"FILE:LINE", "WORKLOAD", "CONTAINER", "OBJECT", "MODE", "PATH/KEYS", "HOT-UPDATE", "FINDING"}
	if o.Contexts {
		head = append([]string{"CONTEXT"}, head...)
	}
	if o.Wide {
		head = append(head, "NAMESPACE", "DELAY", "OPTIONAL", "MESSAGE", "HINT")
	}
	if !o.NoHeaders {
		fmt.Fprintln(w, strings.Join(head, "\t"))
	}
	for _, it := range items {
		row := []string{it.Source.String(), render.Workload(it.Use), render.Container(it.Use), lintObjectColumn(it.Use),
			render.Mode(it.Use), render.PathKeys(it.Use), string(it.Verdict), fmt.Sprintf("%s: %s", it.Finding.Severity, it.Finding.Code)}
		if o.Contexts {
			row = append([]string{it.Context}, row...)
		}
		if o.Wide {
			row = append(row, it.Object.Namespace, render.OrNone(inspect.FormatDelay(it.Delay)), render.YesNo(it.Optional), it.Finding.Message, render.OrNone(it.Finding.Hint))
		}
		fmt.Fprintln(w, render.Row(row...))
	}
	return w.Flush()
}

func lintObjectColumn(it inspect.Use) string {
	s := strings.ToLower(it.Object.Kind) + "/" + it.Object.Name
	if !it.Object.Exists {
		s += " (missing)"
	}
	return s
}

func lintSummary(items []lint.ManifestUse, files int, wide bool) string {
	s := lintCounts(items, files)
	if !wide {
		s += " (-o wide shows each message and hint)"
	}
	return s
}

// lintCounts is "U uses in F files: n errors, n warnings, n info".
func lintCounts(items []lint.ManifestUse, files int) string {
	c := lint.Counts(items)
	return fmt.Sprintf("%s in %s: %s, %s, %d info", render.Plural(len(items), "use"), render.Plural(files, "file"),
		render.Plural(c[lint.SeverityError], "error"), render.Plural(c[lint.SeverityWarning], "warning"), c[lint.SeverityInfo])
}

// printGitHub prints a GitHub Actions workflow command per error and
// warning (`::error file=F,line=L,title=T::message`). Info findings are
// left out: GitHub shows only the first few annotations of a step.
func printGitHub(out io.Writer, items []lint.ManifestUse) error {
	for _, it := range items {
		cmd := map[lint.Severity]string{lint.SeverityError: "error", lint.SeverityWarning: "warning"}[it.Finding.Severity]
		if cmd == "" {
			continue
		}
		msg := it.Finding.Message
		if it.Finding.Hint != "" {
			msg += "\nHint: " + it.Finding.Hint
		}
		props := fmt.Sprintf("file=%s,line=%d,", ghProperty(it.Source.File), it.Source.Line)
		if it.Source.File == lint.StdinName {
			props = ""
			msg = it.Source.String() + ": " + msg
		}
		title := fmt.Sprintf("cmsync lint: %s %s/%s", it.Finding.Code, strings.ToLower(it.Workload.Kind), it.Workload.Name)
		if it.Context != "" {
			title += " (context " + it.Context + ")"
		}
		if _, err := fmt.Fprintf(out, "::%s %stitle=%s::%s\n", cmd, props, ghProperty(title), ghData(msg)); err != nil {
			return err
		}
	}
	return nil
}

// ghData escapes the message of a workflow command.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a property value of a workflow command.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
