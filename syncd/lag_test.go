package syncd

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func TestLagFieldsAndMemberStatus(t *testing.T) {
	bond := netlinkmgr.LinkInfo{Name: "PortChannel01", Kind: "bond", AdminUp: ptr(true), MTU: ptr(9100),
		OperState: "up", Bond: &netlinkmgr.BondOptions{MinLinks: ptr(2), ActiveAggregator: 3}}
	want := schema.Fields{"admin_status": "up", "oper_status": "up", "mtu": "9100", "min_links": "2", "state": "ok"}
	if got := LagFields(bond); !reflect.DeepEqual(got, want) {
		t.Errorf("LagFields = %v, want %v", got, want)
	}
	for _, c := range []struct {
		slave *netlinkmgr.BondSlaveInfo
		want  string
	}{
		{&netlinkmgr.BondSlaveInfo{AggregatorID: 3, ActorOperPortState: 0x3d}, "enabled"},
		{&netlinkmgr.BondSlaveInfo{AggregatorID: 2, ActorOperPortState: 0x3d}, "disabled"}, // another aggregator
		{&netlinkmgr.BondSlaveInfo{AggregatorID: 3, ActorOperPortState: 0x0d}, "disabled"}, // not collecting/distributing
		{nil, "disabled"},
	} {
		p := netlinkmgr.LinkInfo{Name: "Ethernet0", BondSlave: c.slave}
		if got := MemberFields(p, bond)["status"]; got != c.want {
			t.Errorf("MemberFields(%+v) = %q, want %q", c.slave, got, c.want)
		}
	}
	// A real kernel's bond does not report its active aggregator (0): the
	// port's active/backup state tells.
	unknown := bond
	unknown.Bond = &netlinkmgr.BondOptions{MinLinks: ptr(2)}
	for st, want := range map[string]string{"active": "enabled", "backup": "disabled"} {
		p := netlinkmgr.LinkInfo{Name: "Ethernet0", BondSlave: &netlinkmgr.BondSlaveInfo{State: st, AggregatorID: 1, ActorOperPortState: 0x3f}}
		if got := MemberFields(p, unknown)["status"]; got != want {
			t.Errorf("%s port of a bond without aggregator info: %q, want %q", st, got, want)
		}
	}
}

func TestRouteKeysOfVrfs(t *testing.T) {
	p := netip.MustParsePrefix("10.0.0.7/24")
	if k, ok := VrfRouteKey("Vrf_blue", p); !ok || k != "Vrf_blue:10.0.0.0/24" {
		t.Errorf("VrfRouteKey = %q %v", k, ok)
	}
	if _, ok := VrfRouteKey("mgmt", p); ok {
		t.Error("a VRF not named Vrf… is mirrored (fpmsyncd skips it)")
	}
	for _, typ := range []string{"local", "broadcast", "multicast", "anycast"} {
		if RouteMirrored(netlinkmgr.RouteInfo{Dst: p, Table: 1001, Type: typ}) {
			t.Errorf("a %s route is mirrored", typ)
		}
	}
	if !RouteMirrored(netlinkmgr.RouteInfo{Dst: p, Table: 1001}) {
		t.Error("a unicast route of table 1001 is not kept")
	}

	// The view files a table's routes under its VRF while it has one.
	v := NewView()
	m := map[string]schema.Fields{}
	r := netlinkmgr.RouteInfo{Dst: p, Table: 1001, Protocol: 2, NextHops: []netlinkmgr.NextHop{{Link: "Ethernet8"}}}
	v.Apply(routeEv(r, false)) // before its VRF: kept, not shown
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("a route of a table without VRF is shown: %v", m)
	}
	vrf := netlinkmgr.LinkInfo{Name: "Vrf_blue", Index: 9, Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: 1001}}
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &vrf})
	mirror(v, m)
	if got := m["ROUTE_TABLE|Vrf_blue:10.0.0.0/24"]; got["ifname"] != "Ethernet8" || got["nexthop"] != "0.0.0.0" {
		t.Fatalf("VRF route = %v (all: %v)", got, m)
	}
	ren := vrf
	ren.Name = "Vrf_red"
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &ren})
	mirror(v, m)
	if _, ok := m["ROUTE_TABLE|Vrf_blue:10.0.0.0/24"]; ok {
		t.Errorf("renamed VRF's old key stays: %v", m)
	}
	if _, ok := m["ROUTE_TABLE|Vrf_red:10.0.0.0/24"]; !ok {
		t.Errorf("renamed VRF's key missing: %v", m)
	}
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &ren, Deleted: true})
	mirror(v, m)
	if len(m) != 0 {
		t.Errorf("deleted VRF's route key stays: %v", m)
	}
}

