package impairde2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// egressFilters names the port's egress filters (tc -j, the judge), one
// "name@prio" each, in tc's order.
func egressFilters(t testing.TB, e *env) []string {
	t.Helper()
	out, err := e.NS.Exec("tc", "-j", "filter", "show", "dev", "Ethernet0", "egress")
	if err != nil {
		if strings.Contains(out, "Cannot find") || strings.Contains(out, "Invalid") {
			return nil
		}
		t.Fatalf("tc -j filter show egress: %v: %s", err, out)
	}
	var fs []struct {
		Pref    int `json:"pref"`
		Options *struct {
			BPFName string `json:"bpf_name"`
		} `json:"options"`
	}
	if strings.TrimSpace(out) != "" {
		if err := json.Unmarshal([]byte(out), &fs); err != nil {
			t.Fatalf("tc -j filter show egress: %v: %s", err, out)
		}
	}
	var names []string
	for _, f := range fs {
		if f.Options != nil {
			names = append(names, fmt.Sprintf("%s@%d", f.Options.BPFName, f.Pref))
		}
	}
	return names
}

func hasEgress(fs []string) bool {
	for _, f := range fs {
		if strings.HasPrefix(f, "switchyard_acl") {
			return true
		}
	}
	return false
}

// sendOut sends n datagrams from the switch to h1 (they leave through
// Ethernet0's egress) and returns how many arrived.
func (e *env) sendOut(r *e2eutil.UDPCounter, port, n int) int64 {
	e.T.Helper()
	before := r.Count()
	e2eutil.SendUDP(e.T, e2eutil.DialUDP(e.T, e.NS, "10.0.0.1", port), n)
	return r.Settle() - before
}

// TestImpairdDirection (host kernel: clsact and cls_bpf): direction
// egress loss 30 drops about 30% of the datagrams the switch sends and
// none of those arriving, counted in the tx_ fields; both drops each way
// with independent counters; switching direction live moves the loss;
// ingress takes the egress program off; deleting the key leaves only
// another owner's egress filter, and no clsact once none is left.
func TestImpairdDirection(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP both ways before measuring
	before := qdiscs(t, e.NS, "Ethernet0")
	e.start()
	in := e.listen(9000)
	out := e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9001)
	const n = 3000
	lossPct := func(got int64) float64 { return 100 * (1 - float64(got)/n) }
	within := func(what string, loss, want float64) {
		t.Helper()
		// 3000 datagrams at 30%: one sigma is 0.84 points
		if math.Abs(loss-want) > 6 {
			t.Errorf("%s: %.2f%% lost, want %v +- 6", what, loss, want)
		}
	}

	e.HSet("IMPAIRMENT|Ethernet0", "loss", "30", "seed", "5", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	if fs := egressFilters(t, e); !hasEgress(fs) {
		t.Fatalf("egress filters %v: want switchyard_acl", fs)
	}
	lo, li := lossPct(e.sendOut(out, 9001, n)), lossPct(e.through(in, 9000, n))
	t.Logf("direction egress: %.2f%% of sent lost, %.2f%% of arriving", lo, li)
	within("egress, sent", lo, 30)
	if li > 1 {
		t.Errorf("egress only: %.2f%% of the arriving datagrams lost", li)
	}
	var c map[string]uint64
	e.Eventually("egress counters", func() (bool, string) {
		c = e.counters("Ethernet0")
		return c["tx_packets"] >= n && c["tx_packets"] == c["tx_passed"]+c["tx_dropped_loss"]+c["tx_dropped_rate"], fmt.Sprint(c)
	})
	if c["rx_packets"] != 0 || c["dropped_loss"] != 0 {
		t.Errorf("egress only: ingress counters %v", c)
	}

	e.HSet("IMPAIRMENT|Ethernet0", "direction", "both")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	lo, li = lossPct(e.sendOut(out, 9001, n)), lossPct(e.through(in, 9000, n))
	t.Logf("direction both: %.2f%% of sent lost, %.2f%% of arriving", lo, li)
	within("both, sent", lo, 30)
	within("both, arriving", li, 30)
	e.Eventually("counters of both directions", func() (bool, string) {
		c = e.counters("Ethernet0")
		return c["rx_packets"] >= n && c["tx_packets"] >= 2*n && consistent(c), fmt.Sprint(c)
	})

	e.HSet("IMPAIRMENT|Ethernet0", "direction", "ingress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	e.Eventually("egress program removed", func() (bool, string) {
		fs := egressFilters(t, e)
		return !hasEgress(fs), fmt.Sprint(fs)
	})
	lo, li = lossPct(e.sendOut(out, 9001, n)), lossPct(e.through(in, 9000, n))
	t.Logf("direction ingress: %.2f%% of sent lost, %.2f%% of arriving", lo, li)
	if lo > 1 {
		t.Errorf("ingress only: %.2f%% of the sent datagrams lost", lo)
	}
	within("ingress, arriving", li, 30)
	e.Eventually("tx_ fields gone", func() (bool, string) {
		c = e.counters("Ethernet0")
		_, has := c["tx_packets"]
		return !has, fmt.Sprint(c)
	})

	// Back to egress with another owner's filter on the port's egress:
	// delete leaves it (and its clsact) alone.
	e.HSet("IMPAIRMENT|Ethernet0", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	other := foreignEgressFilter(t, e)
	if fs := egressFilters(t, e); len(fs) != 2 || !hasEgress(fs) {
		t.Fatalf("egress filters %v: want the other owner's and switchyard_acl", fs)
	}
	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("only the other owner's egress filter", func() (bool, string) {
		fs := egressFilters(t, e)
		return len(fs) == 1 && strings.HasPrefix(fs[0], "other"), fmt.Sprint(fs)
	})
	if err := e.NS.Do(func() error { return netlink.FilterDel(other) }); err != nil {
		t.Fatal(err)
	}
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "1", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("port restored", func() (bool, string) {
		q := qdiscs(t, e.NS, "Ethernet0")
		return q == before && len(egressFilters(t, e)) == 0, fmt.Sprintf("qdiscs %q, before %q", q, before)
	})
}

