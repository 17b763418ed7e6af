package syncd

import (
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func hop(gw, link string) netlinkmgr.NextHop {
	h := netlinkmgr.NextHop{Link: link}
	if gw != "" {
		h.Gateway = netip.MustParseAddr(gw)
	}
	return h
}

// A route's identity is its table, prefix, metric and next hops in any
// order: a delete naming the hops in another order removes it, a replace
// with another protocol updates it, a blackhole and an unreachable route
// (neither has next hops) are two routes.
func TestViewRouteIdentity(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	p := netip.MustParsePrefix("10.20.0.0/16")
	ecmp := netlinkmgr.RouteInfo{Dst: p, Metric: 5, Protocol: 4,
		NextHops: []netlinkmgr.NextHop{hop("10.0.0.2", "e0"), hop("10.0.1.2", "e1")}}
	v.Apply(routeEv(ecmp, false))
	mirror(v, m)
	want := schema.Fields{"nexthop": "10.0.0.2,10.0.1.2", "ifname": "e0,e1", "protocol": "static"}
	if got := m["ROUTE_TABLE|10.20.0.0/16"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("ecmp = %v, want %v", got, want)
	}
	replaced := ecmp
	replaced.Protocol = 201
	replaced.NextHops = []netlinkmgr.NextHop{ecmp.NextHops[1], ecmp.NextHops[0]}
	v.Apply(routeEv(replaced, false))
	if v.RoutesSuspect() {
		t.Error("the same route again (hops reordered) asked for a relist")
	}
	mirror(v, m)
	want = schema.Fields{"nexthop": "10.0.1.2,10.0.0.2", "ifname": "e1,e0", "protocol": "switchyard"}
	if got := m["ROUTE_TABLE|10.20.0.0/16"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("replaced = %v, want %v", got, want)
	}
	v.Apply(routeEv(ecmp, true))
	mirror(v, m)
	if len(m) != 0 {
		t.Fatalf("deleted with hops in the other order, left %v", m)
	}

	bh := netlinkmgr.RouteInfo{Dst: p, Metric: 7, Protocol: 4, Blackhole: true}
	unr := netlinkmgr.RouteInfo{Dst: p, Metric: 7, Protocol: 4, Type: "unreachable"}
	v.Apply(routeEv(bh, false))
	v.Apply(routeEv(unr, false))
	v.Apply(routeEv(unr, true))
	mirror(v, m)
	want = schema.Fields{"blackhole": "true", "protocol": "static"}
	if got := m["ROUTE_TABLE|10.20.0.0/16"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("blackhole after the unreachable route's delete = %v, want %v", got, want)
	}
	v6 := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("2001:db8:1::5/48"), Protocol: 201, NextHops: []netlinkmgr.NextHop{hop("fe80::1", "e0")}}
	v.Apply(routeEv(v6, false))
	mirror(v, m)
	want = schema.Fields{"nexthop": "fe80::1", "ifname": "e0", "protocol": "switchyard"}
	if got := m["ROUTE_TABLE|2001:db8:1::/48"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("IPv6 = %v, want %v (all keys %v)", got, want, m)
	}
}

