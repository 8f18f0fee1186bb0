package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// TestContextFlag: --context takes a comma list or repeats, in order, each
// name once; one name stays as kubectl reads it.
func TestContextFlag(t *testing.T) {
	cases := []struct {
		args  []string
		value string
		names []string
	}{
		{[]string{"--context", "prod"}, "prod", nil},
		{[]string{"--context", "a,b"}, "a,b", []string{"a", "b"}},
		{[]string{"--context", "a", "--context", "b"}, "a,b", []string{"a", "b"}},
		{[]string{"--context=a, b", "--context", "a", "--context", "c"}, "a, b,a,c", []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		flags := genericclioptions.NewConfigFlags(true)
		root := &cobra.Command{Use: "root"}
		flags.AddFlags(root.PersistentFlags())
		useContextList(root, flags)
		if err := root.PersistentFlags().Parse(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if *flags.Context != c.value {
			t.Errorf("%q: ConfigFlags.Context = %q, want %q", c.args, *flags.Context, c.value)
		}
		raw := clientcmdapi.Config{Contexts: map[string]*clientcmdapi.Context{"a": {}, "b": {}, "c": {}, "prod": {}}}
		names, err := resolveContexts(*flags.Context, false, raw)
		if err != nil || !reflect.DeepEqual(names, c.names) {
			t.Errorf("%q: contexts = %q, %v; want %q", c.args, names, err, c.names)
		}
	}
}

// TestResolveContexts: --all-contexts takes every context, sorted; with
// --context it is refused; an unknown name is refused with the list.
func TestResolveContexts(t *testing.T) {
	raw := clientcmdapi.Config{Contexts: map[string]*clientcmdapi.Context{"prod": {}, "dev": {}, "stage": {}}}
	cases := []struct {
		value string
		all   bool
		want  []string
		err   string
	}{
		{"", true, []string{"dev", "prod", "stage"}, ""},
		{"", false, nil, ""},
		{"dev,prod", false, []string{"dev", "prod"}, ""},
		{"dev", true, nil, "--all-contexts and --context cannot be used together: drop --context to read every context, or --all-contexts to read those named"},
		{"dev,qa", false, nil, `context "qa" not found in the kubeconfig; the contexts are: dev, prod, stage`},
	}
	for _, c := range cases {
		got, err := resolveContexts(c.value, c.all, raw)
		if c.err != "" {
			if err == nil || err.Error() != c.err || ExitCode(err) != ExitUsage {
				t.Errorf("%q all=%v: err = %v (exit %d), want %q (exit 2)", c.value, c.all, err, ExitCode(err), c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q all=%v = %q, %v; want %q", c.value, c.all, got, err, c.want)
		}
	}
	if _, err := resolveContexts("", true, clientcmdapi.Config{}); ExitCode(err) != ExitUsage {
		t.Errorf("--all-contexts of an empty kubeconfig: %v, want a usage error", err)
	}
}

// TestContextFlagRefusedByOneContextCommands: watch reads one context.
func TestContextFlagRefusedByOneContextCommands(t *testing.T) {
	_, _, err := runStatusRoot(t, "watch", "--context", "a,b")
	want := `kubectl cmsync watch reads one kubeconfig context, got --context "a,b": name one`
	if err == nil || err.Error() != want || ExitCode(err) != ExitUsage {
		t.Fatalf("err = %v, want %q (exit 2)", err, want)
	}
	_, _, err = runStatusRoot(t, "status", "--context", "a", "--all-contexts")
	if err == nil || !strings.HasPrefix(err.Error(), "--all-contexts and --context cannot be used together") {
		t.Fatalf("status --context a --all-contexts: %v", err)
	}
}

// TestContextsExit: the worst exit code of the contexts, nil when all
// passed.
func TestContextsExit(t *testing.T) {
	check := &ExitError{Code: ExitCheck}
	cases := []struct {
		errs []error
		code int
	}{
		{[]error{nil, nil}, ExitOK},
		{[]error{nil, errors.New("unreachable")}, ExitFailure},
		{[]error{check, nil}, ExitCheck},
		{[]error{errors.New("unreachable"), check, nil}, ExitCheck},
		{[]error{&ExitError{Code: ExitRefused}, check}, ExitRefused},
	}
	for _, c := range cases {
		err := contextsExit(c.errs)
		if got := ExitCode(err); got != c.code {
			t.Errorf("%v: exit %d, want %d", c.errs, got, c.code)
		}
		if err != nil && ErrorText(err) != "" {
			t.Errorf("%v: says %q again; the contexts' lines said it", c.errs, ErrorText(err))
		}
	}
}

// TestMergeStatusResults: the uses of the contexts read, in the order of
// the contexts; a context not read is left out of the summary's list.
func TestMergeStatusResults(t *testing.T) {
	use := func(ctx, name string) inspect.Use {
		return inspect.Use{Context: ctx, Object: inspect.ObjectRef{Kind: inspect.KindConfigMap, Name: name}}
	}
	results := []*statusResult{
		{Items: []inspect.Use{use("a", "x"), use("a", "y")}},
		nil,
		{Items: []inspect.Use{use("c", "z")}, WantSecrets: true},
	}
	items, read, secrets := mergeStatusResults([]string{"a", "b", "c"}, results)
	var got []string
	for _, it := range items {
		got = append(got, it.Context+"/"+it.Object.Name)
	}
	if !reflect.DeepEqual(got, []string{"a/x", "a/y", "c/z"}) || !reflect.DeepEqual(read, []string{"a", "c"}) || !secrets {
		t.Errorf("merged %q, read %q, secrets %v", got, read, secrets)
	}
}

// writeContextsKubeconfig writes a kubeconfig of three contexts: blue and
// green in namespace shop, red in namespace broken (which the loader of
// TestStatusAcrossContexts cannot read).
func writeContextsKubeconfig(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
		"users:\n- name: test\n  user: {token: test-token}\ncontexts:\n"
	for _, c := range [][2]string{{"blue", "shop"}, {"green", "shop"}, {"red", "broken"}} {
		cfg += "- name: " + c[0] + "\n  context: {cluster: test, user: test, namespace: " + c[1] + "}\n"
	}
	cfg += "current-context: blue\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
}

// TestStatusAcrossContexts: status over contexts read concurrently, the
// fixture cluster in each: a CONTEXT column, a summary per context and for
// all, a `context` per JSON item; a context that cannot be read is one
// error line, the others print, and the exit is the worst.
func TestStatusAcrossContexts(t *testing.T) {
	writeContextsKubeconfig(t)
	objs := statusClusterObjects(t)
	load := func(ctx context.Context, lo inspect.LoadOptions) (*inspect.Snapshot, error) {
		if lo.Namespace == "broken" {
			return nil, &inspect.ListError{Resource: "pods", Namespace: lo.Namespace, Err: errors.New("connection refused")}
		}
		return inspect.Load(ctx, fake.NewClientset(objs...), lo)
	}
	run := func(ctxs string, all bool, set func(*StatusOptions), args ...string) (string, string, error) {
		o, out, errOut := newTestStatusOptions(t, &statusLoader{})
		o.LoadSnapshot = load
		o.ConfigFlags.Context = &ctxs
		o.Contexts = ContextFlags{All: all, Concurrency: 2}
		if set != nil {
			set(o)
		}
		err := runStatusOptions(t, o, args)
		return out.String(), errOut.String(), err
	}

	out, errOut, err := run("blue,green", false, nil, "release")
	if err != nil {
		t.Fatalf("blue,green: %v\n%s", err, errOut)
	}
	for _, want := range []string{"CONTEXT   CONFIGMAP   POD", "blue      release     db-0", "green     release     db-0",
		"blue: 1 use by 1 pod: 1 never-changes", "green: 1 use by 1 pod: 1 never-changes", "all 2 contexts: 2 uses by 2 pods: 2 never-changes"} {
		if !strings.Contains(out, want) {
			t.Errorf("blue,green: no %q in\n%s", want, out)
		}
	}

	out, errOut, err = run("", true, func(o *StatusOptions) { o.Check = true }, "web-config")
	if ExitCode(err) != ExitCheck {
		t.Errorf("--all-contexts --check: exit %d (%v), want 3 (a check failed, red not read)", ExitCode(err), err)
	}
	if !strings.Contains(errOut, `error: context "red": cannot reach the Kubernetes API server`) ||
		!strings.Contains(errOut, `context "blue": check failed: 1 of 6 uses need attention:`) {
		t.Errorf("--all-contexts --check: stderr\n%s", errOut)
	}
	if !strings.Contains(out, "all 2 contexts: 12 uses") || strings.Contains(out, "red") {
		t.Errorf("--all-contexts: red printed, or blue and green not:\n%s", out)
	}

	out, _, err = run("blue,green", false, func(o *StatusOptions) { o.Output = "json" }, "release")
	var doc struct {
		Items []struct {
			Context string `json:"context"`
		} `json:"items"`
	}
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Items) != 2 || doc.Items[0].Context != "blue" || doc.Items[1].Context != "green" {
		t.Errorf("-o json: %v, %+v\n%s", err, doc, out)
	}
}
