package daemon

import (
	"flag"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// restoreRuntime puts the test binary's runtime settings back.
func restoreRuntime(t *testing.T) {
	rate, gc := runtime.MemProfileRate, debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	t.Cleanup(func() {
		runtime.MemProfileRate = rate
		setHeapMin(0)
		gcBase.Store(int64(gc))
		debug.SetGCPercent(gc)
		setHeapHeadroom(0)
	})
}

func TestRuntimeDefaultsAndFlags(t *testing.T) {
	restoreRuntime(t)
	t.Setenv("GOGC", "")
	runtime.MemProfileRate = 512 * 1024
	var f Flags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f.Register(fs)
	if runtime.MemProfileRate != 0 {
		t.Errorf("after Register MemProfileRate = %d, want 0 (off)", runtime.MemProfileRate)
	}
	// The collector's base target; the heap floor raises the runtime's
	// percent above it for a small heap (heapfloor_test.go).
	if got := gcBase.Load(); got != DefaultGCPercent {
		t.Errorf("after Register --gc-percent = %d, want %d", got, DefaultGCPercent)
	}
	if got := heapMin.Load(); got != 0 {
		t.Errorf("after Register the heap floor = %d bytes, want none (HeapFloor unset)", got)
	}
	hf := Flags{HeapFloor: true}
	hf.Register(flag.NewFlagSet("y", flag.ContinueOnError))
	if got := heapMin.Load(); got != DefaultHeapMinMiB<<20 {
		t.Errorf("after Register with HeapFloor the heap floor = %d bytes, want %d MiB", got, DefaultHeapMinMiB)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if l := memoryLimit(); l != math.MaxInt64 {
			t.Errorf("after Register memory limit = %d, want none (--heap-headroom-mib off by default)", l)
		}
	}
	if err := fs.Parse([]string{"--mem-profile-rate", "4096", "--gc-percent", "30"}); err != nil {
		t.Fatal(err)
	}
	if runtime.MemProfileRate != 4096 {
		t.Errorf("--mem-profile-rate 4096: MemProfileRate = %d", runtime.MemProfileRate)
	}
	if got := gcBase.Load(); got != 30 {
		t.Errorf("--gc-percent 30: GC percent = %d", got)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse([]string{"--gc-percent", "lots"}); err == nil {
		t.Error("--gc-percent lots: no error")
	}
}

func TestGCPercentFollowsGOGC(t *testing.T) {
	restoreRuntime(t)
	for env, want := range map[string]int{"50": 50, "off": -1, "junk": DefaultGCPercent, "": DefaultGCPercent} {
		t.Setenv("GOGC", env)
		var f Flags
		f.Register(flag.NewFlagSet("x", flag.ContinueOnError))
		if got := gcBase.Load(); got != int64(want) {
			t.Errorf("GOGC=%q: GC percent = %d, want %d", env, got, want)
		}
	}
}
