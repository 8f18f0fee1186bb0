package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// grafanaDashboard.enabled renders a ConfigMap that kube-prometheus-stack's
// Grafana sidecar loads by default (label grafana_dashboard: "1", no
// folder annotation) holding files/dashboard.json, valid JSON, as it is.
func TestDashboardConfigMap(t *testing.T) {
	_, docs := render(t, "--set", "grafanaDashboard.enabled=true")
	cm := get[corev1.ConfigMap](t, docs, "ConfigMap/cmsync-system/kubectl-cmsync-controller-dashboard")
	if cm.Labels["grafana_dashboard"] != "1" || len(cm.Annotations) != 0 {
		t.Errorf("labels %v, annotations %v; want grafana_dashboard: \"1\" and no folder annotation", cm.Labels, cm.Annotations)
	}
	want, err := os.ReadFile(filepath.Join(chart, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := cm.Data["kubectl-cmsync.json"]
	if got+"\n" != string(want) {
		t.Errorf("the ConfigMap's kubectl-cmsync.json differs from files/dashboard.json:\n%s", lineDiff(string(want), got+"\n"))
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []any  `json:"panels"`
	}
	if err := json.Unmarshal([]byte(got), &d); err != nil || d.UID == "" || len(d.Panels) == 0 {
		t.Errorf("the dashboard is not a dashboard's JSON (uid %q, %d panels): %v", d.UID, len(d.Panels), err)
	}
	_, off := render(t)
	for k := range off {
		if k == "ConfigMap/cmsync-system/kubectl-cmsync-controller-dashboard" {
			t.Errorf("a dashboard rendered with grafanaDashboard.enabled false (the default)")
		}
	}
}
