package controller

import (
	"testing"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// gathered is the value of a counter of the registry with the given labels.
func gathered(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	return 0
}

func TestShadowMetrics(t *testing.T) {
	m := NewMetrics()
	m.Shadow(shadow.Row{Spared: 3, Workloads: []shadow.WorkloadRow{
		{Peer: shadow.StrategyEnvVars, Cmsync: shadow.ActRemount},
		{Cmsync: shadow.ActRestart},
	}})
	if got := gathered(t, m, "cmsync_shadow_decisions_total", map[string]string{"peer": "env-vars", "cmsync": "remount"}); got != 1 {
		t.Errorf("env-vars/remount = %v, want 1", got)
	}
	if got := gathered(t, m, "cmsync_shadow_decisions_total", map[string]string{"peer": "none", "cmsync": "restart"}); got != 1 {
		t.Errorf("none/restart = %v, want 1", got)
	}
	if got := gathered(t, m, "cmsync_shadow_pods_spared_total", nil); got != 3 {
		t.Errorf("pods spared = %v, want 3", got)
	}
}

func TestPeerDoubleRestartMetric(t *testing.T) {
	m := NewMetrics()
	m.PeerDoubleRestart()
	m.PeerDoubleRestart()
	if got := gathered(t, m, "cmsync_peer_double_restarts_total", nil); got != 2 {
		t.Errorf("double restarts = %v, want 2", got)
	}
}
