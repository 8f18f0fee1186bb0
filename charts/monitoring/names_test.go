package monitoring

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/controller"
)

var update = flag.Bool("update", false, "rewrite kubectl-cmsync/files/metric-names.txt")

const files = "../kubectl-cmsync/files"

// targetLabels are the labels Prometheus adds to every series of a scrape
// (the Prometheus Operator's PodMonitor and ServiceMonitor), not the
// controller's.
var targetLabels = []string{"job", "instance", "namespace", "pod", "container", "service", "endpoint"}

// series are the series the controller exports, by name, with their
// labels (the target's too): a histogram's _bucket (with le), _sum and
// _count, a summary's quantiles, _sum and _count.
func series(t *testing.T) (map[string][]string, map[string]controller.Family) {
	t.Helper()
	fams, err := controller.Families()
	if err != nil {
		t.Fatal(err)
	}
	out, family := map[string][]string{}, map[string]controller.Family{}
	for _, f := range fams {
		ls := append(slices.Clone(f.Labels), targetLabels...)
		add := func(name string, extra ...string) {
			out[name] = append(slices.Clone(ls), extra...)
			family[name] = f
		}
		switch f.Type {
		case "histogram":
			add(f.Name+"_bucket", "le")
			add(f.Name + "_sum")
			add(f.Name + "_count")
		case "summary":
			add(f.Name, "quantile")
			add(f.Name + "_sum")
			add(f.Name + "_count")
		default:
			add(f.Name)
		}
	}
	return out, family
}

// expression is one PromQL expression of the chart's and where it is.
type expression struct{ where, expr string }

func ruleExpressions(t *testing.T) []expression {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(files, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	var out []expression
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, expression{"rules.yaml " + r.Alert + r.Record, r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatal("no rule in files/rules.yaml")
	}
	return out
}

// used is what one expression names: the series, and the labels it
// matches, groups or joins on.
type used struct {
	series []string
	labels []string
}

func namesOf(expr string) (used, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return used{}, err
	}
	var u used
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			u.series = append(u.series, n.Name)
			for _, m := range n.LabelMatchers {
				if m.Name != labels.MetricName {
					u.labels = append(u.labels, m.Name)
				}
			}
		case *parser.AggregateExpr:
			u.labels = append(u.labels, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				u.labels = append(u.labels, n.VectorMatching.MatchingLabels...)
				u.labels = append(u.labels, n.VectorMatching.Include...)
			}
		}
		return nil
	})
	return u, nil
}

// check says what of u the controller does not export: a series, or a
// label that none of the expression's series has.
func check(u used, exported map[string][]string) []string {
	var bad []string
	have := map[string]bool{}
	for _, s := range u.series {
		ls, ok := exported[s]
		if !ok {
			bad = append(bad, fmt.Sprintf("metric %s", s))
		}
		for _, l := range ls {
			have[l] = true
		}
	}
	for _, l := range u.labels {
		if !have[l] {
			bad = append(bad, fmt.Sprintf("label %s (not a label of %s)", l, strings.Join(u.series, ", ")))
		}
	}
	return bad
}

func expressions(t *testing.T) []expression {
	return append(ruleExpressions(t), dashboardExpressions(t)...)
}

// Every metric, histogram series and label the rules and the dashboard name
// is exported by the controller (controller.Families, its registry).
func TestNamesExist(t *testing.T) {
	exported, _ := series(t)
	for _, e := range expressions(t) {
		u, err := namesOf(e.expr)
		if err != nil {
			t.Errorf("%s: %q: %v", e.where, e.expr, err)
			continue
		}
		for _, b := range check(u, exported) {
			t.Errorf("%s: %q names %s: the controller does not export it", e.where, e.expr, b)
		}
	}
}

// The check refuses what it must: a metric the controller does not export,
// a histogram series of a counter, a label of no series of the expression.
func TestNamesCheckRefuses(t *testing.T) {
	exported, _ := series(t)
	for expr, want := range map[string]string{
		`rate(cmsync_restarts_total[5m])`:                                                           "metric cmsync_restarts_total",
		`rate(cmsync_results_total_bucket[5m])`:                                                     "metric cmsync_results_total_bucket",
		`histogram_quantile(0.9, rate(cmsync_leader_bucket[5m]))`:                                   "metric cmsync_leader_bucket",
		`sum by (outcome) (cmsync_actions_total)`:                                                   "label outcome",
		`cmsync_results_total{result="failed"}`:                                                     "label result",
		`cmsync_leader and on (workload) cmsync_restart_window_deferred_until_seconds`:              "",
		`histogram_quantile(0.9, sum by (le) (rate(cmsync_change_to_verified_seconds_bucket[5m])))`: "",
	} {
		u, err := namesOf(expr)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(check(u, exported), "; ")
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}

// files/metric-names.txt lists the series the rules and the dashboard use,
// each with its family's own labels, as test/e2e reads it.
func TestMetricNamesFile(t *testing.T) {
	_, family := series(t)
	lines := map[string]string{}
	for _, e := range expressions(t) {
		u, err := namesOf(e.expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range u.series {
			if f, ok := family[s]; ok {
				lines[s] = strings.TrimSpace(s + " " + strings.Join(f.Labels, ","))
			}
		}
	}
	var b strings.Builder
	b.WriteString("# The series the chart's alerting rules (rules.yaml) and dashboard use, each with its family's labels:\n")
	b.WriteString("# written by charts/monitoring (go test . -update), read by test/e2e's check of a controller's /metrics.\n")
	for _, k := range slices.Sorted(maps.Keys(lines)) {
		b.WriteString(lines[k] + "\n")
	}
	path := filepath.Join(files, "metric-names.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test . -update in charts/monitoring writes it)", err)
	}
	if string(got) != b.String() {
		t.Errorf("%s is not the list of the series the rules and the dashboard use; go test . -update in charts/monitoring rewrites it:\nwant\n%s\ngot\n%s", path, b.String(), got)
	}
}

// dashboardExpressions are the PromQL of files/dashboard.json's panels, and
// its variables' label_values(metric, label) as the expression
// `sum by (label) (metric)`.
func dashboardExpressions(t *testing.T) []expression {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(files, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []expression
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, expression{"dashboard.json panel " + p.Title, tg.Expr})
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*), *([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		q, ok := v.Query.(map[string]any)
		if !ok {
			continue
		}
		s, _ := q["query"].(string)
		if m := labelValues.FindStringSubmatch(s); m != nil {
			out = append(out, expression{"dashboard.json variable " + v.Name, "sum by (" + m[2] + ") (" + m[1] + ")"})
		} else {
			t.Errorf("dashboard.json variable %s: query %q is not label_values(metric, label)", v.Name, s)
		}
	}
	if len(out) == 0 {
		t.Fatal("no expression in files/dashboard.json")
	}
	return out
}
