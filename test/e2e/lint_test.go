//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/lint"
)

// TestLintCluster: `lint --cluster` asks the real API server about the
// references the manifests lack: an object that exists resolves (and its
// keys are checked), an absent one becomes an error, and the kubelet agrees
// that a pod needing it cannot start.
func TestLintCluster(t *testing.T) {
	t.Parallel()
	f := newFx(t)
	f.createConfigMap(configMap("live-config", map[string]string{"k": "v"}))
	f.createSecret(secret("live-secret", map[string]string{"token": "not-printed"}))

	dir := t.TempDir()
	workload := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ` + imageBusybox + `
        env:
        - name: FROM_LIVE
          valueFrom:
            configMapKeyRef: {name: live-config, key: k}
        - name: FROM_ABSENT
          valueFrom:
            configMapKeyRef: {name: absent-config, key: k}
        - name: NO_KEY
          valueFrom:
            configMapKeyRef: {name: live-config, key: nokey}
        envFrom:
        - secretRef: {name: live-secret}
        - configMapRef: {name: in-manifest}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: in-manifest
data: {a: b}
`
	podYAML := `apiVersion: v1
kind: Pod
metadata:
  name: needs-absent
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ` + imageBusybox + `
    imagePullPolicy: Never
    command: [sleep, "1000000"]
    env:
    - name: X
      valueFrom:
        configMapKeyRef: {name: absent-config, key: k}
`
	for name, text := range map[string]string{"web.yaml": workload, "pod.yaml": podYAML} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	findings := func(args ...string) (map[string]string, int, string) {
		out, stderr, code := f.pluginRun(append([]string{"lint", "-f", dir, "-n", f.ns, "-o", "json"}, args...)...)
		var rep lint.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("lint output is not a LintReport: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, it := range rep.Items {
			if it.Object.Namespace != f.ns {
				t.Errorf("%s: namespace %q, want %q", it.Source, it.Object.Namespace, f.ns)
			}
			key := it.EnvName
			if key == "" {
				key = it.Object.Name
			}
			got[it.ContainerName()+"/"+key] = it.Source.String()[len(dir)+1:] + " " + string(it.Finding.Severity) + " " + it.Finding.Code
		}
		return got, code, out + stderr
	}
	check := func(got, want map[string]string) {
		t.Helper()
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: got %q, want %q", k, got[k], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("got %d items %v, want %d", len(got), got, len(want))
		}
	}

	// without --cluster: what the manifests lack is only suspicious
	got, code, _ := findings("--check")
	check(got, map[string]string{
		"web/FROM_LIVE":   "web.yaml:16 warning missing-reference",
		"web/FROM_ABSENT": "web.yaml:19 warning missing-reference",
		"web/NO_KEY":      "web.yaml:22 warning missing-reference",
		"web/live-secret": "web.yaml:26 warning missing-reference",
		"web/in-manifest": "web.yaml:27 warning no-hash",
		"app/X":           "pod.yaml:13 warning missing-reference",
	})
	if code != 0 {
		t.Errorf("--check without errors: exit %d, want 0", code)
	}

	// with --cluster: the API server decides
	got, code, text := findings("--cluster", "--check")
	check(got, map[string]string{
		"web/FROM_LIVE":   "web.yaml:16 warning no-hash",
		"web/FROM_ABSENT": "web.yaml:19 error missing-reference",
		"web/NO_KEY":      "web.yaml:22 error missing-key",
		"web/live-secret": "web.yaml:26 warning no-hash",
		"web/in-manifest": "web.yaml:27 warning no-hash",
		"app/X":           "pod.yaml:13 error missing-reference",
	})
	if code != 3 {
		t.Errorf("--cluster --check: exit %d, want 3", code)
	}
	if strings.Contains(text, "not-printed") {
		t.Errorf("a Secret value was printed:\n%s", text)
	}

	// the kubelet agrees: the pod lint called an error cannot start
	apply := exec.CommandContext(f.ctx, "kubectl", "apply", "-n", f.ns, "-f", filepath.Join(dir, "pod.yaml"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	f.waitContainerWaiting("needs-absent", "app", "CreateContainerConfigError")
	p := f.getPod("needs-absent")
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && !strings.Contains(s.State.Waiting.Message, `configmap "absent-config" not found`) {
			t.Errorf("waiting message %q does not name the ConfigMap", s.State.Waiting.Message)
		}
	}
}
