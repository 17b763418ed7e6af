package daemon

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// DefaultHeapMinMiB is --heap-min-mib's default where Flags.HeapFloor
// is set (orchagent; elsewhere 0, off): the heap goal's floor, in MiB.
// The collector's own goal for an idle orchagent is 4-6 MB (2-3 MB live,
// GOGC 100), so a burst of a thousand addresses or ten thousand routes (a
// few MB of engine, Redis and result garbage) took 1-4 collections, each
// marking the whole live heap and every goroutine's stack: ~15-20% of
// orchagent's CPU in a 1k-address burst. Under a 32 MiB floor a fresh
// orchagent runs the 1k-address and 10k-route bursts with no collection
// (8: none at 1k, 2 at 10k; 16: 1 at 10k; docs/performance.md, "Bulk
// paths and scale", gcfloor). It costs memory mostly while garbage is
// there to collect: a live heap above the floor runs under --gc-percent
// alone (the 100k rows do not move), and ReturnMemory collects and returns
// the free pages within an interval or two of a burst (sooner under a
// floor). Measured: an idle orchagent holds ~1.4 MB more RSS 6 s after
// its start, and the same after a 100k-route delete.
const DefaultHeapMinMiB = 32

var (
	// heapMin is the heap goal's floor in bytes (0 = none); set by
	// --heap-min-mib, read by the collection hook.
	heapMin atomic.Uint64
	// gcBase is the collector's target percent as --gc-percent (or
	// $GOGC) set it, which the floor raises for a small heap.
	gcBase atomic.Int64
	// heapMinHookOn is whether floorHeap's collection hook is armed.
	heapMinHookOn atomic.Bool
)

// setGCBase sets the collector's target percent (--gc-percent): as is,
// or raised by the heap floor when one is set.
func setGCBase(v int) {
	gcBase.Store(int64(v))
	if heapMin.Load() != 0 {
		floorHeap()
		return
	}
	debug.SetGCPercent(v)
}

// setHeapMin sets the heap goal's floor to mib MiB (≤ 0 = off: the
// collector's target as --gc-percent says) and arms the collection hook.
func setHeapMin(mib int) {
	heapMin.Store(uint64(max(mib, 0)) << 20)
	if mib <= 0 {
		debug.SetGCPercent(int(gcBase.Load()))
		return
	}
	floorHeap()
	if heapMinHookOn.CompareAndSwap(false, true) {
		onEveryGC(floorHeap)
	}
}

// heapMinSamples are what floorHeap reads after each collection: the
// live heap and the roots the pacer adds to it (goroutine stacks, globals).
var heapMinSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/scan/stack:bytes"},
	{Name: "/gc/scan/globals:bytes"},
}

// runtimeHeapMinimum is the Go runtime's heap goal at GOGC=100 when the
// live heap is smaller (runtime.defaultHeapMinimum, 4 MiB): the pacer's
// goal is max(live + (live+stacks+globals)×GOGC/100, 4 MiB×GOGC/100).
const runtimeHeapMinimum = 4 << 20

// floorHeap sets the collector's target percent after each collection so
// the next one comes when the heap reaches max(live×(1+gc-percent/100),
// the floor): a small live heap (orchagent idle holds ~3 MB) is not
// collected one to three times in a burst of a thousand keys, each time
// marking the whole live heap and the goroutine stacks for a few MB of
// garbage (docs/performance.md, addr6); a large one (100k routes) runs
// under --gc-percent alone, so its peak — whose runtime metadata stays
// for good — does not move. A memory limit (--heap-headroom-mib,
// $GOMEMLIMIT) still bounds the goal. Returns false, disarming the hook,
// once the floor is off.
func floorHeap() bool {
	floor, base := heapMin.Load(), gcBase.Load()
	if floor == 0 {
		heapMinHookOn.Store(false)
		debug.SetGCPercent(int(base))
		// Switched on again meanwhile: stay armed.
		return heapMin.Load() != 0 && heapMinHookOn.CompareAndSwap(false, true)
	}
	if base < 0 {
		debug.SetGCPercent(int(base)) // collection off: nothing to raise
		return true
	}
	metrics.Read(heapMinSamples)
	live := heapMinSamples[0].Value.Uint64() // before the first collection: 0
	roots := live + heapMinSamples[1].Value.Uint64() + heapMinSamples[2].Value.Uint64()
	debug.SetGCPercent(int(floorPercent(floor, live, roots, base)))
	return true
}

// floorPercent is the target percent whose heap goal is the floor (bytes)
// when base's goal is below it: the largest percent for which neither of
// the pacer's two terms passes the floor. The runtime's minimum, 4 MiB ×
// percent/100, binds a live heap under 4 MiB (and, live = 0, before the
// first collection): a percent from the live heap alone put the goal
// there at 4 MiB/live times the floor (60 MiB for a floor of 16 at 1 MiB
// live), as the first version of this hook did.
func floorPercent(floor, live, roots uint64, base int64) int64 {
	if live+roots*uint64(base)/100 >= floor || runtimeHeapMinimum*uint64(base)/100 >= floor {
		return base // --gc-percent's goal is at or above the floor
	}
	pct := floor * 100 / runtimeHeapMinimum
	if live > 0 && roots > 0 {
		pct = min(pct, (floor-live)*100/roots)
	}
	return max(int64(pct), base)
}
