package edte2e

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	bpfedt "github.com/switchyard-net/switchyard/bpf/edt"
	"github.com/switchyard-net/switchyard/impaird/edt"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"golang.org/x/sys/unix"
)

func requireKernel(t *testing.T) {
	t.Helper()
	kernelcap.Require(t, kernelcap.FQ, kernelcap.Clsact, kernelcap.Netem)
	// The VM's init loads the qdisc modules but not cls_bpf, and its
	// kernel cannot autoload modules from the host root it runs in.
	exec.Command("modprobe", "cls_bpf").Run()
	if kernelcap.InVM() {
		// veth hands packets to a per-CPU backlog of 1,000 by default; fq
		// releasing a burst after a VM stall must not overflow it. Global,
		// hence only in the throwaway VM.
		os.WriteFile("/proc/sys/net/core/netdev_max_backlog", []byte("100000"), 0o644)
	}
}

func installer(t *testing.T, p *pair) *edt.Installer {
	t.Helper()
	in, err := edt.New(edt.Options{NetNS: p.A.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// measure sends n packets of 64 bytes from A to B at pps and returns what
// arrived.
func measure(t *testing.T, p *pair, n, pps int, wait time.Duration) []sample {
	t.Helper()
	r := listen(t, p)
	s := dial(t, p, 64)
	s.paced(t, n, pps)
	r.Wait(n, wait)
	return r.Stop()
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// noisyAttempts runs a measurement whose check depends on timing up to
// n times and passes on the first success. The emulated VM shares a
// loaded host: its vCPUs stall for tens to hundreds of ms now and then,
// which delays every packet in flight and widens any spread. A stall is
// transient; a bug fails every attempt. Checks that do not depend on
// timing (every packet delivered, none early, order) fail at once inside
// f via t.Fatal.
func noisyAttempts(t *testing.T, n int, f func(attempt int) (problem string)) {
	t.Helper()
	var problem string
	for a := 1; a <= n; a++ {
		if problem = f(a); problem == "" {
			return
		}
		t.Logf("attempt %d of %d: %s (timing noise of the emulated VM? measuring again)", a, n, problem)
	}
	t.Fatalf("%d attempts: %s", n, problem)
}

// TestEDTDelay: 50 ms on 10,000 packets at 5,000/s. Every packet
// arrives, in order, delayed at least 50 ms; the median within 5 ms
// (TCG timers are coarse; the precise figures are logged); and the same
// measurement with netem delay 50ms in the same VM for comparison.
func TestEDTDelay(t *testing.T) {
	requireKernel(t)
	const n, pps, delay = 10000, 5000, 50 * time.Millisecond
	p := newPair(t)
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	var e delayStats
	noisyAttempts(t, 3, func(int) string {
		e = summarize(measure(t, p, n, pps, 2*time.Second))
		t.Logf("EDT   50ms: %v; error median %+.3fms p99 %+.3fms", e, ms(e.median-delay), ms(e.p99-delay))
		// The program never departs a packet before its flow's
		// predecessor (bpf/edt's tests check that exactly); on receive
		// the kernel may still swap a few (see onCPU0), hence 0.5%.
		if e.n != n || e.reordered > n/200 {
			t.Fatalf("EDT: received %d of %d, %d reordered; want all, in order", e.n, n, e.reordered)
		}
		if e.min < delay {
			t.Fatalf("EDT: a packet arrived after %v; want every packet delayed >= %v", e.min, delay)
		}
		if e.median-delay > 5*time.Millisecond {
			return fmt.Sprintf("median delay %v; want within 5ms of %v", e.median, delay)
		}
		return ""
	})
	if err := in.Remove("a0"); err != nil {
		t.Fatal(err)
	}
	p.A.Run("tc", "-n", p.A.Name, "qdisc", "replace", "dev", "a0", "root", "netem", "delay", "50ms", "limit", "100000")
	ne := summarize(measure(t, p, n, pps, 2*time.Second))
	t.Logf("netem 50ms: %v; error median %+.3fms p99 %+.3fms", ne, ms(ne.median-delay), ms(ne.p99-delay))
	if ne.median > delay && ne.p99 > delay {
		t.Logf("error ratio EDT/netem: median %.2f, p99 %.2f", float64(e.median-delay)/float64(ne.median-delay), float64(e.p99-delay)/float64(ne.p99-delay))
	}
}

// TestEDTJitter: 50 ms ± 10 ms normal with reorder on: the spreads of
// the measured delays (p75-p25, p90-p10, standard deviation) match the
// normal table's, from 10% narrower to 25% wider (the VM's timer noise
// only adds spread; the program's own sampling is checked to 5% by
// bpf/edt's tests), and the median is within 5 ms. With reorder off a
// flow keeps its order whatever the jitter.
func TestEDTJitter(t *testing.T) {
	requireKernel(t)
	const n, pps, delay, jitter = 5000, 5000, 50 * time.Millisecond, 10 * time.Millisecond
	p := newPair(t)
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{Delay: delay, Jitter: jitter, Distribution: edt.Normal, Reorder: true}); err != nil {
		t.Fatal(err)
	}
	wm, wsd := bpfedt.DistMoments(bpfedt.DistNormal)
	wantMean, wantSD := float64(delay)+wm*float64(jitter), wsd*float64(jitter)
	q := tableQuantile(bpfedt.DistNormal, float64(jitter))
	// The check runs on windows of 1,000 consecutive packets (200 ms of
	// sending) and passes when one window fits: a VM stall (the suite has
	// seen 600 ms ones) inflates the windows it overlaps, never narrows
	// one, and a wrong distribution fails them all.
	noisyAttempts(t, 3, func(int) string {
		got := measure(t, p, n, pps, 2*time.Second)
		e := summarize(got)
		t.Logf("EDT   50ms 10ms normal: %v (want mean %.3fms stddev %.3fms)", e, wantMean/1e6, wantSD/1e6)
		if e.n != n {
			t.Fatalf("received %d of %d", e.n, n)
		}
		if e.reordered == 0 {
			t.Fatal("reorder on, 10ms jitter at 5000 packets/s: nothing reordered")
		}
		sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
		var problem string
		for w := 0; w+1000 <= len(got); w += 1000 {
			if problem = jitterProblem(t, summarize(got[w:w+1000]), delay, wantSD, q); problem == "" {
				return ""
			}
		}
		return "no window of 1000 packets fits; last: " + problem
	})

	if err := in.Apply("a0", edt.Profile{Delay: delay, Jitter: jitter}); err != nil {
		t.Fatal(err)
	}
	o := summarize(measure(t, p, 2000, pps, 2*time.Second))
	t.Logf("EDT   50ms 10ms uniform, reorder off: %v", o)
	if o.n != 2000 || o.reordered > 2000/100 || o.min < delay-jitter {
		t.Fatalf("reorder off: %v; want all 2000 in order, none before %v", o, delay-jitter)
	}
	if err := in.Remove("a0"); err != nil {
		t.Fatal(err)
	}
	p.A.Run("tc", "-n", p.A.Name, "qdisc", "replace", "dev", "a0", "root", "netem", "delay", "50ms", "10ms", "distribution", "normal", "limit", "100000")
	ne := summarize(measure(t, p, n, pps, 2*time.Second))
	t.Logf("netem 50ms 10ms normal: %v", ne)
}

// TestEDTShaping: 100 Mbit/s with the sender offering more (UDP GSO, 44
// datagrams of 1400 bytes per send) for 2 s. The delivered rate is at
// most the rate (1% slack for receive-timestamp noise; the pacing itself
// is exact to the nanosecond in bpf/edt's tests) and at least 80% of it.
// When the sender did overload the shaper (offered at least 110% of the
// rate) the program must have tail-dropped and counted packets; when the
// VM was too slow to offer that much, that part is not checked (logged).
func TestEDTShaping(t *testing.T) {
	requireKernel(t)
	const rate, payload, segs = 100e6, 1400, 44
	p := newPair(t)
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{Shape: rate}); err != nil {
		t.Fatal(err)
	}
	wire := func(n int) float64 { return float64(n) * (payload + frameOverhead) * 8 }
	noisyAttempts(t, 2, func(int) string {
		r := listen(t, p)
		s := dial(t, p, payload*segs)
		if err := unix.SetsockoptInt(s.fd, unix.SOL_UDP, unix.UDP_SEGMENT, payload); err != nil {
			t.Fatalf("UDP_SEGMENT: %v", err)
		}
		sends := 0
		end := time.Now().Add(2 * time.Second)
		for ; time.Now().Before(end); sends++ {
			for k := 0; k < segs; k++ {
				seg := s.buf[k*payload:]
				binary.LittleEndian.PutUint64(seg, s.seq)
				binary.LittleEndian.PutUint64(seg[8:], uint64(time.Now().UnixNano()))
				s.seq++
			}
			if _, err := unix.Write(s.fd, s.buf); err != nil && err != unix.ENOBUFS {
				t.Fatalf("send: %v", err)
			}
		}
		r.Wait(math.MaxInt, 500*time.Millisecond)
		got := r.Stop()
		st, _ := in.Stats("a0")
		offered := wire(sends*segs) / 2
		if len(got) < 1000 {
			t.Fatalf("received %d datagrams; want a steady stream", len(got))
		}
		// Steady state from the 10th percentile on, one point per GSO
		// packet (its segments share one receive timestamp): fit receive
		// time against bytes delivered; the rate is 1/slope. A VM stall
		// delays some arrivals, which moves the fit's intercept, not its
		// slope, as long as the stall ends.
		var xs, ys []float64
		for i := range got {
			if i == 0 || got[i].rx != got[i-1].rx {
				xs = append(xs, wire(i))
				ys = append(ys, float64(got[i].rx)/1e9)
			}
		}
		xs, ys = xs[len(xs)/10:], ys[len(ys)/10:]
		fit := 1 / slope(xs, ys)
		endToEnd := (xs[len(xs)-1] - xs[0]) / (ys[len(ys)-1] - ys[0])
		t.Logf("shape 100mbit: offered %.1f Mbit/s; delivered %.3f Mbit/s (fit, %.3f%% of the rate), %.3f Mbit/s (first to last) over %.2fs; program: %d passed, %d tail-dropped",
			offered/1e6, fit/1e6, 100*fit/rate, endToEnd/1e6, ys[len(ys)-1]-ys[0], st.Packets, st.DroppedLimit)
		if offered < 1.1*rate {
			t.Logf("the sender offered only %.1f Mbit/s: the VM is too slow to overload the shaper; the tail drop is not checked", offered/1e6)
		} else if st.DroppedLimit == 0 {
			t.Fatalf("offered %.1f Mbit/s to a 100 Mbit/s shaper for 2 s and the program counted no tail drop (%d passed)", offered/1e6, st.Packets)
		}
		if fit > 1.01*rate || fit < 0.8*rate {
			return fmt.Sprintf("delivered %.3f Mbit/s; want at most 101 (1%% slack for receive timestamps) and at least 80", fit/1e6)
		}
		return ""
	})
}

// slope is the least-squares slope of ys against xs.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	return sxy / sxx
}

// TestEDTManyInFlight: 15,000 packets sent in one flow with a 3 s delay
// all arrive, and more than 10,000 of them were in flight at once (sent
// before the first one arrived): fq's limit and flow_limit are sized from
// the profile (fq's defaults, 10,000 and 100, would drop the excess). How
// many were in flight depends on the sender's speed: logged.
func TestEDTManyInFlight(t *testing.T) {
	requireKernel(t)
	const n, delay = 15000, 3 * time.Second
	p := newPair(t)
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	r := listen(t, p)
	s := dial(t, p, 64)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := s.send(); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	sendTime := time.Since(start)
	r.Wait(n, delay+2*time.Second)
	got := r.Stop()
	var q []struct {
		Kind    string `json:"kind"`
		Drops   int    `json:"drops"`
		Options struct {
			Limit     int `json:"limit"`
			FlowLimit int `json:"flow_limit"`
		} `json:"options"`
	}
	if err := json.Unmarshal([]byte(p.A.Run("tc", "-n", p.A.Name, "-s", "-j", "qdisc", "show", "dev", "a0", "root")), &q); err != nil || len(q) != 1 {
		t.Fatalf("tc qdisc show: %v %v", q, err)
	}
	inFlight := 0 // sent before the first arrival
	if len(got) > 0 {
		first := got[0].rx
		for _, g := range got {
			first = min(first, g.rx)
		}
		for _, g := range got {
			if g.tx < first {
				inFlight++
			}
		}
	}
	t.Logf("sent %d in %v; received %d, %d in flight at once; fq limit %d flow_limit %d drops %d",
		n, sendTime, len(got), inFlight, q[0].Options.Limit, q[0].Options.FlowLimit, q[0].Drops)
	if len(got) != n || q[0].Drops != 0 {
		t.Fatalf("received %d of %d, fq dropped %d; want all, none", len(got), n, q[0].Drops)
	}
	if inFlight <= 10000 {
		t.Fatalf("only %d packets were in flight at once (sending took %v of the %v delay); want more than fq's default limit of 10,000",
			inFlight, sendTime, delay)
	}
}

// TestEDTRemoveRestores: Apply puts fq (handle ed:), clsact and the
// filter on; Remove puts back exactly what was there: the kernel's
// default, or a custom root qdisc with its options.
func TestEDTRemoveRestores(t *testing.T) {
	requireKernel(t)
	p := newPair(t)
	in := installer(t, p)
	show := func() string {
		return p.A.Run("tc", "-n", p.A.Name, "qdisc", "show", "dev", "a0")
	}
	filters := func() string {
		return p.A.Run("tc", "-n", p.A.Name, "filter", "show", "dev", "a0", "egress")
	}
	for _, prev := range [][]string{nil, {"root", "handle", "5:", "netem", "delay", "1ms"}} {
		if prev != nil {
			p.A.Run("tc", append([]string{"-n", p.A.Name, "qdisc", "replace", "dev", "a0"}, prev...)...)
		}
		before := show()
		if err := in.Apply("a0", edt.Profile{Delay: 10 * time.Millisecond, Shape: 1e9}); err != nil {
			t.Fatal(err)
		}
		during := show()
		if !strings.Contains(during, "qdisc fq ed: root") || !strings.Contains(during, "clsact") || !strings.Contains(filters(), edt.FilterName) {
			t.Fatalf("after Apply:\n%s\n%s\nwant fq ed: as root, clsact and the %s filter", during, filters(), edt.FilterName)
		}
		if err := in.Apply("a0", edt.Profile{Delay: 20 * time.Millisecond}); err != nil { // update in place
			t.Fatal(err)
		}
		if err := in.Remove("a0"); err != nil {
			t.Fatal(err)
		}
		if after := show(); after != before {
			t.Fatalf("Remove did not restore the qdiscs:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if f := filters(); strings.Contains(f, edt.FilterName) {
			t.Fatalf("filter left after Remove: %s", f)
		}
		if err := in.Remove("a0"); err != nil {
			t.Fatalf("second Remove: %v", err)
		}
	}
}

// tableQuantile returns the quantile function of a jitter distribution
// scaled to jitter ns, from its netem table (what edt.c samples).
func tableQuantile(dist int, jitter float64) func(p float64) float64 {
	t := bpfedt.DistTable(dist)
	return func(p float64) float64 {
		i := int(p * float64(len(t)))
		if i >= len(t) {
			i = len(t) - 1
		}
		return float64(t[i]) / bpfedt.DistScale * jitter
	}
}

// jitterProblem checks one window of delays against the normal table's
// shape: spreads from 10% narrower to 25% wider, median within 5 ms.
func jitterProblem(t *testing.T, e delayStats, delay time.Duration, wantSD float64, q func(float64) float64) string {
	var problems []string
	var figures []string
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p75-p25", float64(e.p75 - e.p25), q(0.75) - q(0.25)},
		{"p90-p10", float64(e.p90 - e.p10), q(0.90) - q(0.10)},
		{"stddev", e.stddev, wantSD},
	} {
		figures = append(figures, fmt.Sprintf("%s %.3fms (%+.1f%%)", c.name, c.got/1e6, 100*(c.got/c.want-1)))
		if r := c.got / c.want; r < 0.9 || r > 1.25 {
			problems = append(problems, fmt.Sprintf("%s %.3fms, want %.3fms -10%%..+25%%", c.name, c.got/1e6, c.want/1e6))
		}
	}
	want := time.Duration(float64(delay) + q(0.5))
	if d := e.median - want; d < 0 || d > 5*time.Millisecond {
		problems = append(problems, fmt.Sprintf("median %v, want within 5ms above %v", e.median, want))
	}
	t.Logf("window: median %v, %s", e.median, strings.Join(figures, ", "))
	return strings.Join(problems, "; ")
}
