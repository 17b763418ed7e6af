package edt

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// tc verdicts.
const (
	actOK   = 0
	actShot = 2
)

// loIfindex is the device BPF_PROG_TEST_RUN gives a tc program.
const loIfindex = 1

func load(t testing.TB) *Objects {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs (BPF_PROG_TEST_RUN)")
	}
	o, err := Load()
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) {
			if os.Getenv("SWITCHYARD_VM") == "1" { // kernelcap.InVM: the VM's kernel has them all
				t.Fatalf("the test VM's kernel lacks a BPF feature the program needs: %v", err)
			}
			t.Skipf("kernel lacks a BPF feature the program needs: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func monoNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// frame is an Ethernet + IPv4 + UDP packet of n bytes (n >= 42).
func frame(n int) []byte {
	b := make([]byte, n)
	copy(b[0:], []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
	ip := b[14:]
	ip[0], ip[9] = 0x45, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[20:], 1000)
	binary.BigEndian.PutUint16(ip[22:], 2000)
	return b
}

// skbCtx offsets in struct __sk_buff (linux/bpf.h).
const (
	skbMark   = 8
	skbTstamp = 152
	skbSize   = 192
)

type result struct {
	ret           uint32
	tstamp        uint64
	before, after uint64 // CLOCK_MONOTONIC around the run
}

// run runs the program once on pkt with skb->mark = mark.
func run(t testing.TB, o *Objects, pkt []byte, mark uint32) result {
	t.Helper()
	in, out := make([]byte, skbSize), make([]byte, skbSize)
	binary.NativeEndian.PutUint32(in[skbMark:], mark)
	var r result
	r.before = monoNow()
	ret, err := o.Program().Run(&ebpf.RunOptions{Data: pkt, Context: in, ContextOut: out})
	r.after = monoNow()
	if err != nil {
		t.Fatalf("BPF_PROG_TEST_RUN: %v", err)
	}
	r.ret, r.tstamp = ret, binary.NativeEndian.Uint64(out[skbTstamp:])
	return r
}

func TestNoProfilePassesUntouched(t *testing.T) {
	o := load(t)
	r := run(t, o, frame(100), 0)
	if r.ret != actOK || r.tstamp != 0 {
		t.Fatalf("no profile: ret %d tstamp %d; want TC_ACT_OK and tstamp 0", r.ret, r.tstamp)
	}
}

func TestDelayStamped(t *testing.T) {
	o := load(t)
	if err := o.Set(PortKey(loIfindex), Config{Delay: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r := run(t, o, frame(100), 0)
		lo, hi := r.before+50e6, r.after+50e6
		if r.ret != actOK || r.tstamp < lo || r.tstamp > hi {
			t.Fatalf("ret %d, departure now%+dns; want TC_ACT_OK and within [50ms, 50ms+%dns]", r.ret, int64(r.tstamp-r.before), r.after-r.before)
		}
	}
	st, err := o.Stats(PortKey(loIfindex))
	if err != nil || st.Packets != 100 || st.Bytes != 100*100 {
		t.Fatalf("stats %+v, %v; want 100 packets, 10000 bytes", st, err)
	}
}

// TestJitterDistributions: 20,000 samples per distribution; mean and
// standard deviation within 5% (of the expected standard deviation) of
// the shape netem's table gives. The clock read around each run adds at
// most a few µs, against a 10 ms jitter.
func TestJitterDistributions(t *testing.T) {
	o := load(t)
	const n, delay, jitter = 20000, 100 * time.Millisecond, 10 * time.Millisecond
	for _, d := range []struct {
		name string
		dist int
	}{{"uniform", DistUniform}, {"normal", DistNormal}, {"pareto", DistPareto}, {"paretonormal", DistParetoNormal}} {
		t.Run(d.name, func(t *testing.T) {
			if err := o.Set(PortKey(loIfindex), Config{Delay: delay, Jitter: jitter, Dist: d.dist, Reorder: true}); err != nil {
				t.Fatal(err)
			}
			var s, s2 float64
			for i := 0; i < n; i++ {
				r := run(t, o, frame(100), 0)
				x := (float64(r.tstamp-r.before) - float64(delay)) / float64(jitter)
				s += x
				s2 += x * x
			}
			mean := s / n
			sd := math.Sqrt(s2/n - mean*mean)
			wm, wsd := DistMoments(d.dist)
			t.Logf("%s: mean %.4f (want %.4f), stddev %.4f (want %.4f), in units of jitter", d.name, mean, wm, sd, wsd)
			if math.Abs(mean-wm) > 0.05*wsd || math.Abs(sd/wsd-1) > 0.05 {
				t.Fatalf("%s: mean %.4f stddev %.4f; want %.4f and %.4f within 5%%", d.name, mean, sd, wm, wsd)
			}
		})
	}
}

// TestFlowOrderKept: without reorder a flow's departures never go
// backwards, whatever the jitter; with reorder they do.
func TestFlowOrderKept(t *testing.T) {
	o := load(t)
	for _, reorder := range []bool{false, true} {
		if err := o.Set(PortKey(loIfindex), Config{Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond, Reorder: reorder}); err != nil {
			t.Fatal(err)
		}
		back, last := 0, uint64(0)
		for i := 0; i < 2000; i++ {
			r := run(t, o, frame(100), 0)
			if r.tstamp < last {
				back++
			}
			last = r.tstamp
		}
		if !reorder && back != 0 {
			t.Fatalf("reorder off: %d of 2000 departures before the previous one", back)
		}
		if reorder && back == 0 {
			t.Fatal("reorder on with 10ms jitter: no departure went backwards in 2000")
		}
	}
}

// TestShapingPaces: back-to-back 1000-byte packets at 800 kbit/s depart
// exactly 10 ms apart (the virtual clock), and beyond the 50 ms queue
// limit they are tail-dropped and counted.
//
// Every attempt, however slow the machine, must show no two departures
// closer than 10 ms and counters that match what passed and what was
// dropped. The exact figures (6 of 20 pass, gaps of exactly 10 ms) need
// the 20 runs to take less than one packet time; the attempt is repeated
// (on a fresh program) until one does, and the test skips only if none of
// shapeAttempts did, after the load-independent checks passed each time.
func TestShapingPaces(t *testing.T) {
	const shapeAttempts = 10
	for attempt := 1; attempt <= shapeAttempts; attempt++ {
		if shapeOnce(t) {
			return
		}
		t.Logf("attempt %d of %d: 20 runs took longer than one packet time (10 ms)", attempt, shapeAttempts)
	}
	t.Skipf("%d times 20 test runs took more than one packet time (10 ms): the machine is too loaded to check the exact pacing "+
		"(checked every time: no departure closer than 10 ms, counters consistent)", shapeAttempts)
}

// shapeOnce sends 20 back-to-back packets through a fresh program and
// checks them; fast reports whether they went out within one packet time,
// so that the exact figures were checked too.
func shapeOnce(t *testing.T) (fast bool) {
	t.Helper()
	o := load(t)
	k := PortKey(loIfindex)
	if err := o.Set(k, Config{RateBps: 8e5, QueueLimit: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var stamps []uint64
	start := monoNow()
	for i := 0; i < 20; i++ {
		r := run(t, o, frame(1000), 0)
		if r.ret == actShot {
			continue
		}
		stamps = append(stamps, r.tstamp)
	}
	fast = monoNow()-start <= 10e6
	for i := 1; i < len(stamps); i++ {
		if d := stamps[i] - stamps[i-1]; d < 10e6 || (fast && d != 10e6) {
			t.Fatalf("departure gap %d = %dns; want exactly 10ms (1000 B at 800 kbit/s), never less", i, d)
		}
	}
	st, _ := o.Stats(k)
	if st.Packets != uint64(len(stamps)) || st.DroppedLimit != uint64(20-len(stamps)) {
		t.Fatalf("stats %+v; want %d passed, %d dropped_limit", st, len(stamps), 20-len(stamps))
	}
	if fast && len(stamps) != 6 {
		t.Fatalf("%d of 20 passed; want 6 (the one on the wire and a 50 ms queue of 10 ms packets)", len(stamps))
	}
	return fast
}

func TestChannelLossAfterShaping(t *testing.T) {
	o := load(t)
	k := PortKey(loIfindex)
	if err := o.Set(k, Config{Loss: 0.25}); err != nil {
		t.Fatal(err)
	}
	const n = 40000
	for i := 0; i < n; i++ {
		run(t, o, frame(64), 0)
	}
	st, _ := o.Stats(k)
	if got := float64(st.DroppedLoss) / n; math.Abs(got-0.25) > 0.01 || st.Packets+st.DroppedLoss != n {
		t.Fatalf("stats %+v: loss %.4f; want 0.25 ± 0.01 and every packet counted", st, got)
	}
}

// TestClassFromMark: a class carried in skb->mark takes its own profile;
// other packets take the egress port's.
func TestClassFromMark(t *testing.T) {
	o := load(t)
	if err := o.Set(PortKey(loIfindex), Config{Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := o.Set(ClassKey(7), Config{Delay: 5 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mark  uint32
		delay uint64
	}{{0, 1e6}, {MarkClass(7), 5e6}, {MarkClass(8), 1e6}, {7, 1e6}} {
		r := run(t, o, frame(100), c.mark)
		if r.tstamp < r.before+c.delay || r.tstamp > r.after+c.delay {
			t.Errorf("mark %#x: departure now%+dns; want %dns", c.mark, int64(r.tstamp-r.before), c.delay)
		}
	}
	if err := o.Delete(ClassKey(7)); err != nil {
		t.Fatal(err)
	}
	if r := run(t, o, frame(100), MarkClass(7)); r.tstamp > r.after+1e6 {
		t.Errorf("after Delete, class 7 still delayed %dns", r.tstamp-r.before)
	}
}

// TestTablesMatchIproute2: the generated tables equal iproute2's
// installed .dist files value for value (skipped where not installed).
func TestTablesMatchIproute2(t *testing.T) {
	for d, name := range map[int]string{DistNormal: "normal", DistPareto: "pareto", DistParetoNormal: "paretonormal"} {
		var b []byte
		for _, dir := range []string{"/usr/lib/x86_64-linux-gnu/tc", "/usr/lib/tc", "/usr/lib64/tc"} {
			if x, err := os.ReadFile(dir + "/" + name + ".dist"); err == nil {
				b = x
				break
			}
		}
		if b == nil {
			t.Skipf("iproute2's %s.dist not installed", name)
		}
		var want []int16
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#") {
				continue
			}
			for _, f := range strings.Fields(l) {
				v, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s.dist: %v", name, err)
				}
				want = append(want, int16(v))
			}
		}
		got := DistTable(d)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries; iproute2 has %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s[%d] = %d; iproute2 has %d", name, i, got[i], want[i])
			}
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i] < got[j] }) {
			t.Fatalf("%s: not an inverse CDF (unsorted)", name)
		}
	}
}