// foreignEgressFilter adds a pass-through cls_bpf filter of another
// owner (prio 5, name "other") on Ethernet0's egress; the caller deletes
// it.
func foreignEgressFilter(t *testing.T, e *env) *netlink.BpfFilter {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.SchedCLS, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{Parent: netlink.HANDLE_MIN_EGRESS, Handle: 1, Protocol: unix.ETH_P_ALL, Priority: 5},
		Name:        "other", DirectAction: true, Fd: prog.FD(),
	}
	if err := e.NS.Do(func() error {
		l, err := netlink.LinkByName("Ethernet0")
		if err != nil {
			return err
		}
		f.LinkIndex = l.Attrs().Index
		return netlink.FilterAdd(f)
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestImpairdDirectionFlow: an IMPAIRMENT_FLOW rule of direction egress
// drops what the switch sends to its port only, counted in the rule's
// tx_ fields; the port's ingress profile keeps acting on arriving packets.
func TestImpairdDirectionFlow(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	e.start()
	in := e.listen(9000)
	out := e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9002)
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "0")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|out", "proto", "udp", "dport", "9002", "loss", "100", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	e.WaitApplied("IMPAIRMENT_FLOW|Ethernet0|out")
	const n = 500
	if got := e.sendOut(out, 9002, n); got != 0 {
		t.Errorf("egress rule with loss 100: %d of %d sent datagrams arrived", got, n)
	}
	if got := e.through(in, 9000, n); got < n-n/100 {
		t.Errorf("arriving datagrams: %d of %d, want all", got, n)
	}
	e.Eventually("rule's egress counters", func() (bool, string) {
		c := e.counters("Ethernet0|out")
		return c["tx_dropped_loss"] >= n && c["rx_packets"] == 0, fmt.Sprint(c)
	})
	e.Del("IMPAIRMENT_FLOW|Ethernet0|out")
	e.WaitGone("IMPAIRMENT_FLOW|Ethernet0|out")
	e.Eventually("egress program removed", func() (bool, string) {
		fs := egressFilters(t, e)
		return !hasEgress(fs), fmt.Sprint(fs)
	})
}

// TestImpairdDirectionSchedule: a key of direction egress following a
// schedule: the step acts on the egress hook (its port profile becomes
// the schedule's rule in the egress plan), arriving packets are untouched.
func TestImpairdDirectionSchedule(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	e.start()
	in := e.listen(9000)
	out := e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9003)
	e.HSet("IMPAIRMENT_SCHEDULE|s", "steps", "0s loss 100")
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "0", "schedule", "s", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	const n = 300
	if got := e.sendOut(out, 9003, n); got != 0 {
		t.Errorf("egress step loss 100: %d of %d sent datagrams arrived", got, n)
	}
	if got := e.through(in, 9000, n); got < n-n/100 {
		t.Errorf("arriving datagrams: %d of %d, want all", got, n)
	}
	e.Eventually("port's egress counters", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["tx_dropped_loss"] >= n && c["rx_packets"] == 0, fmt.Sprint(c)
	})
}

