package redisx

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
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
