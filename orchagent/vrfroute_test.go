package orchagent

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// tableRoutes returns our routes in table as iproute2-like strings.
func (r *rig) tableRoutes(table int) map[string]bool {
	r.t.Helper()
	rs, err := r.k.Routes().List(netlinkmgr.RouteFilter{Table: table, Protocol: netlinkmgr.ProtoSwitchyard})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, x := range rs {
		out[x.String()] = true
	}
	return out
}

func vrfRouteConfig(r *rig) {
	r.set("STATIC_ROUTE", "Vrf_red|10.9.0.0/16", "nexthop", "10.0.0.2")
	r.set("STATIC_ROUTE", "Vrf_red|10.1.0.0/24", "nexthop", "10.1.0.2", "nexthop-vrf", "Vrf_blue")
	r.set("STATIC_ROUTE", "Vrf_red|10.8.0.0/16", "blackhole", "true")
	r.set("STATIC_ROUTE", "Vrf_blue|10.0.0.0/24", "ifname", "Ethernet0", "nexthop-vrf", "Vrf_red")
	r.set("INTERFACE", "Ethernet0", "vrf_name", "Vrf_red")
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet4", "vrf_name", "Vrf_blue")
	r.set("INTERFACE", "Ethernet4|10.1.0.1/24")
	r.set("VRF", "Vrf_red")
	r.set("VRF", "Vrf_blue")
}

var vrfRouteKeys = []string{"STATIC_ROUTE|Vrf_red|10.9.0.0/16", "STATIC_ROUTE|Vrf_red|10.1.0.0/24",
	"STATIC_ROUTE|Vrf_red|10.8.0.0/16", "STATIC_ROUTE|Vrf_blue|10.0.0.0/24"}

// Routes in VRF tables: waiting for their VRF, in its table only, leaking
// through nexthop-vrf out of the other VRF's interface; deleted with their
// keys; back when the VRF is re-created; no writes when right.
func TestVrfStaticRoutes(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("STATIC_ROUTE", "Vrf_red|10.9.0.0/16", "nexthop", "10.0.0.2")
	r.settle()
	r.want("STATIC_ROUTE|Vrf_red|10.9.0.0/16", schema.StatePending, "waiting for VRF|Vrf_red")
	vrfRouteConfig(r)
	r.settle()
	for _, key := range vrfRouteKeys {
		r.want(key, schema.StateOK, "")
	}
	red, blue := int(r.link("Vrf_red").Vrf.Table), int(r.link("Vrf_blue").Vrf.Table)
	got := r.tableRoutes(red)
	for _, w := range []string{
		"10.9.0.0/16 proto 201 metric 0 table " + itoa(red) + " nexthop via 10.0.0.2 dev Ethernet0",
		"10.1.0.0/24 proto 201 metric 0 table " + itoa(red) + " nexthop via 10.1.0.2 dev Ethernet4",
		"blackhole 10.8.0.0/16 proto 201 metric 0 table " + itoa(red),
	} {
		if !got[w] {
			t.Errorf("table %d lacks %q: %v", red, w, got)
		}
	}
	if b := r.tableRoutes(blue); len(b) != 1 || !b["10.0.0.0/24 proto 201 metric 0 table "+itoa(blue)+" nexthop dev Ethernet0"] {
		t.Errorf("table %d: %v", blue, b)
	}
	if m := r.tableRoutes(netlinkmgr.MainTable); len(m) != 0 {
		t.Fatalf("main table holds VRF routes: %v", m)
	}
	r.noWrites()

	r.del("STATIC_ROUTE", "Vrf_red|10.8.0.0/16")
	r.settle()
	if r.tableRoutes(red)["blackhole 10.8.0.0/16 proto 201 metric 0 table "+itoa(red)] {
		t.Fatal("deleted VRF route still there")
	}
	r.noResult("STATIC_ROUTE|Vrf_red|10.8.0.0/16")

	// The leak's VRF goes: the leaking route waits for it.
	r.del("VRF", "Vrf_blue")
	r.settle()
	r.want("STATIC_ROUTE|Vrf_red|10.1.0.0/24", schema.StatePending, "waiting for VRF|Vrf_blue")
	r.want("STATIC_ROUTE|Vrf_blue|10.0.0.0/24", schema.StatePending, "waiting for VRF|Vrf_blue")
	r.set("VRF", "Vrf_blue")
	r.settle()
	for _, key := range []string{"STATIC_ROUTE|Vrf_red|10.9.0.0/16", "STATIC_ROUTE|Vrf_red|10.1.0.0/24", "STATIC_ROUTE|Vrf_blue|10.0.0.0/24"} {
		r.want(key, schema.StateOK, "")
	}

	// Everything deleted: no route of ours in any table.
	for _, key := range append(vrfRouteKeys, "VRF|Vrf_red", "VRF|Vrf_blue", "INTERFACE|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24",
		"INTERFACE|Ethernet4", "INTERFACE|Ethernet4|10.1.0.1/24") {
		table, k, _ := cut(key)
		r.del(table, k)
	}
	r.settle()
	for _, tb := range []int{red, blue, netlinkmgr.MainTable} {
		if rs := r.tableRoutes(tb); len(rs) != 0 {
			t.Errorf("table %d keeps %v", tb, rs)
		}
	}
}

