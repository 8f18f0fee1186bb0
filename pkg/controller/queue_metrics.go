package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// queueMetrics are the metrics of the loop's namespace queue (client-go's
// workqueue): how many namespaces wait, how long they wait, how long a
// round takes, and how long the rounds under way have run (a namespace
// stuck on a slow rollout shows there). One queue per leader term; the
// metrics outlive it.
type queueMetrics struct {
	depth      prometheus.Gauge
	adds       prometheus.Counter
	wait       prometheus.Histogram
	round      prometheus.Histogram
	unfinished prometheus.Gauge
	longest    prometheus.Gauge
	retries    prometheus.Counter
}

func newQueueMetrics() *queueMetrics {
	buckets := []float64{0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600}
	return &queueMetrics{
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cmsync_queue_depth",
			Help: "Namespaces whose changes are due and wait for a worker."}),
		adds: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_queue_adds_total",
			Help: "Namespaces handed to the workers (a namespace queued twice before a worker took it counts twice)."}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cmsync_queue_wait_seconds",
			Help: "How long a due namespace waited for a worker.", Buckets: buckets}),
		round: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cmsync_round_duration_seconds",
			Help: "How long a round (one namespace's due changes: read, plan, act, wait, record) took.", Buckets: buckets}),
		unfinished: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cmsync_rounds_unfinished_seconds",
			Help: "The time the rounds under way have run so far, added up: a value that grows while the changes go on says a round is stuck."}),
		longest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cmsync_round_longest_running_seconds",
			Help: "How long the longest round under way has run."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "cmsync_queue_retries_total",
			Help: "Namespaces the queue itself handed out again after a backoff (the loop's retries are cmsync_retries_total)."}),
	}
}

func (q *queueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.depth, q.adds, q.wait, q.round, q.unfinished, q.longest, q.retries}
}

// The workqueue.MetricsProvider of the loop's queue, whatever its name.
func (q *queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric            { return q.depth }
func (q *queueMetrics) NewAddsMetric(string) workqueue.CounterMetric           { return q.adds }
func (q *queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric      { return q.wait }
func (q *queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric { return q.round }
func (q *queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.unfinished
}
func (q *queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.longest
}
func (q *queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return q.retries }
