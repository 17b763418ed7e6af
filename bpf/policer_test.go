package bpf

import (
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// policed is what a policer did over a window, for check.
type policed struct {
	what        string
	rate, burst uint64 // bit/s, bytes
	// startsFull: the window starts with a full bucket (else it starts
	// and ends drained, sampled in saturation)
	startsFull      bool
	passed, offered uint64 // frame bytes: passed by the policer, seen by the program
	// couldPass: frame bytes a correct policer passes at least, whatever
	// the pauses (each test says why); the floor of a run that paused
	couldPass uint64
	window    time.Duration
	// smooth: the offered load never paused longer than the bucket's
	// depth (the test saw no such pause)
	smooth bool
}

// check checks the bytes a policer passed over a window.
//
// When the window starts with a full bucket (startsFull), a token bucket
// passes exactly rate x window + burst if the offered load never pauses
// longer than the bucket's depth, and never more. When the window starts
// and ends with the bucket drained (sampled in saturation), it passes
// rate x window, and at most one burst more (tokens saved by a pause
// before the window).
//
// Upper bound (strict, +1%): holds whatever the machine's load.
//
// Lower bound: the full rate is only delivered while the offered load
// stays above it. On a loaded shared CI machine the sender (or the
// prog.Run threads) can be descheduled for longer than the bucket's depth
// and those tokens are lost: correct policing of a bursty load, not a
// policer error. So -1% is asserted only when smooth is true (the test saw
// no pause longer than the depth); otherwise the figure is logged and only
// a sanity floor is checked: half of couldPass, which each test derives
// from the load it actually offered. It was half of rate x window, which
// a starved host breaks without any policer error: in 3 of 5 runs of the
// package at load 12-18 (2026-12-01) TestPolicerTwoCPUsOffered's paced
// threads offered only 0.00-0.52x the rate over the window and the
// policer passed all of it (policed = offered within 0.5%).
func (w policed) check(t *testing.T) {
	t.Helper()
	perWindow := float64(w.rate) / 8 * w.window.Seconds()
	want, slack := perWindow, float64(w.burst)
	if w.startsFull {
		want, slack = perWindow+float64(w.burst), 0
	}
	bytes := float64(w.passed)
	errPct := 100 * (bytes - want) / perWindow
	t.Logf("%s: passed %d of %d bytes offered (%.2fx the rate; at least %d must pass) in %v for rate %d bit/s burst %d: error %+.3f%% of rate (no pause longer than the bucket depth: %v)",
		w.what, w.passed, w.offered, float64(w.offered)/perWindow, w.couldPass, w.window.Round(time.Millisecond), w.rate, w.burst, errPct, w.smooth)
	if bytes > want+slack+perWindow/100 {
		t.Errorf("%s: passed %.0f bytes, more than %.0f (+1%%)", w.what, bytes, want+slack)
	}
	if w.smooth {
		if errPct < -1 {
			t.Errorf("%s: passed %.3f%% less than expected (floor -1%%)", w.what, -errPct)
		}
		return
	}
	if floor := min(float64(w.couldPass), want) / 2; bytes < floor {
		t.Errorf("%s: passed %.0f bytes, less than half of the %d a policer passes at least on the load offered", w.what, bytes, w.couldPass)
	}
}

// TestPolicerVeth sends UDP over a veth pair between namespaces at 3x the
// rate for 3 s and compares what the policer on the receiving port passed
// (frame bytes, from the counters) with rate x time + burst.
func TestPolicerVeth(t *testing.T) {
	testns.RequireRoot(t)
	p := loadPort(t)
	sw, h1 := testns.New(t), testns.New(t)
	sw.Veth("port0", h1, "eth0")
	sw.IP("addr", "add", "10.9.0.254/24", "dev", "port0")
	h1.IP("addr", "add", "10.9.0.1/24", "dev", "eth0")
	if out, err := h1.Exec("ping", "-c", "1", "-W", "5", "10.9.0.254"); err != nil {
		t.Fatalf("ping: %v: %s", err, out)
	}
	err := sw.Do(func() error {
		l, err := net.InterfaceByName("port0")
		if err != nil {
			return err
		}
		return p.Attach(l.Index, ModeAuto)
	})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	var conn *net.UDPConn
	if err := h1.Do(func() error {
		var err error
		conn, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 9, 0, 254), Port: 9})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// 256 KiB at 20 Mbit/s is 105 ms of depth: pauses shorter than that
	// lose nothing.
	const rate, burst = 20_000_000, 256 * 1024
	apply(t, p, &Spec{Rate: 20e6, Burst: 256 << 10})

	// Sender: 3x rate in 1400-byte datagrams, paced without catching up
	// after a pause (a catch-up burst would hide the pause).
	const size = 1400
	pps := 3 * float64(rate) / 8 / (size + 42)
	stop := make(chan struct{})
	done := make(chan time.Time)
	t0 := time.Now()
	go func() {
		buf := make([]byte, size)
		last, owed := t0, 0.0
		for {
			select {
			case <-stop:
				done <- last
				return
			default:
			}
			now := time.Now()
			owed += pps * min(now.Sub(last).Seconds(), 0.005)
			for ; owed >= 1; owed-- {
				conn.Write(buf)
			}
			last = now
			time.Sleep(500 * time.Microsecond)
		}
	}()

	smooth := true
	prev, tp := Counters{}, t0
	for time.Since(t0) < 3*time.Second {
		time.Sleep(20 * time.Millisecond)
		c, now := counters(t, p, ""), time.Now()
		w := now.Sub(tp)
		if offered := float64(c.RxBytes-prev.RxBytes) * 8 / w.Seconds(); w > 100*time.Millisecond || offered < 2*rate {
			smooth = false
		}
		prev, tp = c, now
	}
	close(stop)
	tEnd := <-done
	time.Sleep(100 * time.Millisecond) // in-flight datagrams
	c := counters(t, p, "")
	checkInvariant(t, "", c)
	// The sender never goes over 3x the rate (no catch-up), so a policer
	// passes at least a third of what arrived.
	policed{what: "veth", rate: rate, burst: burst, startsFull: true, passed: passedBytes(c, Counters{}),
		offered: c.RxBytes, couldPass: c.RxBytes / 3, window: tEnd.Sub(t0), smooth: smooth}.check(t)
}

