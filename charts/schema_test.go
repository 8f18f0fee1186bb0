package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/alert"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/migrate"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// documented are the values the docs and the tools give the chart, as
// helm arguments: each must pass values.schema.json and render.
var documented = map[string][]string{
	// values.yaml's comment: a selector's comma escaped with --set
	"namespaceSelector escaped": {"--set", `namespaceSelector=team=a\,env!=prod`},
	// docs/controller.md, "Helm values": Reloader's values in cmsync's
	"reloader's values": {"--set", "watchGlobally=false,namespaces={shop},ignoreNamespaces={kube-system},secrets=false",
		"--set", "ignoreWorkloadKinds={jobs,cronjobs},requireOptIn=false,reloaderOnChange=remount,extraArgs={--restart-via=evict}",
		"--set", "leaderElection.enabled=true,replicas=2,resourceLabelSelector=team=a"},
	// docs/controller.md's table: the node reader, alerts from Secrets, hooks to hostNetwork pods, monitors
	"table": {"--set", "reader.mode=node,reader.image=registry.example/busybox:1.37,reader.createNamespace=false",
		"--set", "alerts.webhook.existingSecret=hook,alerts.format=teams,alerts.info=prod-eu",
		"--set", "alerts.proxy.existingSecret=proxy,alerts.proxy.key=url,reloadHooks.hostNetwork=true",
		"--set", "metrics.service.enabled=true,metrics.podMonitor.enabled=true,metrics.serviceMonitor.enabled=true",
		"--set", "metrics.serviceMonitor.labels.release=prom,podDisruptionBudget.minAvailable=50%"},
	// test/e2e's installs (chart, shadow, least privilege) and hack/bench/release.sh's
	"e2e": {"--set", "image.repository=localhost/kubectl-cmsync,image.tag=e2e-0a1b2c3d,image.pullPolicy=Never",
		"--set", "watchGlobally=false,namespaces={e2e-x},shadow=true,requireOptIn=false,replicas=1",
		"--set", "podDisruptionBudget.enabled=false,extraArgs={--debounce=1s,--max-wait=5s,--shadow-window=2m0s}",
		"--set", "reader.namespace=e2e-x-readers"},
	"ci/full-values.yaml": {"-f", "kubectl-cmsync/ci/full-values.yaml"},
}

