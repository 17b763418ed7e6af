package engine

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// benchCtrl is the cheapest controller: every key is ok at once, so what a
// benchmark measures is the engine's own path.
type benchCtrl struct {
	h    *Handle
	done atomic.Int64
	// first and last reconcile of the current round (unix ns)
	first, last atomic.Int64
}

func (c *benchCtrl) Tables() []string                { return []string{tRoute} }
func (c *benchCtrl) Item(table, key string) string   { return table + "|" + key }
func (c *benchCtrl) Sweep(ctx context.Context) error { return nil }
func (c *benchCtrl) Reconcile(ctx context.Context, item string) error {
	table, key := splitConfigKey(item)
	if e, ok := c.h.Cache.Get(table, key); ok {
		c.h.SetResult(table, key, e.Stamp(schema.OK()), nil)
	} else {
		c.h.DeleteResult(table, key)
	}
	now := time.Now().UnixNano()
	c.first.CompareAndSwap(0, now)
	c.last.Store(now)
	c.done.Add(1)
	return nil
}

func (c *benchCtrl) ReconcileBatch(ctx context.Context, items []string) []error {
	errs := make([]error, len(items))
	for i, it := range items {
		errs[i] = c.Reconcile(ctx, it)
	}
	return errs
}

// rawWriter sends HSETs over a plain connection from a reused buffer, so
// the benchmark's allocations are the engine's (and go-redis's inside it),
// not the writer's.
type rawWriter struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

func newRawWriter(tb testing.TB, srv *testredis.Server) *rawWriter {
	c, err := net.Dial("unix", srv.Socket)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	w := &rawWriter{c: c, r: bufio.NewReader(c)}
	w.send(tb, 1, func(b []byte) []byte { return appendCmd(b, "SELECT", strconv.Itoa(schema.ConfigDB)) })
	return w
}

func appendCmd(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// send writes n commands built by build and reads their n replies.
func (w *rawWriter) send(tb testing.TB, n int, build func([]byte) []byte) {
	w.buf = build(w.buf[:0])
	if _, err := w.c.Write(w.buf); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		line, err := w.r.ReadSlice('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if line[0] == '-' {
			tb.Fatalf("redis: %s", line)
		}
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = append([]float64(nil), v...)
	sort.Float64s(v)
	return v[len(v)/2]
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEnginePath10k: one op is 10,000 CONFIG_DB keys changed in one
// pipeline and carried through the whole engine — keyspace event, HGETALL,
// cache, queue, a controller that finds every key ok, result written to
// STATE_DB. allocs/op and B/op divided by 10,000 are the engine's cost per
// key (the writer reuses one buffer).
func BenchmarkEnginePath10k(b *testing.B) { benchEnginePath(b, 10000) }

// BenchmarkEnginePath1k is the same with a burst of 1,000 keys, and the
// burst's timeline: from the writer's last reply to the first and last
// reconcile, and to every result being in STATE_DB (ms, medians);
// start-first-reconcile-ms is from the pipeline's first byte written.
func BenchmarkEnginePath1k(b *testing.B) { benchEnginePath(b, 1000) }

func benchEnginePath(b *testing.B, n int) {
	srv := testredis.Start(b)
	ctrl := &benchCtrl{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	go func() {
		done <- Run(ctx, Config{Name: "bench", RedisURL: srv.URL(), Log: logrus.NewEntry(l)},
			func(h *Handle) (Controller, error) { ctrl.h = h; return ctrl, nil })
	}()
	defer func() {
		cancel()
		<-done
	}()
	for ctrl.h == nil || !ctrl.h.e.started.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	w := newRawWriter(b, srv)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ROUTE|10.%d.%d.0/24", i/256, i%256)
	}
	var firstMs, lastMs, flushedMs, startFirstMs []float64
	round := func(v int) {
		target := ctrl.done.Load() + int64(n)
		ctrl.first.Store(0)
		via := "192.168.0." + strconv.Itoa(v%250+1)
		start := time.Now()
		w.send(b, n, func(buf []byte) []byte {
			for _, k := range keys {
				buf = appendCmd(buf, "HSET", k, "nexthop", via, "ifname", "eth0")
			}
			return buf
		})
		sent := time.Now()
		for ctrl.done.Load() < target {
			time.Sleep(100 * time.Microsecond)
		}
		for !ctrl.h.e.res.flushed() {
			time.Sleep(100 * time.Microsecond)
		}
		ms := func(ns int64) float64 { return float64(ns-sent.UnixNano()) / 1e6 }
		firstMs, lastMs = append(firstMs, ms(ctrl.first.Load())), append(lastMs, ms(ctrl.last.Load()))
		flushedMs = append(flushedMs, ms(time.Now().UnixNano()))
		startFirstMs = append(startFirstMs, float64(ctrl.first.Load()-start.UnixNano())/1e6)
	}
	round(0) // new keys: the maps grow once, outside the measurement
	b.ReportAllocs()
	b.ResetTimer()
	firstMs, lastMs, flushedMs, startFirstMs = firstMs[:0], lastMs[:0], flushedMs[:0], startFirstMs[:0]
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		round(i + 1)
	}
	b.StopTimer()
	// The process's CPU (the engine, go-redis, GC; not redis-server):
	// steadier than wall time on a shared host.
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(n*b.N), "cpu-ns/key")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/key")
	if n <= 1000 {
		b.ReportMetric(median(firstMs[1:]), "first-reconcile-ms")
		b.ReportMetric(median(lastMs[1:]), "last-reconcile-ms")
		b.ReportMetric(median(flushedMs[1:]), "flushed-ms")
		// From the pipeline's first byte written, not its last reply.
		b.ReportMetric(median(startFirstMs[1:]), "start-first-reconcile-ms")
	}
}
