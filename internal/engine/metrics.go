package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	smetrics "github.com/switchyard-net/switchyard/internal/metrics"
)

// metrics are the engine's Prometheus metrics (docs/metrics.md). A nil
// *metrics records nothing (unit tests).
type metrics struct {
	reconciles *prometheus.CounterVec   // by table, outcome
	latency    *prometheus.HistogramVec // by table
	queueDepth prometheus.GaugeFunc
	retries    prometheus.Counter
	badKeys    prometheus.Counter
	resyncs    prometheus.Counter
	lost       prometheus.Counter
	batches    *prometheus.CounterVec // by outcome
	batchKeys  prometheus.Counter
	sweeps     *prometheus.CounterVec // by outcome
	cachedKeys *prometheus.GaugeVec   // by table

	childMu  sync.Mutex
	children map[[2]string]reconcileMetrics // by table, outcome (reconcileChild)
}

func newMetrics(reg prometheus.Registerer, depth func() float64) *metrics {
	if reg == nil {
		return nil
	}
	ns := smetrics.Namespace
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "reconciles_total",
			Help: "Reconciles of work items, by CONFIG_DB table and outcome (ok, retry, requeue)."}, []string{"table", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "engine", Name: "reconcile_seconds",
			Help: "Time one reconcile (or one batch) took, by CONFIG_DB table.", Buckets: prometheus.ExponentialBuckets(25e-6, 4, 10)}, []string{"table"}),
		queueDepth: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: "engine", Name: "queue_depth",
			Help: "Work items ready to be reconciled."}, depth),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "retries_total",
			Help: "Work items re-queued with backoff after a transient error."}),
		badKeys: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "bad_keys_total",
			Help: "CONFIG_DB keys refused before reaching the controller (wrong Redis type, oversized)."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "watcher_resyncs_total",
			Help: "Full scans of CONFIG_DB (start, reconnect, Redis restart)."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "state_rewrites_total",
			Help: "Times every result was rewritten because STATE_DB was emptied or Redis restarted."}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "state_write_batches_total",
			Help: "STATE_DB result write batches (one MULTI/EXEC each), by outcome."}, []string{"outcome"}),
		batchKeys: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "state_write_keys_total",
			Help: "Result keys sent in STATE_DB write batches."}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "engine", Name: "sweeps_total",
			Help: "Sweeps of stale owned kernel objects, by outcome."}, []string{"outcome"}),
		cachedKeys: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "engine", Name: "config_keys",
			Help: "CONFIG_DB keys in the cache, by table."}, []string{"table"}),
	}
	reg.MustRegister(m.reconciles, m.latency, m.queueDepth, m.retries, m.badKeys, m.resyncs, m.lost,
		m.batches, m.batchKeys, m.sweeps, m.cachedKeys)
	return m
}

func (m *metrics) reconciled(table, outcome string, seconds float64) {
	if m == nil {
		return
	}
	c := m.reconcileChild(table, outcome)
	c.count.Inc()
	c.latency.Observe(seconds)
	if outcome == "retry" {
		m.retries.Inc()
	}
}

// reconciledAll is reconciled(tableOf(item), "ok", seconds) of every
// item, the children looked up once per run of items of one table.
func (m *metrics) reconciledAll(items []string, seconds float64, tableOf func(string) string) {
	if m == nil {
		return
	}
	var (
		c    reconcileMetrics
		last string // the table of the run so far
		n    int
	)
	for _, it := range items {
		// An item of the run's table needs no look-up of its own.
		if n == 0 || len(it) <= len(last) || it[len(last)] != '|' || it[:len(last)] != last {
			if n > 0 {
				c.count.Add(float64(n))
			}
			last, n = tableOf(it), 0
			c = m.reconcileChild(last, "ok")
		}
		n++
		c.latency.Observe(seconds)
	}
	c.count.Add(float64(n))
}

// reconcileMetrics are the children of reconciles and latency for one
// table and outcome.
type reconcileMetrics struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// reconcileChild returns (and keeps) the children for table and outcome:
// WithLabelValues hashes the labels and looks them up on every call, two
// per reconciled key of a burst. table is one of a few.
func (m *metrics) reconcileChild(table, outcome string) reconcileMetrics {
	k := [2]string{table, outcome}
	m.childMu.Lock()
	defer m.childMu.Unlock()
	c, ok := m.children[k]
	if !ok {
		c = reconcileMetrics{m.reconciles.WithLabelValues(table, outcome), m.latency.WithLabelValues(table)}
		if m.children == nil {
			m.children = map[[2]string]reconcileMetrics{}
		}
		m.children[k] = c
	}
	return c
}

func (m *metrics) resultBatch(keys int, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.batches.WithLabelValues(outcome).Inc()
	m.batchKeys.Add(float64(keys))
}

// inc increments the counter pick chooses (nothing on a nil *metrics).
func (m *metrics) inc(pick func(*metrics) prometheus.Counter) {
	if m != nil {
		pick(m).Inc()
	}
}

func lostC(m *metrics) prometheus.Counter    { return m.lost }
func resyncsC(m *metrics) prometheus.Counter { return m.resyncs }
func badKeysC(m *metrics) prometheus.Counter { return m.badKeys }

func (m *metrics) swept(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.sweeps.WithLabelValues("error").Inc()
	} else {
		m.sweeps.WithLabelValues("ok").Inc()
	}
}

func (m *metrics) keys(table string, n int) {
	if m != nil {
		m.cachedKeys.WithLabelValues(table).Set(float64(n))
	}
}
