package redisx

import (
	"context"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkCoalescer100k: 100k route keys marked (as a delete burst's
// notifications queue them) then taken in read batches. heap-MB is the
// live heap with all of them queued; ns/op and allocs per key are the
// mark and take.
//
//	go test -run '^$' -bench Coalescer100k -benchmem ./internal/redisx
func BenchmarkCoalescer100k(b *testing.B) {
	const n = 100000
	tables := []string{"PORT", "STATIC_ROUTE"}
	chs := make([]Change, n)
	fulls := make([]string, n)
	for i := range chs {
		fulls[i] = fmt.Sprintf("STATIC_ROUTE|%d.%d.%d.0/24", 30+i/65536, i/256%256, i%256)
		chs[i] = Change{Table: tables[1], Key: fulls[i][len("STATIC_ROUTE|"):]}
	}
	ctx := context.Background()
	var queued float64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var base runtime.MemStats
		if i == 0 {
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&base)
			b.StartTimer()
		}
		co := newCoalescer(tables, "|")
		for j := range chs {
			co.mark(chs[j], fulls[j])
		}
		if i == 0 {
			b.StopTimer()
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			queued = (float64(m.HeapAlloc) - float64(base.HeapAlloc)) / (1 << 20)
			b.StartTimer()
		}
		for taken := 0; taken < n; {
			items, _ := co.take(ctx, readBatch)
			taken += len(items)
		}
	}
	b.ReportMetric(queued, "queued-heap-MB")
}