// Every documented set of values, and what `kubectl cmsync migrate
// reloader` prints with every field set, pass helm lint --strict (which
// checks the schema) and render.
func TestSchemaAcceptsDocumentedValues(t *testing.T) {
	cases := map[string][]string{"defaults": nil, "migrate reloader": {"-f", migrateValues(t)}}
	for name, args := range documented {
		cases[name] = args
	}
	for name, args := range cases {
		if out, err := run(t, append([]string{"lint", "--strict", chart}, args...)...); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
		if _, err := run(t, append([]string{"template", "x", chart}, args...)...); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// migrateValues is a values file as migrate reloader writes it, every
// field set.
func migrateValues(t *testing.T) string {
	t.Helper()
	v := migrate.Values{WatchGlobally: false, Namespaces: []string{"shop"}, NamespaceSelector: "team=a", IgnoreNamespaces: []string{"legacy"},
		ResourceLabelSelector: "cmsync=on", IgnoreWorkloadKinds: []string{"cronjobs"}, Secrets: true, RequireOptIn: false,
		Alerts: &migrate.Alerts{Webhook: migrate.SecretRef{ExistingSecret: "alerts", Key: "url"}, Format: "slack",
			Proxy: &migrate.SecretRef{ExistingSecret: "proxy", Key: "proxy-url"}, Info: "prod"}}
	b, err := v.YAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// schemaRefusals are values the schema refuses, each with what helm says:
// the value's path and why.
var schemaRefusals = []struct{ name, set, want string }{
	{"a misspelled key", "replica=3", `at '': additional properties 'replica' not allowed`},
	{"a misspelled nested key", "metrics.serviceMonitor.enable=true", `at '/metrics/serviceMonitor': additional properties 'enable' not allowed`},
	{"a misspelled alerts key", "alerts.fromat=slack", `at '/alerts': additional properties 'fromat' not allowed`},
	{"a wrong type", "replicas=two", `at '/replicas': got string, want integer`},
	{"a boolean as a word", "secrets=yes", `at '/secrets': got string, want boolean`},
	{"an annotation as a number", "podAnnotations.example\\.com/a=1", `at '/podAnnotations/example.com~1a': got number, want string`},
	{"a port out of range", "metrics.port=70000", `at '/metrics/port': maximum: got 70,000, want 65,535`},
	{"a negative replica count", "replicas=-1", `at '/replicas': minimum: got -1, want 0`},
	{"an unknown pull policy", "image.pullPolicy=always", `at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'`},
	{"an unknown policy for Reloader's opt-ins", "reloaderOnChange=reload", `at '/reloaderOnChange': value must be one of 'restart', 'remount'`},
	{"an unknown workload kind", "ignoreWorkloadKinds={jobs,cronjob,replicationcontrollers}", `at '/ignoreWorkloadKinds/2': value must be one of`},
	{"a scrape interval without a unit", "metrics.podMonitor.interval=30", `at '/metrics/podMonitor/interval': got number, want string`},
	{"a scrape interval Prometheus cannot read", "metrics.podMonitor.interval=30sec", `at '/metrics/podMonitor/interval': '30sec' does not match pattern`},
	{"a flag that is not one", "extraArgs={debounce=5s}", `at '/extraArgs/0': 'debounce=5s' does not match pattern '^-'`},
	{"a namespace that cannot be one", "reader.namespace=Readers", `at '/reader/namespace': 'Readers' does not match pattern`},
	{"a Secret without a key", "alerts.webhook.existingSecret=hook,alerts.webhook.key=", `at '/alerts/webhook/key': '' does not match pattern`},
	{"a budget as a fraction", "podDisruptionBudget.minAvailable=0.5", `at '/podDisruptionBudget/minAvailable': 'anyOf' failed`},
	{"a value removed", "leaderElection=null", `at '': missing property 'leaderElection'`},
}

// The schema refuses each of schemaRefusals at install (helm template
// checks the values as helm install does) and at lint, with helm's
// message naming the value.
func TestSchemaRefuses(t *testing.T) {
	for _, tc := range schemaRefusals {
		for _, cmd := range [][]string{{"template", "x", chart}, {"lint", "--strict", chart}} {
			out, err := run(t, append(cmd, "--set", tc.set)...)
			said := out + fmt.Sprint(err)
			schema := cmd[0] == "lint" || strings.Contains(said, "values don't meet the specifications of the schema")
			if err == nil || !schema || !strings.Contains(said, tc.want) {
				t.Errorf("%s: helm %s --set %s: %v\n%s\nwant the schema's error saying %q", tc.name, cmd[0], tc.set, err, out, tc.want)
			}
		}
	}
}

// Used as a subchart, the chart takes the parent's global values and its
// condition (kubectl-cmsync.enabled), and still refuses a misspelled key,
// naming this chart.
func TestSchemaAsSubchart(t *testing.T) {
	parent := t.TempDir()
	writeFile(t, filepath.Join(parent, "Chart.yaml"), "apiVersion: v2\nname: platform\nversion: 1.0.0\n"+
		"dependencies:\n- name: kubectl-cmsync\n  version: 0.1.0\n  condition: kubectl-cmsync.enabled\n")
	writeFile(t, filepath.Join(parent, "values.yaml"), "global:\n  imageRegistry: registry.example\nkubectl-cmsync:\n  enabled: true\n  replicas: 3\n")
	if err := os.CopyFS(filepath.Join(parent, "charts", chart), os.DirFS(chart)); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "template", "x", parent, "--set", "global.team=platform"); err != nil {
		t.Errorf("as a subchart with global values: %v", err)
	}
	_, err := run(t, "template", "x", parent, "--set", "kubectl-cmsync.replica=3")
	if want := "kubectl-cmsync:\n- at '': additional properties 'replica' not allowed"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("as a subchart, a misspelled key: %v, want %q", err, want)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The schema's choices are the controller's: alerts.format is
// --alert-format's formats, ignoreWorkloadKinds' names are those
// --ignore-workload-kinds accepts, every kind's among them.
func TestSchemaChoicesAreTheController(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Alerts struct {
				Properties struct {
					Format struct{ Enum []string }
				}
			}
			IgnoreWorkloadKinds struct {
				Items struct{ Enum []string }
			}
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var formats []string
	for _, f := range alert.Formats {
		formats = append(formats, string(f))
	}
	if got := s.Properties.Alerts.Properties.Format.Enum; !slices.Equal(got, formats) {
		t.Errorf("alerts.format: %v, want --alert-format's %v", got, formats)
	}
	kinds := s.Properties.IgnoreWorkloadKinds.Items.Enum
	for _, k := range kinds {
		if _, err := reconcile.WorkloadKinds([]string{k}); err != nil {
			t.Errorf("ignoreWorkloadKinds %q: the controller refuses it: %v", k, err)
		}
	}
	for _, k := range reconcile.WorkloadKindNames() {
		if !slices.Contains(kinds, k) {
			t.Errorf("ignoreWorkloadKinds: %q, which the controller accepts, is not in %v", k, kinds)
		}
	}
}
