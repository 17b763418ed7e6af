package orchagent

import (
	"math"
	"runtime/debug"
	"testing"
)

// The limit follows the live heap while loading and is lifted by stop; an
// operator's own limit is never replaced.
func TestLimitWhileLoading(t *testing.T) {
	stop := limitWhileLoading()
	got := debug.SetMemoryLimit(-1)
	stop()
	if got == math.MaxInt64 || got < 16<<20 {
		t.Fatalf("limit while loading = %d, want the live heap plus headroom", got)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("limit after stop = %d, want none", l)
	}
	debug.SetMemoryLimit(1 << 40)
	defer debug.SetMemoryLimit(math.MaxInt64)
	limitWhileLoading()()
	if l := debug.SetMemoryLimit(-1); l != 1<<40 {
		t.Fatalf("operator's limit became %d", l)
	}
}
