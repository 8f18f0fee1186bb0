package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

func TestShadowReportReadsTheRecord(t *testing.T) {
	now := time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)
	wl := shadow.Workload{Kind: "Deployment", Namespace: "ns", Name: "vol"}
	row := shadow.Pair(shadow.Decision{Object: shadow.Object{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, Keys: []string{"k"}, At: now.Add(-time.Hour),
		Workloads: []shadow.WorkloadDecision{{Workload: wl, Action: shadow.ActRemount, Pods: 2}}},
		[]shadow.Marker{{At: now.Add(-time.Hour + time.Second), Workload: wl, Strategy: shadow.StrategyEnvVars, Kind: "ConfigMap", EnvObject: "CFG", Pods: 2}}, time.Minute, time.Time{})
	old := row
	old.Time = now.Add(-48 * time.Hour)
	lines, _ := shadow.Lines([]shadow.Row{old, row})
	rec, _ := shadow.Cap("", lines, 1<<20)
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cmsync-shadow", Namespace: "kubectl-cmsync",
		Annotations: map[string]string{shadow.DroppedAnnotation: "5"}}, Data: map[string]string{shadow.RecordKey: rec}})
	for _, output := range []string{"table", "json"} {
		var out bytes.Buffer
		o := &ShadowReportOptions{Connection: Connection{Namespace: "ns", Client: client, Now: func() time.Time { return now }},
			IOStreams: genericiooptions.IOStreams{Out: &out}, Since: 24 * time.Hour, Output: output, RecordNamespace: "kubectl-cmsync", RecordName: "cmsync-shadow"}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if output == "table" {
			for _, want := range []string{"Changes seen: 1.", "Pods spared: 2.", "restarted deployment/vol (env-vars)", "spared", "oldest 5 rows"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, out.String())
				}
			}
			continue
		}
		var r shadow.Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Summary.Changes != 1 || r.Summary.PodsSpared != 2 || r.Items[0].Class != shadow.ClassSpared {
			t.Errorf("json = %s (%v)", out.String(), err)
		}
	}
	o := &ShadowReportOptions{Connection: Connection{Namespace: "ns", Client: fake.NewClientset(), Now: func() time.Time { return now }},
		IOStreams: genericiooptions.IOStreams{Out: &bytes.Buffer{}}, Since: time.Hour, Output: "table", RecordNamespace: "kubectl-cmsync", RecordName: "cmsync-shadow"}
	if err := o.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--shadow") {
		t.Errorf("no record: %v, want an error that names --shadow", err)
	}
}