// TestImpairdDirectionRestart: the egress program keeps dropping while
// impaird is down (the filter holds it, its maps are pinned in
// <port>/egress); a restarted impaird adopts the egress instance (its
// counters go on) and a delete removes every pin and the filter.
func TestImpairdDirectionRestart(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	before := qdiscs(t, e.NS, "Ethernet0")
	e.start()
	out := e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9004)
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "100", "direction", "egress")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	const n = 200
	if got := e.sendOut(out, 9004, n); got != 0 {
		t.Fatalf("egress loss 100: %d of %d arrived", got, n)
	}
	e.Eventually("egress counters", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["tx_dropped_loss"] >= n, fmt.Sprint(c)
	})
	e.impaird.Kill()
	if got := e.sendOut(out, 9004, n); got != 0 {
		t.Fatalf("impaird down: %d of %d arrived, want the egress program still dropping", got, n)
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet0", "egress")); err != nil {
		t.Fatalf("egress instance pins: %v", err)
	}
	e.start()
	e.Eventually("restarted impaird counts on", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["tx_dropped_loss"] >= 2*n && e.Result("IMPAIRMENT|Ethernet0")["state"] == "ok", fmt.Sprint(c)
	})
	if got := e.sendOut(out, 9004, n); got != 0 {
		t.Fatalf("after restart: %d of %d arrived", got, n)
	}
	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("pins, filter and clsact removed", func() (bool, string) {
		entries, _ := os.ReadDir(e.BPFFS)
		q := qdiscs(t, e.NS, "Ethernet0")
		fs := egressFilters(t, e)
		return len(entries) == 0 && len(fs) == 0 && q == before, fmt.Sprintf("bpffs %v, filters %v, qdiscs %q (before %q)", entries, fs, q, before)
	})
}

// TestImpairdDirectionWithEgressACL: an egress ACL table and an egress
// impairment on one port share the one egress program: the ACL drops
// first (a dropped datagram never reaches the impairment counters), the
// impairment counts the rest; removing the ACL keeps the impairment's
// program, removing the impairment then keeps nothing, and the reverse.
func TestImpairdDirectionWithEgressACL(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	before := qdiscs(t, e.NS, "Ethernet0")
	e.start()
	rx := map[int]*e2eutil.UDPCounter{9300: e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9300), 9301: e2eutil.ListenUDP(t, e.h1, "10.0.0.1", 9301)}
	send := func(port, n int) int64 {
		t.Helper()
		return e.sendOut(rx[port], port, n)
	}
	e.HSet("ACL_TABLE|OUT", "type", "L3", "stage", "egress", "ports@", "Ethernet0")
	e.HSet("ACL_RULE|OUT|DROP_9300", "PRIORITY", "10", "PACKET_ACTION", "DROP", "IP_PROTOCOL", "17", "L4_DST_PORT", "9300")
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "0", "direction", "egress")
	e.WaitOK("ACL_TABLE|OUT", "ACL_RULE|OUT|DROP_9300")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	const n = 100
	if got := send(9300, n); got != 0 {
		t.Errorf("egress ACL drop: %d of %d arrived", got, n)
	}
	if got := send(9301, n); got != n {
		t.Errorf("egress ACL pass, impairment loss 0: %d of %d arrived", got, n)
	}
	e.Eventually("impairment counts only what the ACL passed", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["tx_passed"] >= n && c["tx_packets"] < 2*n, fmt.Sprint(c)
	})

	// The ACL goes: the impairment's egress program stays.
	e.Del("ACL_RULE|OUT|DROP_9300", "ACL_TABLE|OUT")
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "100")
	e.WaitApplied("IMPAIRMENT|Ethernet0")
	e.Eventually("ACL removed, impairment still dropping", func() (bool, string) {
		got := send(9301, 20)
		return got == 0 && hasEgress(egressFilters(t, e)), fmt.Sprintf("%d of 20 arrived, filters %v", got, egressFilters(t, e))
	})

	// ACL back, impairment gone: the ACL keeps the program.
	e.HSet("ACL_TABLE|OUT", "type", "L3", "stage", "egress", "ports@", "Ethernet0")
	e.HSet("ACL_RULE|OUT|DROP_9300", "PRIORITY", "10", "PACKET_ACTION", "DROP", "IP_PROTOCOL", "17", "L4_DST_PORT", "9300")
	e.WaitOK("ACL_TABLE|OUT", "ACL_RULE|OUT|DROP_9300")
	e.Del("IMPAIRMENT|Ethernet0")
	e.Eventually("impairment removed, ACL still dropping", func() (bool, string) {
		drop, pass := send(9300, 20), send(9301, 20)
		return drop == 0 && pass == 20, fmt.Sprintf("9300: %d of 20, 9301: %d of 20", drop, pass)
	})
	e.Del("ACL_RULE|OUT|DROP_9300", "ACL_TABLE|OUT")
	e.Eventually("port restored", func() (bool, string) {
		q := qdiscs(t, e.NS, "Ethernet0")
		entries, _ := os.ReadDir(e.BPFFS)
		return q == before && len(egressFilters(t, e)) == 0 && len(entries) == 0,
			fmt.Sprintf("qdiscs %q (before %q), filters %v, bpffs %v", q, before, egressFilters(t, e), entries)
	})
}
