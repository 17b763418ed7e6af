package workqueue

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkBurst100k: a 100k-key burst as the engine drives it — the
// consumer adds keys 256 at a time, the worker takes batches of 256 and
// finishes them — the two sides alternating on one goroutine so each
// side's time is its own: adder-ns/key and worker-ns/key (the worker's
// is on the reconcile path).
//
//	go test -run '^$' -bench Burst100k -benchtime 20x ./internal/workqueue
func BenchmarkBurst100k(b *testing.B) {
	const n, batch = 100000, 256
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("STATIC_ROUTE|10.%d.%d.0/24", i/256, i%256)
	}
	ctx := context.Background()
	var add, work time.Duration
	buf := make([]string, 0, batch)
	for i := 0; i < b.N; i++ {
		q := New(Options{})
		// The consumer runs ahead: half the burst is queued before the
		// worker starts, then they alternate.
		next := 0
		t0 := time.Now()
		for ; next < n/2; next += batch {
			q.AddAll(keys[next:min(next+batch, n)])
		}
		add += time.Since(t0)
		for done := 0; done < n; {
			t1 := time.Now()
			got, _ := q.GetBatch(ctx, buf[:0], batch)
			q.DoneAll(got)
			done += len(got)
			work += time.Since(t1)
			if next < n {
				t2 := time.Now()
				q.AddAll(keys[next:min(next+batch, n)])
				next += batch
				add += time.Since(t2)
			}
		}
		q.ShutDown()
	}
	b.ReportMetric(float64(add.Nanoseconds())/float64(b.N*n), "adder-ns/key")
	b.ReportMetric(float64(work.Nanoseconds())/float64(b.N*n), "worker-ns/key")
}
