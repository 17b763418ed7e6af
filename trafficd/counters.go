package trafficd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-net/switchyard/schema"
)

// TRAFFIC_GEN_COUNTERS:<port>|<name> fields. Bytes count frames with FCS,
// as size and bit rates do (the peer's `ip -s link` counts 4 bytes less
// per frame: veth carries no FCS).
const (
	CounterPackets    = "packets"    // frames the kernel took
	CounterBytes      = "bytes"      // their bytes with FCS
	CounterDropped    = "dropped"    // frames the device refused (veth: the peer's backlog was full)
	CounterLate       = "late"       // frames never sent: the sender was held up longer than the 1 s bucket (CPU contention)
	CounterPPS        = "pps"        // achieved over the last interval
	CounterBPS        = "bps"        // achieved over the last interval, bit/s with FCS
	CounterAvgPPS     = "avg_pps"    // packets / elapsed
	CounterElapsed    = "elapsed"    // seconds spent sending (resumed across restarts)
	CounterGeneration = "generation" // the generation of the fields these counters are of
)

var counterFields = []string{CounterPackets, CounterBytes, CounterDropped, CounterLate, CounterPPS, CounterBPS,
	CounterAvgPPS, CounterElapsed, CounterGeneration}

// rateSample is the previous counters sample of a stream.
type rateSample struct {
	at             time.Time
	packets, bytes uint64
}

// writeCounters writes every stream's counters; achieved pps/bps are over
// the time since the previous write.
func (c *controller) writeCounters(ctx context.Context) error {
	now := time.Now()
	c.mu.Lock()
	b := c.counters.Batch()
	for key, s := range c.streams {
		p := s.snapshot()
		h := progressHash(p, s.gen)
		prev, ok := c.rates[key]
		if running, _, _ := s.state(); !running {
			h[CounterPPS], h[CounterBPS] = "0", "0"
		} else if ok && now.Sub(prev.at) > 0 {
			dt := now.Sub(prev.at).Seconds()
			h[CounterPPS] = strconv.FormatFloat(float64(p.Packets-prev.packets)/dt, 'f', 1, 64)
			h[CounterBPS] = strconv.FormatFloat(float64(p.Bytes-prev.bytes)*8/dt, 'f', 0, 64)
		}
		c.rates[key] = rateSample{at: now, packets: p.Packets, bytes: p.Bytes}
		b.Set(schema.CountersKey(schema.TrafficGenCountersTable, key), h)
	}
	c.mu.Unlock()
	return b.Flush(ctx)
}

func progressHash(p progress, gen string) schema.Fields {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	h := schema.Fields{
		CounterPackets: u(p.Packets), CounterBytes: u(p.Bytes), CounterDropped: u(p.Dropped), CounterLate: u(p.Late),
		CounterPPS: "0", CounterBPS: "0", CounterAvgPPS: "0",
		CounterElapsed: strconv.FormatFloat(p.Elapsed.Seconds(), 'f', 3, 64), CounterGeneration: gen,
	}
	if p.Elapsed > 0 {
		h[CounterAvgPPS] = strconv.FormatFloat(float64(p.Packets)/p.Elapsed.Seconds(), 'f', 1, 64)
	}
	return h
}

// storeProgress writes a stopped stream's final counters.
func (c *controller) storeProgress(ctx context.Context, key, gen string, p progress) {
	if err := c.counters.Set(ctx, schema.CountersKey(schema.TrafficGenCountersTable, key), progressHash(p, gen)); err != nil {
		c.h.Log.WithError(err).WithField("stream", key).Warn("write counters")
	}
}

// loadProgress reads what a previous run of this generation sent.
func (c *controller) loadProgress(ctx context.Context, key, gen string) (progress, error) {
	h, err := c.h.Redis.DB(schema.CountersDB).HGetAll(ctx, schema.CountersKey(schema.TrafficGenCountersTable, key)).Result()
	if err != nil {
		return progress{}, fmt.Errorf("read counters of %s: %w", key, err)
	}
	if h[CounterGeneration] != gen {
		return progress{}, nil
	}
	u := func(f string) uint64 { v, _ := strconv.ParseUint(h[f], 10, 64); return v }
	secs, _ := strconv.ParseFloat(h[CounterElapsed], 64)
	return progress{Packets: u(CounterPackets), Bytes: u(CounterBytes), Dropped: u(CounterDropped), Late: u(CounterLate),
		Elapsed: time.Duration(secs * float64(time.Second))}, nil
}

// registerMetrics adds trafficd's own metrics (docs/metrics.md).
func registerMetrics(reg prometheus.Registerer, c *controller) {
	if reg == nil {
		return
	}
	sum := func(f func(progress) uint64) func() float64 {
		return func() float64 {
			c.mu.Lock()
			defer c.mu.Unlock()
			var t uint64
			for _, s := range c.streams {
				t += f(s.snapshot())
			}
			return float64(t)
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_trafficd_streams",
			Help: "Streams trafficd knows (running, done or failed)."},
			func() float64 { c.mu.Lock(); defer c.mu.Unlock(); return float64(len(c.streams)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_trafficd_sent_packets",
			Help: "Frames sent by the streams trafficd knows now (a deleted stream's go with it)."},
			sum(func(p progress) uint64 { return p.Packets })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchyard_trafficd_sent_bytes",
			Help: "Bytes (with FCS) sent by the streams trafficd knows now."},
			sum(func(p progress) uint64 { return p.Bytes })),
	)
}
