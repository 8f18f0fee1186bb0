package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// complete runs `kubectl-cmsync __complete args...` as kubectl's plugin
// completion does, and returns the completions and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v\n%s", args, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func TestCompletionOfCommandsAndFixedValues(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{""}, []string{"completion", "diff", "refresh", "status", "version"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}},
		{[]string{"status", "-o", ""}, []string{"wide", "json", "yaml"}},
		{[]string{"refresh", "--strategy", ""}, []string{"auto", "annotate", "restart"}},
		{[]string{"refresh", "--restart-via", ""}, []string{"template", "evict"}},
		{[]string{"refresh", "--dry-run="}, []string{"none", "client", "server"}},
		{[]string{"version", "-o", ""}, []string{"json", "yaml"}},
	}
	for _, c := range cases {
		got, directive := complete(t, c.args...)
		var names []string
		for _, g := range got {
			names = append(names, strings.SplitN(g, "\t", 2)[0])
		}
		for _, w := range c.want {
			if !slices.Contains(names, w) {
				t.Errorf("__complete %q: %q missing from %q", c.args, w, names)
			}
		}
		if c.args[0] != "" && directive != ":4" {
			t.Errorf("__complete %q: directive %s, want :4 (no file completion)", c.args, directive)
		}
	}
}

// Contexts come from the kubeconfig named on the command line, without a
// cluster.
func TestCompletionOfContextsFromTheKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: prod-eu, context: {cluster: c, user: u}}, {name: prod-us, context: {cluster: c, user: u}}, {name: dev, context: {cluster: c, user: u}}]
current-context: dev
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := complete(t, "status", "--kubeconfig", kubeconfig, "--context", "prod")
	slices.Sort(got)
	if want := []string{"prod-eu", "prod-us"}; !slices.Equal(got, want) {
		t.Errorf("--context prod<TAB> = %q, want %q", got, want)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_kubectl-cmsync",
		"zsh":        "#compdef kubectl-cmsync",
		"fish":       "complete -c kubectl-cmsync",
		"powershell": "Register-ArgumentCompleter",
	} {
		var out bytes.Buffer
		root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		root.SetArgs([]string{"completion", shell})
		if err := root.Execute(); err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		if !strings.Contains(out.String(), marker) {
			t.Errorf("completion %s: script lacks %q", shell, marker)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		root := NewCmdRoot(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		root.SetArgs(args)
		err := root.Execute()
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "one of bash, zsh, fish, powershell") {
			t.Errorf("%q: exit %d, %v; want a usage error naming the shells", args, ExitCode(err), err)
		}
	}
}

func TestWithoutArgs(t *testing.T) {
	got := withoutArgs([]string{"a", "b", "secret/c", "d"}, []string{"b", "secret/c"})
	if want := []string{"a", "d"}; !slices.Equal(got, want) {
		t.Errorf("withoutArgs = %q, want %q", got, want)
	}
}

// TestKindCompletions: a typed prefix offers the workload kinds it starts,
// as TYPE/; ConfigMap and Secret are not offered as kinds (NAME is a
// ConfigMap's).
func TestKindCompletions(t *testing.T) {
	cases := map[string][]string{
		"":     nil,
		"d":    {"deployment/", "daemonset/"},
		"S":    {"statefulset/"},
		"r":    {"replicaset/", "rollout/"},
		"job":  {"job/"},
		"c":    {"cronjob/"},
		"p":    {"pod/"},
		"conf": nil,
		"x":    nil,
	}
	for typed, want := range cases {
		if got := kindCompletions(typed); !slices.Equal(got, want) {
			t.Errorf("kindCompletions(%q) = %v, want %v", typed, got, want)
		}
	}
}
