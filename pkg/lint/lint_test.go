package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/inspect"
)

// readSet reads fixture files into a set (objects without a namespace go
// to "default").
func readSet(t *testing.T, files ...string) *Set {
	t.Helper()
	s := NewSet()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := Read(f, data)
		if err != nil {
			t.Fatalf("Read(%s): %v", f, err)
		}
		if err := s.Add(docs, "default"); err != nil {
			t.Fatalf("Add(%s): %v", f, err)
		}
	}
	return s
}

// row renders an item compactly: where, what, and the finding.
func row(it ManifestUse) string {
	obj := strings.ToLower(it.Object.Kind) + "/" + it.Object.Name
	return fmt.Sprintf("%s %s/%s %s %s %s %s %s", it.Source, strings.ToLower(it.Workload.Kind), it.Workload.Name,
		it.ContainerName(), obj, it.Mode, it.Finding.Severity, it.Finding.Code)
}

func rows(items []ManifestUse) []string {
	var out []string
	for _, it := range items {
		out = append(out, row(it))
	}
	return out
}

// TestLintFixtures: every finding, on plain, Helm-shaped and
// kustomize-shaped manifests (with and without hashes) and a JSON List,
// with the exact line of each use.
func TestLintFixtures(t *testing.T) {
	cases := map[string][]string{
		"plain.yaml": {
			"plain.yaml:18 deployment/web web configmap/app-config volume info hot-update",
			"plain.yaml:22 deployment/web web configmap/app-config subPath warning no-hash",
			"plain.yaml:25 deployment/web web configmap/app-config subPath error subpath-directory",
			"plain.yaml:27 deployment/web web configmap/app-config env warning no-hash",
			"plain.yaml:30 deployment/web web secret/db env warning missing-reference",
			"plain.yaml:33 deployment/web web configmap/app-config env error missing-key",
			"plain.yaml:36 deployment/web web configmap/extra env info optional-missing",
			"plain.yaml:40 deployment/web web configmap/flags envFrom info immutable",
			"plain.yaml:49 deployment/web  configmap/app-config unmounted info not-mounted",
		},
		"kinds.yaml": {
			"kinds.yaml:16 cronjob/report report configmap/settings env info next-run",
			"kinds.yaml:29 pod/toolbox setup configmap/settings envFrom warning no-hash",
			"kinds.yaml:46 rollout/canary app configmap/settings env warning no-hash",
			"kinds.yaml:63 replicaset/rs app configmap/settings env warning no-hash",
		},
		"helm.yaml": {
			// checksum/config stands for the ConfigMap, not for the Secret
			"helm.yaml:41 deployment/rel-shop shop configmap/rel-shop-config env info rolls-on-change",
			"helm.yaml:46 deployment/rel-shop shop secret/rel-shop env warning no-hash",
			// the worker's template carries no checksum at all
			"helm.yaml:70 deployment/rel-shop-worker worker configmap/rel-shop-config envFrom warning no-hash",
		},
		"kustomize.yaml": {
			"kustomize.yaml:33 deployment/api api configmap/app-config-5h8m2kbt6g env info rolls-on-change",
			// disableNameSuffixHash: no suffix, no hash
			"kustomize.yaml:38 deployment/api api configmap/static-config env warning no-hash",
			"kustomize.yaml:64 deployment/reloaded reloaded configmap/static-config envFrom info rolls-on-change",
		},
		"list.json": {
			"list.json:17 statefulset/db db configmap/db-conf volume info hot-update",
			"list.json:29 pod/p c secret/token envFrom warning missing-reference",
		},
	}
	for f, want := range cases {
		t.Run(f, func(t *testing.T) {
			got := rows(Lint(readSet(t, f), Options{}))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// TestLintItemFields: the item is the status item of the core, with the
// workload in place of the pod (no pod), its source, and a hint for every
// error and warning.
func TestLintItemFields(t *testing.T) {
	items := Lint(readSet(t, "plain.yaml", "kinds.yaml", "helm.yaml", "kustomize.yaml", "list.json"), Options{})
	if len(items) != 21 {
		t.Fatalf("got %d items, want 21", len(items))
	}
	for _, it := range items {
		if it.Pod != (inspect.PodRef{}) {
			t.Errorf("%s: pod %+v, want none", row(it), it.Pod)
		}
		if it.Finding.Severity != SeverityInfo && it.Finding.Hint == "" {
			t.Errorf("%s: no hint", row(it))
		}
		if it.Finding.Message == "" || it.Reason == "" || it.Verdict == "" {
			t.Errorf("%s: empty message, reason or verdict", row(it))
		}
		if it.Object.Namespace != "default" && it.Object.Namespace != "shop" {
			t.Errorf("%s: namespace %q", row(it), it.Object.Namespace)
		}
	}
	c := Counts(items)
	if c[SeverityError] != 2 || c[SeverityWarning] != 10 || c[SeverityInfo] != 9 {
		t.Errorf("counts %v", c)
	}
	if n := len(Failed(items, false)); n != 2 {
		t.Errorf("Failed(strict=false) = %d, want 2", n)
	}
	if n := len(Failed(items, true)); n != 12 {
		t.Errorf("Failed(strict=true) = %d, want 12", n)
	}
}
