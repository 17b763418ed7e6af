package daemon

import "testing"

func TestReturnNow(t *testing.T) {
	const mb = 1 << 20
	steps := []struct {
		allocated, live uint64
		ret, tail       bool
	}{
		{1 * mb, 2 * mb, false, false},   // steady: nothing
		{3 * mb, 2 * mb, false, false},   // under the 4 MiB floor
		{50 * mb, 10 * mb, true, true},   // a burst
		{40 * mb, 10 * mb, true, true},   // still one
		{1 * mb, 10 * mb, true, false},   // its tail: once more
		{1 * mb, 10 * mb, false, false},  // then steady again
		{0, 10 * mb, false, false},       // idle
		{6 * mb, 100 * mb, false, false}, // under half the live heap
	}
	tail := false
	for i, s := range steps {
		var ret bool
		ret, tail = returnNow(s.allocated, s.live, false, tail)
		if ret != s.ret || tail != s.tail {
			t.Fatalf("step %d (%+v): return %v tail %v", i, s, ret, tail)
		}
	}
}

// Under a heap floor a smaller burst returns: the floor keeps the
// collector from freeing it, the scavenger keeps up to the goal's pages.
func TestReturnNowUnderFloor(t *testing.T) {
	const mb = 1 << 20
	if ret, _ := returnNow(3*mb, 2*mb, false, false); ret {
		t.Error("no floor: 3 MiB allocated over 2 MiB live returned (under 4 MiB)")
	}
	if ret, tail := returnNow(3*mb, 2*mb, true, false); !ret || !tail {
		t.Errorf("floor: 3 MiB allocated over 2 MiB live: return %v tail %v, want both", ret, tail)
	}
	if ret, _ := returnNow(mb/2, 2*mb, true, false); ret {
		t.Error("floor: 512 KiB allocated returned")
	}
	if ret, _ := returnNow(3*mb, 10*mb, true, false); ret {
		t.Error("floor: 3 MiB allocated over 10 MiB live returned (under half the live heap)")
	}
}
