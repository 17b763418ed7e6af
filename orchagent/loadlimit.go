package orchagent

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// loadLimitInterval is how often the soft memory limit follows the live heap.
const loadLimitInterval = 50 * time.Millisecond

// loadLimitMax ends the limit when the first pass never drains (a key
// retried for good): a daemon does not run under it for its life.
const loadLimitMax = 2 * time.Minute

// loadHeadroom is the heap the load may grow past what was live at the
// last collection: a quarter of it, at least 16 MiB (small heaps keep
// GOGC's own target, which is lower).
func loadHeadroom(live uint64) uint64 { return max(live/4, 16<<20) }

// limitWhileLoading keeps the heap near what is live while a start over a
// full kernel and CONFIG_DB loads (until stop): a soft memory limit
// (debug.SetMemoryLimit) of the runtime's non-heap memory, the live heap
// and loadHeadroom, followed every loadLimitInterval. With GOGC alone the
// heap of a restart over 100k routes grew to twice its live size, and the
// runtime keeps metadata sized by that peak for good: after the routes are
// deleted the process stayed ~5 MB above idle (docs/performance.md). An
// operator's GOMEMLIMIT is left alone; stop (or loadLimitMax) lifts it.
func limitWhileLoading() (stop func()) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	follow := func() {
		metrics.Read(s)
		live, total := s[0].Value.Uint64(), s[1].Value.Uint64()
		heap := s[2].Value.Uint64() + s[3].Value.Uint64() + s[4].Value.Uint64() + s[5].Value.Uint64()
		debug.SetMemoryLimit(int64(total - min(heap, total) + live + loadHeadroom(live)))
	}
	follow()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer debug.SetMemoryLimit(math.MaxInt64)
		t := time.NewTicker(loadLimitInterval)
		defer t.Stop()
		end := time.NewTimer(loadLimitMax)
		defer end.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-end.C:
				return
			case <-t.C:
				follow()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
