package daemon

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// ReturnMemory gives memory back to the system after a burst, until ctx is
// done. Go's collector only runs when the program allocates, so after a
// burst (a barrage of huge invalid values, 100k routes deleted) an idle
// daemon would keep its peak heap — and its RSS — for good. Every interval,
// once more than max(16 MiB, the live heap) was allocated since the last
// time, it collects and returns free memory (debug.FreeOSMemory): a steady
// daemon pays next to nothing (a small heap's collection every few tens of
// seconds at most), a daemon after a burst is back near its live size
// within one interval. The interval after such a return that does not
// call for one returns once more: a burst's tail (the last deletes of a
// barrage, dropped references) frees memory without allocating much, and
// the runtime would otherwise keep up to a heap goal's worth of it.
// Under a heap floor (--heap-min-mib) a burst is anything over max(1 MiB,
// half the live heap): the floor lets garbage pile up to it uncollected,
// and the runtime's scavenger keeps pages up to the heap goal, so without
// a return the floor would show in an idle daemon's RSS.
func ReturnMemory(ctx context.Context, interval time.Duration) {
	sample := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	read := func() (allocs, live uint64) {
		metrics.Read(sample)
		return sample[0].Value.Uint64(), sample[1].Value.Uint64()
	}
	last, _ := read()
	tail := false
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		allocs, live := read()
		var ret bool
		if ret, tail = returnNow(allocs-last, live, heapMin.Load() != 0, tail); ret {
			debug.FreeOSMemory()
			last, _ = read()
		}
	}
}

// returnNow says whether to return memory now, given the bytes allocated
// since the last return, the live heap, whether a heap floor is set and
// whether the last interval returned after a burst (tail), and the tail
// state for the next interval.
func returnNow(allocated, live uint64, floor, tail bool) (ret, nextTail bool) {
	least := uint64(4 << 20)
	if floor {
		least = 1 << 20
	}
	if allocated > max(least, live/2) {
		return true, true // a burst: return, and once more when it is over
	}
	return tail, false
}
