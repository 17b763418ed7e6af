package orchagente2e

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// LOOPBACK_INTERFACE (dummy devices) and VRF (vrf devices). The host
// kernel has neither: TestLoopbackVrfMissingKernelFeature checks the
// errors there; the TestVMLoopback* / TestVMVrf* tests need both and run
// in the VM suite (tests/vm/suite.txt).

// linkNames returns "name kind master" of every link of ns, sorted: the
// kernel's device picture, to compare before and after.
func linkNames(t testing.TB, ns *testns.NS) []string {
	t.Helper()
	var ls []struct {
		Name     string `json:"ifname"`
		Master   string `json:"master"`
		LinkInfo struct {
			Kind string `json:"info_kind"`
		} `json:"linkinfo"`
	}
	ns.JSON(&ls, "-d", "link", "show")
	var out []string
	for _, l := range ls {
		out = append(out, l.Name+" "+l.LinkInfo.Kind+" "+l.Master)
	}
	slices.Sort(out)
	return out
}

// vrfTable returns the routing table of vrf device name (ip -d link).
func vrfTable(t testing.TB, ns *testns.NS, name string) int {
	t.Helper()
	var ls []struct {
		LinkInfo struct {
			Kind string `json:"info_kind"`
			Data struct {
				Table int `json:"table"`
			} `json:"info_data"`
		} `json:"linkinfo"`
	}
	ns.JSON(&ls, "-d", "link", "show", "dev", name)
	if len(ls) != 1 || ls[0].LinkInfo.Kind != "vrf" {
		t.Fatalf("%s is not a vrf device: %+v", name, ls)
	}
	return ls[0].LinkInfo.Data.Table
}

// On a kernel without dummy and vrf devices (the host's): the keys are
// errors naming the missing feature, terminal; an interface bound to the
// VRF waits for it; bad input is an error with its reason; the kernel is
// unchanged throughout, also once every key is deleted.
func TestLoopbackVrfMissingKernelFeature(t *testing.T) {
	testns.RequireRoot(t)
	dummy, _ := kernelcap.Has(kernelcap.Dummy)
	vrf, _ := kernelcap.Has(kernelcap.VRF)
	if dummy && vrf {
		t.Skip("this kernel has dummy and VRF devices: nothing is missing (TestVMLoopback*/TestVMVrf* run here)")
	}
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	keys := map[string][]string{
		"VRF|Vrf_blue":                             nil,
		"LOOPBACK_INTERFACE|Loopback0":             nil,
		"LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32": nil,
		"INTERFACE|Ethernet0":                      {"vrf_name", "Vrf_blue"},
		"VRF|blue":                                 nil,
		"LOOPBACK_INTERFACE|Loop0":                 nil,
		"LOOPBACK_INTERFACE|Loopback1":             {"admin_status", "sideways"},
		"INTERFACE|Ethernet0|10.0.0.1/24":          {"vrf_name", "Vrf_blue"},
	}
	for k, kv := range keys {
		e.HSet(k, kv...)
	}
	if !vrf {
		e.WaitState("VRF|Vrf_blue", "error", "kernel lacks VRF devices")
		e.WaitState("INTERFACE|Ethernet0", "pending", "waiting for VRF|Vrf_blue")
	}
	if !dummy {
		e.WaitState("LOOPBACK_INTERFACE|Loopback0", "error", "kernel lacks dummy devices")
		e.WaitState("LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32", "error", "kernel lacks dummy devices")
	}
	e.WaitState("VRF|blue", "error", `VRF name "blue" does not start with Vrf`)
	e.WaitState("LOOPBACK_INTERFACE|Loop0", "error", "not a loopback name: want LoopbackN")
	e.WaitState("LOOPBACK_INTERFACE|Loopback1", "error", `field "admin_status": "sideways" is not valid: want up or down`)
	e.WaitState("INTERFACE|Ethernet0|10.0.0.1/24", "error", "the VRF binding belongs on the bare key INTERFACE|Ethernet0")
	if after := linkNames(t, e.NS); !slices.Equal(before, after) {
		t.Fatalf("links changed:\nbefore %q\nafter  %q", before, after)
	}
	if a := e2eutil.Addrs(e.NS, "Ethernet0"); slices.Contains(a, "10.0.0.1/24") {
		t.Fatalf("an erroneous key added an address: %v", a)
	}
	delAll(e, slices.Collect(maps.Keys(keys))...)
	if after := linkNames(t, e.NS); !slices.Equal(before, after) {
		t.Fatalf("links changed after the deletes:\nbefore %q\nafter  %q", before, after)
	}
}

