package orchagent

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// ownRig is a switch with Ethernet0 (10.0.0.1/24, ours) and Ethernet4
// (10.0.4.1/24, ours), both up.
func ownRig(t *testing.T, batched bool) *rig {
	t.Helper()
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4", "Ethernet8")
	up(t, k, "Ethernet0", "Ethernet4", "Ethernet8")
	r := newRig(t, k)
	r.batched = batched
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet4|10.0.4.1/24")
	r.settle()
	r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
	return r
}

func foreignRoute(t *testing.T, r *rig, dst, gw string, proto, metric int) netlinkmgr.RouteInfo {
	t.Helper()
	rt := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix(dst), Protocol: proto, Metric: metric,
		NextHops: []netlinkmgr.NextHop{{Gateway: netip.MustParseAddr(gw)}}}
	if err := r.k.Routes().Replace(rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestRouteConflictWithForeign(t *testing.T) {
	for _, batched := range []bool{false, true} {
		r := ownRig(t, batched)
		boot := foreignRoute(t, r, "10.77.0.0/16", "10.0.4.2", 3, 0)
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &boot})
		r.set("STATIC_ROUTE", "10.77.0.0/16", "nexthop", "10.0.0.2")
		r.settle()
		r.want("STATIC_ROUTE|10.77.0.0/16", schema.StateError, "route 10.77.0.0/16 metric 0 exists with protocol boot; not replacing it")
		if rs := r.routes("10.77.0.0/16"); len(rs) != 1 || rs[0].Protocol != 3 {
			t.Fatalf("foreign route changed: %+v", rs)
		}
		r.del("STATIC_ROUTE", "10.77.0.0/16")
		r.settle()
		if rs := r.routes("10.77.0.0/16"); len(rs) != 1 || rs[0].Protocol != 3 {
			t.Fatalf("DEL removed the foreign route: %+v", rs)
		}
		// Another distance coexists.
		r.set("STATIC_ROUTE", "10.77.0.0/16", "nexthop", "10.0.0.2", "distance", "20")
		r.settle()
		r.want("STATIC_ROUTE|10.77.0.0/16", schema.StateOK, "")
		if rs := r.routes("10.77.0.0/16"); len(rs) != 2 {
			t.Fatalf("want both routes: %+v", rs)
		}
		// Back to metric 0: a conflict again; our metric-20 route goes.
		r.set("STATIC_ROUTE", "10.77.0.0/16", "nexthop", "10.0.0.2")
		r.settle()
		r.want("STATIC_ROUTE|10.77.0.0/16", schema.StateError, "exists with protocol boot")
		// The foreign route goes: the key applies by itself.
		if err := r.k.Routes().Del(boot); err != nil {
			t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &boot})
		r.settle()
		r.want("STATIC_ROUTE|10.77.0.0/16", schema.StateOK, "")
		if rs := r.routes("10.77.0.0/16"); len(rs) != 1 || rs[0].Protocol != netlinkmgr.ProtoSwitchyard {
			t.Fatalf("our route: %+v", rs)
		}
	}
}

// A foreign route the view has not seen yet (its event still queued): the
// create fails with EEXIST instead of overwriting it.
func TestRouteCreateNeverOverwrites(t *testing.T) {
	for _, batched := range []bool{false, true} {
		r := ownRig(t, batched)
		foreignRoute(t, r, "10.78.0.0/16", "10.0.4.2", 12, 0)
		r.set("STATIC_ROUTE", "10.78.0.0/16", "nexthop", "10.0.0.2")
		r.o.Reconcile(context.Background(), "STATIC_ROUTE|10.78.0.0/16")
		r.want("STATIC_ROUTE|10.78.0.0/16", schema.StateError, "route 10.78.0.0/16 metric 0 exists with protocol bird")
		if rs := r.routes("10.78.0.0/16"); len(rs) != 1 || rs[0].Protocol != 12 {
			t.Fatalf("foreign route changed: %+v", rs)
		}
	}
}

