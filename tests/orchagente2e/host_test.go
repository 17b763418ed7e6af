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
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("PORT|Ethernet0", "admin_status", "down", "mtu", "9000", "mac", "02:11:22:33:44:55", "description", "to peer")
	e.WaitOK("PORT|Ethernet0")
	l, _ := e2eutil.Link(e.NS, "Ethernet0")
	if l.Up() || l.MTU != 9000 || l.Address != "02:11:22:33:44:55" || l.Alias != "to peer" {
		t.Fatalf("Ethernet0 = %+v", l)
	}
	e.HSet("PORT|Ethernet0", "admin_status", "up")
	e.Eventually("Ethernet0 up", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return l.Up(), fmt.Sprint(l.Flags)
	})

	// Hot-plug: the key waits for its netdev and is applied when it appears.
	e.HSet("PORT|Ethernet8", "admin_status", "up", "mtu", "1400")
	e.WaitState("PORT|Ethernet8", "pending", "waiting for netdev Ethernet8")
	e.NS.IP("link", "add", "Ethernet8", "type", "veth", "peer", "name", "hp8")
	e.WaitOK("PORT|Ethernet8")
	if l, _ := e2eutil.Link(e.NS, "Ethernet8"); !l.Up() || l.MTU != 1400 {
		t.Fatalf("hot-plugged Ethernet8 = %+v", l)
	}

	// Removing the key stops managing: the port stays as it is.
	e.Del("PORT|Ethernet8")
	e.WaitGone("PORT|Ethernet8")
	if l, ok := e2eutil.Link(e.NS, "Ethernet8"); !ok || l.MTU != 1400 {
		t.Fatal("Ethernet8 changed or deleted after its PORT key was removed")
	}
}

func TestDriftReverted(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("PORT|Ethernet0", "admin_status", "up", "mtu", "9000")
	e.HSet("INTERFACE|Ethernet0|10.0.0.1/24")
	e.HSet("STATIC_ROUTE|10.2.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0")
	e.WaitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24", "STATIC_ROUTE|10.2.0.0/16")

	e.NS.IP("link", "set", "Ethernet0", "down")
	e.Eventually("Ethernet0 back up", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return l.Up(), fmt.Sprint(l.Flags)
	})
	// The kernel dropped the route with the link; it comes back too.
	e.Eventually("route 10.2.0.0/16 restored after link down", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.2.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.NS.IP("link", "set", "Ethernet0", "mtu", "1400")
	e.Eventually("Ethernet0 mtu back to 9000", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return l.MTU == 9000, fmt.Sprint(l.MTU)
	})
	e.NS.IP("addr", "del", "10.0.0.1/24", "dev", "Ethernet0")
	e.Eventually("address restored", func() (bool, string) {
		a := e2eutil.Addrs(e.NS, "Ethernet0")
		return slices.Contains(a, "10.0.0.1/24"), fmt.Sprint(a)
	})
	e.Eventually("route restored after address removal", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.2.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.NS.IP("route", "del", "10.2.0.0/16")
	e.Eventually("route deleted by hand restored", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.2.0.0/16")
		return len(rs) == 1 && rs[0].Proto() == "201", fmt.Sprint(rs)
	})
	e.WaitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24", "STATIC_ROUTE|10.2.0.0/16")
}

