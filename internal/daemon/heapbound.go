package daemon

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// DefaultHeapHeadroomMiB is --heap-headroom-mib's default: 0, no bound.
// At 16 a restart over 100k routes and their delete leave orchagent ~0.04
// closer to its idle RSS (after/idle 1.40 → 1.36), for ~6% more of its CPU
// per route in a 100k-route load (more collections); docs/performance.md,
// "Bulk paths and scale", 2026-12-01 22:29. See boundHeap.
const DefaultHeapHeadroomMiB = 0

// heapLiveShare: besides the headroom floor, the heap may grow by
// live/heapLiveShare before a collection (GOGC=100 is live/1).
const heapLiveShare = 2

var (
	// heapHeadroom is the headroom floor in bytes (0 = no bound); set by
	// --heap-headroom-mib, read by the collection hook.
	heapHeadroom atomic.Uint64
	// heapHookOn is whether the collection hook is armed.
	heapHookOn atomic.Bool
)

// setHeapHeadroom sets the headroom floor to mib MiB (≤ 0 = off: no soft
// limit) and arms the collection hook when it is on. $GOMEMLIMIT wins: an
// operator's limit is left alone.
func setHeapHeadroom(mib int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if mib <= 0 {
		heapHeadroom.Store(0)
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	heapHeadroom.Store(uint64(mib) << 20)
	if heapHookOn.CompareAndSwap(false, true) {
		onEveryGC(boundHeap)
	}
}

// heapSamples are what boundHeap reads after each collection.
var heapSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
}

// boundHeap sets the soft memory limit after each collection so that the
// heap grows by at most max(live/2, headroom) above the live heap before
// the next one, rather than GOGC's live×2 (debug.SetMemoryLimit: its goal
// applies when below GOGC's, so heaps with less live data than the
// headroom run under GOGC alone). Why: the runtime sizes metadata it never
// returns (GC bitmaps, span structures) by the process's peak heap, so a
// burst over a large live set (a restart over 100k routes, then their
// delete) left orchagent ~1.4× its idle RSS (docs/performance.md). Returns
// false, disarming the hook, once the headroom is off.
func boundHeap() bool {
	headroom := heapHeadroom.Load()
	if headroom == 0 {
		heapHookOn.Store(false)
		// Switched on again meanwhile: stay armed.
		return heapHeadroom.Load() != 0 && heapHookOn.CompareAndSwap(false, true)
	}
	metrics.Read(heapSamples)
	live := heapSamples[0].Value.Uint64()
	total := heapSamples[1].Value.Uint64()
	released := heapSamples[2].Value.Uint64()
	free := heapSamples[3].Value.Uint64()
	objects := heapSamples[4].Value.Uint64()
	// What the runtime counts against the limit besides heap objects
	// (stacks, metadata, fragmentation), as its memoryLimitHeapGoal does.
	nonHeap := total - released - free - objects
	goal := live + max(live/heapLiveShare, headroom)
	// The runtime keeps ~3% + 1 MiB of the limit as its own headroom.
	debug.SetMemoryLimit(int64(nonHeap + goal + goal/32 + 1<<20))
	if heapHeadroom.Load() == 0 { // switched off meanwhile: undo
		debug.SetMemoryLimit(math.MaxInt64)
	}
	return true
}

// gcSentinel is an object nobody references: its finalizer runs once per
// collection. It holds a pointer so it is not a tiny allocation (those may
// never be finalized).
type gcSentinel struct {
	_ *int
	_ [16]byte
}

// onEveryGC calls fn after every collection (on the finalizer goroutine)
// until fn returns false.
func onEveryGC(fn func() bool) {
	var again func(*gcSentinel)
	again = func(s *gcSentinel) {
		if fn() {
			runtime.SetFinalizer(s, again)
		}
	}
	runtime.SetFinalizer(&gcSentinel{}, again)
}
