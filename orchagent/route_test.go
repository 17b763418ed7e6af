package orchagent

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func up(t *testing.T, k *netlinkmgr.Fake, names ...string) {
	t.Helper()
	on := true
	for _, n := range names {
		if err := k.Links().Set(netlinkmgr.LinkInfo{Name: n, AdminUp: &on}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInterfacePendingUntilNetdev(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake())
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet0|2001:db8::1/64")
	r.set("INTERFACE", "Ethernet0")
	r.settle()
	r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StatePending, "waiting for netdev Ethernet0")
	r.want("INTERFACE|Ethernet0", schema.StatePending, "waiting for netdev Ethernet0")
	r.k.AddPort("Ethernet0")
	r.linkEvent("Ethernet0", false)
	r.settle()
	r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
	r.want("INTERFACE|Ethernet0|2001:db8::1/64", schema.StateOK, "")
	r.want("INTERFACE|Ethernet0", schema.StateOK, "")
	r.noWrites()
	// An address removed by hand comes back.
	a := netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")}
	if err := r.k.Addrs().Del(a); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &a})
	r.settle()
	if p, ok := r.o.view.addr("Ethernet0", a.Prefix); !ok || p != netlinkmgr.ProtoSwitchyard {
		t.Fatal("address not restored")
	}
	r.del("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.settle()
	as, _ := r.k.Addrs().List("Ethernet0")
	for _, x := range as {
		if x.Prefix == a.Prefix {
			t.Fatal("address left after its key was deleted")
		}
	}
}

func TestStaticRoutes(t *testing.T) {
	t.Run("one-by-one", func(t *testing.T) { testStaticRoutes(t, false) })
	t.Run("batched", func(t *testing.T) { testStaticRoutes(t, true) })
}

func testStaticRoutes(t *testing.T, batched bool) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.batched = batched
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet4|10.0.4.1/24")
	r.set("INTERFACE", "Ethernet0|2001:db8::1/64")
	r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.0.2,10.0.4.2", "ifname", "Ethernet0,Ethernet4")
	r.set("STATIC_ROUTE", "default|2001:db8:2::/48", "nexthop", "2001:db8::2", "ifname", "Ethernet0")
	r.set("STATIC_ROUTE", "10.3.0.0/16", "blackhole", "true")
	r.set("STATIC_ROUTE", "10.4.0.0/16", "nexthop", "10.0.8.2", "ifname", "Ethernet8")
	r.settle()
	r.want("STATIC_ROUTE|10.2.0.0/16", schema.StateOK, "")
	r.want("STATIC_ROUTE|default|2001:db8:2::/48", schema.StateOK, "")
	r.want("STATIC_ROUTE|10.3.0.0/16", schema.StateOK, "")
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StatePending, "waiting for netdev Ethernet8")
	ecmp := r.routes("10.2.0.0/16")
	if len(ecmp) != 1 || len(ecmp[0].NextHops) != 2 || ecmp[0].Protocol != netlinkmgr.ProtoSwitchyard {
		t.Fatalf("ecmp route = %+v", ecmp)
	}
	if bh := r.routes("10.3.0.0/16"); len(bh) != 1 || !bh[0].Blackhole {
		t.Fatalf("blackhole route = %+v", bh)
	}
	r.noWrites()

	// Hot-plug the next-hop interface: pending until it has an address.
	r.k.AddPort("Ethernet8")
	up(t, r.k, "Ethernet8")
	r.linkEvent("Ethernet8", false)
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StatePending, "waiting for a connected route to next hop 10.0.8.2")
	r.set("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StateOK, "")

	// The next hop's link goes down, then away, then comes back: an
	// applied route does not wait on its link (the view's purge of the
	// routes through it re-enqueues the key), a pending one does.
	down := false
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", AdminUp: &down}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet8", false)
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StatePending, "to be up")
	up(t, r.k, "Ethernet8")
	r.linkEvent("Ethernet8", false)
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StateOK, "")
	if got := r.routes("10.4.0.0/16"); len(got) != 1 {
		t.Fatalf("route via a link set up again: %+v", got)
	}
	if err := r.k.Links().Del("Ethernet8"); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet8", true)
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StatePending, "waiting for netdev Ethernet8")
	r.k.AddPort("Ethernet8")
	up(t, r.k, "Ethernet8")
	r.linkEvent("Ethernet8", false)
	r.settle()
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StateOK, "")

	// A route deleted by hand is restored.
	rt := r.routes("10.2.0.0/16")[0]
	if err := r.k.Routes().Del(rt); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &rt})
	r.settle()
	if len(r.routes("10.2.0.0/16")) != 1 {
		t.Fatal("deleted route not restored")
	}

	// A changed distance replaces the route, leaving no old metric behind.
	r.set("STATIC_ROUTE", "10.3.0.0/16", "blackhole", "true", "distance", "20")
	r.settle()
	if bh := r.routes("10.3.0.0/16"); len(bh) != 1 || bh[0].Metric != 20 {
		t.Fatalf("after distance change: %+v", bh)
	}
	r.del("STATIC_ROUTE", "10.3.0.0/16")
	r.del("STATIC_ROUTE", "default|2001:db8:2::/48")
	r.settle()
	if len(r.routes("10.3.0.0/16")) != 0 || len(r.routes("2001:db8:2::/48")) != 0 {
		t.Fatal("routes left after their keys were deleted")
	}
	r.noResult("STATIC_ROUTE|10.3.0.0/16")
}

