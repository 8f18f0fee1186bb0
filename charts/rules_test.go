package charts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is the cached promtool of hack/tools/promtool.sh; the test
// fails, saying how to build it, when it is absent.
func promtool(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join("..", "hack", "tools", "promtool.sh"), "--path").Output()
	path := strings.TrimSpace(string(out))
	if err != nil {
		t.Fatalf("promtool is not built (%s: %v): run make promtool (hack/tools/promtool.sh) once", path, err)
	}
	return path
}

type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func (g ruleGroups) rules() []rule {
	var out []rule
	for _, grp := range g.Groups {
		out = append(out, grp.Rules...)
	}
	return out
}

// renderedRules is the PrometheusRule's spec of the release kubectl-cmsync
// in cmsync-system, with the values of extra.
func renderedRules(t *testing.T, extra ...string) ruleGroups {
	t.Helper()
	_, docs := render(t, append([]string{"--set", "prometheusRule.enabled=true"}, extra...)...)
	var pr struct {
		Spec ruleGroups `json:"spec"`
	}
	doc, ok := docs["PrometheusRule/cmsync-system/kubectl-cmsync-controller"]
	if !ok {
		t.Fatalf("no PrometheusRule rendered with prometheusRule.enabled=true")
	}
	if err := yaml.Unmarshal(doc, &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.Spec.rules()) == 0 {
		t.Fatalf("the PrometheusRule has no rules:\n%s", doc)
	}
	return pr.Spec
}

// promtool check rules passes the rendered rules (their annotations'
// templates included), and promtool test rules passes
// testdata/rules-test.yaml on them, annotations left out (checked here).
func TestAlertingRules(t *testing.T) {
	tool := promtool(t)
	spec := renderedRules(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.yaml")
	writeYAML(t, full, spec)
	if out, err := exec.Command(tool, "check", "rules", full).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	for gi := range spec.Groups {
		for ri := range spec.Groups[gi].Rules {
			spec.Groups[gi].Rules[ri].Annotations = nil
		}
	}
	writeYAML(t, filepath.Join(dir, "rules.yaml"), spec)
	tests, err := os.ReadFile(filepath.Join("testdata", "rules-test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules-test.yaml"), string(tests))
	if out, err := exec.Command(tool, "test", "rules", filepath.Join(dir, "rules-test.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules testdata/rules-test.yaml: %v\n%s", err, out)
	}
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b))
}

// Every alert has a severity, a summary and a description that says
// what to run: the controller's log of this release, and a kubectl cmsync
// command or a kubectl command of its own; no placeholder is left.
func TestAlertsSayWhatToRun(t *testing.T) {
	const logs = "kubectl logs -n cmsync-system deploy/kubectl-cmsync-controller"
	for _, r := range renderedRules(t).rules() {
		d := r.Annotations["description"]
		switch {
		case r.Alert == "":
			t.Errorf("a rule with no alert name: %q", r.Expr)
		case r.Labels["severity"] == "":
			t.Errorf("%s: no severity label", r.Alert)
		case r.Annotations["summary"] == "":
			t.Errorf("%s: no summary", r.Alert)
		case !strings.Contains(d, logs):
			t.Errorf("%s: the description does not say %q: %s", r.Alert, logs, d)
		case strings.Contains(d, "NAMESPACE") || strings.Contains(d, "DEPLOYMENT"):
			t.Errorf("%s: a placeholder left in the description: %s", r.Alert, d)
		}
	}
}

// prometheusRule.alerts overrides an alert's for and severity, and only
// the alerts of files/rules.yaml can be named: the schema's names are the
// rules'.
func TestAlertOverrides(t *testing.T) {
	spec := renderedRules(t, "--set", "prometheusRule.alerts.CmsyncNoLeader.for=12m,prometheusRule.alerts.CmsyncNoLeader.severity=page")
	var names []string
	for _, r := range spec.rules() {
		names = append(names, r.Alert)
		if r.Alert == "CmsyncNoLeader" && (r.For != "12m" || r.Labels["severity"] != "page") {
			t.Errorf("CmsyncNoLeader: for %q, severity %q; want the overrides 12m, page", r.For, r.Labels["severity"])
		}
	}
	b, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			PrometheusRule struct {
				Properties struct {
					Alerts struct {
						Properties map[string]any `json:"properties"`
					} `json:"alerts"`
				} `json:"properties"`
			} `json:"prometheusRule"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var schemaNames []string
	for n := range schema.Properties.PrometheusRule.Properties.Alerts.Properties {
		schemaNames = append(schemaNames, n)
	}
	slices.Sort(names)
	slices.Sort(schemaNames)
	if !slices.Equal(names, schemaNames) {
		t.Errorf("values.schema.json's prometheusRule.alerts names %v; files/rules.yaml's alerts are %v", schemaNames, names)
	}
	if out, err := run(t, "template", "x", chart, "--set", "prometheusRule.alerts.CmsyncNoLeadr.for=1m"); err == nil {
		t.Errorf("a misspelled alert name passed the schema:\n%s", out)
	}
}

// Every alert of files/rules.yaml is tested in testdata/rules-test.yaml
// both firing and silent.
func TestEveryAlertIsTested(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "rules-test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, r := range renderedRules(t).rules() {
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: testdata/rules-test.yaml has a test where it fires: %v, where it is silent: %v; want both", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
}
