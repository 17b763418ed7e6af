package redisx

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/redis/go-redis/v9"
)

// goRedisRead is Watcher.read as it was before its own connection (a
// go-redis Pipeline of HGETALLs), kept as BenchmarkWatcherRead's
// reference.
func goRedisRead(ctx context.Context, c *redis.Client, items []item) ([]Event, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(items))
	for i, it := range items {
		cmds[i] = pipe.HGetAll(ctx, it.full)
	}
	_, _ = pipe.Exec(ctx)
	events := make([]Event, len(items))
	for i, it := range items {
		h, err := cmds[i].Result()
		if err != nil {
			return nil, err
		}
		ch := it.change([]string{"STATIC_ROUTE"}, 1)
		ev := Event{Table: ch.Table, Key: ch.Key}
		if len(h) == 0 {
			ev.Deleted = true
		} else {
			delete(h, NullField)
			ev.Fields = h
		}
		events[i] = ev
	}
	return events, nil
}

// BenchmarkWatcherRead: the Watcher's read of 10,000 changed route keys
// (two fields each, as a static route's nexthop and ifname) in batches of
// 512, with go-redis' Pipeline (the reference) and with the watcher's own
// connection and reply reader. allocs/key, B/key and cpu-ns/key (this
// process's CPU, which moves less with the host's load than ns/op) are
// per key read.
func BenchmarkWatcherRead(b *testing.B) {
	for _, reader := range []string{"goredis", "raw"} {
		b.Run(reader, func(b *testing.B) {
			_, cn := startRedis(b)
			c := cn.DB(4)
			ctx := context.Background()
			const n = 10000
			items := make([]item, n)
			pipe := c.Pipeline()
			for j := range items {
				k := fmt.Sprintf("10.%d.%d.0/24", j/256, j%256)
				items[j] = item{full: "STATIC_ROUTE|" + k, table: 1}
				pipe.HSet(ctx, items[j].full, "nexthop", "10.0.0.2", "ifname", "Ethernet0")
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			w := NewWatcher(c, WatchOptions{DB: 4, Tables: []string{"STATIC_ROUTE"}})
			defer w.closeReadConn()
			read := func(batch []item) ([]Event, error) { return w.read(ctx, batch) }
			if reader == "goredis" {
				read = func(batch []item) ([]Event, error) { return goRedisRead(ctx, c, batch) }
			}
			if _, err := read(items[:1]); err != nil { // dial outside the timing
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			t0 := processCPU()
			for i := 0; i < b.N; i++ {
				for j := 0; j < n; j += readBatch {
					evs, err := read(items[j:min(j+readBatch, n)])
					if err != nil {
						b.Fatal(err)
					}
					if evs[0].Fields["ifname"] != "Ethernet0" {
						b.Fatalf("read %+v", evs[0])
					}
				}
			}
			cpu := processCPU() - t0
			b.StopTimer()
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n*b.N), "allocs/key")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n*b.N), "B/key")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/key")
		})
	}
}