// TestDaemonLagAndVrf runs syncd on the Fake with bonds and vrf devices
// (the VM kernel's model): LAG_TABLE, LAG_MEMBER_TABLE following carrier,
// min_links and membership, VRF routes beside the main table's, and only
// CONFIG_DB ports in PORT_TABLE and COUNTERS.
func TestDaemonLagAndVrf(t *testing.T) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, func(h *harness) {
		h.k = netlinkmgr.NewFake() // bonding, vrf, dummy and vxlan
		h.k.AddPort("Ethernet0", "Ethernet4", "Ethernet8")
		for _, p := range []string{"Ethernet0", "Ethernet4", "Ethernet8"} {
			h.config.HSet(ctx, "PORT|"+p, "admin_status", "up")
		}
		must(h.k.Links().Add(netlinkmgr.LinkInfo{Name: "PortChannel01", Kind: "bond",
			Bond: &netlinkmgr.BondOptions{Mode: "802.3ad", MinLinks: ptr(1)}}))
		for _, p := range []string{"Ethernet0", "Ethernet4"} {
			must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: p, Master: ptr("PortChannel01")}))
			must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: p, AdminUp: ptr(true)}))
		}
		must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "PortChannel01", AdminUp: ptr(true)}))
		must(h.k.Links().Add(netlinkmgr.LinkInfo{Name: "Vrf_blue", Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: 1001}}))
		must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Vrf_blue", AdminUp: ptr(true)}))
		must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", Master: ptr("Vrf_blue"), AdminUp: ptr(true)}))
		must(h.k.Links().Add(netlinkmgr.LinkInfo{Name: "Loopback0", Kind: "dummy"}))
		must(h.k.Links().Add(netlinkmgr.LinkInfo{Name: "vtep1-100", Kind: "vxlan", Vxlan: &netlinkmgr.VxlanOptions{VNI: 1000, Port: 4789}}))
		// Stale keys of an earlier run.
		h.state.HSet(ctx, "LAG_MEMBER_TABLE|PortChannel01|Ethernet12", "status", "enabled")
		h.state.HSet(ctx, "LAG_TABLE|PortChannel09", "oper_status", "up", "state", "ok")
	})
	h.hashIs(h.state, "LAG_TABLE|PortChannel01", map[string]string{"admin_status": "up", "oper_status": "up",
		"mtu": "1500", "min_links": "1", "state": "ok"})
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet0", map[string]string{"status": "enabled"})
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", map[string]string{"status": "enabled"})
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet12", nil)
	h.hashIs(h.state, "LAG_TABLE|PortChannel09", nil)
	if got, want := h.keys("PORT_TABLE|*"), []string{"PORT_TABLE|Ethernet0", "PORT_TABLE|Ethernet4", "PORT_TABLE|Ethernet8"}; !reflect.DeepEqual(got, want) {
		t.Errorf("PORT_TABLE keys = %v, want only the CONFIG_DB ports", got)
	}
	if got := h.keys("VLAN_TABLE|*"); len(got) != 0 {
		t.Errorf("VLAN_TABLE keys = %v", got)
	}
	h.eventually("COUNTERS of ports only", func() (bool, string) {
		ks := h.cnt.Keys(ctx, "COUNTERS:Ethernet*").Val()
		all := h.cnt.Keys(ctx, "COUNTERS:*").Val()
		names := h.cnt.HKeys(ctx, CountersPortNameMap).Val()
		return len(ks) == 3 && len(all) == 6 && len(names) == 3, fmt.Sprint(all, names)
	})

	// The same prefix in the main table and in Vrf_blue's.
	p := netip.MustParsePrefix("10.0.0.0/24")
	must(h.k.Routes().Replace(netlinkmgr.RouteInfo{Dst: p, Table: 1001, Protocol: 4,
		NextHops: []netlinkmgr.NextHop{{Link: "Ethernet8"}}}))
	must(h.k.Routes().Replace(netlinkmgr.RouteInfo{Dst: p, Protocol: 4,
		NextHops: []netlinkmgr.NextHop{{Link: "PortChannel01"}}}))
	h.hashIs(h.state, "ROUTE_TABLE|Vrf_blue:10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0", "ifname": "Ethernet8", "protocol": "static"})
	h.hashIs(h.state, "ROUTE_TABLE|10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0", "ifname": "PortChannel01", "protocol": "static"})

	// A member loses carrier: deselected; the PortChannel stays up.
	must(h.k.SetCarrier("Ethernet4", false))
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", map[string]string{"status": "disabled"})
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet0", map[string]string{"status": "enabled"})
	// min_links 2 with one member up: the PortChannel goes down.
	must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "PortChannel01", Bond: &netlinkmgr.BondOptions{MinLinks: ptr(2)}}))
	h.hashIs(h.state, "LAG_TABLE|PortChannel01", map[string]string{"admin_status": "up", "oper_status": "down",
		"mtu": "1500", "min_links": "2", "state": "ok"})
	// Carrier back: both selected, up again (the bond announces nothing in
	// the Fake: the periodic refresh must see it).
	must(h.k.SetCarrier("Ethernet4", true))
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", map[string]string{"status": "enabled"})
	h.eventually("PortChannel01 up", func() (bool, string) {
		v := h.state.HGet(ctx, "LAG_TABLE|PortChannel01", "oper_status").Val()
		return v == "up", "oper_status " + v
	})

	// A port leaving the bond loses its member key.
	must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet4", Master: ptr("")}))
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", nil)

	// The VRF goes: its route keys go; the bond goes: its keys go.
	must(h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", Master: ptr("")}))
	must(h.k.Links().Del("Vrf_blue"))
	h.hashIs(h.state, "ROUTE_TABLE|Vrf_blue:10.0.0.0/24", nil)
	h.hashIs(h.state, "ROUTE_TABLE|10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0", "ifname": "PortChannel01", "protocol": "static"})
	must(h.k.Links().Del("PortChannel01"))
	h.hashIs(h.state, "LAG_TABLE|PortChannel01", nil)
	h.hashIs(h.state, "LAG_MEMBER_TABLE|PortChannel01|Ethernet0", nil)
	if got := h.keys("LAG_*"); len(got) != 0 {
		t.Errorf("LAG keys left: %v", got)
	}
}

