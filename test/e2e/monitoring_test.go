//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// usedMetric is one line of charts/kubectl-cmsync/files/metric-names.txt: a
// series the chart's alerting rules or dashboard use, and its family's
// labels (none: the series is exported from the controller's start).
type usedMetric struct {
	series string
	labels []string
}

func (f *fx) usedMetrics() []usedMetric {
	f.t.Helper()
	path := filepath.Join(repoRoot, "charts", "kubectl-cmsync", "files", "metric-names.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []usedMetric
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, _ := strings.Cut(line, " ")
		u := usedMetric{series: name}
		if labels != "" {
			u.labels = strings.Split(labels, ",")
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		f.t.Fatalf("%s lists no series", path)
	}
	return out
}

// checkUsedMetrics checks, after a change was acted on, that /metrics of
// the controller pod ctl has a sample of every series the chart's alerting
// rules and dashboard use whose family has no label (those are exported
// from the start) or is one of exercised (labelled families the test's
// change has given a series). A labelled family the test has not
// exercised exports nothing yet, not even its # TYPE line: it is logged,
// not checked (charts/monitoring checks its name against the registry).
func (f *fx) checkUsedMetrics(ctl string, exercised ...string) {
	f.t.Helper()
	scraped := map[string]bool{}
	for _, line := range strings.Split(string(f.scrape(ctl)), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		scraped[name] = true
	}
	var unchecked []string
	for _, u := range f.usedMetrics() {
		family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(u.series, "_bucket"), "_sum"), "_count")
		if len(u.labels) > 0 && !slices.Contains(exercised, family) && !slices.Contains(exercised, u.series) {
			unchecked = append(unchecked, u.series)
			continue
		}
		if !scraped[u.series] {
			f.t.Errorf("/metrics of %s has no %s, which the chart's alerting rules or dashboard use (charts/kubectl-cmsync/files/metric-names.txt)", ctl, u.series)
		}
	}
	f.t.Logf("labelled series of the chart's rules and dashboard not exercised here, not checked: %s", strings.Join(unchecked, ", "))
}
