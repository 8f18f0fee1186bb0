package cmd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextFlag is --context as a list: "a,b", or the flag repeated. The
// names stay comma-joined in ConfigFlags.Context, where one name is read as
// kubectl reads it; the commands that take several split it (ContextFlags).
type contextFlag struct {
	value *string
	set   bool
}

func (c *contextFlag) String() string { return *c.value }
func (c *contextFlag) Type() string   { return "strings" }

// Set appends v to the names given so far.
func (c *contextFlag) Set(v string) error {
	if c.set && *c.value != "" && v != "" {
		v = *c.value + "," + v
	}
	*c.value, c.set = v, true
	return nil
}

// annotationContexts marks the commands that take several contexts.
const annotationContexts = "kubectl-cmsync.io/contexts"

// useContextList makes fs's --context (registered by ConfigFlags.AddFlags)
// a list, and refuses a list on the commands without annotationContexts.
func useContextList(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	f := root.PersistentFlags().Lookup("context")
	if f == nil || flags.Context == nil {
		return
	}
	f.Value = &contextFlag{value: flags.Context}
	f.Usage = "The name of the kubeconfig context to use; status, diff, refresh and lint --cluster take several (a,b or the flag repeated)"
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if strings.Contains(*flags.Context, ",") && cmd.Annotations[annotationContexts] == "" {
			return usageError("%s reads one kubeconfig context, got --context %q: name one", cmd.CommandPath(), *flags.Context)
		}
		return nil
	}
}

// ContextFlags pick the kubeconfig contexts a command reads: --context's
// list (in ConfigFlags), --all-contexts, and how many are read at once.
type ContextFlags struct {
	All         bool
	Concurrency int
}

// defaultContextConcurrency is --context-concurrency's default.
const defaultContextConcurrency = 4

// addFlags registers --all-contexts and --context-concurrency, and marks
// cmd as taking several contexts.
func (c *ContextFlags) addFlags(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annotationContexts] = "true"
	fs := cmd.Flags()
	fs.BoolVar(&c.All, "all-contexts", false, "Use every context of the kubeconfig, in name order.")
	fs.IntVar(&c.Concurrency, "context-concurrency", defaultContextConcurrency, "With several contexts, how many are read at once.")
}

// splitContexts is the names of --context's value, in order, each once.
func splitContexts(value string) []string {
	var names []string
	for n := range strings.SplitSeq(value, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// resolveContexts is the list of contexts a command reads: nil for one
// (the --context given, or the kubeconfig's current one: the command runs
// as before), else the names of --context, or every context of raw with
// all, sorted. A name raw lacks is a usage error.
func resolveContexts(value string, all bool, raw clientcmdapi.Config) ([]string, error) {
	names := splitContexts(value)
	if all && len(names) > 0 {
		return nil, usageError("--all-contexts and --context cannot be used together: drop --context to read every context, or --all-contexts to read those named")
	}
	if all {
		for n := range raw.Contexts {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			return nil, usageError("--all-contexts: the kubeconfig has no context; add one (kubectl config set-context) or point --kubeconfig at another file")
		}
		return names, nil
	}
	if len(names) < 2 {
		return nil, nil
	}
	for _, n := range names {
		if _, ok := raw.Contexts[n]; !ok {
			return nil, usageError("context %q not found in the kubeconfig; the contexts are: %s", n, strings.Join(contextNames(raw), ", "))
		}
	}
	return names, nil
}

func contextNames(raw clientcmdapi.Config) []string {
	var names []string
	for n := range raw.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// contexts resolves the contexts of flags and c from the kubeconfig (nil:
// one context).
func (c ContextFlags) contexts(flags *genericclioptions.ConfigFlags) ([]string, error) {
	value := ""
	if flags.Context != nil {
		value = *flags.Context
	}
	if !c.All && len(splitContexts(value)) < 2 {
		return nil, nil
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot read the kubeconfig: %w\nFix it, or point --kubeconfig (or KUBECONFIG) at a valid one", err)
	}
	if c.Concurrency < 1 {
		return nil, usageError("--context-concurrency must be 1 or more, got %d", c.Concurrency)
	}
	return resolveContexts(value, c.All, raw)
}

// flagsFor is base's kubeconfig flags for the one context name.
func flagsFor(base *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.CacheDir, f.KubeConfig, f.ClusterName, f.AuthInfoName = base.CacheDir, base.KubeConfig, base.ClusterName, base.AuthInfoName
	f.Namespace, f.APIServer, f.TLSServerName, f.Insecure = base.Namespace, base.APIServer, base.TLSServerName, base.Insecure
	f.CertFile, f.KeyFile, f.CAFile, f.BearerToken = base.CertFile, base.KeyFile, base.CAFile, base.BearerToken
	f.Impersonate, f.ImpersonateUID, f.ImpersonateGroup = base.Impersonate, base.ImpersonateUID, base.ImpersonateGroup
	f.ImpersonateUserExtra, f.Username, f.Password = base.ImpersonateUserExtra, base.Username, base.Password
	f.Timeout, f.DisableCompression, f.ProxyURL, f.WrapConfigFn = base.Timeout, base.DisableCompression, base.ProxyURL, base.WrapConfigFn
	f.Context = &name
	return f
}

// forEachContext runs run once per name, at most limit at once, each with
// its own buffer for what it says on stderr; it returns each run's error
// and buffer in the order of names.
func forEachContext(ctx context.Context, names []string, limit int, run func(ctx context.Context, name string, errOut io.Writer) error) ([]error, []*bytes.Buffer) {
	errs := make([]error, len(names))
	bufs := make([]*bytes.Buffer, len(names))
	var g errgroup.Group
	g.SetLimit(limit)
	for i, n := range names {
		bufs[i] = &bytes.Buffer{}
		g.Go(func() error {
			errs[i] = run(ctx, n, bufs[i])
			return nil
		})
	}
	_ = g.Wait()
	return errs, bufs
}

// printContextNotes writes what each context said on stderr, every line
// prefixed with its name, then one error line per context that failed.
func printContextNotes(w io.Writer, names []string, errs []error, bufs []*bytes.Buffer) {
	for i, n := range names {
		sc := bufio.NewScanner(bufs[i])
		for sc.Scan() {
			fmt.Fprintf(w, "context %q: %s\n", n, sc.Text())
		}
	}
	for i, n := range names {
		if t := contextErrorText(errs[i]); t != "" {
			fmt.Fprintf(w, "error: context %q: %s\n", n, t)
		}
	}
}

// contextErrorText is err's message, "" when it needs no line (nil, or an
// ExitError that already said everything).
func contextErrorText(err error) string {
	t := strings.TrimSuffix(strings.TrimPrefix(ErrorText(err), "error: "), "\n")
	return strings.ReplaceAll(t, "\n", "\n  ")
}

// contextsExit is the exit of a command run in several contexts: the
// highest code of any context (3 when a --check failed, 1 when a context
// could not be read), nil when every context passed. Everything is said
// already.
func contextsExit(errs []error) error {
	code := ExitOK
	for _, err := range errs {
		code = max(code, ExitCode(err))
	}
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code}
}

var _ pflag.Value = (*contextFlag)(nil)