func TestAddressOwnership(t *testing.T) {
	r := ownRig(t, true)
	hand := netlinkmgr.AddrInfo{Link: "Ethernet8", Prefix: netip.MustParsePrefix("10.0.8.1/24")}
	if err := r.k.Addrs().Add(hand); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Addr: &hand})
	has := func(a netlinkmgr.AddrInfo) (int, bool) {
		as, _ := r.k.Addrs().List(a.Link)
		for _, x := range as {
			if x.Prefix == a.Prefix {
				return x.Protocol, true
			}
		}
		return 0, false
	}
	// Invalid key, then DEL: nothing changes.
	r.set("INTERFACE", "Ethernet8|10.0.8.1/24", "bogus", "1")
	r.settle()
	r.want("INTERFACE|Ethernet8|10.0.8.1/24", schema.StateError, "")
	r.del("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	if p, ok := has(hand); !ok || p != 0 {
		t.Fatal("DEL of an invalid key touched the hand-made address")
	}
	// Valid key: a conflict; DEL: still nothing changes.
	r.set("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	r.want("INTERFACE|Ethernet8|10.0.8.1/24", schema.StateError, "address 10.0.8.1/24 on Ethernet8 exists with protocol unspec")
	r.del("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	if p, ok := has(hand); !ok || p != 0 {
		t.Fatal("DEL of a conflicting key touched the hand-made address")
	}
	// The hand-made one goes: ours is added, marked.
	r.set("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	if err := r.k.Addrs().Del(hand); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &hand})
	r.settle()
	r.want("INTERFACE|Ethernet8|10.0.8.1/24", schema.StateOK, "")
	if p, ok := has(hand); !ok || p != netlinkmgr.ProtoSwitchyard {
		t.Fatalf("our address: proto %d present %v", p, ok)
	}
	r.noWrites()

	// Sweep: a stale address of ours goes, a hand-made one stays.
	stale := netlinkmgr.AddrInfo{Link: "Ethernet8", Prefix: netip.MustParsePrefix("10.0.9.1/24"), Protocol: netlinkmgr.ProtoSwitchyard}
	other := netlinkmgr.AddrInfo{Link: "Ethernet8", Prefix: netip.MustParsePrefix("10.0.10.1/24")}
	for _, a := range []netlinkmgr.AddrInfo{stale, other} {
		if err := r.k.Addrs().Add(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	if err := r.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := has(stale); ok {
		t.Fatal("stale address of ours not swept")
	}
	for _, a := range []netlinkmgr.AddrInfo{other, hand, {Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")}} {
		if _, ok := has(a); !ok {
			t.Fatalf("sweep removed %s", a)
		}
	}
}

func TestGatewayValidation(t *testing.T) {
	r := ownRig(t, true)
	cases := []struct {
		key, gw string
		state   schema.State
		reason  string
	}{
		{"10.60.0.0/16", "10.0.0.1", schema.StateError, "next hop 10.0.0.1 is an address of this switch (on Ethernet0)"},
		{"10.61.0.0/16", "10.0.0.255", schema.StateError, "next hop 10.0.0.255 is the broadcast address of 10.0.0.0/24 on Ethernet0"},
		{"10.62.0.0/16", "127.0.0.1", schema.StateError, "next hop 127.0.0.1 is a loopback address"},
		{"10.63.0.0/16", "10.0.3.2", schema.StatePending, "waiting for a connected route to next hop 10.0.3.2"},
	}
	for _, c := range cases {
		r.set("STATIC_ROUTE", c.key, "nexthop", c.gw)
	}
	r.settle()
	for _, c := range cases {
		r.want("STATIC_ROUTE|"+c.key, c.state, c.reason)
		if rs := r.routes(c.key); len(rs) != 0 {
			t.Fatalf("%s installed: %+v", c.key, rs)
		}
	}
	// The kernel refuses a gateway on a connected subnet: its reason, as
	// an error, not pending.
	r.k.FailNext("route replace 10.64.", &netlinkmgr.KernelError{Errno: unix.EINVAL, Msg: "Nexthop has invalid gateway"})
	r.set("STATIC_ROUTE", "10.64.0.0/16", "nexthop", "10.0.4.50")
	r.settle()
	r.want("STATIC_ROUTE|10.64.0.0/16", schema.StateError,
		"the kernel refuses next hop 10.0.4.50 (on Ethernet4, subnet 10.0.4.0/24): replace route 10.64.0.0/16 table 254: Nexthop has invalid gateway")
	// Any address or route event looks again.
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.0.4.50/32"), Table: 255}})
	r.settle()
	r.want("STATIC_ROUTE|10.64.0.0/16", schema.StateOK, "")
	// The switch address goes away: the route becomes possible.
	r.del("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet0|10.0.0.9/24")
	r.settle()
	r.want("STATIC_ROUTE|10.60.0.0/16", schema.StateOK, "")
}

// Issue 11: the delete of an IPv4 interface-only route.
func TestInterfaceOnlyRouteDelete(t *testing.T) {
	r := ownRig(t, true)
	r.set("STATIC_ROUTE", "1.2.3.7/32", "ifname", "Ethernet0")
	r.settle()
	r.want("STATIC_ROUTE|1.2.3.7/32", schema.StateOK, "")
	r.del("STATIC_ROUTE", "1.2.3.7/32")
	r.settle()
	if rs := r.routes("1.2.3.7/32"); len(rs) != 0 {
		t.Fatalf("left: %+v", rs)
	}
}

// A port enslaved to Bridge by hand carries no vid (Bridge's
// vlan_default_pvid is 0): neither the sweep nor the DEL of a member key
// that never applied releases it.
func TestHandEnslavedPortKept(t *testing.T) {
	r := ownRig(t, true)
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	r.want("VLAN|Vlan100", schema.StateOK, "")
	br := BridgeName
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", Master: &br}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet8", false)
	r.set("VLAN_MEMBER", "Vlan100|Ethernet8", "tagging_mode", "sideways")
	r.settle()
	r.want("VLAN_MEMBER|Vlan100|Ethernet8", schema.StateError, "tagging_mode")
	r.del("VLAN_MEMBER", "Vlan100|Ethernet8")
	r.settle()
	if err := r.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.link("Ethernet8").MasterIdx != r.link(BridgeName).Index {
		t.Fatal("hand-enslaved port released")
	}
	// A port enslaved to another master: an error naming it.
	if err := r.k.Links().Add(netlinkmgr.LinkInfo{Name: "br0", Kind: "bridge"}); err != nil {
		t.Fatal(err)
	}
	other := "br0"
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet4", Master: &other}); err != nil {
		t.Fatal(err)
	}
	r.linkEchoes()
	r.set("VLAN_MEMBER", "Vlan100|Ethernet4", "tagging_mode", "tagged")
	r.settle()
	r.want("VLAN_MEMBER|Vlan100|Ethernet4", schema.StateError, "Ethernet4 is enslaved to another master (br0), not Bridge; not moving it")
}

// The kernel's prefix route of an address brings no event
// (OmitKernelPrefixRoutes): a STATIC_ROUTE to the subnet meets it as
// EEXIST, a conflict; the address's delete event (the route went with
// it) lets the key apply. The Fake has no prefix routes: the test adds
// and removes one (protocol kernel) beside the address, and hands the
// view the address events only.
func TestRouteConflictWithUnheardPrefixRoute(t *testing.T) {
	for _, ours := range []bool{false, true} {
		r := ownRig(t, true)
		a := netlinkmgr.AddrInfo{Link: "Ethernet8", Prefix: netip.MustParsePrefix("10.0.9.1/24")}
		if ours {
			r.set("INTERFACE", "Ethernet8|10.0.9.1/24")
			r.settle()
			r.want("INTERFACE|Ethernet8|10.0.9.1/24", schema.StateOK, "")
		} else {
			if err := r.k.Addrs().Add(a); err != nil {
				t.Fatal(err)
			}
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Addr: &a})
		}
		prefix := foreignRoute(t, r, "10.0.9.0/24", "10.0.4.2", 2, 0)
		r.set("STATIC_ROUTE", "10.0.9.0/24", "nexthop", "10.0.0.2")
		r.settle()
		r.want("STATIC_ROUTE|10.0.9.0/24", schema.StateError, "route 10.0.9.0/24 metric 0 exists with protocol kernel; not replacing it")
		if rs := r.routes("10.0.9.0/24"); len(rs) != 1 || rs[0].Protocol != 2 {
			t.Fatalf("prefix route changed: %+v", rs)
		}
		// The address goes, and its prefix route with it.
		if ours {
			r.del("INTERFACE", "Ethernet8|10.0.9.1/24")
			r.settle()
		} else if err := r.k.Addrs().Del(a); err != nil {
			t.Fatal(err)
		}
		if err := r.k.Routes().Del(prefix); err != nil {
			t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &a})
		r.settle()
		r.want("STATIC_ROUTE|10.0.9.0/24", schema.StateOK, "")
		if rs := r.routes("10.0.9.0/24"); len(rs) != 1 || rs[0].Protocol != netlinkmgr.ProtoSwitchyard {
			t.Fatalf("our route: %+v", rs)
		}
	}
}

