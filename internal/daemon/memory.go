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
// within one interval.
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
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		allocs, live := read()
		if allocs-last > max(4<<20, live/2) {
			debug.FreeOSMemory()
			last, _ = read()
		}
	}
}
