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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/lint"
)

// lintFixture is a fixture of pkg/lint.
func lintFixture(name string) string { return filepath.Join("..", "lint", "testdata", name) }

// runLint runs `kubectl cmsync lint ARGS` with stdin and returns stdout,
// stderr and the exit code. No kubeconfig: objects go to "default".
func runLint(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	root.SetArgs(append([]string{"lint"}, args...))
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), ExitCode(err)
}

func TestLintExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: ConfigMap\n  data: {}\n---\nkind: Secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"findings without --check", []string{"-f", lintFixture("plain.yaml")}, 0, ""},
		{"--check fails on errors", []string{"-f", lintFixture("plain.yaml"), "--check"}, ExitCheck, "check failed: 2 errors:"},
		{"--check passes warnings", []string{"-f", lintFixture("kustomize.yaml"), "--check"}, 0, ""},
		{"--strict fails on warnings", []string{"-f", lintFixture("kustomize.yaml"), "--strict"}, ExitCheck, "check failed: 1 error or warning:"},
		{"--strict with -o json exits 3 too", []string{"-f", lintFixture("kustomize.yaml"), "--strict", "-o", "json"}, ExitCheck, ""},
		{"bad YAML: every file:line, exit 1", []string{"-f", bad}, ExitFailure, bad + ":3: invalid YAML: mapping values are not allowed in this context\n  " + bad + ":5: object has no apiVersion"},
		{"no -f", nil, ExitUsage, "must specify -f"},
		{"an argument", []string{"-f", lintFixture("plain.yaml"), "web"}, ExitUsage, "lint takes no arguments (got \"web\")"},
		{"bad output", []string{"-f", lintFixture("plain.yaml"), "-o", "xml"}, ExitUsage, "allowed formats are: table,wide,json,yaml,github"},
		{"missing path", []string{"-f", filepath.Join(dir, "nope")}, ExitFailure, "does not exist"},
		{"a URL", []string{"-f", "https://example.com/x.yaml"}, ExitFailure, "curl -sSL URL | kubectl cmsync lint -f -"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runLint(t, "", c.args...)
			if code != c.code || !strings.Contains(stderr, c.err) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, c.code, c.err)
			}
		})
	}
}

func TestLintTable(t *testing.T) {
	out, stderr, code := runLint(t, "", "-f", lintFixture("helm.yaml"))
	want := `FILE:LINE                       WORKLOAD                     CONTAINER   OBJECT                      MODE      PATH/KEYS                 HOT-UPDATE       FINDING
../lint/testdata/helm.yaml:41   deployment/rel-shop          shop        configmap/rel-shop-config   env       $MODE <- mode             restart-needed   info: rolls-on-change
../lint/testdata/helm.yaml:46   deployment/rel-shop          shop        secret/rel-shop             env       $API_TOKEN <- api-token   restart-needed   warning: no-hash
../lint/testdata/helm.yaml:70   deployment/rel-shop-worker   worker      configmap/rel-shop-config   envFrom   all keys                  restart-needed   warning: no-hash
`
	if code != 0 || out != want {
		t.Errorf("exit %d, got:\n%s\nwant:\n%s", code, out, want)
	}
	if stderr != "3 uses in 1 file: 0 errors, 2 warnings, 1 info (-o wide shows each message and hint)\n" {
		t.Errorf("stderr %q", stderr)
	}
}

