package syncd

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func linkEv(l netlinkmgr.LinkInfo, del bool) netlinkmgr.Event {
	return netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &l, Deleted: del}
}
func fdbEv(f netlinkmgr.FdbInfo, del bool) netlinkmgr.Event {
	return netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Fdb: &f, Deleted: del}
}
func neighEv(n netlinkmgr.NeighInfo, del bool) netlinkmgr.Event {
	return netlinkmgr.Event{Kind: netlinkmgr.EventNeigh, Neigh: &n, Deleted: del}
}
func routeEv(r netlinkmgr.RouteInfo, del bool) netlinkmgr.Event {
	return netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &r, Deleted: del}
}

func eth(name string, idx int, up bool) netlinkmgr.LinkInfo {
	return netlinkmgr.LinkInfo{Name: name, Index: idx, MTU: ptr(1500), AdminUp: ptr(true),
		MAC: mac("02:00:00:00:00:01"), OperUp: up}
}

// mirror applies the dirty keys of v to m as the daemon would.
func mirror(v *View, m map[string]schema.Fields) {
	for _, k := range v.TakeDirty() {
		if f, ok := v.Want(k); ok {
			m[k] = f
		} else {
			delete(m, k)
		}
	}
}

func TestViewPortsOnlyWhenConfigured(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	v.Apply(linkEv(eth("Ethernet0", 2, true), false))
	v.Apply(linkEv(eth("veth9", 3, true), false))
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("unconfigured links mirrored: %v", m)
	}
	v.SetPort("Ethernet0", true)
	mirror(v, m)
	if got := m["PORT_TABLE|Ethernet0"]["oper_status"]; got != "up" {
		t.Fatalf("PORT_TABLE|Ethernet0 oper_status = %q (mirror %v)", got, m)
	}
	v.Apply(linkEv(eth("Ethernet0", 2, false), false))
	mirror(v, m)
	if got := m["PORT_TABLE|Ethernet0"]["oper_status"]; got != "down" {
		t.Fatalf("after carrier loss oper_status = %q", got)
	}
	v.SetPort("Ethernet0", false)
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("unconfigured port still mirrored: %v", m)
	}
	if got := v.Ports(); len(got) != 0 {
		t.Fatalf("Ports = %v", got)
	}
}

func TestViewVlanAndRename(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	v.Apply(linkEv(eth("Vlan100", 7, true), false))
	mirror(v, m)
	if _, ok := m["VLAN_TABLE|Vlan100"]; !ok {
		t.Fatalf("VLAN_TABLE|Vlan100 missing: %v", m)
	}
	v.Apply(linkEv(eth("Vlan200", 7, true), false)) // same ifindex: renamed
	mirror(v, m)
	if _, ok := m["VLAN_TABLE|Vlan100"]; ok {
		t.Error("old name still mirrored after rename")
	}
	if _, ok := m["VLAN_TABLE|Vlan200"]; !ok {
		t.Error("new name not mirrored after rename")
	}
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Vlan200", Index: 7}, true))
	mirror(v, m)
	if len(m) != 0 {
		t.Errorf("deleted link still mirrored: %v", m)
	}
}

func TestViewFdbUntaggedContextAndMove(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	e := netlinkmgr.FdbInfo{MAC: mac("02:00:00:00:00:aa"), Link: "Ethernet0", Master: "Bridge"}
	v.Apply(fdbEv(e, false))
	mirror(v, m)
	want := map[string]schema.Fields{"FDB_TABLE|Vlan1:02:00:00:00:00:aa": {"port": "Ethernet0", "type": "dynamic"}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("mirror = %v, want %v", m, want)
	}
	// The MAC moves: the kernel only sends the new entry.
	e.Link = "Ethernet4"
	v.Apply(fdbEv(e, false))
	mirror(v, m)
	if got := m["FDB_TABLE|Vlan1:02:00:00:00:00:aa"]["port"]; got != "Ethernet4" || len(m) != 1 {
		t.Fatalf("after move mirror = %v", m)
	}
	// default_pvid changes: the untagged context follows.
	br := eth("Bridge", 1, true)
	br.Kind = "bridge"
	br.Bridge = &netlinkmgr.BridgeOptions{DefaultPVID: ptr(uint16(10))}
	v.Apply(linkEv(br, false))
	mirror(v, m)
	if _, ok := m["FDB_TABLE|Vlan10:02:00:00:00:00:aa"]; !ok || len(m) != 1 {
		t.Fatalf("after pvid change mirror = %v", m)
	}
	v.Apply(fdbEv(e, true))
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("deleted entry still mirrored: %v", m)
	}
}

