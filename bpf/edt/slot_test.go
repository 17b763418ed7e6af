package edt

import (
	"math"
	"testing"
	"time"
)

// slotDepartures runs n back-to-back packets of size bytes and returns their
// departure times, failing on a departure before the previous one.
func slotDepartures(t *testing.T, o *Objects, n, size int) (deps []uint64, first result) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := run(t, o, frame(size), 0)
		if i == 0 {
			first = r
		}
		if r.ret != actOK {
			t.Fatalf("packet %d: ret %d, want TC_ACT_OK", i, r.ret)
		}
		if i > 0 && r.tstamp < deps[i-1] {
			t.Fatalf("packet %d departs %d ns before packet %d", i, deps[i-1]-r.tstamp, i-1)
		}
		deps = append(deps, r.tstamp)
	}
	return deps, first
}

// TestSlotCaps: slot 1ms with 3 packets (or 2500 bytes, three 1000-byte
// packets) per slot: back-to-back packets leave in groups of 3 at slot
// times exactly 1 ms apart, the first slot 1 ms after the first packet.
// The 12 runs must take less than the 1 ms slot (else a packet after the
// slot time opens a new one, as in netem): retried, skipped if never.
func TestSlotCaps(t *testing.T) {
	for _, c := range []Config{
		{SlotMin: time.Millisecond, SlotMax: time.Millisecond, SlotPackets: 3},
		{SlotMin: time.Millisecond, SlotMax: time.Millisecond, SlotBytes: 2500},
	} {
		ok := false
		for attempt := 0; attempt < 10 && !ok; attempt++ {
			o := load(t)
			if err := o.Set(PortKey(loIfindex), c); err != nil {
				t.Fatal(err)
			}
			deps, first := slotDepartures(t, o, 12, 1000)
			last := run(t, o, frame(1000), 0) // the 13th: opens the 5th slot
			if last.before > first.before+uint64(time.Millisecond) {
				continue // too slow for exact figures
			}
			ok = true
			if deps[0] < first.before+1e6 || deps[0] > first.after+1e6 {
				t.Errorf("%+v: first slot at now%+dns, want 1ms", c, int64(deps[0]-first.before))
			}
			for i, d := range deps {
				want := deps[0] + uint64(i/3)*1e6
				if d != want {
					t.Errorf("%+v: packet %d leaves at slot +%dns, want +%dns", c, i, d-deps[0], want-deps[0])
				}
			}
			if last.tstamp != deps[0]+4e6 {
				t.Errorf("%+v: 13th packet at +%dns, want +4ms", c, last.tstamp-deps[0])
			}
		}
		if !ok {
			t.Skipf("%+v: 13 runs never fit in the 1 ms slot: machine too loaded for the exact figures", c)
		}
	}
}

// TestSlotRandomGap: slot 1ms 3ms with one packet per slot: the gaps
// between 5000 back-to-back packets' departures are netem's uniform slot
// gaps, all within [1ms, 3ms], mean 2 ms within 1% (one sigma of the mean
// is 0.58 ms / sqrt(5000) = 8 us, 0.4%).
func TestSlotRandomGap(t *testing.T) {
	o := load(t)
	if err := o.Set(PortKey(loIfindex), Config{SlotMin: time.Millisecond, SlotMax: 3 * time.Millisecond, SlotPackets: 1}); err != nil {
		t.Fatal(err)
	}
	deps, _ := slotDepartures(t, o, 5001, 100)
	var sum float64
	for i := 1; i < len(deps); i++ {
		g := deps[i] - deps[i-1]
		if g < 1e6 || g > 3e6 {
			t.Fatalf("gap %d: %d ns, outside [1ms, 3ms]", i, g)
		}
		sum += float64(g)
	}
	mean := sum / float64(len(deps)-1)
	t.Logf("slot 1ms 3ms: mean gap %.1f us over %d slots", mean/1e3, len(deps)-1)
	if math.Abs(mean-2e6) > 0.01*2e6 {
		t.Errorf("mean slot gap %.1f us, want 2000 +- 1%%", mean/1e3)
	}
}

// TestSlotDistribution: netem's distribution form, slot distribution
// normal 2ms 500us with one packet per slot: the gaps between 5000
// back-to-back packets have the table's mean and standard deviation
// (2 ms and 0.5 ms; the table is clamped at 4 sigma, so no gap is
// negative): mean within 5% of the deviation, deviation within 5%.
func TestSlotDistribution(t *testing.T) {
	o := load(t)
	if err := o.Set(PortKey(loIfindex), Config{SlotDist: DistNormal, SlotDelay: 2 * time.Millisecond, SlotJitter: 500 * time.Microsecond, SlotPackets: 1}); err != nil {
		t.Fatal(err)
	}
	deps, _ := slotDepartures(t, o, 5001, 100)
	var s, s2 float64
	for i := 1; i < len(deps); i++ {
		x := (float64(deps[i]-deps[i-1]) - 2e6) / 5e5
		s += x
		s2 += x * x
	}
	n := float64(len(deps) - 1)
	mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	wm, wsd := DistMoments(DistNormal)
	t.Logf("slot distribution normal 2ms 500us: gap mean %+.4f, stddev %.4f jitter units (table %+.4f, %.4f)", mean, sd, wm, wsd)
	if math.Abs(mean-wm) > 0.05*wsd || math.Abs(sd/wsd-1) > 0.05 {
		t.Errorf("gap mean %+.4f stddev %.4f, want %+.4f and %.4f within 5%%", mean, sd, wm, wsd)
	}
}