// Ownership and the sweep: foreign routes, links and bridges are never
// touched; owned objects config no longer names go.
func TestSweepOnlyOwnedStale(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("eth0", "Ethernet0", "Ethernet4")
	up(t, k, "eth0", "Ethernet0")
	if err := k.Addrs().Add(netlinkmgr.AddrInfo{Link: "eth0", Prefix: netip.MustParsePrefix("192.168.1.10/24")}); err != nil {
		t.Fatal(err)
	}
	user := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.9.0.0/16"), Protocol: 4,
		NextHops: []netlinkmgr.NextHop{{Gateway: netip.MustParseAddr("192.168.1.1"), Link: "eth0"}}}
	stale := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.8.0.0/16"), Protocol: netlinkmgr.ProtoSwitchyard, Blackhole: true}
	for _, rt := range []netlinkmgr.RouteInfo{user, stale} {
		if err := k.Routes().Replace(rt); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "br0", Kind: "bridge"}); err != nil {
		t.Fatal(err)
	}
	// A previous run left VLAN 200 with a member behind.
	prev := newRig(t, k)
	prev.set("VLAN", "Vlan200", "vlanid", "200")
	prev.set("VLAN_MEMBER", "Vlan200|Ethernet4", "tagging_mode", "tagged")
	prev.settle()

	r := newRig(t, k)
	r.set("STATIC_ROUTE", "10.7.0.0/16", "blackhole", "true")
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	before := k.Writes()
	if err := r.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.routes("10.8.0.0/16")) != 0 {
		t.Fatal("stale owned route not swept")
	}
	if len(r.routes("10.9.0.0/16")) != 1 || len(r.routes("10.7.0.0/16")) != 1 {
		t.Fatal("sweep removed a foreign or configured route")
	}
	if _, err := k.Links().Get("Vlan200"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("stale Vlan200 not swept")
	}
	if _, err := k.Links().Get("Vlan100"); err != nil {
		t.Fatal("configured Vlan100 swept")
	}
	if r.link("Ethernet4").MasterIdx != 0 || len(r.vids("Ethernet4")) != 0 {
		t.Fatal("stale member not released")
	}
	for _, n := range []string{"eth0", "br0"} {
		if _, err := k.Links().Get(n); err != nil {
			t.Fatalf("foreign %s gone", n)
		}
	}
	// A second sweep has nothing to do.
	n := k.Writes() - before
	if err := r.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.Writes()-before != n {
		t.Fatalf("second sweep wrote: %v", k.Ops())
	}
}

// Restart: a fresh Orch over a kernel that is already right writes nothing.
func TestRestartNoWrites(t *testing.T) {
	t.Run("one-by-one", func(t *testing.T) { testRestartNoWrites(t, false) })
	t.Run("batched", func(t *testing.T) { testRestartNoWrites(t, true) })
}

