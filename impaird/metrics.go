package impaird

import (
	"github.com/prometheus/client_golang/prometheus"
)

// impairment counters as Prometheus metrics: read from the per-CPU maps at
// scrape time (the same numbers COUNTERS_DB IMPAIRMENT_COUNTERS holds).
var (
	descPackets = prometheus.NewDesc("switchyard_impairment_packets_total",
		"Packets seen by a port's impairment program, by port, rule (\"\" = the port's profile and unmatched traffic) and outcome (rx, passed, dropped_loss, dropped_rate, corrupted).",
		[]string{"port", "rule", "outcome"}, nil)
	descBytes = prometheus.NewDesc("switchyard_impairment_rx_bytes_total",
		"Bytes received by a port's impairment program, by port and rule.", []string{"port", "rule"}, nil)
)

type collector struct{ d *daemon }

func registerMetrics(reg prometheus.Registerer, d *daemon) {
	if reg != nil {
		reg.MustRegister(collector{d})
	}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPackets
	ch <- descBytes
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	for port, p := range c.d.ports {
		cs, err := p.Counters()
		if err != nil {
			continue
		}
		for rule, v := range cs {
			for outcome, n := range map[string]uint64{"rx": v.RxPackets, "passed": v.Passed,
				"dropped_loss": v.DroppedLoss, "dropped_rate": v.DroppedRate, "corrupted": v.Corrupted,
				"duplicated": v.Duplicated} {
				ch <- prometheus.MustNewConstMetric(descPackets, prometheus.CounterValue, float64(n), port, rule, outcome)
			}
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(v.RxBytes), port, rule)
		}
	}
}
