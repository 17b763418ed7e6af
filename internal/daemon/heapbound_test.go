package daemon

import (
	"flag"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// memoryLimit reads the soft memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// liveHeap is the live heap at the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitLimit collects until the limit satisfies ok (the hook runs on the
// finalizer goroutine after a collection), failing after a minute.
func waitLimit(t *testing.T, what string, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		runtime.GC()
		if l := memoryLimit(); ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: memory limit %d", what, memoryLimit())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHeapHeadroomFollowsLiveHeap(t *testing.T) {
	restoreRuntime(t)
	t.Setenv("GOMEMLIMIT", "")
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--heap-headroom-mib", "8"}); err != nil {
		t.Fatal(err)
	}
	// 64 MiB of live data: the bound's goal is live + live/2, the limit
	// that plus the runtime's other memory.
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	// The hook runs on the finalizer goroutine, after its collection: on a
	// loaded machine the limit first seen may still be one computed while
	// the 64 slices were being made. Wait for the one of this live heap.
	lim := waitLimit(t, "64 MiB live", func(l int64) bool {
		h := liveHeap()
		return l != math.MaxInt64 && h >= 64<<20 && uint64(l) >= h+h/2
	})
	heap := liveHeap()
	if low, high := heap+heap/2, heap+heap/2+heap/16+16<<20; uint64(lim) < low || uint64(lim) > high {
		t.Errorf("64 MiB live (%d): limit %d, want %d..%d", heap, lim, low, high)
	}
	runtime.KeepAlive(live)
	// The live data goes: the limit follows it down.
	live = nil
	lim = waitLimit(t, "live freed", func(l int64) bool { return l < 48<<20 })
	if lim < 8<<20 {
		t.Errorf("live freed: limit %d below the 8 MiB headroom", lim)
	}

	// Off: no limit, and the hook leaves it so.
	if err := fs.Parse([]string{"--heap-headroom-mib", "0"}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	if l := memoryLimit(); l != math.MaxInt64 {
		t.Errorf("--heap-headroom-mib 0: memory limit %d, want none", l)
	}
	// On again: the hook is armed again.
	if err := fs.Parse([]string{"--heap-headroom-mib", "4"}); err != nil {
		t.Fatal(err)
	}
	waitLimit(t, "on again", func(l int64) bool { return l != math.MaxInt64 })
}

func TestHeapHeadroomLeavesGOMEMLIMIT(t *testing.T) {
	restoreRuntime(t)
	t.Setenv("GOMEMLIMIT", "1GiB")
	old := debug.SetMemoryLimit(1 << 30)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse([]string{"--heap-headroom-mib", "8"}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	if l := memoryLimit(); l != 1<<30 {
		t.Errorf("GOMEMLIMIT=1GiB: memory limit %d, want 1 GiB left alone", l)
	}
}