// A listing drops the routes it did not deliver, one route of a prefix
// at a time; a relist of the main table leaves a VRF's routes alone.
func TestViewRoutesListingAndRelist(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	blue := netlinkmgr.LinkInfo{Name: "Vrf_blue", Index: 9, Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: 1001}}
	v.Apply(linkEv(blue, false))
	p := netip.MustParsePrefix("10.30.0.0/24")
	low := netlinkmgr.RouteInfo{Dst: p, Metric: 10, Protocol: 4, NextHops: []netlinkmgr.NextHop{hop("10.0.0.2", "e0")}}
	high := netlinkmgr.RouteInfo{Dst: p, Metric: 20, Protocol: 2, NextHops: []netlinkmgr.NextHop{hop("10.0.0.3", "e0")}}
	vrf := netlinkmgr.RouteInfo{Dst: p, Table: 1001, Protocol: 4, NextHops: []netlinkmgr.NextHop{hop("10.0.0.4", "e1")}}
	for _, r := range []netlinkmgr.RouteInfo{low, high, vrf} {
		v.Apply(routeEv(r, false))
	}
	mirror(v, m)
	if len(m) != 2 || m["ROUTE_TABLE|10.30.0.0/24"]["nexthop"] != "10.0.0.2" {
		t.Fatalf("mirror = %v", m)
	}
	// Overflow: the relist delivers high and the VRF's route, not low.
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventResync})
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventResync}) // cut short, begun again
	v.Apply(linkEv(blue, false))
	v.Apply(routeEv(high, false))
	v.Apply(routeEv(vrf, false))
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventSynced})
	mirror(v, m)
	if got := m["ROUTE_TABLE|10.30.0.0/24"]["nexthop"]; got != "10.0.0.3" || len(m) != 2 {
		t.Fatalf("after the listing = %v, want high's 10.0.0.3 and the VRF's key", m)
	}
	// A second listing without high drops it: marks were cleared.
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventResync})
	v.Apply(linkEv(blue, false))
	v.Apply(routeEv(vrf, false))
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventSynced})
	mirror(v, m)
	if _, ok := m["ROUTE_TABLE|10.30.0.0/24"]; ok || len(m) != 1 {
		t.Fatalf("after the second listing = %v, want only the VRF's key", m)
	}
	v.ReplaceRoutes([]netlinkmgr.RouteInfo{low}, netlinkmgr.MainTable)
	v.ReplaceRoutes([]netlinkmgr.RouteInfo{low}, netlinkmgr.MainTable) // marks cleared: the same again
	mirror(v, m)
	want := map[string]schema.Fields{
		"ROUTE_TABLE|10.30.0.0/24":          RouteFields(low),
		"ROUTE_TABLE|Vrf_blue:10.30.0.0/24": RouteFields(vrf),
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("after ReplaceRoutes = %v, want %v", m, want)
	}
	v.ReplaceRoutes(nil, 1001)
	mirror(v, m)
	if _, ok := m["ROUTE_TABLE|Vrf_blue:10.30.0.0/24"]; ok || len(m) != 1 {
		t.Fatalf("after relisting table 1001 empty = %v", m)
	}
}

// BenchmarkViewRoutes100kHeap reports the View's live heap per route with
// 100,000 routes via one gateway (the Scale100k shape), and what is left
// once they are deleted.
func BenchmarkViewRoutes100kHeap(b *testing.B) {
	const n = 100000
	evs := make([]netlinkmgr.Event, n)
	for i := range n {
		r := netlinkmgr.RouteInfo{
			Dst:      netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(30 + i/65536), byte(i / 256), byte(i), 0}), 24),
			Protocol: netlinkmgr.ProtoSwitchyard, Table: netlinkmgr.MainTable,
			NextHops: []netlinkmgr.NextHop{hop("10.0.0.2", "Ethernet0")},
		}
		evs[i] = netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &r}
	}
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	}
	for range b.N {
		h0 := heap()
		v := NewView()
		for _, ev := range evs {
			v.Apply(ev)
		}
		v.TakeDirty()
		full := heap()
		for _, ev := range evs {
			ev.Deleted = true
			v.Apply(ev)
		}
		v.TakeDirty()
		after := heap()
		b.ReportMetric((full-h0)/n, "heap-B/route")
		b.ReportMetric(after-h0, "heap-B-after-delete")
		runtime.KeepAlive(v)
		if len(v.routes) != 0 {
			b.Fatal(fmt.Sprint(len(v.routes), " routes left"))
		}
	}
}