// TestViewVxlanRemoteVtep: a MAC learned by Bridge over a vxlan port shows
// the VTEP the vxlan device's own entry names; that entry (same MAC, no
// VLAN, not Bridge's) never replaces or removes the bridge's entry.
func TestViewVxlanRemoteVtep(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	remote := mac("02:00:00:00:00:09")
	br := netlinkmgr.FdbInfo{MAC: remote, Link: "vtep1-100", Master: "Bridge"}
	self := netlinkmgr.FdbInfo{MAC: remote, Link: "vtep1-100", Dst: netip.MustParseAddr("192.168.0.2")}
	fdbEv := func(f netlinkmgr.FdbInfo, del bool) netlinkmgr.Event {
		return netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Fdb: &f, Deleted: del}
	}
	v.Apply(fdbEv(br, false))
	v.Apply(fdbEv(self, false))
	v.Apply(fdbEv(netlinkmgr.FdbInfo{MAC: mac("00:00:00:00:00:00"), Link: "vtep1-100", Dst: netip.MustParseAddr("192.168.0.3")}, false))
	mirror(v, m)
	want := schema.Fields{"port": "vtep1-100", "type": "dynamic", "remote_vtep": "192.168.0.2"}
	if got := m["FDB_TABLE|Vlan1:02:00:00:00:00:09"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("FDB_TABLE = %v, want %v (all %v)", got, want, m)
	}
	moved := self
	moved.Dst = netip.MustParseAddr("192.168.0.7")
	v.Apply(fdbEv(moved, false))
	mirror(v, m)
	if got := m["FDB_TABLE|Vlan1:02:00:00:00:00:09"]["remote_vtep"]; got != "192.168.0.7" {
		t.Fatalf("remote_vtep after a move = %q", got)
	}
	v.Apply(fdbEv(moved, true))
	mirror(v, m)
	want = schema.Fields{"port": "vtep1-100", "type": "dynamic"}
	if got := m["FDB_TABLE|Vlan1:02:00:00:00:00:09"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the vxlan entry went: %v, want %v", got, want)
	}
	if len(m) != 1 {
		t.Fatalf("keys: %v", m)
	}
}