// passedBytes is the frame bytes passed between two counter samples: the
// counters keep packets per verdict and bytes only for rx, so passed
// bytes are rx bytes minus the bytes of dropped packets, which all have
// the same size in these tests.
func passedBytes(now, before Counters) uint64 {
	rx := now.RxPackets - before.RxPackets
	if rx == 0 {
		return 0
	}
	per := (now.RxBytes - before.RxBytes) / rx
	return (now.Passed - before.Passed) * per
}

// TestPolicerTwoCPUs runs the program from two threads on two CPUs at
// once (as a multi-queue NIC would) far above the rate: the shared GCRA
// bucket must still pass the rate. Counters are sampled while both threads
// run (the bucket drained at both samples), so neither waking the threads
// nor their return from the last run blurs the window.
func TestPolicerTwoCPUs(t *testing.T) {
	if kernelcap.InVM() {
		// Under qemu TCG both vCPUs spin in BPF_PROG_TEST_RUN and a counter
		// read never completes within the 1 ms the sampling needs (the
		// test would wait forever); the policer's 6.1 run is TestPolicerVeth.
		t.Skip("timing-sensitive: needs sub-millisecond counter reads while both CPUs run the program, which the TCG VM cannot give")
	}
	p := loadPort(t)
	cpus := twoCPUs(t)
	// 1 MiB at 100 Mbit/s is 84 ms of depth.
	const rate, burst = 100_000_000, 1 << 20
	depth := time.Duration(float64(burst) * 8 / rate * float64(time.Second))
	apply(t, p, &Spec{Rate: 100e6, Burst: 1 << 20})
	data := udp4("10.0.0.1", 9).bytes()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		pause     time.Duration    // longest time a thread spent off CPU in one run while measuring
		paused    [2]time.Duration // each thread's time off CPU while measuring, summed
		measuring atomic.Bool
		stop      = make(chan struct{})
	)
	for i, cpu := range cpus {
		wg.Add(1)
		go func(i, cpu int) {
			defer wg.Done()
			// Never unlocked: the thread exits with the goroutine instead
			// of going back to the pool pinned to one CPU.
			runtime.LockOSThread()
			var one unix.CPUSet
			one.Set(cpu)
			unix.SchedSetaffinity(0, &one)
			const repeat = 10000
			last := time.Now()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, per, err := p.objs.Impair.Benchmark(data, repeat, nil)
				if err != nil {
					t.Error(err)
					return
				}
				// The kernel's duration excludes time the thread was
				// scheduled out at its resched points; the wall clock does
				// not. Measured from the end of the previous run, so a
				// thread scheduled out between runs counts too (with a
				// fast program a run is ~0.2 ms and the gaps between runs
				// take a fair share of the preemptions).
				now := time.Now()
				off := now.Sub(last) - per*repeat
				last = now
				if measuring.Load() {
					mu.Lock()
					pause = max(pause, off)
					paused[i] += off
					mu.Unlock()
				}
			}
		}(i, cpu)
	}
	time.Sleep(300 * time.Millisecond) // the initial burst is long gone
	var fastest time.Duration = math.MaxInt64
	var stored [2]time.Duration
	a, ta, okA := sampleDrained(t, p, depth, &fastest, &stored[0])
	measuring.Store(true)
	if okA {
		time.Sleep(2 * time.Second)
	}
	b, tb, okB := sampleDrained(t, p, depth, &fastest, &stored[1])
	measuring.Store(false)
	close(stop)
	wg.Wait()
	if !okA || !okB {
		t.Fatalf("no counter read took under 1 ms with the bucket drained (at most %v of rate left) in %v of trying while both CPUs ran the program (fastest read %v, least left %v): the window cannot be timed",
			drainedMax, sampleFor, fastest, min(stored[0], stored[1]))
	}
	if t.Failed() {
		return
	}
	c := counters(t, p, "")
	checkInvariant(t, "", c)
	window := tb.Sub(ta)
	t.Logf("2 CPUs: %.0f Mbit/s offered, %d of %d packets passed, %d over rate; longest pause of a thread %v (depth %v); tokens left in the bucket at the samples %v, %v",
		float64(b.RxBytes-a.RxBytes)*8/window.Seconds()/1e6, b.Passed-a.Passed, b.RxPackets-a.RxPackets,
		b.DroppedRate-a.DroppedRate, pause.Round(time.Millisecond), depth.Round(time.Millisecond), stored[0], stored[1])
	// While a thread runs, flat out far over the rate, the bucket's
	// tokens are spent as they come: a policer passes at least the rate
	// for the time the less paused thread ran.
	ran := window - min(paused[0], paused[1])
	policed{what: "2 CPUs", rate: rate, burst: burst, passed: passedBytes(b, a), offered: b.RxBytes - a.RxBytes,
		couldPass: uint64(max(0, ran.Seconds()) * rate / 8), window: window, smooth: pause < depth}.check(t)
}