// TakeDirtyN hands out the touched keys in slices, each key once.
func TestViewTakeDirtyInSlices(t *testing.T) {
	v := NewView()
	for i := range 2500 {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
		v.Apply(routeEv(netlinkmgr.RouteInfo{Dst: dst, Protocol: 4, NextHops: []netlinkmgr.NextHop{hop("10.0.0.2", "e0")}}, false))
	}
	seen := map[string]bool{}
	for v.DirtyCount() > 0 {
		keys := v.TakeDirtyN(1000)
		if len(keys) > 1000 || !slices.IsSorted(keys) {
			t.Fatalf("TakeDirtyN(1000) = %d keys, sorted %v", len(keys), slices.IsSorted(keys))
		}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("%s handed out twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 2500 {
		t.Fatalf("%d keys handed out, want 2500", len(seen))
	}
	// TakeWants (the flush's path) hands out the same keys and fields as
	// TakeDirty and Want, a route's key and a string key alike.
	v.Apply(linkEv(eth("Ethernet0", 2, true), false))
	v.SetPort("Ethernet0", true)
	for i := range 1500 {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
		v.Apply(routeEv(netlinkmgr.RouteInfo{Dst: dst, Protocol: 4, NextHops: []netlinkmgr.NextHop{hop("10.0.0.3", "e0")}}, i%2 == 0)) // a delete of a route not there touches nothing
	}
	viaWants := map[string]schema.Fields{}
	for v.DirtyCount() > 0 {
		v.TakeWants(700, func(k string, f schema.Fields, ok bool) {
			if _, dup := viaWants[k]; dup {
				t.Fatalf("%s handed out twice", k)
			}
			if !ok {
				f = nil
			}
			viaWants[k] = f
		})
	}
	want := map[string]schema.Fields{}
	for k := range viaWants {
		f, ok := v.Want(k)
		if !ok {
			f = nil
		}
		want[k] = f
	}
	if len(viaWants) != 751 || !reflect.DeepEqual(viaWants, want) {
		t.Fatalf("TakeWants: %d keys, differing from Want: %v", len(viaWants), !reflect.DeepEqual(viaWants, want))
	}
}

// FuzzRouteTail: a route's next hops survive the tail's encoding (any
// interface name the kernel accepts: no whitespace, no slash) and the
// rendered fields equal RouteFields of the route itself.
func FuzzRouteTail(f *testing.F) {
	f.Add("Ethernet0", "10.0.0.2", "e1", "", uint8(24), false)
	f.Add("a@b,c", "fe80::1", "x:y", "2001:db8::1", uint8(64), true)
	f.Fuzz(func(t *testing.T, link1, gw1, link2, gw2 string, bits uint8, v6 bool) {
		for _, l := range []string{link1, link2} {
			if l == "" || strings.ContainsAny(l, "/ \t\n\v\f\r\x00") {
				return
			}
		}
		var hops []netlinkmgr.NextHop
		for _, h := range [][2]string{{gw1, link1}, {gw2, link2}} {
			nh := netlinkmgr.NextHop{Link: h[1]}
			if a, err := netip.ParseAddr(h[0]); err == nil && a.Zone() == "" {
				nh.Gateway = a.Unmap()
			}
			hops = append(hops, nh)
		}
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 2, 3}), int(bits%33)).Masked()
		if v6 {
			dst = netip.PrefixFrom(netip.MustParseAddr("2001:db8::"), int(bits%129)).Masked()
		}
		r := netlinkmgr.RouteInfo{Dst: dst, Protocol: 4, NextHops: hops}
		if got := tailOf(r).Value().nextHops(); !reflect.DeepEqual(got, hops) {
			t.Fatalf("next hops %v came back as %v", hops, got)
		}
		v := NewView()
		v.Apply(routeEv(r, false))
		m := map[string]schema.Fields{}
		mirror(v, m)
		if got := m["ROUTE_TABLE|"+dst.String()]; !reflect.DeepEqual(got, RouteFields(r)) {
			t.Fatalf("mirrored %v, want %v", got, RouteFields(r))
		}
	})
}
