package impairde2e

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// TestImpairdDuplicate (host kernel: clsact and cls_bpf): duplicate 30 on
// a port copies 30% of the passed datagrams, seen by the receiver and in
// the duplicated counter; impair_dup is a tc ingress filter while the
// profile duplicates, and goes with clsact when it no longer does.
func TestImpairdDuplicate(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP before measuring
	before := qdiscs(t, e.NS, "Ethernet0")
	e.start()

	e.HSet("IMPAIRMENT|Ethernet0", "duplicate", "30", "seed", "7")
	e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	if f := ingressFilters(t, e); !strings.Contains(f, "switchyard_dup") {
		t.Fatalf("tc filter show ingress: %q, want the switchyard_dup program", f)
	}

	// 4000 datagrams, 30% copied: one sigma of the copies is 29 (0.7
	// points); the bound is 5 points since a loaded machine may drop a few
	// in the socket (checked against the counters).
	r := e.listen(9000)
	const n = 4000
	e2eutil.SendUDP(t, e.sender(9000), n)
	got := r.Settle()
	dup := 100 * (float64(got)/n - 1)
	t.Logf("duplicate 30%%: receiver got %d for %d sent (%.2f%% extra)", got, n, dup)
	if math.Abs(dup-30) > 5 {
		t.Errorf("receiver saw %.2f%% duplicates, want 30 +- 5", dup)
	}
	var c map[string]uint64
	e.Eventually("port counters", func() (bool, string) {
		c = e.counters("Ethernet0")
		return c["rx_packets"] >= n && consistent(c), fmt.Sprint(c)
	})
	if d := 100 * float64(c["duplicated"]) / float64(c["passed"]); math.Abs(d-30) > 3 {
		t.Errorf("counters: duplicated %.2f%% of passed, want 30 +- 3 (%v)", d, c)
	}
	if want := int64(c["passed"] + c["duplicated"]); got > want || got < want-int64(n/100) {
		t.Errorf("receiver got %d, counters say passed + duplicated = %d", got, want)
	}

	// Loss instead of duplication: the tc program goes, clsact with it.
	e.HSet("IMPAIRMENT|Ethernet0", "duplicate", "0", "loss", "1")
	e.Eventually("duplicate program removed", func() (bool, string) {
		f := ingressFilters(t, e)
		q := qdiscs(t, e.NS, "Ethernet0")
		return !strings.Contains(f, "switchyard_dup") && q == before, fmt.Sprintf("filters %q, qdiscs %q (before %q)", f, q, before)
	})
	e.HSet("IMPAIRMENT|Ethernet0", "duplicate", "10")
	e.Eventually("duplicate program back", func() (bool, string) {
		f := ingressFilters(t, e)
		return strings.Contains(f, "switchyard_dup"), f
	})
	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("port restored", func() (bool, string) {
		q := qdiscs(t, e.NS, "Ethernet0")
		return q == before, fmt.Sprintf("qdiscs %q, before %q", q, before)
	})
}

// TestImpairdNetemLossModels: loss_corr and loss_model state are accepted
// by impaird and drop on the XDP path (their statistics are bpf's tests).
func TestImpairdNetemLossModels(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	e.start()
	r := e.listen(9000)
	for _, fields := range [][]string{
		{"loss", "40", "loss_corr", "50", "seed", "3"},                             // netem: ~30.1% lost
		{"loss_model", "state", "p13", "20", "p31", "60", "p14", "5", "seed", "3"}, // 28.1% lost
	} {
		e.Del("IMPAIRMENT|Ethernet0")
		e.HSet("IMPAIRMENT|Ethernet0", fields...)
		e.WaitApplied("IMPAIRMENT|Ethernet0") // this hash's result, not the last one's
		const n = 3000
		got := e.through(r, 9000, n)
		loss := 100 * (1 - float64(got)/n)
		t.Logf("%v: %.2f%% lost", fields, loss)
		if loss < 15 || loss > 45 {
			t.Errorf("%v: %.2f%% lost, want about 30", fields, loss)
		}
	}
}

// ingressFilters is tc's view of the port's ingress filters.
func ingressFilters(t testing.TB, e *env) string {
	t.Helper()
	out, err := e.NS.Exec("tc", "filter", "show", "dev", "Ethernet0", "ingress")
	if err != nil && !strings.Contains(out, "Cannot find") && !strings.Contains(out, "Invalid") {
		t.Fatalf("tc filter show: %v: %s", err, out)
	}
	return out
}

// TestImpairdDuplicateRule: duplicate on an IMPAIRMENT_FLOW rule copies
// only that class (its counters say so); other traffic arrives once.
func TestImpairdDuplicateRule(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	e.start()
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|dup", "proto", "udp", "dport", "9001", "duplicate", "50", "seed", "2")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|dup", "ok", "")
	r0, r1 := e.listen(9000), e.listen(9001)
	const n = 2000
	got0, got1 := e.through(r0, 9000, n), e.through(r1, 9001, n)
	t.Logf("duplicate 50 on dport 9001: 9000 got %d, 9001 got %d of %d each", got0, got1, n)
	if got0 > n {
		t.Errorf("port 9000 (no rule) got %d of %d: copied", got0, n)
	}
	if d := 100 * (float64(got1)/n - 1); math.Abs(d-50) > 6 {
		t.Errorf("port 9001 got %.2f%% extra, want 50 +- 6", d)
	}
	e.Eventually("rule counters", func() (bool, string) {
		c := e.counters("Ethernet0|dup")
		return c["passed"] >= n && c["duplicated"] > 0 && int64(c["passed"]+c["duplicated"]) >= got1, fmt.Sprint(c)
	})
}

// TestEDTFlowDuplicate (VM: needs fq): a flow rule with delay 50ms and
// duplicate 100: every ping to h2 arrives twice (ping reports DUP!), and
// both copies are delayed: the copy impair_dup makes carries the rule's
// EDT class (skb->mark) to the egress program like the original.
func TestEDTFlowDuplicate(t *testing.T) {
	e := newRoutedEnv(t, "10.0.1.1/24")
	e2eutil.Ping(t, e.h1, "10.0.1.1", 1)
	e.start()
	e.HSet("IMPAIRMENT|Ethernet4", "NULL", "NULL")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|ping", "proto", "icmp", "dst", "10.0.1.1", "delay", "50ms", "duplicate", "100")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|ping", "ok", "")
	e.WaitState("IMPAIRMENT|Ethernet4", "ok", "")
	if f := ingressFilters(t, e); !strings.Contains(f, "switchyard_dup") || !strings.Contains(f, "switchyard_edt") {
		t.Fatalf("Ethernet0 ingress filters %q: want switchyard_dup and the EDT ingress program", f)
	}
	const n = 10
	d := pingRTTs(t, e.h1, "10.0.1.1", n)
	t.Logf("delay 50ms duplicate 100: %d replies to %d pings, RTT ms min %.3f median %.3f max %.3f", len(d), n, d[0], median(d), d[len(d)-1])
	if len(d) < 2*n-1 {
		t.Errorf("%d replies to %d pings: want every request copied (the last copy may come after ping exits)", len(d), n)
	}
	if d[0] < 50 {
		t.Errorf("a reply after %.3f ms: a copy went undelayed (lost its class)", d[0])
	}
	e.Eventually("rule counters", func() (bool, string) {
		c := e.counters("Ethernet0|ping")
		return c["duplicated"] >= n, fmt.Sprint(c)
	})
}
