package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
)

// restartStates is cmsync_restarts: the restarts the leader's loop owes
// (held, with what holds them; failed, waiting for their retry) and has
// under way (sending; rolling, counted against --max-concurrent-restarts),
// read from the loop at each scrape. Every state (and hold) is there from
// the start, at 0, and stays 0 on a replica that does not lead.
type restartStates struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	read func() []reconcile.RestartState // nil: not leading
}

func newRestartStates() *restartStates {
	return &restartStates{desc: prometheus.NewDesc("cmsync_restarts",
		"Restarts owed (held, by what holds them; failed, waiting for their retry) and under way (sending; rolling, until their rollout completes), now, in every namespace.",
		[]string{"state", "hold"}, nil)}
}

// follow reads the loop's restarts from now on (nil: none).
func (r *restartStates) follow(read func() []reconcile.RestartState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read = read
}

// Describe implements prometheus.Collector.
func (r *restartStates) Describe(ch chan<- *prometheus.Desc) { ch <- r.desc }

// Collect implements prometheus.Collector.
func (r *restartStates) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]int{{"sending", ""}: 0, {"rolling", ""}: 0, {"failed", ""}: 0}
	for _, h := range reconcile.DeferredHolds {
		counts[[2]string{"held", string(h)}] = 0
	}
	r.mu.Lock()
	read := r.read
	r.mu.Unlock()
	if read != nil {
		for _, s := range read() {
			counts[[2]string{s.State, string(s.Hold)}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(r.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