// A next hop in another VRF whose gateway no interface of that VRF can
// reach waits for one.
func TestVrfLeakWaitsForConnectedRoute(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("VRF", "Vrf_red")
	r.set("VRF", "Vrf_blue")
	r.set("STATIC_ROUTE", "Vrf_red|10.1.0.0/24", "nexthop", "10.1.0.2", "nexthop-vrf", "Vrf_blue")
	r.settle()
	r.want("STATIC_ROUTE|Vrf_red|10.1.0.0/24", schema.StatePending, "waiting for a connected route to next hop 10.1.0.2 in VRF Vrf_blue")
	r.set("INTERFACE", "Ethernet4", "vrf_name", "Vrf_blue")
	r.set("INTERFACE", "Ethernet4|10.1.0.1/24")
	r.settle()
	r.want("STATIC_ROUTE|Vrf_red|10.1.0.0/24", schema.StateOK, "")
}

// The sweep removes our VRF routes no key names, and those of a VRF that
// is gone; configured ones and the main table's stay.
func TestVrfRouteSweep(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	first := newRig(t, k)
	vrfRouteConfig(first)
	first.set("STATIC_ROUTE", "10.7.0.0/16", "blackhole", "true")
	first.settle()
	red := int(first.link("Vrf_red").Vrf.Table)

	second := newRig(t, k)
	vrfRouteConfig(second)
	second.del("STATIC_ROUTE", "Vrf_red|10.8.0.0/16")
	second.set("STATIC_ROUTE", "10.7.0.0/16", "blackhole", "true")
	second.settle()
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := second.tableRoutes(red)
	if got["blackhole 10.8.0.0/16 proto 201 metric 0 table "+itoa(red)] || len(got) != 2 {
		t.Fatalf("after sweep, table %d: %v", red, got)
	}
	if len(second.routes("10.7.0.0/16")) != 1 {
		t.Fatal("main table route swept")
	}
}