// Loopback0 with a /32 is reachable from a host through a routed port
// (the host routes to it via the switch); a restart changes nothing in
// the kernel; deleting the keys removes the loopback and leaves the links
// as they were.
func TestVMLoopbackReachable(t *testing.T) {
	kernelcap.Require(t, kernelcap.Dummy)
	e := e2eutil.NewSwitch(t)
	h := testns.New(t)
	e.NS.Veth("Ethernet0", h, "eth1")
	h.IP("addr", "add", "10.0.0.2/24", "dev", "eth1")
	h.IP("route", "add", "10.1.0.1/32", "via", "10.0.0.1")
	h.IP("-6", "addr", "add", "2001:db8::2/64", "dev", "eth1", "nodad")
	h.IP("-6", "route", "add", "fc00:1::1/128", "via", "2001:db8::1")
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	cfgKeys := []string{"PORT|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24", "INTERFACE|Ethernet0|2001:db8::1/64",
		"LOOPBACK_INTERFACE|Loopback0", "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32", "LOOPBACK_INTERFACE|Loopback0|fc00:1::1/128"}
	e.HSet("PORT|Ethernet0", "admin_status", "up")
	e.HSet("INTERFACE|Ethernet0|10.0.0.1/24")
	e.HSet("INTERFACE|Ethernet0|2001:db8::1/64")
	e.HSet("LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32")
	e.HSet("LOOPBACK_INTERFACE|Loopback0|fc00:1::1/128")
	e.HSet("LOOPBACK_INTERFACE|Loopback0")
	e.WaitOK(cfgKeys...)
	lo, ok := e2eutil.Link(e.NS, "Loopback0")
	if !ok || !lo.Up() || lo.Alias != "switchyard" {
		t.Fatalf("Loopback0: %+v (exists %v), want up with alias switchyard", lo, ok)
	}
	if a := e2eutil.Addrs(e.NS, "Loopback0"); !slices.Contains(a, "10.1.0.1/32") || !slices.Contains(a, "fc00:1::1/128") {
		t.Fatalf("Loopback0 addresses %v", a)
	}
	e2eutil.WaitReachable(t, h, "10.1.0.1")
	e2eutil.WaitReachable(t, h, "fc00:1::1")
	// SONiC's readers find the loopback addresses in INTERFACE_TABLE, as
	// intfmgrd writes them (syncd's mirror).
	e.Start("syncd")
	for _, k := range []string{"INTERFACE_TABLE|Loopback0|10.1.0.1/32", "INTERFACE_TABLE|Loopback0|fc00:1::1/128"} {
		e.WaitField(e.State, k, "state", "ok")
	}

	// Restart: nothing changes in the kernel.
	restartChangesNothing(t, e, cfgKeys...)
	if l, _ := e2eutil.Link(e.NS, "Loopback0"); l.Index != lo.Index {
		t.Fatal("Loopback0 was recreated")
	}
	e.Del("PORT|Ethernet99") // restartChangesNothing's marker

	// admin_status down, then up again.
	e.HSet("LOOPBACK_INTERFACE|Loopback0", "admin_status", "down")
	e.Eventually("Loopback0 down", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Loopback0")
		return !l.Up(), fmt.Sprint(l.Flags)
	})
	e.HSet("LOOPBACK_INTERFACE|Loopback0", "admin_status", "up")
	e2eutil.WaitReachable(t, h, "10.1.0.1")

	// Deleting every key: the links are as before (the port keeps its
	// admin state: PORT never resets a port).
	delAll(e, cfgKeys...)
	e.Eventually("Loopback0 deleted", func() (bool, string) {
		_, ok := e2eutil.Link(e.NS, "Loopback0")
		return !ok, ""
	})
	if after := linkNames(t, e.NS); !slices.Equal(before, after) {
		t.Fatalf("links after the deletes:\nbefore %q\nafter  %q", before, after)
	}
}