// routed builds the switch with two hosts on routed ports:
// h1 10.0.1.2 / 2001:db8:1::2 on Ethernet0, h2 10.0.2.2 / 2001:db8:2::2 on
// Ethernet4.
func routed(t *testing.T) (e *e2eutil.Switch, h1, h2 *testns.NS) {
	e = e2eutil.NewSwitch(t)
	e2eutil.Sysctl(t, e.NS, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	h1 = host(t, e.NS, "Ethernet0", "10.0.1.2/24", "10.0.1.1", "2001:db8:1::2/64", "2001:db8:1::1")
	h2 = host(t, e.NS, "Ethernet4", "10.0.2.2/24", "10.0.2.1", "2001:db8:2::2/64", "2001:db8:2::1")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	keys := []string{"INTERFACE|Ethernet0|10.0.1.1/24", "INTERFACE|Ethernet4|10.0.2.1/24",
		"INTERFACE|Ethernet0|2001:db8:1::1/64", "INTERFACE|Ethernet4|2001:db8:2::1/64", "INTERFACE|Ethernet0", "INTERFACE|Ethernet4"}
	for _, k := range keys {
		e.HSet(k)
	}
	e.WaitOK(keys...)
	return e, h1, h2
}

func TestInterfaceRoutedPing(t *testing.T) {
	e, h1, _ := routed(t)
	if a := e2eutil.Addrs(e.NS, "Ethernet0"); !slices.Contains(a, "10.0.1.1/24") || !slices.Contains(a, "2001:db8:1::1/64") {
		t.Fatalf("Ethernet0 addresses = %v", a)
	}
	e2eutil.WaitReachable(t, h1, "10.0.2.2")
	e2eutil.WaitReachable(t, h1, "2001:db8:2::2")
	e.Del("INTERFACE|Ethernet4|10.0.2.1/24")
	e.WaitGone("INTERFACE|Ethernet4|10.0.2.1/24")
	if a := e2eutil.Addrs(e.NS, "Ethernet4"); slices.Contains(a, "10.0.2.1/24") {
		t.Fatalf("address left after its key was deleted: %v", a)
	}
}

func TestStaticRoutesECMPBlackholePending(t *testing.T) {
	e, h1, h2 := routed(t)
	h2.IP("addr", "add", "10.9.0.1/32", "dev", "lo")
	h2.IP("-6", "addr", "add", "2001:db8:9::1/128", "dev", "lo")
	e.HSet("STATIC_ROUTE|10.9.0.0/16", "nexthop", "10.0.2.2", "ifname", "Ethernet4")
	e.HSet("STATIC_ROUTE|default|2001:db8:9::/48", "nexthop", "2001:db8:2::2", "ifname", "Ethernet4")
	e.HSet("STATIC_ROUTE|10.10.0.0/16", "nexthop", "10.0.1.2,10.0.2.2", "ifname", "Ethernet0,Ethernet4")
	e.HSet("STATIC_ROUTE|2001:db8:10::/48", "nexthop", "2001:db8:1::2,2001:db8:2::2", "ifname", "Ethernet0,Ethernet4")
	e.HSet("STATIC_ROUTE|10.11.0.0/16", "blackhole", "true", "distance", "10")
	e.WaitOK("STATIC_ROUTE|10.9.0.0/16", "STATIC_ROUTE|default|2001:db8:9::/48", "STATIC_ROUTE|10.10.0.0/16",
		"STATIC_ROUTE|2001:db8:10::/48", "STATIC_ROUTE|10.11.0.0/16")
	e2eutil.WaitReachable(t, h1, "10.9.0.1")
	e2eutil.WaitReachable(t, h1, "2001:db8:9::1")
	for _, dst := range []string{"10.10.0.0/16", "2001:db8:10::/48"} {
		rs := e2eutil.Routes(e.NS, dst)
		if len(rs) != 1 || len(rs[0].Nexthops) != 2 || rs[0].Proto() != "201" {
			t.Fatalf("ECMP %s = %+v", dst, rs)
		}
	}
	if rs := e2eutil.Routes(e.NS, "10.11.0.0/16"); len(rs) != 1 || rs[0].Type != "blackhole" || rs[0].Metric != 10 {
		t.Fatalf("blackhole = %+v", rs)
	}

	// Pending until the next-hop interface exists (and has its address).
	e.HSet("INTERFACE|Ethernet12|10.0.3.1/24")
	e.HSet("STATIC_ROUTE|10.12.0.0/16", "nexthop", "10.0.3.2", "ifname", "Ethernet12")
	e.WaitState("STATIC_ROUTE|10.12.0.0/16", "pending", "waiting for netdev Ethernet12")
	e.NS.IP("link", "add", "Ethernet12", "type", "veth", "peer", "name", "p12")
	e.NS.IP("link", "set", "p12", "up")
	e.NS.IP("link", "set", "Ethernet12", "up")
	e.WaitOK("INTERFACE|Ethernet12|10.0.3.1/24", "STATIC_ROUTE|10.12.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.12.0.0/16"); len(rs) != 1 || rs[0].Gateway != "10.0.3.2" {
		t.Fatalf("route via hot-plugged Ethernet12 = %+v", rs)
	}

	// Deleted by hand → restored; deleted in config → gone.
	e.NS.IP("route", "del", "10.9.0.0/16")
	e.Eventually("route restored", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.9.0.0/16")
		return len(rs) == 1, fmt.Sprint(rs)
	})
	e.Del("STATIC_ROUTE|10.11.0.0/16")
	e.WaitGone("STATIC_ROUTE|10.11.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.11.0.0/16"); len(rs) != 0 {
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
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("PORT|Ethernet0", "mtu", "9000")
	e.WaitOK("PORT|Ethernet0")
	settled(t, e.NS)
	before := snapshot(e.NS)
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
		e.HSet(b.key, b.kv...)
	}
	for _, b := range bad {
		e.WaitState(b.key, "error", b.reason)
	}
	if after := snapshot(e.NS); after != before {
		t.Fatalf("bad input changed the kernel:\nbefore %s\nafter  %s", before, after)
	}
	if l, _ := e2eutil.Link(e.NS, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("mtu changed to %d by bad input", l.MTU)
	}
	// Fixing the hash fixes the state.
	e.HSet("PORT|Ethernet0", "mtu", "1400")
	e.WaitOK("PORT|Ethernet0")
	e.Del("STATIC_ROUTE|10.2.3.4/16")
	e.WaitGone("STATIC_ROUTE|10.2.3.4/16")
}