// What re-enqueues an applied VRF route, which (like a main-table route)
// is not registered in the dependency index under its own VRF or route:
// the route deleted by hand, its next-hop link down and up, its gateway's
// subnet gone and back, its VRF device deleted by hand, re-made in
// another table, and the VRF key deleted and set again.
func TestVrfRouteEvents(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("VRF", "Vrf_red")
	r.set("INTERFACE", "Ethernet0", "vrf_name", "Vrf_red")
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("STATIC_ROUTE", "Vrf_red|10.9.0.0/16", "nexthop", "10.0.0.2")
	r.set("STATIC_ROUTE", "Vrf_red|10.5.0.0/16", "ifname", "Ethernet4")
	r.set("STATIC_ROUTE", "10.9.0.0/16", "blackhole", "true") // the same prefix in main
	r.settle()
	gw, dev := "STATIC_ROUTE|Vrf_red|10.9.0.0/16", "STATIC_ROUTE|Vrf_red|10.5.0.0/16"
	r.want(gw, schema.StateOK, "")
	r.want(dev, schema.StateOK, "")
	red := int(r.link("Vrf_red").Vrf.Table)
	gwRoute := "10.9.0.0/16 proto 201 metric 0 table " + itoa(red) + " nexthop via 10.0.0.2 dev Ethernet0"
	devRoute := "10.5.0.0/16 proto 201 metric 0 table " + itoa(red) + " nexthop dev Ethernet4"
	wantTable := func(table int, what string) {
		t.Helper()
		got := r.tableRoutes(table)
		if len(got) != 2 || !got[strings.Replace(gwRoute, itoa(red), itoa(table), 1)] ||
			!got[strings.Replace(devRoute, itoa(red), itoa(table), 1)] {
			t.Fatalf("%s: table %d holds %v", what, table, got)
		}
	}
	wantTable(red, "applied")
	if idx := r.o.idx.byKey[gw]; len(idx) != 0 {
		t.Errorf("%s is in the dependency index under %v", gw, idx)
	}

	// Deleted by hand: restored.
	for _, rt := range r.tableRouteInfos(red) {
		if err := r.k.Routes().Del(rt); err != nil {
			t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &rt})
	}
	r.settle()
	wantTable(red, "deleted by hand")

	// The next-hop link goes down (the kernel drops the route), then up.
	down := false
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet4", AdminUp: &down}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet4", false)
	r.settle()
	r.want(dev, schema.StatePending, "to be up")
	up(t, r.k, "Ethernet4")
	r.linkEvent("Ethernet4", false)
	r.settle()
	r.want(dev, schema.StateOK, "")
	wantTable(red, "link up again")

	// The gateway's subnet deleted by hand: the kernel drops the route
	// silently; the address and the route are restored.
	a := netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")}
	if err := r.k.Addrs().Del(a); err != nil {
		t.Fatal(err)
	}
	for _, rt := range r.tableRouteInfos(red) {
		if len(rt.NextHops) == 1 && rt.NextHops[0].Gateway.IsValid() {
			if err := r.k.Routes().Del(rt); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &a})
	r.settle()
	r.want(gw, schema.StateOK, "")
	wantTable(red, "gateway's subnet back")

	// The VRF device deleted by hand: made again, the routes back in it.
	if err := r.k.Links().Del("Vrf_red"); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Vrf_red", true)
	r.flushTable(red)
	r.settle()
	r.want(gw, schema.StateOK, "")
	r.want(dev, schema.StateOK, "")
	if now := int(r.link("Vrf_red").Vrf.Table); now != red {
		t.Fatalf("Vrf_red made again in table %d, not %d", now, red)
	}
	wantTable(red, "VRF device made again")

	// Made again in another table: someone's vrf device holds the old one.
	if err := r.k.Links().Del("Vrf_red"); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Vrf_red", true)
	r.flushTable(red)
	if err := r.k.Links().Add(netlinkmgr.LinkInfo{Name: "Vrf_hand", Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: uint32(red)}}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Vrf_hand", false)
	r.settle()
	moved := int(r.link("Vrf_red").Vrf.Table)
	if moved == red {
		t.Fatalf("Vrf_red made again in the table of Vrf_hand (%d)", red)
	}
	r.want(gw, schema.StateOK, "")
	r.want(dev, schema.StateOK, "")
	wantTable(moved, "VRF in another table")
	if got := r.tableRoutes(red); len(got) != 0 {
		t.Fatalf("Vrf_hand's table %d holds our routes: %v", red, got)
	}

	// The VRF key deleted: the routes wait for it, gone from its table;
	// set again: back.
	r.del("VRF", "Vrf_red")
	r.settle()
	r.want(gw, schema.StatePending, "waiting for VRF|Vrf_red")
	r.want(dev, schema.StatePending, "waiting for VRF|Vrf_red")
	if got := r.tableRoutes(moved); len(got) != 0 {
		t.Fatalf("table %d of the deleted VRF holds %v", moved, got)
	}
	r.set("VRF", "Vrf_red")
	r.settle()
	r.want(gw, schema.StateOK, "")
	r.want(dev, schema.StateOK, "")
	wantTable(int(r.link("Vrf_red").Vrf.Table), "VRF key set again")
	if m := r.routes("10.9.0.0/16"); len(m) != 1 || !m[0].Blackhole {
		t.Fatalf("main table route: %+v", m)
	}
}

