package cmd

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
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

		# With your own diff program
		KUBECTL_EXTERNAL_DIFF="meld" kubectl cmsync diff app-config`)
)

// DiffOptions holds the flags and state of `kubectl cmsync diff`.
type DiffOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Pod              string
	Container        string
	Selector         string
	Secrets          bool
	ShowSecretValues bool
	Verify           VerifyFlags

	// Set by Complete.
	Namespace    string
	Key          inspect.ObjectKey
	Client       kubernetes.Interface
	RESTConfig   *rest.Config
	Color        bool
	ExternalDiff string
	// HMACKey is the per-run key of secret fingerprints (random).
	HMACKey []byte
	// LoadSnapshot reads the cluster; tests replace it.
	LoadSnapshot func(ctx context.Context, o inspect.LoadOptions) (*inspect.Snapshot, error)
}

// NewDiffOptions returns options with defaults.
func NewDiffOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *DiffOptions {
	return &DiffOptions{ConfigFlags: flags, IOStreams: streams}
}

// NewCmdDiff builds `kubectl cmsync diff`.
func NewCmdDiff(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewDiffOptions(flags, streams)
	cmd := &cobra.Command{
		Use:                   "diff NAME | configmap/NAME | secret/NAME [--pod POD] [--container CONTAINER] [flags]",
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
	return cmd
}

// Complete resolves the namespace, the object, the client, colour and the
// external diff program.
func (o *DiffOptions) Complete(args []string) error {
	if len(args) != 1 {
		return usageError("diff needs exactly one NAME (configmap/NAME or secret/NAME), got %d\nSee 'kubectl cmsync diff --help' for usage.", len(args))
	}
	ns, err := resolveNamespace(o.ConfigFlags, false)
	if err != nil {
		return err
	}
	o.Namespace = ns
	keys, err := parseNames(args, ns)
	if err != nil {
		return err
	}
	o.Key = keys[0]
	if o.LoadSnapshot == nil {
		var err error
		if o.RESTConfig, o.Client, err = newClient(o.ConfigFlags); err != nil {
			return err
		}
		o.LoadSnapshot = func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
			return inspect.Load(ctx, o.Client, lo)
		}
	}
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
	server := "(unknown server)"
	if o.RESTConfig != nil {
		server = o.RESTConfig.Host
	}
	secret := o.Key.Kind == inspect.KindSecret
	snap, err := o.LoadSnapshot(ctx, inspect.LoadOptions{Namespace: o.Namespace, PodSelector: o.Selector, Secrets: secret || o.Secrets, Nodes: true})
	if err != nil {
		return explainAPIError(err, server, o.Namespace)
	}
	if le := deniedResource(snap, "secrets"); le != nil && secret {
		return explainAPIError(le, server, o.Namespace) // the Secret asked for is unreadable
	}
	for _, n := range deniedNotes(snap) {
		fmt.Fprintln(o.ErrOut, n)
	}
	items, err := inspect.Build(snap, inspect.BuildOptions{Names: []inspect.ObjectKey{o.Key}, Secrets: secret, IncludeSystem: true})
	if err != nil {
		return explainNotFound(err)
	}
	var selected []inspect.Item
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
	what := fmt.Sprintf("%s/%s", strings.ToLower(o.Key.Kind), o.Key.Name)
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
	var progress io.Writer
	if isTerminal(o.ErrOut) {
		progress = o.ErrOut
	}
	results := inspect.VerifyResults(ctx, selected, snap, ex, o.Verify.Options(progress))
	r := diffRenderer{Out: o.Out, ErrOut: o.ErrOut, Color: o.Color, HMACKey: o.HMACKey, ShowSecretValues: o.ShowSecretValues, Redact: inspect.NewRedactor(snap)}
	sum, err := r.render(results, o.ExternalDiff)
	if err != nil {
		return err
	}
	switch {
	case sum.differ > 0:
		return &ExitError{Code: ExitCheck}
	case sum.unverifiable > 0:
		return fmt.Errorf("%d of %d consumers of %s could not be checked (see above)", sum.unverifiable, len(results), what)
	case sum.compared == 0:
		fmt.Fprintf(o.ErrOut, "No consumer of %s could be compared (none is running).\n", what)
	}
	return nil
}

// diffRenderer prints comparisons as unified diffs.
type diffRenderer struct {
	Out, ErrOut      io.Writer
	Color            bool
	HMACKey          []byte
	ShowSecretValues bool
	// Redact is the output edge of the reasons (never of the values
	// --show-secret-values asks for).
	Redact *inspect.Redactor
}

type diffSummary struct {
	differ, unverifiable, compared int
}

const (
	ansiReset = "\033[0m"
	ansiBold  = "\033[1m"
	ansiRed   = "\033[31m"
	ansiGreen = "\033[32m"
	ansiCyan  = "\033[36m"
)

// consumerLabel names a use: pod, container and where it reads.
func consumerLabel(it inspect.Item) string {
	s := fmt.Sprintf("pod/%s container %s", it.Pod.Name, it.ContainerName())
	switch it.Mode {
	case inspect.ModeEnv:
		return s + " env " + it.EnvName
	case inspect.ModeEnvFrom:
		if it.EnvPrefix != "" {
			return s + " envFrom (prefix " + it.EnvPrefix + ")"
		}
		return s + " envFrom"
	}
	if it.Volume != nil {
		return s + " " + string(it.Mode) + " " + it.Volume.MountPath
	}
	return s
}

func (r *diffRenderer) paint(color, s string) string {
	if !r.Color || s == "" {
		return s
	}
	return color + s + ansiReset
}

// colorize paints a unified diff.
func (r *diffRenderer) colorize(d string) string {
	if !r.Color {
		return d
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(d, "\n") {
		body := strings.TrimSuffix(line, "\n")
		nl := line[len(body):]
		switch {
		case strings.HasPrefix(body, "---") || strings.HasPrefix(body, "+++"):
			b.WriteString(r.paint(ansiBold, body))
		case strings.HasPrefix(body, "@@"):
			b.WriteString(r.paint(ansiCyan, body))
		case strings.HasPrefix(body, "-"):
			b.WriteString(r.paint(ansiRed, body))
		case strings.HasPrefix(body, "+"):
			b.WriteString(r.paint(ansiGreen, body))
		default:
			b.WriteString(body)
		}
		b.WriteString(nl)
	}
	return b.String()
}

// fingerprint is a short HMAC-SHA256 of a secret value under the run's key:
// it tells whether two sides are equal without revealing a short value to a
// dictionary attack.
func (r *diffRenderer) fingerprint(kind string, b []byte) string {
	m := hmac.New(sha256.New, r.HMACKey)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(b)
	return "hmac:" + hex.EncodeToString(m.Sum(nil))[:12]
}

func isText(b []byte) bool {
	return utf8.Valid(b) && !bytes.ContainsRune(b, 0)
}

// render prints every result; ConfigMap files go through the external diff
// program when one is set.
func (r *diffRenderer) render(results []inspect.Result, external string) (diffSummary, error) {
	var sum diffSummary
	var ext *externalDiff
	if external != "" {
		var err error
		if ext, err = newExternalDiff(); err != nil {
			return sum, err
		}
		defer ext.cleanup()
	}
	for _, res := range results {
		it, c := res.Item, res.Comparison
		label := printable(consumerLabel(it))
		switch c.State {
		case inspect.StateUnverifiable:
			sum.unverifiable++
			fmt.Fprintf(r.ErrOut, "%s: unverifiable: %s\n", label, printable(r.Redact.String(c.Reason)))
			continue
		case inspect.StateNA:
			continue
		case inspect.StateMissing:
			sum.differ++
			fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s/%s: missing", label, strings.ToLower(it.Object.Kind), it.Object.Name)))
			fmt.Fprintf(r.ErrOut, "%s: missing: %s\n", label, printable(r.Redact.String(c.Reason)))
			continue
		}
		sum.compared++
		if !c.Differs() {
			switch c.State {
			case inspect.StateStale, inspect.StatePending, inspect.StateBroken:
				// Judged without content to show (an init container that
				// finished, judged by time): a difference all the same.
				sum.differ++
				fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s/%s (%s)", label, strings.ToLower(it.Object.Kind), it.Object.Name, c.State)))
				fmt.Fprintf(r.Out, "%s\n", printable(r.Redact.String(c.Reason)))
			}
			continue
		}
		sum.differ++
		secret := it.Object.Kind == inspect.KindSecret
		// What the container shows may be a Secret's even for a ConfigMap
		// use (a secretRef that overrides a variable, a secret source of
		// the same projected volume): fingerprint those values too.
		exposure := inspect.SecretExposureOf(it, res.Pod)
		obj := fmt.Sprintf("%s/%s", strings.ToLower(it.Object.Kind), it.Object.Name)
		fmt.Fprintf(r.Out, "%s\n", r.paint(ansiBold, fmt.Sprintf("diff %s %s (%s)", label, obj, c.State)))
		if len(c.Env) > 0 {
			r.renderEnv(it, c, obj, secret, exposure, ext)
		}
		for _, f := range c.Files {
			if f.Status == inspect.FileEqual || f.Status == inspect.FileNotCompared {
				continue
			}
			r.renderFile(it, f, obj, secret || (f.Observed != nil && exposure.File(f.Path)), ext)
		}
	}
	if ext != nil && ext.files > 0 {
		if err := ext.run(external, r.Out, r.ErrOut); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// containerPath is where the container sees a file of the use.
func containerPath(it inspect.Item, rel string) string {
	if it.Volume == nil {
		return rel
	}
	if rel == "" {
		return it.Volume.MountPath
	}
	return path.Join(it.Volume.MountPath, rel)
}

func (r *diffRenderer) renderFile(it inspect.Item, f inspect.FileComparison, obj string, secret bool, ext *externalDiff) {
	key := f.Key
	if key == "" {
		key = f.Path
	}
	from := printable(fmt.Sprintf("pod/%s/%s:%s", it.Pod.Name, it.ContainerName(), containerPath(it, f.Path)))
	to := printable(fmt.Sprintf("%s key %s", obj, key))
	var old, new []byte
	oldOK, newOK := false, false
	if f.Observed != nil && f.Observed.HasData {
		old, oldOK = f.Observed.Data, true
	}
	if f.Expected != nil {
		new, newOK = f.Expected.Data, true
	}
	switch f.Status {
	case inspect.FileMissing:
		from = "(not in the container)"
	case inspect.FileExtra:
		to = "(not in the " + strings.ToLower(it.Object.Kind) + ")"
	}
	if secret && !r.ShowSecretValues {
		r.renderSecretFile(it, f, key)
		return
	}
	// Only one side's hash is known (a large file): say so.
	if (f.Observed != nil && !f.Observed.HasData && f.Status != inspect.FileMissing) || (oldOK && newOK && (!isText(old) || !isText(new))) ||
		(oldOK && !newOK && !isText(old)) || (newOK && !oldOK && !isText(new)) {
		fmt.Fprintf(r.Out, "Files %s and %s differ (%s)\n", from, to, sizeNote(f))
		return
	}
	if ext != nil && !secret {
		ext.add(it, f, old, oldOK, new, newOK)
		return
	}
	if f.Status == inspect.FileMissing {
		from = "/dev/null"
	}
	if f.Status == inspect.FileExtra {
		to = "/dev/null"
	}
	d := udiff.Unified(from, to, string(old), string(new))
	if d == "" {
		fmt.Fprintf(r.Out, "Files %s and %s differ (%s)\n", from, to, sizeNote(f))
		return
	}
	fmt.Fprint(r.Out, r.colorize(d))
}

func sizeNote(f inspect.FileComparison) string {
	var parts []string
	if f.Observed != nil {
		if f.Observed.Size >= 0 {
			parts = append(parts, fmt.Sprintf("container %d bytes", f.Observed.Size))
		}
	} else {
		parts = append(parts, "not in the container")
	}
	if f.Expected != nil {
		parts = append(parts, fmt.Sprintf("API %d bytes", len(f.Expected.Data)))
	} else {
		parts = append(parts, "not in the API")
	}
	return strings.Join(parts, ", ")
}

// renderSecretFile prints "key: differs" and the fingerprints of both sides.
func (r *diffRenderer) renderSecretFile(it inspect.Item, f inspect.FileComparison, key string) {
	side := func(of *inspect.ObservedFile) string {
		switch {
		case of == nil:
			return "absent"
		case of.HasData:
			return r.fingerprint("content", of.Data)
		case of.SHA256 != "":
			raw, _ := hex.DecodeString(of.SHA256)
			return r.fingerprint("sha256", raw)
		}
		return "unread"
	}
	container := side(f.Observed)
	api := "absent"
	if f.Expected != nil {
		if f.Observed != nil && !f.Observed.HasData && f.Observed.SHA256 != "" {
			s := sha256.Sum256(f.Expected.Data)
			api = r.fingerprint("sha256", s[:])
		} else {
			api = r.fingerprint("content", f.Expected.Data)
		}
	}
	fmt.Fprintf(r.Out, "%s: differs (container %s, API %s)\n", key, r.paint(ansiRed, container), r.paint(ansiGreen, api))
}

func envLines(env []inspect.EnvComparison, observed bool) string {
	var b strings.Builder
	for _, e := range env {
		v, set := e.Expected, e.ExpectedSet
		if observed {
			v, set = e.Observed, e.ObservedSet
		}
		if set {
			fmt.Fprintf(&b, "%s=%s\n", e.Name, envDisplay(v))
		}
	}
	return b.String()
}

// envDisplay keeps a value on one line: quoted when it holds a newline or
// another control character.
func envDisplay(v string) string {
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return strconv.Quote(v)
		}
	}
	return v
}

func (r *diffRenderer) renderEnv(it inspect.Item, c inspect.Comparison, obj string, secret bool, exposure inspect.SecretExposure, ext *externalDiff) {
	env := append([]inspect.EnvComparison{}, c.Env...)
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	// A ConfigMap's variable whose value in the container may be a
	// Secret's: only its fingerprint, in the text and in the files of the
	// external diff; with --show-secret-values, its value, but never on
	// disk.
	exposed := false
	for i, e := range env {
		if secret || !e.ObservedSet || !exposure.Env(e.Name) {
			continue
		}
		exposed = true
		if !r.ShowSecretValues {
			env[i].Observed = r.fingerprint("content", []byte(e.Observed))
			if e.ExpectedSet {
				env[i].Expected = r.fingerprint("content", []byte(e.Expected))
			}
		}
	}
	if secret && !r.ShowSecretValues {
		for _, e := range env {
			if e.Equal {
				continue
			}
			side := func(v string, set bool) string {
				if !set {
					return "unset"
				}
				return r.fingerprint("content", []byte(v))
			}
			fmt.Fprintf(r.Out, "%s (key %s): differs (container %s, API %s)\n", e.Name, e.Key,
				r.paint(ansiRed, side(e.Observed, e.ObservedSet)), r.paint(ansiGreen, side(e.Expected, e.ExpectedSet)))
		}
		return
	}
	// Only the variables that differ, plus their neighbours as context.
	old, new := envLines(env, true), envLines(env, false)
	if ext != nil && !secret && !(exposed && r.ShowSecretValues) {
		ext.addEnv(it, old, new)
		return
	}
	from := fmt.Sprintf("pod/%s/%s environment", it.Pod.Name, it.ContainerName())
	d := udiff.Unified(from, obj, old, new)
	fmt.Fprint(r.Out, r.colorize(d))
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
func useDir(it inspect.Item) string {
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

func (e *externalDiff) add(it inspect.Item, f inspect.FileComparison, old []byte, oldOK bool, new []byte, newOK bool) {
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

func (e *externalDiff) addEnv(it inspect.Item, old, new string) {
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
