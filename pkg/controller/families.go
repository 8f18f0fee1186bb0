package controller

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Family is one metric family the controller's /metrics exports: its
// name, its type (counter, gauge, histogram, summary, untyped) and the
// labels of its series. A histogram's series are Name_bucket (with le),
// Name_sum and Name_count.
type Family struct {
	Name   string
	Type   string
	Labels []string
	Help   string
}

// Families are the metric families of NewMetrics' registry, sorted by
// name: the controller's own and the Go and process collectors'. A
// labelled family exports nothing before its first series, so each is
// given one, on a registry of its own, before it is gathered; a family
// the registry describes and Families cannot gather is an error.
func Families() ([]Family, error) {
	m := NewMetrics()
	for _, c := range m.collectors() {
		if err := giveASeries(c); err != nil {
			return nil, err
		}
	}
	m.windowed.set("namespace", "workload", time.Now().Add(time.Hour))
	mfs, err := m.Registry.Gather()
	if err != nil {
		return nil, err
	}
	var out []Family
	for _, mf := range mfs {
		f := Family{Name: mf.GetName(), Type: strings.ToLower(mf.GetType().String()), Help: mf.GetHelp()}
		if len(mf.GetMetric()) > 0 {
			for _, lp := range mf.GetMetric()[0].GetLabel() {
				f.Labels = append(f.Labels, lp.GetName())
			}
		}
		out = append(out, f)
	}
	return out, described(m.Registry, out)
}

// descName and descLabels read a prometheus.Desc's String(), its only
// accessor: the name, and the variable labels at its end.
var (
	descName   = regexp.MustCompile(`^Desc\{fqName: "([^"]*)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
)

func descOf(c prometheus.Collector) (name string, labels []string) {
	ch := make(chan *prometheus.Desc, 1)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if mm := descName.FindStringSubmatch(d.String()); mm != nil {
			name = mm[1]
		}
		if mm := descLabels.FindStringSubmatch(d.String()); mm != nil && mm[1] != "" {
			labels = strings.Split(mm[1], ",")
		}
	}
	return name, labels
}

// giveASeries makes a labelled family's first series.
func giveASeries(c prometheus.Collector) error {
	name, labels := descOf(c)
	values := slices.Repeat([]string{"x"}, len(labels))
	var err error
	switch v := c.(type) {
	case *prometheus.CounterVec:
		_, err = v.GetMetricWithLabelValues(values...)
	case *prometheus.GaugeVec:
		_, err = v.GetMetricWithLabelValues(values...)
	case *prometheus.HistogramVec:
		_, err = v.GetMetricWithLabelValues(values...)
	case *prometheus.SummaryVec:
		_, err = v.GetMetricWithLabelValues(values...)
	}
	if err != nil {
		return fmt.Errorf("metric %s: %w", name, err)
	}
	return nil
}

// described fails when the registry describes a family not gathered.
func described(r *prometheus.Registry, got []Family) error {
	ch := make(chan *prometheus.Desc)
	go func() { r.Describe(ch); close(ch) }()
	var missing []string
	for d := range ch {
		mm := descName.FindStringSubmatch(d.String())
		if mm == nil {
			missing = append(missing, d.String())
			continue
		}
		if !slices.ContainsFunc(got, func(f Family) bool { return f.Name == mm[1] }) {
			missing = append(missing, mm[1])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the registry describes metrics that Families does not gather (a labelled collector of a new kind?): %s", strings.Join(missing, ", "))
	}
	return nil
}
