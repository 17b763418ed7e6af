package orchagent

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

func rt(dst string, table, proto, metric int, hops ...netlinkmgr.NextHop) netlinkmgr.RouteInfo {
	return netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix(dst), Table: table, Protocol: proto, Metric: metric, NextHops: hops}
}

func hop(gw, link string, w int) netlinkmgr.NextHop {
	h := netlinkmgr.NextHop{Link: link, Weight: w}
	if gw != "" {
		h.Gateway = netip.MustParseAddr(gw)
	}
	return h
}

// TestRouteTableReadsBack: every route reads back as it was put, compact
// or not, and put/del move a destination between the two maps.
func TestRouteTableReadsBack(t *testing.T) {
	bh := rt("192.0.2.0/24", 254, 201, 7)
	bh.Blackhole = true
	typed := rt("10.0.0.1/32", 1001, 2, 0, hop("", "Vrf1", 1))
	typed.Type = "local"
	mapped := rt("10.4.0.0/16", 254, 201, 0, hop("::ffff:10.0.0.2", "e0", 0))
	cases := []netlinkmgr.RouteInfo{
		rt("10.1.0.0/16", 254, 201, 0, hop("", "Ethernet0", 0)),
		rt("10.2.0.0/16", 254, 201, 20, hop("10.0.0.2", "Ethernet0", 1)),
		rt("10.3.0.0/16", 254, 201, 20, hop("10.0.0.2", "", 0)),
		rt("2001:db8::/64", 1001, 201, 1024, hop("fe80::1", "Ethernet4", 1)),
		rt("2001:db8:1::/64", 254, 201, 1024, hop("fe80::1%Ethernet4", "Ethernet4", 1)),  // zoned: not compact
		rt("10.5.0.0/16", 0, 201, 0, hop("", "Ethernet0", 0)),                            // table 0: not compact
		rt("10.6.0.0/16", 254, 201, 0, hop("10.0.0.2", "a", 1), hop("10.0.0.3", "b", 2)), // ECMP
		rt("10.7.0.0/16", 254, 201, 0, hop("", "e0", 300)),                               // weight > 255
		bh, typed, mapped,
		rt("0.0.0.0/0", 254, 201, 0, hop("10.0.0.1", "e0", 1)),
		rt("::/0", 254, 201, 1024, hop("2001:db8::1", "e0", 1)),
	}
	tb := newRouteTable()
	var names linkNames
	for i := range cases {
		r := cases[i]
		r.Create = true // never read back
		if !tb.put(&r, &names) {
			t.Fatalf("put %v: not a change", r)
		}
		if tb.put(&r, &names) {
			t.Fatalf("put %v again: a change", r)
		}
	}
	if tb.len() != len(cases) {
		t.Fatalf("%d routes, want %d", tb.len(), len(cases))
	}
	if len(tb.one) < 8 {
		t.Errorf("only %d of %d routes compact", len(tb.one), len(cases))
	}
	for _, r := range cases {
		got := tb.at(rdstOf(r.Table, r.Dst), &names)
		if len(got) != 1 || !reflect.DeepEqual(got[0], r) {
			t.Errorf("read back %+v, want %+v", got, r)
		}
	}
	// A second metric moves the destination to many, and back to one
	// destination's route when it goes.
	r2 := cases[0]
	r2.Metric = 5
	if !tb.put(&r2, &names) || len(tb.at(rdstOf(254, r2.Dst), &names)) != 2 {
		t.Fatalf("second metric not kept: %v", tb.at(rdstOf(254, r2.Dst), &names))
	}
	if !tb.del(254, r2.Dst, 5, -1) || tb.del(254, r2.Dst, 5, -1) {
		t.Fatal("delete of the second metric")
	}
	if got := tb.at(rdstOf(254, r2.Dst), &names); len(got) != 1 || !reflect.DeepEqual(got[0], cases[0]) {
		t.Fatalf("after delete: %+v", got)
	}
	// A delete of another protocol's route leaves ours.
	if tb.del(254, cases[1].Dst, 20, 3) || !tb.del(254, cases[1].Dst, 20, 201) {
		t.Fatal("protocol-checked delete")
	}
	// Purge by link: compact and not.
	id := names.lookup("e0")
	res := tb.purge(nil, &names,
		func(r *netlinkmgr.RouteInfo) bool { return routeUsesLink(r, "e0") },
		func(c *vroute) bool { return c.usesLink(id) })
	if len(res) != 4 {
		t.Errorf("purged %v, want the 4 routes via e0", res)
	}
	for _, r := range tb.all(nil, &names) {
		if routeUsesLink(&r, "e0") {
			t.Errorf("%v left", r)
		}
	}
}

