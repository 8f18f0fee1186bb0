package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/lint"
)

// namespaceGetter is a lint.Getter whose ConfigMaps are keyed by
// namespace; namespace "broken" cannot be reached.
type namespaceGetter map[string]*corev1.ConfigMap

func (g namespaceGetter) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if namespace == "broken" {
		return nil, errors.New(`Get "https://127.0.0.1:1/api/v1/namespaces/broken/configmaps/settings": dial tcp 127.0.0.1:1: connect: connection refused`)
	}
	if cm := g[namespace]; cm != nil && cm.Name == name {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (g namespaceGetter) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

// TestLintAcrossContexts: lint --cluster over contexts of namespaces shop
// (the ConfigMap settings exists), team (it does not) and broken (its
// API server unreachable): a CONTEXT column, a summary per context and for
// all, a `context` per JSON item, the unreachable context one error line
// while the others print, the --check failures of team prefixed with its
// name, and exit 3; without --cluster, several contexts are a usage error.
func TestLintAcrossContexts(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
		"users:\n- name: test\n  user: {token: test-token}\ncontexts:\n"
	for _, c := range [][2]string{{"blue", "shop"}, {"green", "team"}, {"red", "broken"}} {
		kubeconfig += "- name: " + c[0] + "\n  context: {cluster: test, user: test, namespace: " + c[1] + "}\n"
	}
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - {name: A, valueFrom: {configMapKeyRef: {name: settings, key: target}}}
`
	for name, text := range map[string]string{"kubeconfig": kubeconfig + "current-context: blue\n", "m.yaml": manifest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "kubeconfig"))
	getter := namespaceGetter{"shop": {ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}, Data: map[string]string{"target": "x"}}}
	run := func(ctxs string, all bool, set func(*LintOptions)) (string, string, error) {
		var out, errOut bytes.Buffer
		flags := genericclioptions.NewConfigFlags(true)
		flags.Context = &ctxs
		o := NewLintOptions(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		o.Filenames, o.Cluster, o.Getter = []string{filepath.Join(dir, "m.yaml")}, true, getter
		o.Contexts = ContextFlags{All: all, Concurrency: 2}
		if set != nil {
			set(o)
		}
		err := runLintOptions(o)
		return out.String(), errOut.String(), err
	}

	out, errOut, err := run("", true, func(o *LintOptions) { o.Check = true })
	if ExitCode(err) != ExitCheck || ErrorText(err) != "" {
		t.Errorf("--all-contexts --check: exit %d (%v), want 3 (green failed, red not asked)", ExitCode(err), err)
	}
	for _, want := range []string{"CONTEXT   FILE:LINE", "\nblue      " + filepath.Join(dir, "m.yaml") + ":10", "warning: no-hash", "\ngreen     ", "error: missing-reference"} {
		if !strings.Contains(out, want) {
			t.Errorf("--all-contexts: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "red") {
		t.Errorf("--all-contexts: red printed:\n%s", out)
	}
	for _, want := range []string{
		"blue: 1 use in 1 file: 0 errors, 1 warning, 0 info\n",
		"green: 1 use in 1 file: 1 error, 0 warnings, 0 info\n",
		"all 2 contexts: 2 uses in 1 file: 1 error, 1 warning, 0 info (-o wide shows each message and hint)\n",
		`context "green": check failed: 1 error:`,
		`error: context "red": cannot reach the Kubernetes API server at `, // (unknown server): the test's Getter has no REST config
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--all-contexts: no %q in stderr\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `context "blue": check failed`) {
		t.Errorf("blue failed --check:\n%s", errOut)
	}

	out, errOut, err = run("blue,red", false, func(o *LintOptions) { o.Output = "json" })
	var rep lint.Report
	if ExitCode(err) != ExitFailure || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Items) != 1 || rep.Items[0].Context != "blue" {
		t.Errorf("blue,red -o json: exit %d (%v), %+v\n%s\n%s", ExitCode(err), err, rep, out, errOut)
	}

	out, _, _ = run("blue,green", false, func(o *LintOptions) { o.Output = "github" })
	if !strings.Contains(out, "::warning file=") || !strings.Contains(out, "no-hash deployment/web (context blue)::") ||
		!strings.Contains(out, "::error file=") || !strings.Contains(out, "missing-reference deployment/web (context green)::") {
		t.Errorf("-o github: each annotation's title must name its context:\n%s", out)
	}

	_, _, err = run("blue,green", false, func(o *LintOptions) { o.Cluster = false })
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "lint reads several contexts only with --cluster") {
		t.Errorf("several contexts without --cluster: exit %d (%v), want 2", ExitCode(err), err)
	}
}
