package cmd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/render"
)

var (
	diffLong = templates.LongDesc(`
		Show, for every container that consumes a ConfigMap (or Secret), how what the
		container has differs from what the API has: a unified diff per consumer, from
		the container's files or environment ("-") to the API's content ("+").

		Each container is read with one exec (needs get and create on pods/exec).
		Secret values are never printed or written to disk: a differing key shows as
		"key: differs" with a short HMAC-SHA256 of each side under a random per-run
		key, unless --show-secret-values is given.

		KUBECTL_EXTERNAL_DIFF selects a diff program as for kubectl diff: it is run
		once on two temporary directories (CONTAINER and API) that hold the differing
		ConfigMap files; Secrets never go through it.

		Exit status: 0 no differences, 3 differences found, 1 error or a consumer
		that could not be checked.`)

	diffExample = templates.Examples(`
		# How every consumer of app-config differs from the API
		kubectl cmsync diff app-config

		# One pod and container
		kubectl cmsync diff app-config --pod web-7d4b9 --container app

		# A Secret: keys that differ, with HMACs of each side
		kubectl cmsync diff secret/db-credentials

		# Every ConfigMap and Secret the pods of a StatefulSet read
		kubectl cmsync diff sts/db

		# With your own diff program
		KUBECTL_EXTERNAL_DIFF="meld" kubectl cmsync diff app-config`)
)

// DiffOptions holds the flags and state of `kubectl cmsync diff`.
type DiffOptions struct {
	Connection
	genericiooptions.IOStreams

	Pod              string
	Container        string
	Selector         string
	Secrets          bool
	ShowSecretValues bool
	Verify           VerifyFlags
	Contexts         ContextFlags

	// Args are the arguments, completed again in each context.
	Args []string
	// contextNames are the contexts compared (nil: one, as kubectl's
	// --context).
	contextNames []string

	// Set by Complete: the objects and workloads the arguments name.
	Names        []inspect.ObjectKey
	Workloads    []inspect.WorkloadKey
	Color        bool
	ExternalDiff string
	// HMACKey is the per-run key of secret fingerprints (random).
	HMACKey []byte
	// LoadSnapshot reads the cluster (nil: the client); tests set it.
	LoadSnapshot func(ctx context.Context, o inspect.LoadOptions) (*inspect.Snapshot, error)
	// Templates reads the named workloads (nil: the client); tests set it.
	Templates inspect.TemplateReader
}

// NewDiffOptions returns options with defaults.
func NewDiffOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *DiffOptions {
	return &DiffOptions{Connection: newConnection(flags), IOStreams: streams}
}

// NewCmdDiff builds `kubectl cmsync diff`.
func NewCmdDiff(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewDiffOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "diff (NAME | configmap/NAME | secret/NAME | WORKLOAD/NAME)... [--pod POD] [--container CONTAINER] [flags]",
		DisableFlagsInUseLine: true,
		Short:                 "Show how what each consuming container has differs from the API",
		Long:                  diffLong,
		Example:               diffExample,
		RunE:                  runOptions(o),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Pod, "pod", "", "Only this pod.")
	fs.StringVarP(&o.Container, "container", "c", "", "Only this container.")
	fs.StringVarP(&o.Selector, "selector", "l", "", "Only pods matching this label selector (e.g. -l app=web).")
	fs.BoolVar(&o.Secrets, "secrets", false, "Also read Secrets, so that a ConfigMap consumer that shares a projected volume or environment with a Secret can be compared (needs list on secrets; Secret values are shown only as fingerprints).")
	fs.BoolVar(&o.ShowSecretValues, "show-secret-values", false, "Print the values of a Secret that differ (they are still never written to disk).")
	o.Verify.AddFlags(fs, false)
	o.Contexts.addFlags(cmd)
	return cmd
}