// TestEchoOfWriteIsNoNews: the echo of a route being written, arriving
// before our note of the write, is in the view but re-enqueues nobody; a
// different route at the same place is news.
func TestEchoOfWriteIsNoNews(t *testing.T) {
	v := newKernelView()
	want := rt("10.9.0.0/16", 254, 201, 0, hop("", "Ethernet0", 0))
	want.Create = true
	v.writingAll([]netlinkmgr.RouteInfo{want})
	echo := rt("10.9.0.0/16", 254, 201, 0, hop("", "Ethernet0", 1))
	if res := v.onRoute(&echo, false); res != nil {
		t.Fatalf("echo of our write: %v", res)
	}
	if got := v.routesFor(254, echo.Dst); len(got) != 1 {
		t.Fatalf("echo not in the view: %v", got)
	}
	other := rt("10.9.0.0/16", 254, 201, 0, hop("10.0.0.9", "Ethernet0", 1))
	if res := v.onRoute(&other, false); len(res) == 0 {
		t.Fatal("another route at the written place: no news")
	}
	v.written()
	if res := v.onRoute(&echo, false); len(res) == 0 {
		t.Fatal("a change after the write: no news")
	}
}

// TestNoteKeepsTheEchoThatCameFirst: the kernel's echo of a gateway-only
// route names the link it resolved to; our note of the write, arriving
// after it, does not erase that (a link going down must find the route).
func TestNoteKeepsTheEchoThatCameFirst(t *testing.T) {
	v := newKernelView()
	want := rt("10.9.0.0/16", 254, 201, 0, hop("10.0.0.2", "", 0))
	v.writingAll([]netlinkmgr.RouteInfo{want})
	echo := rt("10.9.0.0/16", 254, 201, 0, hop("10.0.0.2", "Ethernet0", 1))
	v.onRoute(&echo, false)
	v.notedRoute(&want)
	v.written()
	if got := v.routesFor(254, want.Dst); len(got) != 1 || !reflect.DeepEqual(got[0], echo) {
		t.Fatalf("after the note: %+v, want the echo %+v", got, echo)
	}
	v.mu.Lock()
	res := v.purgeLinkLocked("Ethernet0")
	v.mu.Unlock()
	if len(res) != 1 {
		t.Fatalf("purge of Ethernet0: %v", res)
	}
	// A changed route is noted over what was there.
	v.notedRoute(&echo)
	other := rt("10.9.0.0/16", 254, 201, 0, hop("10.0.0.3", "", 0))
	v.notedRoute(&other)
	if got := v.routesFor(254, want.Dst); len(got) != 1 || !reflect.DeepEqual(got[0], other) {
		t.Fatalf("after a changed note: %+v", got)
	}
}

// dropTable (an interrupted dump taken again) forgets one table's routes,
// compact and not.
func TestRouteTableDropTable(t *testing.T) {
	var names linkNames
	tb := newRouteTable()
	main := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.1.0.0/16"), Protocol: netlinkmgr.ProtoSwitchyard,
		NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0"}}}
	vrf := main
	vrf.Table = vrfTableMin
	second := main
	second.Metric = 7 // two metrics at one destination: the other map
	for _, r := range []netlinkmgr.RouteInfo{main, vrf, second} {
		tb.put(&r, &names)
	}
	tb.dropTable(0)
	if got := tb.all(nil, &names); len(got) != 1 || got[0].Table != vrfTableMin {
		t.Fatalf("after dropping the main table: %v", got)
	}
	if d := tb.dsts(nil); len(d) != 1 || d[0].table() != vrfTableMin {
		t.Fatalf("dsts = %v", d)
	}
}

// compactRoute's check of a route's destination (asked of the route)
// answers as reading it back from its place (rdst.dst) does, for every
// kind of destination: IPv4, IPv6, IPv4-mapped, host bits set, invalid,
// table 0.
func TestCompactRouteReadsBack(t *testing.T) {
	var names linkNames
	for _, dst := range []string{"10.1.2.0/24", "10.1.2.3/24", "0.0.0.0/0", "2001:db8::/64", "::/0",
		"::ffff:10.1.2.0/120", "::ffff:10.1.2.0/96", "fe80::1/128", ""} {
		for _, table := range []int{0, netlinkmgr.MainTable, 1001} {
			var p netip.Prefix
			if dst != "" {
				p = netip.MustParsePrefix(dst)
			}
			r := netlinkmgr.RouteInfo{Dst: p, Table: table, Protocol: netlinkmgr.ProtoSwitchyard,
				NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0", Gateway: netip.MustParseAddr("10.0.0.2")}}}
			d := rdstOf(table, p)
			want := r.Table == d.table() && r.Dst == d.dst()
			c, ok := compactRoute(d, &r, &names)
			if ok != want {
				t.Fatalf("%s table %d: compact %v, reads back %v", dst, table, ok, want)
			}
			if ok {
				if back := c.route(d, &names); !routeSame(&back, &r) || back.Dst != r.Dst || back.Table != r.Table {
					t.Fatalf("%s table %d: read back %+v", dst, table, back)
				}
			}
		}
	}
}
