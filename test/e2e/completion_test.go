//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectl's plugin completion (kubectl >= 1.26): `kubectl cmsync <TAB>` runs
// kubectl_complete-cmsync from PATH, which runs `kubectl-cmsync __complete`.
// Both are on PATH here as a user would install them: the plugin built for
// this run, and the helper script shipped in the release archives.
func TestKubectlCompletesConfigMapNames(t *testing.T) {
	t.Parallel()
	if pluginBuildErr != nil {
		t.Fatal(pluginBuildErr)
	}
	f := newFx(t)
	f.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "completion-app-config"}, Data: map[string]string{"k": "v"}})
	f.createConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "completion-other"}, Data: map[string]string{"k": "v"}})
	f.createSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "completion-db"}, StringData: map[string]string{"password": "x"}})

	helperDir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot, "plugins", "kubectl_complete-cmsync"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(helperDir, "kubectl_complete-cmsync"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		cmd := exec.Command("kubectl", append([]string{"__complete"}, words...)...)
		cmd.Env = append(os.Environ(), "PATH="+helperDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl __complete %q: %v", words, err)
		}
		var comps []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				comps = append(comps, strings.SplitN(line, "\t", 2)[0])
			}
		}
		t.Logf("kubectl __complete %q -> %q", words, comps)
		return comps
	}
	has := func(comps []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(comps, w) {
				t.Errorf("%q missing from the completions %q", w, comps)
			}
		}
	}
	hasNot := func(comps []string, unwanted ...string) {
		t.Helper()
		for _, u := range unwanted {
			if slices.Contains(comps, u) {
				t.Errorf("%q should not be among the completions %q", u, comps)
			}
		}
	}

	// the plugin's commands
	has(complete("cmsync", ""), "status", "refresh", "diff", "version", "completion")
	// ConfigMap names of the namespace given with -n, not Secrets without --secrets
	names := complete("cmsync", "status", "-n", f.ns, "")
	has(names, "completion-app-config", "completion-other")
	hasNot(names, "completion-db", "secret/completion-db", "kube-root-ca.crt")
	has(complete("cmsync", "status", "-n", f.ns, "--include-system", ""), "kube-root-ca.crt")
	// -n is respected: the default namespace has none of them
	hasNot(complete("cmsync", "status", ""), "completion-app-config")
	// a prefix; a name already given is not offered again
	has(complete("cmsync", "refresh", "--namespace", f.ns, "completion-a"), "completion-app-config")
	hasNot(complete("cmsync", "status", "-n", f.ns, "completion-app-config", ""), "completion-app-config")
	// Secrets: with --secrets, or with the secret/ prefix
	has(complete("cmsync", "status", "-n", f.ns, "--secrets", ""), "secret/completion-db", "completion-app-config")
	has(complete("cmsync", "diff", "-n", f.ns, "secret/"), "secret/completion-db")
	// namespaces for -n, contexts for --context
	has(complete("cmsync", "status", "-n", "cmsync-e2e-"), f.ns)
	raw, err := clientcmd.NewDefaultClientConfigLoadingRules().Load()
	if err != nil {
		t.Fatal(err)
	}
	has(complete("cmsync", "status", "--context", ""), raw.CurrentContext)
	// --context is respected: a context of another cluster gives no names
	// (kubectl's own completion code swallows the error)
	hasNot(complete("cmsync", "status", "--context", "no-such-context", "-n", f.ns, ""), "completion-app-config")
}
