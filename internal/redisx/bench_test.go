package redisx

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkWatcherDelivery10k: 10,000 new keys written in one pipeline,
// timed until Events has delivered every one (metric keys/s).
func BenchmarkWatcherDelivery10k(b *testing.B) {
	_, c := startRedis(b)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var synced, delivered atomic.Int64
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"FDB"}, OnSync: func(context.Context) { synced.Add(1) }})
	ch := w.Events(ctx)
	go func() {
		for range ch {
			delivered.Add(1)
		}
	}()
	eventually(b, "first sync", func() bool { return synced.Load() > 0 })
	const n = 10000
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		target := delivered.Load() + n
		pipe := db.Pipeline()
		for j := 0; j < n; j++ {
			pipe.HSet(ctx, fmt.Sprintf("FDB|Vlan%d|00:00:00:00:%02x:%02x", i, j/256, j%256), "port", "Ethernet0")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		eventually(b, "10k delivered", func() bool { return delivered.Load() >= target })
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "keys/s")
}

func benchStateWriter(b *testing.B, batched bool) {
	_, c := startRedis(b)
	db := c.DB(6)
	ctx := context.Background()
	const n = 10000
	keys := make([]string, n)
	for j := range keys {
		keys[j] = fmt.Sprintf("FDB_TABLE|Vlan100:00:00:00:00:%02x:%02x", j/256, j%256)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := NewStateWriter(db, []string{"port", "type"})
		f := map[string]string{"port": fmt.Sprintf("Ethernet%d", i), "type": "dynamic"}
		if batched {
			bt := w.Batch()
			for _, k := range keys {
				bt.Set(k, f)
			}
			if err := bt.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			continue
		}
		for _, k := range keys {
			if err := w.Set(ctx, k, f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sets/s")
}

// BenchmarkStateWriter10kBatch: 10,000 Sets of new keys in one Batch.
func BenchmarkStateWriter10kBatch(b *testing.B) { benchStateWriter(b, true) }

// BenchmarkStateWriter10kSingle: the same, one round trip per Set.
func BenchmarkStateWriter10kSingle(b *testing.B) { benchStateWriter(b, false) }

// redisCPU is redis-server's CPU time so far (INFO cpu).
func redisCPU(b *testing.B, c *redis.Client) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, l := range splitLines(info) {
		k, v, _ := strings.Cut(l, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			x, _ := strconv.ParseFloat(v, 64)
			total += x
		}
	}
	return time.Duration(total * float64(time.Second))
}

// BenchmarkStateWriterResults10k: the engine's results: a compact writer
// of state/reason/warning/generation rewriting 10,000 keys' state and
// generation per iteration (one Flush per 256, as the engine's batches).
// Reports redis-server's CPU per key (redis-us/key) beside the client's
// time and allocations.
func BenchmarkStateWriterResults10k(b *testing.B) {
	_, c := startRedis(b)
	db := c.DB(6)
	ctx := context.Background()
	const n = 10000
	keys := make([]string, n)
	for j := range keys {
		keys[j] = fmt.Sprintf("STATIC_ROUTE_TABLE|10.%d.%d.0/24", j/256, j%256)
	}
	w := NewStateWriter(db, []string{"state", "reason", "warning", "generation"})
	w.Compact()
	if err := w.Load(ctx, "STATIC_ROUTE_TABLE|*"); err != nil {
		b.Fatal(err)
	}
	bt := w.Batch()
	var redis0 time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	redis0 = redisCPU(b, db)
	for i := 0; i < b.N; i++ {
		f := map[string]string{"state": "ok", "generation": fmt.Sprintf("%016x", i)}
		for j, k := range keys {
			bt.Set(k, f)
			if j%256 == 255 || j == n-1 {
				if err := bt.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((redisCPU(b, db)-redis0).Nanoseconds())/1000/float64(n*b.N), "redis-us/key")
}
