package orchagente2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

func TestPortAdminMTUMACAndHotplug(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.hset("PORT|Ethernet0", "admin_status", "down", "mtu", "9000", "mac", "02:11:22:33:44:55", "description", "to peer")
	e.waitOK("PORT|Ethernet0")
	l, _ := link(e.sw, "Ethernet0")
	if l.up() || l.MTU != 9000 || l.Address != "02:11:22:33:44:55" || l.Alias != "to peer" {
		t.Fatalf("Ethernet0 = %+v", l)
	}
	e.hset("PORT|Ethernet0", "admin_status", "up")
	e2eutil.Eventually(t, wait, "Ethernet0 up", func() (bool, string) {
		l, _ := link(e.sw, "Ethernet0")
		return l.up(), fmt.Sprint(l.Flags)
	})

	// Hot-plug: the key waits for its netdev and is applied when it appears.
	e.hset("PORT|Ethernet8", "admin_status", "up", "mtu", "1400")
	e.waitState("PORT|Ethernet8", "pending", "waiting for netdev Ethernet8")
	e.sw.IP("link", "add", "Ethernet8", "type", "veth", "peer", "name", "hp8")
	e.waitOK("PORT|Ethernet8")
	if l, _ := link(e.sw, "Ethernet8"); !l.up() || l.MTU != 1400 {
		t.Fatalf("hot-plugged Ethernet8 = %+v", l)
	}

	// Removing the key stops managing: the port stays as it is.
	e.del("PORT|Ethernet8")
	e.waitGone("PORT|Ethernet8")
	if l, ok := link(e.sw, "Ethernet8"); !ok || l.MTU != 1400 {
		t.Fatal("Ethernet8 changed or deleted after its PORT key was removed")
	}
}

