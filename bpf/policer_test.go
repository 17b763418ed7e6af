package bpf

import (
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// policerBounds checks the bytes a policer passed over a window that
// started with a full bucket: a token bucket passes exactly
// rate x window + burst when the offered load never pauses longer than
// the bucket's depth, and never more than that.
//
// Upper bound (strict, +1%): holds whatever the machine's load.
//
// Lower bound: the full rate is only delivered while the offered load
// stays above it. On a loaded shared CI machine the sender (or the
// prog.Run threads) can be descheduled for longer than the bucket's depth
// and those tokens are lost: correct policing of a bursty load, not a
// policer error. So -1% is asserted only when smooth is true (the test saw
// no pause longer than the depth); otherwise the figure is logged and only
// a generous 50% floor is checked.
func policerBounds(t *testing.T, what string, rate, burst uint64, bytes uint64, window time.Duration, smooth bool) {
	t.Helper()
	want := float64(rate)/8*window.Seconds() + float64(burst)
	errPct := 100 * (float64(bytes) - want) / (float64(rate) / 8 * window.Seconds())
	t.Logf("%s: passed %d bytes in %v for rate %s burst %d: %.3f Mbit/s after the burst, error %+.3f%% of rate (no pause longer than the bucket depth: %v)",
		what, bytes, window.Round(time.Millisecond), schema.FormatRate(rate), burst,
		(float64(bytes)-float64(burst))*8/window.Seconds()/1e6, errPct, smooth)
	if errPct > 1 {
		t.Errorf("%s: passed %+.3f%% more than rate x window + burst", what, errPct)
	}
	floor := -50.0
	if smooth {
		floor = -1
	}
	if errPct < floor {
		t.Errorf("%s: passed %.3f%% less than rate x window + burst (floor %.0f%%)", what, -errPct, floor)
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
	apply(t, p, mustPort(t, schema.Fields{"rate": "20mbit", "burst": "256kb"}))

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
	policerBounds(t, "veth", rate, burst, passedBytes(c, Counters{}), tEnd.Sub(t0), smooth)
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
// bucket must still pass rate x time + burst.
func TestPolicerTwoCPUs(t *testing.T) {
	p := loadPort(t)
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
	// 1 MiB at 100 Mbit/s is 84 ms of depth.
	const rate, burst = 100_000_000, 1 << 20
	depth := time.Duration(float64(burst) * 8 / rate * float64(time.Second))
	data := udp4("10.0.0.1", 9).bytes()
	const dur = 2 * time.Second
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		pause  time.Duration // longest time a thread spent off CPU in one run
		ends   []time.Time
		starts = make(chan struct{})
	)
	for _, cpu := range cpus {
		wg.Add(1)
		go func(cpu int) {
			defer wg.Done()
			// Never unlocked: the thread exits with the goroutine instead
			// of going back to the pool pinned to one CPU.
			runtime.LockOSThread()
			var one unix.CPUSet
			one.Set(cpu)
			unix.SchedSetaffinity(0, &one)
			<-starts
			const repeat = 10000
			var longest time.Duration
			t0 := time.Now()
			for time.Since(t0) < dur {
				s := time.Now()
				_, per, err := p.objs.Impair.Benchmark(data, repeat, nil)
				if err != nil {
					t.Error(err)
					return
				}
				// The kernel's duration excludes time the thread was
				// scheduled out; the wall clock does not.
				longest = max(longest, time.Since(s)-per*repeat)
			}
			mu.Lock()
			pause = max(pause, longest)
			ends = append(ends, time.Now())
			mu.Unlock()
		}(cpu)
	}
	apply(t, p, mustPort(t, schema.Fields{"rate": "100mbit", "burst": "1mb"}))
	t0 := time.Now()
	close(starts)
	wg.Wait()
	if t.Failed() {
		return
	}
	end := ends[0]
	for _, e := range ends {
		if e.After(end) {
			end = e
		}
	}
	c := counters(t, p, "")
	checkInvariant(t, "", c)
	window := end.Sub(t0)
	t.Logf("2 CPUs: %d packets offered (%.0f Mbit/s), %d passed, %d over rate; longest pause of a thread %v (depth %v)",
		c.RxPackets, float64(c.RxBytes)*8/window.Seconds()/1e6, c.Passed, c.DroppedRate, pause.Round(time.Millisecond), depth.Round(time.Millisecond))
	policerBounds(t, "2 CPUs", rate, burst, passedBytes(c, Counters{}), window, pause < depth)
}