// Ownership: what config did not ask for is never touched, even by the
// sweep: a management port with its address and routes, another bridge.
func TestOwnershipForeignObjectsUntouched(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("eth0", peer, "mgmt")
	e.NS.IP("addr", "add", "192.168.77.10/24", "dev", "eth0")
	e.NS.IP("route", "add", "10.77.0.0/16", "via", "192.168.77.1", "proto", "static")
	e.NS.IP("route", "add", "10.78.0.0/16", "via", "192.168.77.1")
	e.NS.IP("link", "add", "br0", "type", "bridge")
	e.NS.Veth("Ethernet0", peer, "eth1")
	settled(t, e.NS)
	before := snapshot(e.NS)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("STATIC_ROUTE|10.5.0.0/16", "blackhole", "true")
	e.WaitOK("STATIC_ROUTE|10.5.0.0/16")
	e.Del("STATIC_ROUTE|10.5.0.0/16")
	e.WaitGone("STATIC_ROUTE|10.5.0.0/16")
	e.Eventually("10.5.0.0/16 removed", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.5.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	if after := snapshot(e.NS); after != before {
		t.Fatalf("foreign objects changed:\nbefore %s\nafter  %s", before, after)
	}
}

// Restart: kill -9 and start again over a kernel that is already right
// changes nothing (no netlink event at all); changes made while down are
// applied, and stale owned objects go only once CONFIG_DB_INITIALIZED is 1.
func TestRestartNoWritesThenSweepAfterInitialized(t *testing.T) {
	e, _, _ := routed(t)
	e.HSet("PORT|Ethernet0", "admin_status", "up", "mtu", "9000")
	e.HSet("STATIC_ROUTE|10.9.0.0/16", "nexthop", "10.0.2.2", "ifname", "Ethernet4")
	e.HSet("STATIC_ROUTE|10.8.0.0/16", "blackhole", "true")
	e.HSet("STATIC_ROUTE|2001:db8:9::/48", "nexthop", "2001:db8:2::2", "ifname", "Ethernet4")
	cfgKeys := []string{"PORT|Ethernet0", "STATIC_ROUTE|10.9.0.0/16", "STATIC_ROUTE|10.8.0.0/16", "STATIC_ROUTE|2001:db8:9::/48"}
	e.WaitOK(cfgKeys...)
	idx, _ := e2eutil.Link(e.NS, "Ethernet0")

	restartChangesNothing(t, e, cfgKeys...)
	if l, _ := e2eutil.Link(e.NS, "Ethernet0"); l.Index != idx.Index {
		t.Fatal("Ethernet0 was recreated")
	}

	// Changes while down: applied on start; the deleted route stays until
	// CONFIG_DB_INITIALIZED is 1.
	e.Procs["orchagent"].Kill()
	e.Del("CONFIG_DB_INITIALIZED")
	e.HSet("PORT|Ethernet0", "admin_status", "up", "mtu", "8000")
	e.Del("STATIC_ROUTE|10.8.0.0/16")
	e.Start("orchagent", "--log-level", "debug")
	e.Eventually("mtu changed while down applied", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return l.MTU == 8000, fmt.Sprint(l.MTU)
	})
	e.HSet("PORT|Ethernet98", "mtu", "1400")
	e.WaitState("PORT|Ethernet98", "pending", "waiting for netdev")
	if rs := e2eutil.Routes(e.NS, "10.8.0.0/16"); len(rs) != 1 {
		t.Fatalf("owned route swept before CONFIG_DB_INITIALIZED: %+v", rs)
	}
	e.SetInitialized()
	e.Eventually("stale route swept after CONFIG_DB_INITIALIZED", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.8.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	e.WaitGone("STATIC_ROUTE|10.8.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.9.0.0/16"); len(rs) != 1 {
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
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.HSet("PORT|Ethernet0", "mtu", "9000")
	e.HSet("INTERFACE|Ethernet0|10.0.0.1/24")
	e.WaitState("VLAN|Vlan100", "error", "kernel lacks")
	e.WaitState("VLAN_MEMBER|Vlan100|Ethernet0", "pending", "waiting for VLAN|Vlan100")
	e.WaitOK("PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24")
	h, _ := e.State.HGet(context.Background(), "VLAN_TABLE|Vlan100", "reason").Result()
	if !strings.Contains(h, "802.1Q") && !strings.Contains(h, "VLAN filtering") {
		t.Fatalf("reason %q does not name the missing feature", h)
	}
}

// Redis restarted empty: the rescan finds every key gone, but since
// CONFIG_DB_INITIALIZED was "1" and is not any more, nothing is torn down
// until the config is declared complete again; then only what was not
// reloaded goes.
func TestRedisRestartEmptyKeepsKernel(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("PORT|Ethernet0", "mtu", "9000")
	e.HSet("STATIC_ROUTE|10.7.0.0/16", "blackhole", "true")
	e.HSet("STATIC_ROUTE|10.8.0.0/16", "blackhole", "true")
	e.WaitOK("PORT|Ethernet0", "STATIC_ROUTE|10.7.0.0/16", "STATIC_ROUTE|10.8.0.0/16")

	e.Redis.Restart()
	e.Eventually("orchagent holds the deletions found by its rescan", func() (bool, string) {
		out := e.Procs["orchagent"].Output()
		return strings.Contains(out, "key gone while CONFIG_DB_INITIALIZED is not 1") &&
			strings.Contains(out, "10.7.0.0/16") && strings.Count(out, "what it configured stays until it is") >= 3, "no hold logged yet"
	})
	for _, dst := range []string{"10.7.0.0/16", "10.8.0.0/16"} {
		if rs := e2eutil.Routes(e.NS, dst); len(rs) != 1 {
			t.Fatalf("route %s torn down by an empty Redis: %+v", dst, rs)
		}
	}
	e.HSet("PORT|Ethernet0", "mtu", "9000")
	e.HSet("STATIC_ROUTE|10.7.0.0/16", "blackhole", "true")
	e.WaitOK("PORT|Ethernet0", "STATIC_ROUTE|10.7.0.0/16")
	e.SetInitialized()
	e.Eventually("route not reloaded removed once CONFIG_DB_INITIALIZED is 1", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.8.0.0/16")
		return len(rs) == 0, fmt.Sprint(rs)
	})
	if rs := e2eutil.Routes(e.NS, "10.7.0.0/16"); len(rs) != 1 {
		t.Fatalf("reloaded route gone: %+v", rs)
	}
	if l, _ := e2eutil.Link(e.NS, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("Ethernet0 mtu %d", l.MTU)
	}
}

// A field nobody defines (a typo) does not block the entry: the known
// fields apply, the result is ok with a warning naming the unknown one,
// and the result names the generation it applied.
func TestUnknownFieldIsAWarning(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("PORT|Ethernet0", "mtu", "9000", "admin_stauts", "up")
	e.WaitOK("PORT|Ethernet0")
	h, _ := e.State.HGetAll(context.Background(), "PORT_TABLE|Ethernet0").Result()
	if !strings.Contains(h["warning"], "admin_stauts") || !strings.Contains(h["warning"], "admin_status") {
		t.Fatalf("warning %q does not name the typo and the known field", h["warning"])
	}
	if want := schema.Generation(schema.Fields{"mtu": "9000", "admin_stauts": "up"}); h["generation"] != want {
		t.Fatalf("generation %q, want %q", h["generation"], want)
	}
	if l, _ := e2eutil.Link(e.NS, "Ethernet0"); l.MTU != 9000 {
		t.Fatalf("mtu %d: the known field was not applied", l.MTU)
	}
}