// Complete resolves the namespace, the object, the client, colour and the
// external diff program.
func (o *DiffOptions) Complete(args []string) error {
	if len(args) == 0 {
		return usageError("diff needs a NAME (configmap/NAME, secret/NAME or a workload such as deploy/NAME)\nSee 'kubectl cmsync diff --help' for usage.")
	}
	o.Args = args
	names, err := o.Contexts.contexts(o.ConfigFlags)
	if err != nil {
		return err
	}
	var t Targets
	if o.contextNames = names; len(names) > 0 {
		t, err = parseTargets(args, "") // each context completes its own
	} else {
		t, err = o.completeTargets(false, args, o.LoadSnapshot == nil)
	}
	if err != nil {
		return err
	}
	o.Names, o.Workloads = t.Objects, t.Workloads
	o.Color = isTerminal(o.Out) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	o.ExternalDiff = os.Getenv("KUBECTL_EXTERNAL_DIFF")
	if o.HMACKey == nil {
		o.HMACKey = make([]byte, 32)
		if _, err := rand.Read(o.HMACKey); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks flags and arguments.
func (o *DiffOptions) Validate() error {
	return o.Verify.Validate()
}

// Run reads the consumers, compares and prints the differences.
func (o *DiffOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.contextNames) > 0 {
		return o.runContexts(ctx)
	}
	workloads, err := o.workloads(ctx, o.Templates, o.Workloads)
	if err != nil {
		return err
	}
	secret := inspect.NamesSecret(o.Names)
	lo := inspect.LoadOptions{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: secret || o.Secrets || len(workloads) > 0, Nodes: true}
	snap, err := o.loadSnapshot(ctx, o.LoadSnapshot, lo, secret, o.ErrOut)
	if err != nil {
		return err
	}
	// a workload's every object but the system ones (kube-root-ca.crt),
	// a named object whatever it is
	bo := inspect.BuildOptions{Names: o.Names, Secrets: secret || (len(workloads) > 0 && snap.SecretsListed), IncludeSystem: len(o.Names) > 0, Workloads: workloads}
	items, idle, err := inspect.BuildSelected(snap, bo)
	if err != nil {
		return explainNotFound(err)
	}
	noteIdle(o.ErrOut, idle, items)
	var selected []inspect.Use
	for _, it := range items {
		if it.Pod.Name == "" || it.Container == nil {
			continue // unused rows, volumes no container mounts
		}
		if o.Pod != "" && it.Pod.Name != o.Pod {
			continue
		}
		if o.Container != "" && it.Container.Name != o.Container {
			continue
		}
		selected = append(selected, it)
	}
	what := o.targets()
	if len(selected) == 0 {
		switch {
		case o.Pod != "" || o.Container != "":
			return fmt.Errorf("no container matching --pod %q --container %q consumes %s in namespace %q", o.Pod, o.Container, what, o.Namespace)
		default:
			fmt.Fprintf(o.ErrOut, "No running pod consumes %s in namespace %q: nothing to compare.\n", what, o.Namespace)
			return nil
		}
	}
	ex, err := o.Verify.executor(o.RESTConfig)
	if err != nil {
		return err
	}
	defer o.Verify.Close(o.ErrOut)
	var progress io.Writer
	if isTerminal(o.ErrOut) {
		progress = o.ErrOut
	}
	results := inspect.VerifyUses(ctx, selected, snap, ex, o.Verify.Options(progress))
	printWarnings(o.ErrOut, groupResultWarnings(results, inspect.NewRedactor(snap)))
	r := diffRenderer{Out: o.Out, ErrOut: o.ErrOut, Color: o.Color, HMACKey: o.HMACKey, ShowSecretValues: o.ShowSecretValues, Redact: inspect.NewRedactor(snap)}
	sum, err := r.render(results, o.ExternalDiff)
	if err != nil {
		return err
	}
	switch {
	case sum.Differ > 0:
		return &ExitError{Code: ExitCheck}
	case sum.Unverifiable > 0:
		return fmt.Errorf("%d of %d consumers of %s could not be checked (see above)", sum.Unverifiable, len(results), what)
	case sum.Compared == 0:
		fmt.Fprintf(o.ErrOut, "No consumer of %s could be compared (none is running).\n", what)
	}
	return nil
}

// targets names what the arguments selected, for messages: the objects,
// then the workloads' pods ("configmap/app-config", "the pods of
// deployment/web").
func (o *DiffOptions) targets() string {
	var parts []string
	for _, k := range o.Names {
		parts = append(parts, strings.ToLower(k.Kind)+"/"+k.Name)
	}
	what := strings.Join(parts, ", ")
	if len(o.Workloads) > 0 {
		if what == "" {
			what = "anything"
		}
		return what + " read by the pods of " + workloadList(o.Workloads)
	}
	return what
}

// diffRenderer prints comparisons as render.Diff does; render runs the
// external diff program (KUBECTL_EXTERNAL_DIFF) on the ConfigMap files when
// one is set. The dashboard's diff screen calls it too.
type diffRenderer struct {
	Out, ErrOut      io.Writer
	Color            bool
	HMACKey          []byte
	ShowSecretValues bool
	// Redact is the output edge of the reasons (never of the values
	// --show-secret-values asks for).
	Redact *inspect.Redactor
}

// render prints every result; ConfigMap files go through the external diff
// program when one is set.
func (r *diffRenderer) render(results []inspect.VerifiedUse, external string) (render.DiffSummary, error) {
	d := render.Diff{Out: r.Out, ErrOut: r.ErrOut, Color: r.Color, HMACKey: r.HMACKey, ShowSecretValues: r.ShowSecretValues, Redact: r.Redact}
	var ext *externalDiff
	if external != "" {
		var err error
		if ext, err = newExternalDiff(); err != nil {
			return render.DiffSummary{}, err
		}
		defer ext.cleanup()
		d.External = ext
	}
	sum := d.Render(results)
	if ext != nil && ext.files > 0 {
		if err := ext.run(external, r.Out, r.ErrOut); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// externalDiff collects ConfigMap files in two temporary directories for
// KUBECTL_EXTERNAL_DIFF, as kubectl diff does (LIVE/MERGED there,
// CONTAINER/API here).
type externalDiff struct {
	from, to string
	files    int
}

func newExternalDiff() (*externalDiff, error) {
	from, err := os.MkdirTemp("", "CONTAINER-")
	if err != nil {
		return nil, err
	}
	to, err := os.MkdirTemp("", "API-")
	if err != nil {
		os.RemoveAll(from)
		return nil, err
	}
	return &externalDiff{from: from, to: to}, nil
}

func (e *externalDiff) cleanup() {
	os.RemoveAll(e.from)
	os.RemoveAll(e.to)
}

// safeName keeps a path element a single, harmless file name.
var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

// useDir is the directory of one use inside each side.
func useDir(it inspect.Use) string {
	what := string(it.Mode)
	if it.Volume != nil {
		what += "-" + it.Volume.Name
	}
	return filepath.Join(safeName(it.Pod.Name), safeName(it.ContainerName()), safeName(what))
}

func (e *externalDiff) write(root, rel string, data []byte) {
	p := filepath.Join(root, rel)
	if !filepath.IsLocal(rel) || !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	if os.WriteFile(p, data, 0o600) == nil {
		e.files++
	}
}

// AddFile implements render.DiffFiles.
func (e *externalDiff) AddFile(it inspect.Use, f inspect.FileComparison, old []byte, oldOK bool, new []byte, newOK bool) {
	name := f.Path
	if name == "" {
		name = path.Base(it.Volume.MountPath)
	}
	if !inspect.ValidPayloadPath(name) {
		return
	}
	rel := filepath.Join(useDir(it), filepath.FromSlash(name))
	if oldOK {
		e.write(e.from, rel, old)
	}
	if newOK {
		e.write(e.to, rel, new)
	}
}

// AddEnv implements render.DiffFiles.
func (e *externalDiff) AddEnv(it inspect.Use, old, new string) {
	rel := filepath.Join(useDir(it), "environment")
	e.write(e.from, rel, []byte(old))
	e.write(e.to, rel, []byte(new))
}

// run runs the program as kubectl does: the first word is the program,
// later words are kept only when they are plain flags.
func (e *externalDiff) run(external string, out, errOut io.Writer) error {
	words := strings.Split(external, " ")
	args := []string{}
	valid := regexp.MustCompile(`^[a-zA-Z0-9-=]+$`)
	for _, w := range words[1:] {
		if valid.MatchString(w) {
			args = append(args, w)
		}
	}
	args = append(args, e.from, e.to)
	cmd := exec.Command(words[0], args...)
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil // differences: the usual exit status of diff programs
	}
	if err != nil {
		return fmt.Errorf("failed to run %q: %v", words[0], err)
	}
	return nil
}