// Two VRFs with the same subnet 10.0.0.0/24 on a port each: each host
// reaches its own VRF's loopback and not the other's; the connected routes
// are in the VRFs' tables, not in main; the tables survive a restart; a
// hand-made vrf device is a conflict; deleting every key restores the
// links.
func TestVMVrfOverlappingSubnets(t *testing.T) {
	kernelcap.Require(t, kernelcap.Dummy, kernelcap.VRF)
	e := e2eutil.NewSwitch(t)
	red, blue := testns.New(t), testns.New(t)
	for port, h := range map[string]*testns.NS{"Ethernet0": red, "Ethernet4": blue} {
		e.NS.Veth(port, h, "eth1")
		h.IP("addr", "add", "10.0.0.2/24", "dev", "eth1")
		h.IP("route", "add", "10.9.0.0/16", "via", "10.0.0.1")
	}
	e.NS.IP("link", "add", "Vrf_hand", "type", "vrf", "table", "77")
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	cfg := [][]string{
		{"VRF|Vrf_red"}, {"VRF|Vrf_blue", "vni", "0"}, {"VRF|Vrf_hand"},
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet4", "admin_status", "up"},
		{"INTERFACE|Ethernet0", "vrf_name", "Vrf_red"}, {"INTERFACE|Ethernet0|10.0.0.1/24"},
		{"INTERFACE|Ethernet4", "vrf_name", "Vrf_blue"}, {"INTERFACE|Ethernet4|10.0.0.1/24"},
		{"LOOPBACK_INTERFACE|Loopback1", "vrf_name", "Vrf_red"}, {"LOOPBACK_INTERFACE|Loopback1|10.9.0.1/32"},
		{"LOOPBACK_INTERFACE|Loopback2", "vrf_name", "Vrf_blue"}, {"LOOPBACK_INTERFACE|Loopback2|10.9.0.2/32"},
	}
	var okKeys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		if c[0] != "VRF|Vrf_hand" {
			okKeys = append(okKeys, c[0])
		}
	}
	e.WaitOK(okKeys...)
	e.WaitState("VRF|Vrf_hand", "error", "netdev Vrf_hand exists (kind vrf) and is not a vrf device created by switchyard")
	for name, master := range map[string]string{"Ethernet0": "Vrf_red", "Loopback1": "Vrf_red", "Ethernet4": "Vrf_blue", "Loopback2": "Vrf_blue"} {
		if l, _ := e2eutil.Link(e.NS, name); l.Master != master {
			t.Errorf("%s: master %q, want %q", name, l.Master, master)
		}
	}
	tRed, tBlue := vrfTable(t, e.NS, "Vrf_red"), vrfTable(t, e.NS, "Vrf_blue")
	if tRed == tBlue || tRed < 1001 || tRed > 2000 || tBlue < 1001 || tBlue > 2000 {
		t.Fatalf("VRF tables %d and %d, want two distinct tables in 1001-2000", tRed, tBlue)
	}
	for _, c := range []struct{ vrf, dev string }{{"Vrf_red", "Ethernet0"}, {"Vrf_blue", "Ethernet4"}} {
		var rs []e2eutil.IPRoute
		e.NS.JSON(&rs, "route", "show", "vrf", c.vrf, "10.0.0.0/24")
		if len(rs) != 1 || rs[0].Dev != c.dev {
			t.Errorf("route 10.0.0.0/24 in %s: %+v, want dev %s", c.vrf, rs, c.dev)
		}
	}
	if rs := e2eutil.Routes(e.NS, "10.0.0.0/24"); len(rs) != 0 {
		t.Errorf("main table holds 10.0.0.0/24: %+v", rs)
	}
	e2eutil.WaitReachable(t, red, "10.9.0.1")
	e2eutil.WaitReachable(t, blue, "10.9.0.2")
	if ok, _ := e2eutil.Reachable(red, "10.9.0.2"); ok {
		t.Error("red reaches blue's loopback")
	}
	if ok, _ := e2eutil.Reachable(blue, "10.9.0.1"); ok {
		t.Error("blue reaches red's loopback")
	}

	// Restart: same tables, the same devices.
	idx, _ := e2eutil.Link(e.NS, "Vrf_red")
	e.Procs["orchagent"].Kill()
	clearResults(e)
	e.Start("orchagent", "--log-level", "debug")
	e.WaitOK(okKeys...)
	if l, _ := e2eutil.Link(e.NS, "Vrf_red"); l.Index != idx.Index || vrfTable(t, e.NS, "Vrf_red") != tRed {
		t.Fatal("Vrf_red recreated or its table changed across a restart")
	}

	// Deleting every key: the links are as before, Vrf_hand untouched.
	for _, c := range cfg {
		e.Del(c[0])
	}
	for _, c := range cfg {
		e.WaitGone(c[0])
	}
	e.Eventually("links back as before", func() (bool, string) {
		after := linkNames(t, e.NS)
		return slices.Equal(before, after), fmt.Sprintf("before %q after %q", before, after)
	})
}

