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
		ret, tail = returnNow(s.allocated, s.live, tail)
		if ret != s.ret || tail != s.tail {
			t.Fatalf("step %d (%+v): return %v tail %v", i, s, ret, tail)
		}
	}
}