// tableRouteInfos returns our routes in table.
func (r *rig) tableRouteInfos(table int) []netlinkmgr.RouteInfo {
	r.t.Helper()
	rs, err := r.k.Routes().List(netlinkmgr.RouteFilter{Table: table, Protocol: netlinkmgr.ProtoSwitchyard})
	if err != nil {
		r.t.Fatal(err)
	}
	return rs
}

// flushTable deletes the routes of table, as the kernel does when the vrf
// device holding it goes (its ports leave it), with their events.
func (r *rig) flushTable(table int) {
	r.t.Helper()
	for _, rt := range r.tableRouteInfos(table) {
		if err := r.k.Routes().Del(rt); err != nil {
			r.t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &rt})
	}
}

// A VRF route key deleted while its VRF's device is gone (and before it
// is made again) removes its route from the table the VRF had.
func TestVrfRouteDeletedWithDeviceGone(t *testing.T) {
	for _, batched := range []bool{true, false} {
		k := netlinkmgr.NewFake()
		r := newRig(t, k)
		r.batched = batched
		r.set("VRF", "Vrf_red")
		r.set("STATIC_ROUTE", "Vrf_red|10.8.0.0/16", "blackhole", "true")
		r.set("STATIC_ROUTE", "Vrf_red|10.7.0.0/16", "blackhole", "true")
		r.settle()
		red := int(r.link("Vrf_red").Vrf.Table)
		if got := r.tableRoutes(red); len(got) != 2 {
			t.Fatalf("table %d: %v", red, got)
		}
		if err := r.k.Links().Del("Vrf_red"); err != nil {
			t.Fatal(err)
		}
		r.linkEvent("Vrf_red", true)
		r.del("STATIC_ROUTE", "Vrf_red|10.8.0.0/16")
		r.reconcile([]string{"STATIC_ROUTE|Vrf_red|10.8.0.0/16"})
		if got := r.tableRoutes(red); len(got) != 1 || !got["blackhole 10.7.0.0/16 proto 201 metric 0 table "+itoa(red)] {
			t.Fatalf("batched %v: after the delete with Vrf_red gone, table %d holds %v", batched, red, got)
		}
		r.settle()
		r.noResult("STATIC_ROUTE|Vrf_red|10.8.0.0/16")
		r.want("STATIC_ROUTE|Vrf_red|10.7.0.0/16", schema.StateOK, "")
	}
}

// enqueueVrfRouteKeys reads resource names ("route:T:P", "VRF|NAME",
// "link:NAME"): whatever the string, it enqueues only configured
// STATIC_ROUTE keys of a VRF, and never panics.
func FuzzEnqueueVrfRouteKeys(f *testing.F) {
	o := New(Options{Kernel: netlinkmgr.NewFake()})
	ctx := context.Background()
	o.cfg.Set("VRF", "Vrf_red", fields())
	if err := o.Prime(); err != nil {
		f.Fatal(err)
	}
	if err := o.Reconcile(ctx, "VRF|Vrf_red"); err != nil {
		f.Fatal(err)
	}
	if err := o.Prime(); err != nil { // the view learns the vrf device
		f.Fatal(err)
	}
	table, ok := o.vrfTableOf("Vrf_red")
	if !ok {
		f.Fatal("VRF|Vrf_red is not applied")
	}
	for _, k := range []string{"Vrf_red|10.9.0.0/16", "Vrf_red|2001:db8::/64", "10.9.0.0/16"} {
		o.cfg.Set("STATIC_ROUTE", k, fields("blackhole", "true"))
	}
	for _, s := range []string{"route:" + itoa(table) + ":10.9.0.0/16", "route:" + itoa(table) + ":2001:db8::/64",
		"route:10.9.0.0/16", "route:1001:db8::/64", "VRF|Vrf_red", "link:Vrf_red", "link:Ethernet0", "route:", "route::", "VRF|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, res string) {
		o.Drain()
		var vrfs vrfTables
		o.enqueueVrfRouteKeys(res, &vrfs)
		for _, key := range o.Drain() {
			table, k, _ := strings.Cut(key, "|")
			vrf, _, ok := routeKeyParts(k)
			if table != schema.TableStaticRoute || !ok || !inVRF(vrf) || !o.cfg.Has(table, k) {
				t.Fatalf("%q enqueued %q", res, key)
			}
		}
	})
}