// twoCPUs returns two CPUs the test may run on, or skips.
func twoCPUs(t *testing.T) []int {
	t.Helper()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < 2; i++ {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	return cpus
}

// drainedMax is the most a bucket may hold (as time at its rate) for
// sampleDrained to call it drained: a few jiffies of the coarse clock's
// lag, under which a skipping CPU leaves tokens in the bucket (policer.h),
// and 0.25% of TestPolicerTwoCPUs's window.
const drainedMax = 5 * time.Millisecond

// sampleDrained is sampleCounters for the port profile, taken only when
// the shared bucket is drained (holds at most drainedMax of tokens). A
// window between two such samples holds rate x window of tokens: tokens
// a pause of both threads leaves in the bucket at the end of the window
// are not counted as tokens the policer failed to pass (CI 2026-12-01:
// -1.013% with 52 ms pauses on a loaded host, every other figure right).
// left keeps the least tokens seen left in the bucket.
func sampleDrained(t *testing.T, p *Port, depth time.Duration, fastest, left *time.Duration) (c Counters, at time.Time, ok bool) {
	*left = depth
	for give := time.Now().Add(sampleFor); time.Now().Before(give); {
		var s impairSlotShared
		var mono unix.Timespec
		c, at, ok = sampleCounters(t, p, "", fastest)
		if err := p.objs.Shared.Lookup(uint32(PortSlot), &s); err != nil {
			t.Fatal(err)
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
			t.Fatal(err)
		}
		if !ok {
			return c, at, false
		}
		// The bucket holds depth minus its debt (tat - now; policer.h's
		// ticks are ns << TICK_SHIFT, the clock bpf_ktime_get_ns reads).
		// The clock is read after the bucket, so the reads' order can
		// only make the bucket look fuller than it was.
		debt := time.Duration(int64(s.Tat>>6) - mono.Nano())
		stored := min(depth, max(0, depth-debt))
		*left = min(*left, stored)
		if time.Since(at) < time.Millisecond && stored <= drainedMax {
			return c, at, true
		}
	}
	return c, at, false
}

// sampleFor is how long sampleCounters tries for a fast read.
const sampleFor = 10 * time.Second

// sampleCounters reads the counters of rule name ("" = the port profile)
// with a timestamp good to half a millisecond, trying for at most
// sampleFor; ok is false when no read was that fast. fastest keeps the
// fastest read seen.
func sampleCounters(t *testing.T, p *Port, name string, fastest *time.Duration) (c Counters, at time.Time, ok bool) {
	for give := time.Now().Add(sampleFor); time.Now().Before(give); {
		t1 := time.Now()
		c = counters(t, p, name)
		d := time.Since(t1)
		*fastest = min(*fastest, d)
		if d < time.Millisecond {
			return c, t1.Add(d / 2), true
		}
	}
	return c, at, false
}