func TestViewRoutesLowestMetricWins(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	p := netip.MustParsePrefix("10.9.0.0/16")
	a := netlinkmgr.RouteInfo{Dst: p, Metric: 20, Protocol: 4, NextHops: []netlinkmgr.NextHop{{Link: "a"}}}
	b := netlinkmgr.RouteInfo{Dst: p, Metric: 10, Protocol: 201, NextHops: []netlinkmgr.NextHop{{Link: "b"}}}
	v.Apply(routeEv(a, false))
	v.Apply(routeEv(b, false))
	v.Apply(routeEv(netlinkmgr.RouteInfo{Dst: p, Table: 100}, false)) // other table: ignored
	mirror(v, m)
	if got := m["ROUTE_TABLE|10.9.0.0/16"]["protocol"]; got != "switchyard" {
		t.Fatalf("protocol = %q, want the metric-10 route's", got)
	}
	v.Apply(routeEv(b, true))
	mirror(v, m)
	if got := m["ROUTE_TABLE|10.9.0.0/16"]["ifname"]; got != "a" {
		t.Fatalf("after delete ifname = %q, want a", got)
	}
	v.ReplaceRoutes(nil)
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("ReplaceRoutes(nil) left %v", m)
	}
}

func TestViewListingDropsUnseen(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	n1 := netlinkmgr.NeighInfo{Link: "e0", IP: netip.MustParseAddr("10.0.0.2"), MAC: mac("02:00:00:00:00:02"), State: "reachable"}
	n2 := n1
	n2.IP = netip.MustParseAddr("10.0.0.3")
	r := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.0.0.0/24"), Protocol: 2}
	v.Apply(neighEv(n1, false))
	v.Apply(neighEv(n2, false))
	v.Apply(routeEv(r, false))
	v.Apply(fdbEv(netlinkmgr.FdbInfo{MAC: mac("02:00:00:00:00:bb"), Link: "e0", Master: "Bridge"}, false))
	mirror(v, m)
	if len(m) != 4 {
		t.Fatalf("mirror = %v", m)
	}
	// Overflow: the relist delivers only n2.
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventResync})
	if !v.Listing() {
		t.Fatal("not listing after EventResync")
	}
	v.Apply(neighEv(n2, false))
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventSynced})
	mirror(v, m)
	want := map[string]schema.Fields{"NEIGH_TABLE|e0|10.0.0.3": NeighFields(n2)}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("after relist mirror = %v, want %v", m, want)
	}
	if got := v.Keys(); !reflect.DeepEqual(got, []string{"NEIGH_TABLE|e0|10.0.0.3"}) {
		t.Fatalf("Keys = %v", got)
	}
	// A neighbour that fails disappears.
	n2.State = "failed"
	v.Apply(neighEv(n2, false))
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("failed neighbour mirrored: %v", m)
	}
}

func TestViewRoutesSuspectOnAdminDown(t *testing.T) {
	v := NewView()
	v.Apply(linkEv(eth("e0", 2, true), false))
	if v.RoutesSuspect() {
		t.Fatal("suspect after link add")
	}
	down := eth("e0", 2, false)
	down.AdminUp = ptr(false)
	v.Apply(linkEv(down, false))
	if !v.RoutesSuspect() {
		t.Fatal("not suspect after admin down (IPv4 routes flushed silently)")
	}
	if v.RoutesSuspect() {
		t.Fatal("RoutesSuspect did not clear")
	}
}

func TestViewRoutesSameMetricMerge(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	p := netip.MustParsePrefix("fe80::/64")
	for _, dev := range []string{"e1", "e0"} {
		v.Apply(routeEv(netlinkmgr.RouteInfo{Dst: p, Metric: 256, Protocol: 2, NextHops: []netlinkmgr.NextHop{{Link: dev}}}, false))
	}
	if !v.RoutesSuspect() {
		t.Error("a second route with the same prefix and metric did not ask for a relist")
	}
	mirror(v, m)
	want := schema.Fields{"nexthop": "::,::", "ifname": "e0,e1", "protocol": "kernel"}
	if got := m["ROUTE_TABLE|fe80::/64"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("merged = %v, want %v", got, want)
	}
	v.Apply(routeEv(netlinkmgr.RouteInfo{Dst: p, Metric: 256, Protocol: 2, NextHops: []netlinkmgr.NextHop{{Link: "e0"}}}, true))
	mirror(v, m)
	if got := m["ROUTE_TABLE|fe80::/64"]["ifname"]; got != "e1" {
		t.Fatalf("after deleting e0's route ifname = %q, want e1", got)
	}
}

func TestViewRenameMovesFdbAndNeighbours(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	v.Apply(linkEv(eth("eth1", 5, true), false))
	v.Apply(fdbEv(netlinkmgr.FdbInfo{MAC: mac("02:00:00:00:00:aa"), Link: "eth1", Master: "Bridge"}, false))
	v.Apply(neighEv(netlinkmgr.NeighInfo{Link: "eth1", IP: netip.MustParseAddr("10.0.0.2"), MAC: mac("02:00:00:00:00:02"), State: "stale"}, false))
	mirror(v, m)
	v.Apply(linkEv(eth("Ethernet8", 5, true), false))
	mirror(v, m)
	if got := m["FDB_TABLE|Vlan1:02:00:00:00:00:aa"]["port"]; got != "Ethernet8" {
		t.Errorf("FDB port after rename = %q", got)
	}
	if _, ok := m["NEIGH_TABLE|eth1|10.0.0.2"]; ok {
		t.Error("neighbour still under the old name")
	}
	if _, ok := m["NEIGH_TABLE|Ethernet8|10.0.0.2"]; !ok {
		t.Errorf("neighbour not under the new name: %v", m)
	}
}
