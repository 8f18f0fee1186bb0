package controller

import (
	"slices"
	"strings"
	"testing"
)

func TestReaderPodFailureMetric(t *testing.T) {
	m := NewMetrics()
	if got := gathered(t, m, "cmsync_reader_pod_failures_total", nil); got != 0 {
		t.Errorf("reader pod failures at start = %v, want 0", got)
	}
	m.ReaderPodFailed()
	if got := gathered(t, m, "cmsync_reader_pod_failures_total", nil); got != 1 {
		t.Errorf("reader pod failures = %v, want 1", got)
	}
}

// Families names every family of the registry with its type and labels,
// the labelled ones (which export nothing before their first series) too.
func TestFamilies(t *testing.T) {
	fams, err := Families()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Family{}
	for _, f := range fams {
		byName[f.Name] = f
	}
	want := map[string]string{
		"cmsync_results_total":                         "counter action,outcome",
		"cmsync_change_to_verified_seconds":            "histogram ",
		"cmsync_leader":                                "gauge ",
		"cmsync_restart_window_deferred_until_seconds": "gauge namespace,workload",
		"cmsync_shadow_decisions_total":                "counter cmsync,peer",
		"cmsync_reader_pod_failures_total":             "counter ",
		"cmsync_queue_wait_seconds":                    "histogram ",
		"process_resident_memory_bytes":                "gauge ",
	}
	for name, w := range want {
		f, ok := byName[name]
		if got := f.Type + " " + strings.Join(f.Labels, ","); !ok || got != w {
			t.Errorf("%s: %q (listed: %v), want %q", name, got, ok, w)
		}
	}
	for _, c := range NewMetrics().collectors() {
		if name, _ := descOf(c); byName[name].Type == "" {
			t.Errorf("%s: registered, not in Families", name)
		}
	}
	if !slices.IsSortedFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("Families are not sorted by name")
	}
}
