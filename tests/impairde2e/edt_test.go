package impairde2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// qdiscs is iproute2's view of dev's qdiscs (tc -j qdisc show), one
// "kind handle parent" line per qdisc, sorted: what the test compares
// before and after impaird touched the port.
func qdiscs(t testing.TB, ns *testns.NS, dev string) string {
	t.Helper()
	out, err := ns.Exec("tc", "-j", "qdisc", "show", "dev", dev)
	if err != nil {
		t.Fatalf("tc qdisc show dev %s: %v: %s", dev, err, out)
	}
	var qs []struct {
		Kind   string `json:"kind"`
		Handle string `json:"handle"`
		Parent string `json:"parent"`
		Root   bool   `json:"root"`
	}
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		t.Fatalf("tc -j qdisc show dev %s: %v: %s", dev, err, out)
	}
	var lines []string
	for _, q := range qs {
		parent := q.Parent
		if q.Root {
			parent = "root"
		}
		lines = append(lines, q.Kind+" "+q.Handle+" "+parent)
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// TestImpairdDelayWithoutFq (host kernel, which lacks fq): a delay is
// reported as state error naming the fq qdisc, and the port is left as
// it was (no fq, no clsact).
func TestImpairdDelayWithoutFq(t *testing.T) {
	testns.RequireRoot(t)
	if ok, _ := kernelcap.Has(kernelcap.FQ); ok {
		t.Skip("this kernel has the fq qdisc: TestEDTImpairdDelay (VM suite) covers delay with fq")
	}
	e := newEnv(t)
	before := qdiscs(t, e.NS, "Ethernet0")
	e.start()
	e.HSet("IMPAIRMENT|Ethernet0", "delay", "50ms")
	st := e.WaitState("IMPAIRMENT|Ethernet0", "error", "")
	if !strings.Contains(st["reason"], "fq qdisc") || !strings.Contains(st["reason"], "delay") {
		t.Errorf("reason %q does not name the missing fq qdisc", st["reason"])
	}
	t.Logf("reason: %s", st["reason"])
	if after := qdiscs(t, e.NS, "Ethernet0"); after != before {
		t.Errorf("qdiscs of Ethernet0 changed: %q -> %q", before, after)
	}
	e.Del("IMPAIRMENT|Ethernet0")
	e.WaitGone("IMPAIRMENT|Ethernet0")
	// The same per class: the rule's state names fq.
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|ping", "proto", "icmp", "delay", "50ms")
	st = e.WaitState("IMPAIRMENT_FLOW|Ethernet0|ping", "error", "")
	if !strings.Contains(st["reason"], "fq qdisc") || !strings.Contains(st["reason"], "delay") {
		t.Errorf("flow reason %q does not name the missing fq qdisc", st["reason"])
	}
	t.Logf("flow reason: %s", st["reason"])
	e.Del("IMPAIRMENT_FLOW|Ethernet0|ping")
	e.WaitGone("IMPAIRMENT_FLOW|Ethernet0|ping")
	if after := qdiscs(t, e.NS, "Ethernet0"); after != before {
		t.Errorf("qdiscs of Ethernet0 changed: %q -> %q", before, after)
	}
}

var pingTime = regexp.MustCompile(`time=([0-9.]+) ms`)

// pingRTTs pings dst from ns n times and returns the RTTs in ms, sorted.
func pingRTTs(t testing.TB, ns *testns.NS, dst string, n int) []float64 {
	t.Helper()
	out, _ := ns.Exec("ping", "-n", "-c", strconv.Itoa(n), "-i", "0.2", "-W", "5", dst)
	var rtts []float64
	for _, m := range pingTime.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if len(rtts) < n/2 {
		t.Fatalf("ping %s: %d of %d replies: %s", dst, len(rtts), n, out)
	}
	sort.Float64s(rtts)
	return rtts
}

func median(s []float64) float64 { return s[len(s)/2] }

// newRoutedEnv is the switch of the EDT tests (VM: needs fq and clsact):
// h1 -Ethernet0- sw -Ethernet4- h2, routed by sw (10.0.0.0/24 on
// Ethernet0, 10.0.1.0/24 on Ethernet4), h2 holding addrs.
func newRoutedEnv(t *testing.T, addrs ...string) *env {
	t.Helper()
	kernelcap.Require(t, kernelcap.FQ, kernelcap.Clsact)
	exec.Command("modprobe", "cls_bpf").Run() // the VM does not autoload it
	e := newEnv(t)
	e2eutil.Sysctl(t, e.NS, "net.ipv4.ip_forward=1")
	h2 := e.Host("Ethernet4", "eth0")
	e.NS.IP("addr", "add", "10.0.1.254/24", "dev", "Ethernet4")
	for _, a := range addrs {
		h2.IP("addr", "add", a, "dev", "eth0")
	}
	e.h1.IP("route", "add", "10.0.1.0/24", "via", "10.0.0.254")
	h2.IP("route", "add", "10.0.0.0/24", "via", "10.0.1.254")
	return e
}

// TestEDTImpairdDelay (VM: needs fq): h1 -Ethernet0- sw -Ethernet4- h2,
// routed. IMPAIRMENT|Ethernet0 delay 50ms delays what arrives on
// Ethernet0 (marked at its ingress, timed by fq at Ethernet4's egress),
// IMPAIRMENT|Ethernet4 delay 1ms what arrives on Ethernet4: the ping RTT
// h1->h2 grows by 51 ms, not 100 (each port's class is its own); delete
// restores the qdiscs (tc -j qdisc show).
func TestEDTImpairdDelay(t *testing.T) {
	e := newRoutedEnv(t, "10.0.1.1/24")
	before0, before4 := qdiscs(t, e.NS, "Ethernet0"), qdiscs(t, e.NS, "Ethernet4")
	base := pingRTTs(t, e.h1, "10.0.1.1", 10)
	t.Logf("baseline RTT ms: min %.3f median %.3f max %.3f", base[0], median(base), base[len(base)-1])

	e.start()
	// Ethernet4 gets 1 ms of its own: the replies (arriving there) are
	// delayed by 1 ms, the requests (arriving on Ethernet0) by 50 ms. A
	// port with only delay fields has no XDP program.
	e.HSet("IMPAIRMENT|Ethernet4", "delay", "1ms")
	e.HSet("IMPAIRMENT|Ethernet0", "delay", "50ms")
	e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	e.WaitState("IMPAIRMENT|Ethernet4", "ok", "")
	for _, dev := range []string{"Ethernet0", "Ethernet4"} {
		q := qdiscs(t, e.NS, dev)
		if !strings.Contains(q, "fq ed: root") || !strings.Contains(q, "clsact") {
			t.Fatalf("%s: qdiscs %q; want fq ed: as root and clsact", dev, q)
		}
		if id, _ := e2eutil.XDPProg(e.NS, dev); id != 0 {
			t.Errorf("%s: XDP program %d attached for a delay-only profile", dev, id)
		}
	}

	// The delay is a floor (fq never sends before the departure time):
	// min >= 50 ms holds even on a stalling VM. The median's rise is
	// judged generously (40-90 ms) and retried against VM stalls.
	var rise float64
	for attempt := 1; ; attempt++ {
		d := pingRTTs(t, e.h1, "10.0.1.1", 10)
		rise = median(d) - median(base)
		t.Logf("attempt %d: delayed RTT ms: min %.3f median %.3f max %.3f (median +%.3f)", attempt, d[0], median(d), d[len(d)-1], rise)
		if d[0] < 51 {
			t.Fatalf("RTT %.3f ms below the 50 + 1 ms delay", d[0])
		}
		if d[0] >= 100 && attempt == 3 {
			t.Fatalf("min RTT %.3f ms: the replies (arriving on Ethernet4, 1 ms) got Ethernet0's 50 ms too", d[0])
		}
		if rise >= 40 && rise <= 90 && d[0] < 100 {
			break
		}
		if attempt == 3 {
			t.Fatalf("median RTT rose by %.3f ms; want about 50 (40-90)", rise)
		}
	}
	e.Eventually("delayed counter", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["delayed"] >= 10, fmt.Sprint(c)
	})

	e.Del("IMPAIRMENT|Ethernet0", "IMPAIRMENT|Ethernet4")
	e.Eventually("qdiscs restored", func() (bool, string) {
		q0, q4 := qdiscs(t, e.NS, "Ethernet0"), qdiscs(t, e.NS, "Ethernet4")
		return q0 == before0 && q4 == before4, fmt.Sprintf("Ethernet0 %q (was %q), Ethernet4 %q (was %q)", q0, before0, q4, before4)
	})
	if d := pingRTTs(t, e.h1, "10.0.1.1", 5); d[0] >= 50 {
		t.Errorf("after delete: min RTT %.3f ms, still delayed", d[0])
	}
}

