package daemon

import (
	"flag"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// garbageSink keeps the compiler from dropping garbage's allocations.
var garbageSink []byte

// collectionsDuring is how many collections allocating n MiB of
// short-lived garbage took.
func collectionsDuring(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n * 16 {
		garbageSink = make([]byte, 64<<10)
	}
	garbageSink = nil
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// gcPercent reads the collector's target percent (set, then put back).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// waitPercent collects until the target percent satisfies ok (the hook
// runs on the finalizer goroutine after a collection).
func waitPercent(t *testing.T, what string, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if p := gcPercent(); ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GC percent %d", what, gcPercent())
		}
	}
}

// A small live heap under --heap-min-mib is not collected while its
// garbage stays under the floor; a live heap above it runs under
// --gc-percent alone; off puts --gc-percent back.
func TestHeapMinFloorsSmallHeap(t *testing.T) {
	fs := floorFlags(t, "0") // the default is a floor
	runtime.GC()
	if n := collectionsDuring(32); n < 2 {
		t.Fatalf("without a floor: %d collections for 32 MiB of garbage, want several (the control)", n)
	}
	if err := fs.Parse([]string{"--heap-min-mib", "96"}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if n := collectionsDuring(32); n > 1 {
		t.Errorf("--heap-min-mib 96: %d collections for 32 MiB of garbage over a small live heap, want at most 1", n)
	}

	// 128 MiB live, above the floor: --gc-percent's 100.
	live := make([][]byte, 128)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	waitPercent(t, "128 MiB live", func(p int) bool { return p == DefaultGCPercent })
	runtime.KeepAlive(live)
	live = nil
	waitPercent(t, "live freed", func(p int) bool { return p > DefaultGCPercent })

	// --gc-percent changed under the floor: the floor still applies,
	// raised from the new base; off: the base as set.
	if err := fs.Parse([]string{"--gc-percent", "50"}); err != nil {
		t.Fatal(err)
	}
	if p := gcPercent(); p <= 50 {
		t.Errorf("--gc-percent 50 under the floor: GC percent %d, want it raised", p)
	}
	if err := fs.Parse([]string{"--heap-min-mib", "0"}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if p := gcPercent(); p != 50 {
		t.Errorf("--heap-min-mib 0: GC percent %d, want --gc-percent's 50", p)
	}
}

// The floor is the heap goal, not a multiple of it: the runtime's 4 MiB ×
// percent minimum binds a live heap under 4 MiB and, before the first
// collection, the only term there is.
func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		floor, live, roots uint64
		base, want         int64
	}{
		{16 * mib, 0, 0, 100, 400},                 // before the first collection: 4 MiB × 400%
		{16 * mib, 1 * mib, 1 * mib, 100, 400},     // 1 MiB live: the minimum binds (live alone said 1,500%)
		{16 * mib, 3 * mib, 3 * mib, 100, 400},     // 3 + 3×4.33 > 4×4: still the minimum
		{16 * mib, 6 * mib, 6 * mib, 100, 166},     // 6 + 6×1.66 ≈ 16
		{16 * mib, 6 * mib, 7 * mib, 100, 142},     // the stacks and globals count as the pacer counts them
		{16 * mib, 8 * mib, 8 * mib, 100, 100},     // --gc-percent's goal reaches the floor
		{16 * mib, 100 * mib, 100 * mib, 100, 100}, // a large heap: --gc-percent alone
		{16 * mib, 1 * mib, 1 * mib, 800, 800},     // a base above the floor's percent stays
		{2 * mib, 1 * mib, 1 * mib, 100, 100},      // a floor under the runtime's minimum changes nothing
	} {
		if got := floorPercent(c.floor, c.live, c.roots, c.base); got != c.want {
			t.Errorf("floorPercent(floor %d MiB, live %d, roots %d, base %d) = %d, want %d",
				c.floor/mib, c.live, c.roots, c.base, got, c.want)
		}
	}
}

// The runtime's goal under a floor of 16 MiB over this test's small live
// heap is 16 MiB (within the stacks' and the rounding's slack), not the
// 4 MiB/live multiple of it the first version set.
func TestHeapMinGoalIsTheFloor(t *testing.T) {
	floorFlags(t, "16")
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	waitPercent(t, "floor 16", func(int) bool {
		metrics.Read(goal)
		g := goal[0].Value.Uint64()
		return g >= 15<<20 && g <= 17<<20
	})
}

// floorFlags registers the runtime flags on a fresh flag set, with GOGC
// and GOMEMLIMIT unset and the runtime's settings restored after the
// test, and parses --heap-min-mib mib.
func floorFlags(t *testing.T, mib string) *flag.FlagSet {
	t.Helper()
	restoreRuntime(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--heap-min-mib", mib}); err != nil {
		t.Fatal(err)
	}
	return fs
}