// Two VRFs with the same subnet 10.0.0.0/24 (a host in each, both
// 10.0.0.2), each with a static route to the same prefix 10.50.0.0/16
// through its own host, and a subnet each that the other VRF reaches by a
// leaked static route (nexthop-vrf): the routes land in their VRF's table
// only, the leak carries traffic both ways, and deleting the keys removes
// every route of ours.
func TestVMVrfStaticRoutesAndLeak(t *testing.T) {
	kernelcap.Require(t, kernelcap.VRF)
	e := e2eutil.NewSwitch(t)
	e2eutil.Sysctl(t, e.NS, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	hosts := map[string]*testns.NS{}
	for _, h := range []struct{ port, addr, gw string }{
		{"Ethernet0", "10.0.0.2/24", "10.0.0.1"},  // red
		{"Ethernet4", "10.0.0.2/24", "10.0.0.1"},  // blue
		{"Ethernet8", "10.2.0.2/24", "10.2.0.1"},  // blue
		{"Ethernet12", "10.3.0.2/24", "10.3.0.1"}, // red
	} {
		n := testns.New(t)
		e.NS.Veth(h.port, n, "eth1")
		n.IP("addr", "add", h.addr, "dev", "eth1")
		n.IP("route", "add", "default", "via", h.gw)
		hosts[h.port] = n
	}
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	cfg := [][]string{
		{"VRF|Vrf_red"}, {"VRF|Vrf_blue"},
		{"INTERFACE|Ethernet0", "vrf_name", "Vrf_red"}, {"INTERFACE|Ethernet0|10.0.0.1/24"},
		{"INTERFACE|Ethernet12", "vrf_name", "Vrf_red"}, {"INTERFACE|Ethernet12|10.3.0.1/24"},
		{"INTERFACE|Ethernet4", "vrf_name", "Vrf_blue"}, {"INTERFACE|Ethernet4|10.0.0.1/24"},
		{"INTERFACE|Ethernet8", "vrf_name", "Vrf_blue"}, {"INTERFACE|Ethernet8|10.2.0.1/24"},
		{"STATIC_ROUTE|Vrf_red|10.50.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0"},
		{"STATIC_ROUTE|Vrf_blue|10.50.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet4"},
		{"STATIC_ROUTE|Vrf_red|10.2.0.0/24", "nexthop", "10.2.0.2", "nexthop-vrf", "Vrf_blue"},
		{"STATIC_ROUTE|Vrf_blue|10.3.0.0/24", "nexthop", "10.3.0.2", "nexthop-vrf", "Vrf_red"},
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet4", "admin_status", "up"},
		{"PORT|Ethernet8", "admin_status", "up"}, {"PORT|Ethernet12", "admin_status", "up"},
	}
	var keys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		keys = append(keys, c[0])
	}
	e.WaitOK(keys...)
	want := map[string]map[string]string{ // VRF → prefix → device
		"Vrf_red":  {"10.50.0.0/16": "Ethernet0", "10.2.0.0/24": "Ethernet8"},
		"Vrf_blue": {"10.50.0.0/16": "Ethernet4", "10.3.0.0/24": "Ethernet12"},
	}
	for vrf, m := range want {
		for p, dev := range m {
			var rs []e2eutil.IPRoute
			e.NS.JSON(&rs, "route", "show", "vrf", vrf, p)
			if len(rs) != 1 || rs[0].Dev != dev || rs[0].Proto() != "201" {
				t.Errorf("route %s in %s: %+v, want one via dev %s proto 201", p, vrf, rs, dev)
			}
		}
	}
	if rs := e2eutil.Routes(e.NS, "10.50.0.0/16"); len(rs) != 0 {
		t.Errorf("main table holds 10.50.0.0/16: %+v", rs)
	}
	// The leak, both ways: blue's host C and red's host D.
	e2eutil.WaitReachable(t, hosts["Ethernet8"], "10.3.0.2")
	e2eutil.WaitReachable(t, hosts["Ethernet12"], "10.2.0.2")

	delAll(e, keys...)
	var left []e2eutil.IPRoute
	e.NS.JSON(&left, "route", "show", "table", "all", "proto", "201")
	if len(left) != 0 {
		t.Fatalf("routes of ours left after the deletes: %+v", left)
	}
}