func testRestartNoWrites(t *testing.T, batched bool) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	cfg := func(r *rig) {
		r.set("PORT", "Ethernet0", "admin_status", "up", "mtu", "9100")
		r.set("PORT", "Ethernet4", "admin_status", "up")
		r.set("INTERFACE", "Ethernet4|10.0.4.1/24")
		r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.4.2", "ifname", "Ethernet4")
		r.set("VLAN", "Vlan100", "vlanid", "100")
		r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
		r.set("FDB", "Vlan100|00:11:22:33:44:55", "port", "Ethernet0")
	}
	first := newRig(t, k)
	first.batched = batched
	cfg(first)
	first.settle()
	before := k.Writes()
	second := newRig(t, k)
	second.batched = batched
	cfg(second)
	second.settle()
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := k.Writes() - before; n != 0 {
		t.Fatalf("restart made %d writes: %v", n, k.Ops())
	}
	for _, key := range second.o.ConfigKeys() {
		second.want(key, schema.StateOK, "")
	}
}

// ReconcileBatch: route writes of consecutive keys go out together, each
// key gets its own outcome and error at its own position, and a non-route
// key in between sees the routes before it already written.
func TestReconcileBatch(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.settle()
	r.set("STATIC_ROUTE", "10.1.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0")
	r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.4.2", "ifname", "Ethernet4") // no connected route yet
	r.set("STATIC_ROUTE", "10.3.0.0/16", "nexthop", "10.0.0.3", "ifname", "Ethernet0")
	r.set("STATIC_ROUTE", "10.4.0.0/16", "nexthop", "banana")
	r.set("INTERFACE", "Ethernet4|10.0.4.1/24")
	r.set("STATIC_ROUTE", "10.5.0.0/16", "blackhole", "true")
	r.o.Drain()
	k.FailNext("route replace 10.3.0.0/16", errors.New("no buffer space available"))
	keys := []string{"STATIC_ROUTE|10.1.0.0/16", "STATIC_ROUTE|10.2.0.0/16", "STATIC_ROUTE|10.3.0.0/16",
		"STATIC_ROUTE|10.4.0.0/16", "INTERFACE|Ethernet4|10.0.4.1/24", "STATIC_ROUTE|10.5.0.0/16"}
	errs := r.o.ReconcileBatch(context.Background(), keys)
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Fatalf("errs[%d] (%s) = %v; want an error only for the failed write", i, keys[i], err)
		}
	}
	r.want("STATIC_ROUTE|10.1.0.0/16", schema.StateOK, "")
	r.want("STATIC_ROUTE|10.2.0.0/16", schema.StatePending, "waiting for a connected route to next hop 10.0.4.2")
	r.want("STATIC_ROUTE|10.3.0.0/16", schema.StateError, "no buffer space")
	r.want("STATIC_ROUTE|10.4.0.0/16", schema.StateError, "")
	r.want("INTERFACE|Ethernet4|10.0.4.1/24", schema.StateOK, "")
	r.want("STATIC_ROUTE|10.5.0.0/16", schema.StateOK, "")
	var ops []string
	for _, op := range k.Ops() {
		if strings.HasPrefix(op, "route") || strings.HasPrefix(op, "addr") {
			ops = append(ops, op)
		}
	}
	want := []string{"addr add 10.0.0.1/24 dev Ethernet0", "route replace 10.1.0.0/16", "addr add 10.0.4.1/24 dev Ethernet4", "route replace blackhole 10.5.0.0/16"}
	if len(ops) != len(want) {
		t.Fatalf("ops %q, want %q", ops, want)
	}
	for i := range want {
		if !strings.HasPrefix(ops[i], want[i]) {
			t.Fatalf("ops %q, want %q", ops, want)
		}
	}
	// The address event wakes the pending route; the retry of the failed
	// one succeeds.
	r.batched = true
	r.o.enqueue("STATIC_ROUTE|10.3.0.0/16")
	r.settle()
	r.want("STATIC_ROUTE|10.2.0.0/16", schema.StateOK, "")
	r.want("STATIC_ROUTE|10.3.0.0/16", schema.StateOK, "")
}