// A link set up gets its addresses' prefix routes back with no event
// (OmitKernelPrefixRoutes): its link event re-checks the routes waiting
// for a connected route to their gateway.
func TestGatewayReachableWhenLinkUp(t *testing.T) {
	r := ownRig(t, true)
	r.set("INTERFACE", "Ethernet8|10.0.8.1/24")
	r.settle()
	r.want("INTERFACE|Ethernet8|10.0.8.1/24", schema.StateOK, "")
	link := func(admin bool) {
		if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", AdminUp: &admin}); err != nil {
			t.Fatal(err)
		}
		l, err := r.k.Links().Get("Ethernet8")
		if err != nil {
			t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &l})
	}
	link(false)
	r.settle()
	r.set("STATIC_ROUTE", "10.65.0.0/16", "nexthop", "10.0.8.2")
	r.settle()
	r.want("STATIC_ROUTE|10.65.0.0/16", schema.StatePending, "waiting for a connected route to next hop 10.0.8.2")
	link(true)
	r.settle()
	r.want("STATIC_ROUTE|10.65.0.0/16", schema.StateOK, "")
}

// A link joining or leaving a VRF moves its prefix routes between tables
// with no event (OmitKernelPrefixRoutes): the view forgets the kernel's
// routes through it and names their keys; other protocols' stay.
func TestKernelRoutesForgottenOnMasterChange(t *testing.T) {
	v := newKernelView()
	l := netlinkmgr.LinkInfo{Name: "Ethernet8", Index: 8}
	v.onLink(&l, false)
	hop := []netlinkmgr.NextHop{{Link: "Ethernet8"}}
	prefix := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.0.9.0/24"), Protocol: rtprotKernel, NextHops: hop}
	boot := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.0.10.0/24"), Protocol: 3, NextHops: hop}
	v.notedForeign(prefix)
	v.notedForeign(boot)
	l.MasterIdx = 30
	res := v.onLink(&l, false)
	if !slices.Contains(res, resRoute(0, prefix.Dst)) || slices.Contains(res, resRoute(0, boot.Dst)) {
		t.Fatalf("resources %v", res)
	}
	if _, ok := v.foreignRoute(0, prefix.Dst, 0); ok {
		t.Fatal("the prefix route is still in the view")
	}
	if _, ok := v.foreignRoute(0, boot.Dst, 0); !ok {
		t.Fatal("the boot route left the view")
	}
}
