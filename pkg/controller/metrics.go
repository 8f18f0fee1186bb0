package controller

import (
	"cmp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/alert"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/reconcile"
	"github.com/kubectl-cmsync/kubectl-cmsync/pkg/shadow"
)

// Metrics are the controller's Prometheus metrics, fed from the loop's
// events (Observe) and the leader election (SetLeader).
type Metrics struct {
	Registry *prometheus.Registry

	changes  *prometheus.CounterVec
	actions  *prometheus.CounterVec
	results  *prometheus.CounterVec
	deferred *prometheus.CounterVec
	windowed *deferrals
	restarts *restartStates
	ignored  prometheus.Counter
	retries  prometheus.Counter
	errors   prometheus.Counter
	latency  prometheus.Histogram
	leader   prometheus.Gauge
	alerts   *prometheus.CounterVec
	queue    *queueMetrics
	shadow   *prometheus.CounterVec
	spared   prometheus.Counter
	doubles  prometheus.Counter
	readers  prometheus.Counter
}

// NewMetrics registers the metrics (and the Go and process collectors) on
// a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_changes_total",
			Help: "Changes of ConfigMaps and Secrets acted on (coalesced edits count once), by kind."}, []string{"kind"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_actions_total",
			Help: "Actions sent, by action (annotate, restart, evict, manual)."}, []string{"action"}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_results_total",
			Help: "How actions ended, by action and outcome (current, applied, unverifiable, timeout, failed, not-applied, dry-run)."},
			[]string{"action", "outcome"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_deferred_total",
			Help: "Restarts held back and tried again, by what held them (window, pause-period, interval, rate, limit, rollout, unreadable); counted once per edit and reason, not at every retry."},
			[]string{"hold"}),
		windowed: newDeferrals(time.Now),
		restarts: newRestartStates(),
		ignored: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_ignored_total",
			Help: "Changes that no selected consumer reads (no action)."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_retries_total",
			Help: "Changes put back after a failure that may pass (API server unavailable, timeout, 429, 5xx), tried again after a backoff."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_errors_total",
			Help: "Errors: rounds and actions failed for good (not tried again until the object changes), failed watches, stuck rollouts."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cmsync_change_to_verified_seconds",
			Help:    "From the first edit of a change to its consumers verified current.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600}}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cmsync_leader",
			Help: "1 while this replica holds the lease and acts, else 0."}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_alerts_total",
			Help: "Alerts (one per round that acted or failed), by format and result: sent, failed (refused, or failing after the last attempt), dropped (a full queue, or shutting down)."},
			[]string{"format", "result"}),
		queue: newQueueMetrics(),
		shadow: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cmsync_shadow_decisions_total",
			Help: "With --shadow: workloads of each change, by what the peer did (a restart strategy, or none) and what cmsync would have done (remount, restart, evict, hook, deferred-window, deferred-pace, deferred, skip, manual, none)."},
			[]string{"peer", "cmsync"}),
		spared: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_shadow_pods_spared_total",
			Help: "With --shadow: pods the peer restarted that cmsync would not have restarted (it would remount them, or the change is of keys no container reads)."}),
		doubles: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_peer_double_restarts_total",
			Help: "Workloads restarted twice for one change: by cmsync and by a peer (Reloader) within --shadow-window of each other. Let one of them act."}),
		readers: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_reader_pod_failures_total",
			Help: "With --reader=node: node reader pods that failed to start (refused, not scheduled, image not pulled, not running in time) or ended during a read; their nodes' containers go unverified."}),
	}
	for _, h := range reconcile.DeferredHolds { // each from 0: a rate over it needs no first deferral
		m.deferred.WithLabelValues(string(h))
	}
	m.Registry.MustRegister(m.collectors()...)
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// collectors are the controller's own metrics, as registered.
func (m *Metrics) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.doubles, m.readers, m.shadow, m.spared, m.changes, m.actions, m.results, m.deferred, m.windowed, m.restarts,
		m.ignored, m.retries, m.errors, m.latency, m.leader, m.alerts}, m.queue.collectors()...)
}

// Shadow counts one row of the shadow's record.
func (m *Metrics) Shadow(r shadow.Row) {
	for _, w := range r.Workloads {
		m.shadow.WithLabelValues(cmp.Or(string(w.Peer), "none"), cmp.Or(string(w.Cmsync), "none")).Inc()
	}
	if len(r.Workloads) == 0 {
		m.shadow.WithLabelValues("none", "none").Inc()
	}
	m.spared.Add(float64(r.Spared))
}

// PeerDoubleRestart counts one workload restarted by cmsync and by a peer
// for one change.
func (m *Metrics) PeerDoubleRestart() { m.doubles.Inc() }

// ReaderPodFailed counts one node reader pod that failed.
func (m *Metrics) ReaderPodFailed() { m.readers.Inc() }

// FollowRestarts has cmsync_restarts read the leader's loop (nil: this
// replica no longer leads).
func (m *Metrics) FollowRestarts(read func() []reconcile.RestartState) { m.restarts.follow(read) }

// Queue is the metrics provider of the loop's namespace queue.
func (m *Metrics) Queue() workqueue.MetricsProvider { return m.queue }

// Handle counts one event of the loop.
func (m *Metrics) Handle(e reconcile.Event) {
	m.windowEnded(e)
	switch e.Kind {
	case reconcile.EventChange:
		if e.Object != nil {
			m.changes.WithLabelValues(e.Object.Kind).Inc()
		}
	case reconcile.EventAction:
		m.actions.WithLabelValues(actionLabel(e)).Inc()
	case reconcile.EventResult:
		m.results.WithLabelValues(actionLabel(e), string(e.Outcome)).Inc()
		if e.SinceChange != nil {
			m.latency.Observe(e.SinceChange.Seconds())
		}
	case reconcile.EventDeferred:
		m.deferred.WithLabelValues(string(e.Hold)).Inc()
		if e.Window != "" && e.Until != nil && e.Action != nil {
			m.windowed.set(e.Action.Target.Namespace, e.Action.Target.String(), *e.Until)
		}
	case reconcile.EventIgnored:
		m.ignored.Inc()
	case reconcile.EventRetry:
		m.retries.Inc()
	case reconcile.EventError:
		m.errors.Inc()
	}
}

// windowEnded forgets a workload's deferral once its restart is sent,
// ended, or given up (an error, a skip), and when another deferral of it
// replaces the window's; one that ends with nothing said (moot when the
// window opens) is gone once the window opens (deferrals.Collect).
func (m *Metrics) windowEnded(e reconcile.Event) {
	t := e.Target
	if e.Action != nil {
		t = &e.Action.Target
	}
	switch {
	case t == nil, e.Kind == reconcile.EventDeferred && e.Window != "":
		return
	case e.Kind == reconcile.EventAction, e.Kind == reconcile.EventResult, e.Kind == reconcile.EventError, e.Kind == reconcile.EventSkip,
		e.Kind == reconcile.EventDeferred:
		m.windowed.forget(t.Namespace, t.String())
	}
}

func actionLabel(e reconcile.Event) string {
	if e.Action == nil {
		return ""
	}
	return string(e.Action.Action)
}

// AlertResult counts how one alert ended.
func (m *Metrics) AlertResult(format string, r alert.Result) {
	m.alerts.WithLabelValues(format, string(r)).Inc()
}

// SetLeader sets cmsync_leader.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
	// a standby has no queue: its last term's gauges say nothing now
	m.queue.depth.Set(0)
	m.queue.unfinished.Set(0)
	m.queue.longest.Set(0)
}