// TestEDTFlowDelay (VM: needs fq): h1 -Ethernet0- sw -Ethernet4- h2,
// routed, h2 with two addresses. IMPAIRMENT_FLOW|Ethernet0|ping (proto
// icmp, dst 10.0.1.1, delay 50ms) delays the pings to 10.0.1.1 that
// arrive on Ethernet0 (XDP classifies, the class travels as metadata to
// the tc ingress program, skb->mark, fq at Ethernet4's egress); the pings
// to 10.0.1.2 (same port, no match) are not delayed. Delete restores the
// RTT and the qdiscs.
func TestEDTFlowDelay(t *testing.T) {
	e := newRoutedEnv(t, "10.0.1.1/24", "10.0.1.2/24")
	before0, before4 := qdiscs(t, e.NS, "Ethernet0"), qdiscs(t, e.NS, "Ethernet4")
	base := pingRTTs(t, e.h1, "10.0.1.1", 10)
	t.Logf("baseline RTT ms: min %.3f median %.3f max %.3f", base[0], median(base), base[len(base)-1])

	e.start()
	// Ethernet4 is managed (an empty IMPAIRMENT key) so that it gets fq
	// and the egress program.
	e.HSet("IMPAIRMENT|Ethernet4", "NULL", "NULL")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|ping", "proto", "icmp", "dst", "10.0.1.1", "delay", "50ms")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|ping", "ok", "")
	e.WaitState("IMPAIRMENT|Ethernet4", "ok", "")
	for _, dev := range []string{"Ethernet0", "Ethernet4"} {
		q := qdiscs(t, e.NS, dev)
		if !strings.Contains(q, "fq ed: root") || !strings.Contains(q, "clsact") {
			t.Fatalf("%s: qdiscs %q; want fq ed: as root and clsact", dev, q)
		}
	}
	if id, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); id == 0 {
		t.Fatal("Ethernet0: no XDP program for the rule")
	}

	// The delay is a floor for the matching pings (fq never sends early):
	// min >= 50 ms holds on a stalling VM. The other pings must not get
	// it: their minimum stays below 50 ms (a stall hits a few, not all
	// ten). Both retried against VM stalls.
	for attempt := 1; ; attempt++ {
		d := pingRTTs(t, e.h1, "10.0.1.1", 10)
		o := pingRTTs(t, e.h1, "10.0.1.2", 10)
		rise := median(d) - median(base)
		t.Logf("attempt %d: matching RTT ms: min %.3f median %.3f max %.3f (median +%.3f); other: min %.3f median %.3f",
			attempt, d[0], median(d), d[len(d)-1], rise, o[0], median(o))
		if d[0] < 50 {
			t.Fatalf("matching ping: RTT %.3f ms below the 50 ms delay", d[0])
		}
		if rise >= 40 && rise <= 150 && o[0] < 50 {
			break
		}
		if attempt == 3 {
			t.Fatalf("matching median rose by %.3f ms (want 40-150), other min %.3f ms (want < 50)", rise, o[0])
		}
	}

	e.Del("IMPAIRMENT_FLOW|Ethernet0|ping", "IMPAIRMENT|Ethernet4")
	e.Eventually("qdiscs restored", func() (bool, string) {
		q0, q4 := qdiscs(t, e.NS, "Ethernet0"), qdiscs(t, e.NS, "Ethernet4")
		return q0 == before0 && q4 == before4, fmt.Sprintf("Ethernet0 %q (was %q), Ethernet4 %q (was %q)", q0, before0, q4, before4)
	})
	for attempt := 1; ; attempt++ {
		d := pingRTTs(t, e.h1, "10.0.1.1", 5)
		if d[0] < 50 {
			break
		}
		if attempt == 3 {
			t.Fatalf("after delete: min RTT %.3f ms, still delayed", d[0])
		}
	}
}

