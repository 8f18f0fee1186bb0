package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// deferrals is cmsync_restart_window_deferred_until_seconds: the restarts
// waiting for their workload's restart window, each with when it opens. A
// deferral ends however it ends: its restart sent, given up, or moot when
// the window opens (the pods replaced meanwhile, so nothing is sent and
// nothing is said), so an entry whose window has opened is never shown
// and is forgotten at the next scrape.
type deferrals struct {
	desc *prometheus.Desc
	now  func() time.Time
	mu   sync.Mutex
	// until: when the window opens, by namespace and workload
	until map[[2]string]time.Time
}

func newDeferrals(now func() time.Time) *deferrals {
	return &deferrals{now: now, until: map[[2]string]time.Time{},
		desc: prometheus.NewDesc("cmsync_restart_window_deferred_until_seconds",
			"Restarts waiting for their workload's restart window (kubectl-cmsync.io/restart-window): when the window opens, in seconds since the epoch, by workload.",
			[]string{"namespace", "workload"}, nil)}
}

func (d *deferrals) set(ns, workload string, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.until[[2]string{ns, workload}] = until
}

func (d *deferrals) forget(ns, workload string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.until, [2]string{ns, workload})
}

// Describe implements prometheus.Collector.
func (d *deferrals) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector: the deferrals whose window has
// not opened yet.
func (d *deferrals) Collect(ch chan<- prometheus.Metric) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, until := range d.until {
		if !until.After(now) {
			delete(d.until, k)
			continue
		}
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(until.Unix()), k[0], k[1])
	}
}