func TestDriftReverted(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.initialized()
	e.hset("PORT|Ethernet0", "admin_status", "up", "mtu", "9000")
	e.hset("INTERFACE|Ethernet0|10.0.0.1/24")
	e.hset("STATIC_ROUTE|10.2.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0")
	e.waitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24", "STATIC_ROUTE|10.2.0.0/16")

	e.sw.IP("link", "set", "Ethernet0", "down")
	e2eutil.Eventually(t, wait, "Ethernet0 back up", func() (bool, string) {
		l, _ := link(e.sw, "Ethernet0")
		return l.up(), fmt.Sprint(l.Flags)
	})
	// The kernel dropped the route with the link; it comes back too.
	e2eutil.Eventually(t, wait, "route 10.2.0.0/16 restored after link down", func() (bool, string) {
		rs := routes(e.sw, "10.2.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.sw.IP("link", "set", "Ethernet0", "mtu", "1400")
	e2eutil.Eventually(t, wait, "Ethernet0 mtu back to 9000", func() (bool, string) {
		l, _ := link(e.sw, "Ethernet0")
		return l.MTU == 9000, fmt.Sprint(l.MTU)
	})
	e.sw.IP("addr", "del", "10.0.0.1/24", "dev", "Ethernet0")
	e2eutil.Eventually(t, wait, "address restored", func() (bool, string) {
		a := addrs(e.sw, "Ethernet0")
		return slices.Contains(a, "10.0.0.1/24"), fmt.Sprint(a)
	})
	e2eutil.Eventually(t, wait, "route restored after address removal", func() (bool, string) {
		rs := routes(e.sw, "10.2.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.sw.IP("route", "del", "10.2.0.0/16")
	e2eutil.Eventually(t, wait, "route deleted by hand restored", func() (bool, string) {
		rs := routes(e.sw, "10.2.0.0/16")
		return len(rs) == 1 && rs[0].proto() == "201", fmt.Sprint(rs)
	})
	e.waitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24", "STATIC_ROUTE|10.2.0.0/16")
}

// routed builds the switch with two hosts on routed ports:
// h1 10.0.1.2 / 2001:db8:1::2 on Ethernet0, h2 10.0.2.2 / 2001:db8:2::2 on
// Ethernet4.
func routed(t *testing.T) (e *env, h1, h2 *testns.NS) {
	e = newEnv(t)
	forwarding(t, e.sw)
	h1 = host(t, e.sw, "Ethernet0", "10.0.1.2/24", "10.0.1.1", "2001:db8:1::2/64", "2001:db8:1::1")
	h2 = host(t, e.sw, "Ethernet4", "10.0.2.2/24", "10.0.2.1", "2001:db8:2::2/64", "2001:db8:2::1")
	e.start()
	e.initialized()
	keys := []string{"INTERFACE|Ethernet0|10.0.1.1/24", "INTERFACE|Ethernet4|10.0.2.1/24",
		"INTERFACE|Ethernet0|2001:db8:1::1/64", "INTERFACE|Ethernet4|2001:db8:2::1/64", "INTERFACE|Ethernet0", "INTERFACE|Ethernet4"}
	for _, k := range keys {
		e.hset(k)
	}
	e.waitOK(keys...)
	return e, h1, h2
}

func TestInterfaceRoutedPing(t *testing.T) {
	e, h1, _ := routed(t)
	if a := addrs(e.sw, "Ethernet0"); !slices.Contains(a, "10.0.1.1/24") || !slices.Contains(a, "2001:db8:1::1/64") {
		t.Fatalf("Ethernet0 addresses = %v", a)
	}
	e.waitPing(h1, "10.0.2.2")
	e.waitPing(h1, "2001:db8:2::2")
	e.del("INTERFACE|Ethernet4|10.0.2.1/24")
	e.waitGone("INTERFACE|Ethernet4|10.0.2.1/24")
	if a := addrs(e.sw, "Ethernet4"); slices.Contains(a, "10.0.2.1/24") {
		t.Fatalf("address left after its key was deleted: %v", a)
	}
}

func TestStaticRoutesECMPBlackholePending(t *testing.T) {
	e, h1, h2 := routed(t)
	h2.IP("addr", "add", "10.9.0.1/32", "dev", "lo")
	h2.IP("-6", "addr", "add", "2001:db8:9::1/128", "dev", "lo")
	e.hset("STATIC_ROUTE|10.9.0.0/16", "nexthop", "10.0.2.2", "ifname", "Ethernet4")
	e.hset("STATIC_ROUTE|default|2001:db8:9::/48", "nexthop", "2001:db8:2::2", "ifname", "Ethernet4")
	e.hset("STATIC_ROUTE|10.10.0.0/16", "nexthop", "10.0.1.2,10.0.2.2", "ifname", "Ethernet0,Ethernet4")
	e.hset("STATIC_ROUTE|2001:db8:10::/48", "nexthop", "2001:db8:1::2,2001:db8:2::2", "ifname", "Ethernet0,Ethernet4")
	e.hset("STATIC_ROUTE|10.11.0.0/16", "blackhole", "true", "distance", "10")
	e.waitOK("STATIC_ROUTE|10.9.0.0/16", "STATIC_ROUTE|default|2001:db8:9::/48", "STATIC_ROUTE|10.10.0.0/16",
		"STATIC_ROUTE|2001:db8:10::/48", "STATIC_ROUTE|10.11.0.0/16")
	e.waitPing(h1, "10.9.0.1")
	e.waitPing(h1, "2001:db8:9::1")
	for _, dst := range []string{"10.10.0.0/16", "2001:db8:10::/48"} {
		rs := routes(e.sw, dst)
		if len(rs) != 1 || len(rs[0].Nexthops) != 2 || rs[0].proto() != "201" {
			t.Fatalf("ECMP %s = %+v", dst, rs)
		}
	}
	if rs := routes(e.sw, "10.11.0.0/16"); len(rs) != 1 || rs[0].Type != "blackhole" || rs[0].Metric != 10 {
		t.Fatalf("blackhole = %+v", rs)
	}

	// Pending until the next-hop interface exists (and has its address).
	e.hset("INTERFACE|Ethernet12|10.0.3.1/24")
	e.hset("STATIC_ROUTE|10.12.0.0/16", "nexthop", "10.0.3.2", "ifname", "Ethernet12")
	e.waitState("STATIC_ROUTE|10.12.0.0/16", "pending", "waiting for netdev Ethernet12")
	e.sw.IP("link", "add", "Ethernet12", "type", "veth", "peer", "name", "p12")
	e.sw.IP("link", "set", "p12", "up")
	e.sw.IP("link", "set", "Ethernet12", "up")
	e.waitOK("INTERFACE|Ethernet12|10.0.3.1/24", "STATIC_ROUTE|10.12.0.0/16")
	if rs := routes(e.sw, "10.12.0.0/16"); len(rs) != 1 || rs[0].Gateway != "10.0.3.2" {
		t.Fatalf("route via hot-plugged Ethernet12 = %+v", rs)
	}

	// Deleted by hand → restored; deleted in config → gone.
	e.sw.IP("route", "del", "10.9.0.0/16")
	e2eutil.Eventually(t, wait, "route restored", func() (bool, string) {
		rs := routes(e.sw, "10.9.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.del("STATIC_ROUTE|10.11.0.0/16")
	e.waitGone("STATIC_ROUTE|10.11.0.0/16")
	if rs := routes(e.sw, "10.11.0.0/16"); len(rs) != 0 {
		t.Fatalf("route left after its key was deleted: %+v", rs)
	}
}

// snapshot is what "nothing else changes" compares.
func snapshot(ns *testns.NS) string {
	var b strings.Builder
	for _, args := range [][]string{{"-j", "link", "show"}, {"-j", "addr", "show"}, {"-j", "route", "show"}, {"-j", "-6", "route", "show"}} {
		out, _ := ns.TryIP(args...)
		b.WriteString(out)
	}
	return b.String()
}

func TestBadInputs(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.hset("PORT|Ethernet0", "mtu", "9000")
	e.waitOK("PORT|Ethernet0")
	settled(t, e.sw)
	before := snapshot(e.sw)
	bad := []struct {
		key, reason string
		kv          []string
	}{
		{"PORT|Ethernet0", "mtu", []string{"mtu", "banana"}},
		{"VLAN|Vlan100", "vlanid", []string{"vlanid", "5000"}},
		{"VLAN|Vlan200", "vlanid", []string{"vlanid", "201"}},
		{"VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", []string{"tagging_mode", "sideways"}},
		{"INTERFACE|Ethernet0|10.0.0.300/24", "10.0.0.300", nil},
		{"STATIC_ROUTE|10.2.3.4/16", "10.2.0.0/16", []string{"nexthop", "10.0.0.2"}},
		{"STATIC_ROUTE|10.3.0.0/16", "blackhole", []string{"nexthop", "10.0.0.2", "blackhole", "maybe"}},
		{"PORT|Ethernet0", "mtu", []string{"mtu", "banana"}},
	}
	for _, b := range bad {
		e.hset(b.key, b.kv...)
	}
	for _, b := range bad {
		e.waitState(b.key, "error", b.reason)
	}
	if after := snapshot(e.sw); after != before {
		t.Fatalf("bad input changed the kernel:\nbefore %s\nafter  %s", before, after)
	}
	if l, _ := link(e.sw, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("mtu changed to %d by bad input", l.MTU)
	}
	// Fixing the hash fixes the state.
	e.hset("PORT|Ethernet0", "mtu", "1400")
	e.waitOK("PORT|Ethernet0")
	e.del("STATIC_ROUTE|10.2.3.4/16")
	e.waitGone("STATIC_ROUTE|10.2.3.4/16")
}

// Ownership: what config did not ask for is never touched, even by the
// sweep: a management port with its address and routes, another bridge.
func TestOwnershipForeignObjectsUntouched(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("eth0", peer, "mgmt")
	e.sw.IP("addr", "add", "192.168.77.10/24", "dev", "eth0")
	e.sw.IP("route", "add", "10.77.0.0/16", "via", "192.168.77.1", "proto", "static")
	e.sw.IP("route", "add", "10.78.0.0/16", "via", "192.168.77.1")
	e.sw.IP("link", "add", "br0", "type", "bridge")
	e.sw.Veth("Ethernet0", peer, "eth1")
	settled(t, e.sw)
	before := snapshot(e.sw)
	e.start()
	e.initialized()
	e.hset("STATIC_ROUTE|10.5.0.0/16", "blackhole", "true")
	e.waitOK("STATIC_ROUTE|10.5.0.0/16")
	e.del("STATIC_ROUTE|10.5.0.0/16")
	e.waitGone("STATIC_ROUTE|10.5.0.0/16")
	e2eutil.Eventually(t, wait, "10.5.0.0/16 removed", func() (bool, string) {
		rs := routes(e.sw, "10.5.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	if after := snapshot(e.sw); after != before {
		t.Fatalf("foreign objects changed:\nbefore %s\nafter  %s", before, after)
	}
}

// Restart: kill -9 and start again over a kernel that is already right
// changes nothing (no netlink event at all); changes made while down are
// applied, and stale owned objects go only once CONFIG_DB_INITIALIZED is 1.
func TestRestartNoWritesThenSweepAfterInitialized(t *testing.T) {
	e, _, _ := routed(t)
	e.hset("PORT|Ethernet0", "admin_status", "up", "mtu", "9000")
	e.hset("STATIC_ROUTE|10.9.0.0/16", "nexthop", "10.0.2.2", "ifname", "Ethernet4")
	e.hset("STATIC_ROUTE|10.8.0.0/16", "blackhole", "true")
	e.hset("STATIC_ROUTE|2001:db8:9::/48", "nexthop", "2001:db8:2::2", "ifname", "Ethernet4")
	cfgKeys := []string{"PORT|Ethernet0", "STATIC_ROUTE|10.9.0.0/16", "STATIC_ROUTE|10.8.0.0/16", "STATIC_ROUTE|2001:db8:9::/48"}
	e.waitOK(cfgKeys...)
	idx, _ := link(e.sw, "Ethernet0")

	e.kill()
	settled(t, e.sw)
	mon := startMonitor(t, e.sw)
	mon.ready(t, e.sw)
	// Results are rewritten from scratch by the new process: their return
	// says it has reconciled every key.
	ctx := context.Background()
	keys, _ := e.state.Keys(ctx, "*_TABLE|*").Result()
	if len(keys) > 0 {
		e.state.Del(ctx, keys...)
	}
	e.start()
	e.waitOK(cfgKeys...)
	e.hset("PORT|Ethernet99", "mtu", "1400") // a marker that writes nothing
	e.waitState("PORT|Ethernet99", "pending", "waiting for netdev")
	if lines := mon.seen(); len(lines) != 0 {
		t.Fatalf("restart over a right kernel made netlink changes:\n%s", strings.Join(lines, "\n"))
	}
	if l, _ := link(e.sw, "Ethernet0"); l.Index != idx.Index {
		t.Fatal("Ethernet0 was recreated")
	}

	// Changes while down: applied on start; the deleted route stays until
	// CONFIG_DB_INITIALIZED is 1.
	e.kill()
	e.cfg.Del(ctx, "CONFIG_DB_INITIALIZED")
	e.hset("PORT|Ethernet0", "admin_status", "up", "mtu", "8000")
	e.del("STATIC_ROUTE|10.8.0.0/16")
	e.start()
	e2eutil.Eventually(t, wait, "mtu changed while down applied", func() (bool, string) {
		l, _ := link(e.sw, "Ethernet0")
		return l.MTU == 8000, fmt.Sprint(l.MTU)
	})
	e.hset("PORT|Ethernet98", "mtu", "1400")
	e.waitState("PORT|Ethernet98", "pending", "waiting for netdev")
	if rs := routes(e.sw, "10.8.0.0/16"); len(rs) != 1 {
		t.Fatalf("owned route swept before CONFIG_DB_INITIALIZED: %+v", rs)
	}
	e.initialized()
	e2eutil.Eventually(t, wait, "stale route swept after CONFIG_DB_INITIALIZED", func() (bool, string) {
		rs := routes(e.sw, "10.8.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	e.waitGone("STATIC_ROUTE|10.8.0.0/16")
	if rs := routes(e.sw, "10.9.0.0/16"); len(rs) != 1 {
		t.Fatalf("configured route swept: %+v", rs)
	}
}

// A kernel without 802.1Q or VLAN filtering (the host kernel): VLAN keys
// are errors naming the missing feature, their members wait, everything
// else keeps working. Skipped where the kernel has both features.
func TestMissingKernelFeature(t *testing.T) {
	testns.RequireRoot(t)
	vlan, _ := kernelcap.Has(kernelcap.VLAN8021Q)
	filt, _ := kernelcap.Has(kernelcap.VlanFiltering)
	if vlan && filt {
		t.Skip("this kernel has 802.1Q and bridge VLAN filtering: nothing is missing")
	}
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.hset("VLAN|Vlan100", "vlanid", "100")
	e.hset("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.hset("PORT|Ethernet0", "mtu", "9000")
	e.hset("INTERFACE|Ethernet0|10.0.0.1/24")
	e.waitState("VLAN|Vlan100", "error", "kernel lacks")
	e.waitState("VLAN_MEMBER|Vlan100|Ethernet0", "pending", "waiting for VLAN|Vlan100")
	e.waitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24")
	h, _ := e.state.HGet(context.Background(), "VLAN_TABLE|Vlan100", "reason").Result()
	if !strings.Contains(h, "802.1Q") && !strings.Contains(h, "VLAN filtering") {
		t.Fatalf("reason %q does not name the missing feature", h)
	}
}

// Redis restarted empty: the rescan finds every key gone, but since
// CONFIG_DB_INITIALIZED was "1" and is not any more, nothing is torn down
// until the config is declared complete again; then only what was not
// reloaded goes.
func TestRedisRestartEmptyKeepsKernel(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.initialized()
	e.hset("PORT|Ethernet0", "mtu", "9000")
	e.hset("STATIC_ROUTE|10.7.0.0/16", "blackhole", "true")
	e.hset("STATIC_ROUTE|10.8.0.0/16", "blackhole", "true")
	e.waitOK("PORT|Ethernet0", "STATIC_ROUTE|10.7.0.0/16", "STATIC_ROUTE|10.8.0.0/16")

	e.srv.Restart()
	e2eutil.Eventually(t, wait, "orchagent holds the deletions found by its rescan", func() (bool, string) {
		out := e.proc.Output()
		return strings.Contains(out, "key gone while CONFIG_DB_INITIALIZED is not 1") &&
			strings.Contains(out, "10.7.0.0/16") && strings.Count(out, "what it configured stays until it is") >= 3, "no hold logged yet"
	})
	for _, dst := range []string{"10.7.0.0/16", "10.8.0.0/16"} {
		if rs := routes(e.sw, dst); len(rs) != 1 {
			t.Fatalf("route %s torn down by an empty Redis: %+v", dst, rs)
		}
	}
	e.hset("PORT|Ethernet0", "mtu", "9000")
	e.hset("STATIC_ROUTE|10.7.0.0/16", "blackhole", "true")
	e.waitOK("PORT|Ethernet0", "STATIC_ROUTE|10.7.0.0/16")
	e.initialized()
	e2eutil.Eventually(t, wait, "route not reloaded removed once CONFIG_DB_INITIALIZED is 1", func() (bool, string) {
		rs := routes(e.sw, "10.8.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	if rs := routes(e.sw, "10.7.0.0/16"); len(rs) != 1 {
		t.Fatalf("reloaded route gone: %+v", rs)
	}
	if l, _ := link(e.sw, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("Ethernet0 mtu %d", l.MTU)
	}
}

// A field nobody defines (a typo) does not block the entry: the known
// fields apply, the result is ok with a warning naming the unknown one,
// and the result names the generation it applied.
func TestUnknownFieldIsAWarning(t *testing.T) {
	e := newEnv(t)
	peer := testns.New(t)
	e.sw.Veth("Ethernet0", peer, "eth1")
	e.start()
	e.hset("PORT|Ethernet0", "mtu", "9000", "admin_stauts", "up")
	e.waitOK("PORT|Ethernet0")
	h, _ := e.state.HGetAll(context.Background(), "PORT_TABLE|Ethernet0").Result()
	if !strings.Contains(h["warning"], "admin_stauts") || !strings.Contains(h["warning"], "admin_status") {
		t.Fatalf("warning %q does not name the typo and the known field", h["warning"])
	}
	if want := schema.Generation(schema.Fields{"mtu": "9000", "admin_stauts": "up"}); h["generation"] != want {
		t.Fatalf("generation %q, want %q", h["generation"], want)
	}
	if l, _ := link(e.sw, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("mtu %d: the known field was not applied", l.MTU)
	}
}