// TestEDTRestartRestoresQdisc (VM: needs fq): Ethernet0 has a tbf root
// qdisc; delay 10ms puts fq in its place; impaird is killed (-9) and
// restarted, takes the port over again, and deleting the key brings the
// tbf back (the previous root qdisc is persisted under --bpffs, not only
// in the process that replaced it).
func TestEDTRestartRestoresQdisc(t *testing.T) {
	kernelcap.Require(t, kernelcap.FQ, kernelcap.Clsact)
	exec.Command("modprobe", "cls_bpf").Run() // the VM does not autoload it
	exec.Command("modprobe", "sch_tbf").Run()
	e := newEnv(t)
	if out, err := e.NS.Exec("tc", "qdisc", "add", "dev", "Ethernet0", "root", "handle", "1:", "tbf",
		"rate", "1gbit", "burst", "64kb", "latency", "100ms"); err != nil {
		t.Fatalf("tc qdisc add tbf: %v: %s", err, out)
	}
	before := qdiscs(t, e.NS, "Ethernet0")
	if !strings.Contains(before, "tbf 1: root") {
		t.Fatalf("qdiscs %q: want tbf 1: as root", before)
	}

	e.start()
	e.HSet("IMPAIRMENT|Ethernet0", "delay", "10ms")
	e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	if q := qdiscs(t, e.NS, "Ethernet0"); !strings.Contains(q, "fq ed: root") {
		t.Fatalf("qdiscs %q: want fq ed: as root", q)
	}

	e.impaird.Kill()
	e.start()
	// The restarted impaird has taken the port over (its STATE_DB result
	// is the old one; its log says when).
	e.impaird.WaitLog("EDT taken over", "EDT egress installed", "port=Ethernet0")
	e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	if q := qdiscs(t, e.NS, "Ethernet0"); !strings.Contains(q, "fq ed: root") {
		t.Fatalf("after restart: qdiscs %q: want fq ed: as root", q)
	}

	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("tbf restored", func() (bool, string) {
		q := qdiscs(t, e.NS, "Ethernet0")
		return q == before, fmt.Sprintf("%q (was %q)", q, before)
	})
	e.Eventually("bpffs empty", func() (bool, string) {
		entries, _ := os.ReadDir(e.BPFFS)
		return len(entries) == 0, fmt.Sprint(entries)
	})
}
