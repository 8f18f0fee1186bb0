package controller

import (
	"testing"
	"time"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/refresh"
)

// gauge is the value of the series of gauge name with exactly labels
// (-1: no such series).
func gauge(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
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
			return mt.GetGauge().GetValue()
		}
	}
	return -1
}

// TestRestartsGaugeCountsTheLeadersRestartsByState: every state (and
// hold) is a series at 0 before a loop leads; the leader's restarts
// counted by state and hold while it leads; 0 again once it stops.
func TestRestartsGaugeCountsTheLeadersRestartsByState(t *testing.T) {
	m := NewMetrics()
	series := []map[string]string{{"state": "sending"}, {"state": "rolling"}, {"state": "failed"}, {"state": "held", "hold": "limit"}, {"state": "held", "hold": "window"}}
	for _, s := range series {
		if got := gauge(t, m, "cmsync_restarts", s); got != 0 {
			t.Errorf("%v before a loop leads: %v, want 0", s, got)
		}
	}
	target := func(name string) refresh.Target {
		return refresh.Target{Kind: "Deployment", Namespace: "ns", Name: name}
	}
	now := time.Now()
	m.FollowRestarts(func() []reconcile.RestartState {
		return []reconcile.RestartState{
			{Target: target("a"), State: "held", Hold: reconcile.HoldLimit, Since: now},
			{Target: target("b"), State: "held", Hold: reconcile.HoldLimit, Since: now},
			{Target: target("b"), State: "rolling", Since: now},
			{Target: target("c"), State: "failed", Since: now},
		}
	})
	want := []float64{0, 1, 1, 2, 0}
	for i, s := range series {
		if got := gauge(t, m, "cmsync_restarts", s); got != want[i] {
			t.Errorf("%v while leading: %v, want %v", s, got, want[i])
		}
	}
	m.FollowRestarts(nil)
	if got := gauge(t, m, "cmsync_restarts", map[string]string{"state": "held", "hold": "limit"}); got != 0 {
		t.Errorf("held for the limit once no longer leading: %v, want 0", got)
	}
}