// TestLintStdinGitHub: manifests from stdin (as from helm template), and
// GitHub annotations with the workflow-command escapes.
func TestLintStdinGitHub(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        volumeMounts:
        - {name: v, mountPath: /etc/x, subPath: dir}
      volumes:
      - name: v
        configMap:
          name: "c,1"
          items: [{key: k, path: dir/k}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: "c,1"}
data: {k: "100%"}
`
	out, _, code := runLint(t, in, "-f", "-", "-o", "github", "--check")
	want := "::error title=cmsync lint%3A subpath-directory deployment/web::STDIN:10: subPath \"dir\" is a directory of the volume: after the first change the kubelet deletes it and the container sees an empty directory until it restarts%0AHint: mount the volume without subPath at its own directory, or make subPath name a single file (an items path), which only needs a restart\n"
	if code != ExitCheck || out != want {
		t.Errorf("exit %d, got:\n%q\nwant:\n%q", code, out, want)
	}
	var b bytes.Buffer
	items := []lint.ManifestUse{{Source: lint.Location{File: "a,b:c%.yaml", Line: 3}, Finding: lint.Finding{Severity: lint.SeverityWarning, Code: "no-hash", Message: "50% off\r\nnow"}}}
	items = append(items, lint.ManifestUse{Source: lint.Location{File: "x", Line: 1}, Finding: lint.Finding{Severity: lint.SeverityInfo, Code: "hot-update"}})
	if err := printGitHub(&b, items); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "::warning file=a%2Cb%3Ac%25.yaml,line=3,title=cmsync lint%3A no-hash /::50%25 off%0D%0Anow\n" {
		t.Errorf("escaping: %q", got)
	}
}

func TestLintJSONAndRecursive(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"a.yaml": "plain.yaml", "notes.txt": "plain.yaml", "sub/b.json": "list.json"} {
		b, err := os.ReadFile(lintFixture(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	count := func(args ...string) (map[string]int, lint.Report) {
		out, stderr, code := runLint(t, "", append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var rep lint.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		files := map[string]int{}
		for _, it := range rep.Items {
			files[it.Source.File]++
		}
		return files, rep
	}
	files, rep := count("-f", dir)
	if len(files) != 1 || files[filepath.Join(dir, "a.yaml")] != 9 {
		t.Errorf("without -R: %v", files)
	}
	if rep.APIVersion != "cmsync.kubectl-cmsync.io/v1alpha1" || rep.Kind != "LintReport" {
		t.Errorf("document %s %s", rep.APIVersion, rep.Kind)
	}
	files, _ = count("-f", dir, "-R")
	if len(files) != 2 || files[filepath.Join(sub, "b.json")] != 2 {
		t.Errorf("with -R: %v", files)
	}
	// the raw JSON: the contract's item fields, source and finding, no pod
	out, _, _ := runLint(t, "", "-f", lintFixture("list.json"), "-o", "json")
	var raw struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	first := raw.Items[0]
	for _, k := range []string{"object", "container", "workload", "mode", "volume", "verdict", "reason", "delay", "source", "finding"} {
		if _, ok := first[k]; !ok {
			t.Errorf("item lacks %q: %v", k, first)
		}
	}
	if _, ok := first["pod"]; ok {
		t.Errorf("item has a pod: %v", first)
	}
	if src := first["source"].(map[string]any); src["line"] != float64(17) {
		t.Errorf("source %v", src)
	}
}

// TestLintCluster: --cluster turns an absent reference into an error, a
// present one into a resolved use, and a forbidden one stays a warning that
// names the rule.
func TestLintCluster(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team"}, Data: map[string]string{"target": "x"}})
	cs.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, a.(k8stesting.GetAction).GetName(), errors.New("no"))
	})
	dir := t.TempDir()
	f := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(f, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - {name: A, valueFrom: {configMapKeyRef: {name: settings, key: target}}}
        - {name: B, valueFrom: {configMapKeyRef: {name: gone, key: k}}}
        - {name: C, valueFrom: {secretKeyRef: {name: hidden, key: k}}}
        - {name: D, valueFrom: {configMapKeyRef: {name: settings, key: nokey}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	flags := genericclioptions.NewConfigFlags(true)
	ns := "team"
	flags.Namespace = &ns
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	o := NewLintOptions(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	o.Filenames, o.Cluster, o.Check, o.Output = []string{f}, true, true, "json"
	o.Getter = lint.ClientGetter{Client: cs}
	err := runLintOptions(o)
	if ExitCode(err) != ExitCheck {
		t.Fatalf("exit %d (%v): %s", ExitCode(err), err, errOut.String())
	}
	var rep lint.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range rep.Items {
		got[it.EnvName] = string(it.Finding.Severity) + " " + it.Finding.Code + ": " + it.Finding.Message
	}
	want := map[string]string{
		"A": `warning no-hash: env use of ConfigMap "settings" (not in the manifests; found in the live cluster) never sees a change: the pod template carries no hash of it, so a change needs a manual restart`,
		"B": `error missing-reference: ConfigMap "gone" is neither in the manifests nor in the live cluster; required, so pods cannot start`,
		"C": `warning missing-reference: Secret "hidden" is not in the manifests, and the live cluster could not be asked: forbidden; a Role with this rule grants it: {apiGroups: [""], resources: ["secrets"], verbs: ["get"]}`,
		"D": `error missing-key: key "nokey" is not in ConfigMap "settings"; required, so the container cannot start until it is added (in the live cluster)`,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got  %s\n want %s", k, got[k], w)
		}
	}
}

// runLintOptions completes, validates and runs o, as the command does.
func runLintOptions(o *LintOptions) error {
	err := o.Complete(nil)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return err
}
