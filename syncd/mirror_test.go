package syncd

import (
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func ptr[T any](v T) *T { return &v }

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func TestLinkFields(t *testing.T) {
	l := netlinkmgr.LinkInfo{Name: "Ethernet0", MTU: ptr(9100), AdminUp: ptr(true),
		MAC: mac("02:AA:BB:CC:DD:EE"), OperUp: false, OperState: "lowerlayerdown"}
	want := schema.Fields{"oper_status": "down", "admin_status": "up", "mtu": "9100", "mac": "02:aa:bb:cc:dd:ee"}
	if got := LinkFields(l); !reflect.DeepEqual(got, want) {
		t.Errorf("LinkFields = %v, want %v", got, want)
	}
	l.OperUp, l.OperState = true, "up"
	if got := LinkFields(l)["oper_status"]; got != "up" {
		t.Errorf("oper_status = %q, want up", got)
	}
	// Fields the kernel did not report are absent, not empty.
	if got := LinkFields(netlinkmgr.LinkInfo{Name: "x"}); !reflect.DeepEqual(got, schema.Fields{"oper_status": "down"}) {
		t.Errorf("LinkFields(bare) = %v", got)
	}
}

func TestIsVlanName(t *testing.T) {
	for name, want := range map[string]bool{
		"Vlan1": true, "Vlan100": true, "Vlan4094": true, "Vlan4095": false,
		"Vlan0": false, "Vlan01": false, "vlan10": false, "Vlan": false, "Vlan10x": false,
	} {
		if got := IsVlanName(name); got != want {
			t.Errorf("IsVlanName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFdb(t *testing.T) {
	f := netlinkmgr.FdbInfo{MAC: mac("00:11:22:33:44:AA"), Link: "Ethernet0", Master: "Bridge"}
	if !FdbMirrored(f) {
		t.Fatal("learned entry on Bridge not mirrored")
	}
	if got := FdbKey(f, 1); got != "Vlan1:00:11:22:33:44:aa" {
		t.Errorf("untagged key = %q", got)
	}
	f.Vlan = 100
	if got := FdbKey(f, 1); got != "Vlan100:00:11:22:33:44:aa" {
		t.Errorf("tagged key = %q", got)
	}
	if got := FdbFields(f); !reflect.DeepEqual(got, schema.Fields{"port": "Ethernet0", "type": "dynamic"}) {
		t.Errorf("FdbFields = %v", got)
	}
	f.Static = true
	if got := FdbFields(f)["type"]; got != "static" {
		t.Errorf("type = %q, want static", got)
	}
	for name, g := range map[string]netlinkmgr.FdbInfo{
		"local":      {MAC: f.MAC, Link: "Ethernet0", Master: "Bridge", Local: true},
		"self":       {MAC: mac("33:33:00:00:00:01"), Link: "Ethernet0"},
		"other":      {MAC: f.MAC, Link: "Ethernet0", Master: "br1"},
		"multicast?": {MAC: nil, Link: "Ethernet0", Master: "Bridge"},
	} {
		if FdbMirrored(g) {
			t.Errorf("%s entry mirrored", name)
		}
	}
}

func TestNeigh(t *testing.T) {
	n := netlinkmgr.NeighInfo{Link: "Ethernet0", IP: netip.MustParseAddr("10.0.0.2"),
		MAC: mac("02:00:00:00:00:02"), State: "reachable"}
	if !NeighMirrored(n) {
		t.Fatal("reachable neighbour not mirrored")
	}
	if got := NeighKey(n); got != "Ethernet0|10.0.0.2" {
		t.Errorf("key = %q", got)
	}
	want := schema.Fields{"neigh": "02:00:00:00:00:02", "family": "IPv4", "state": "reachable"}
	if got := NeighFields(n); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
	n6 := n
	n6.IP = netip.MustParseAddr("fe80::1")
	if got := NeighFields(n6)["family"]; got != "IPv6" {
		t.Errorf("family = %q", got)
	}
	for _, st := range []string{"incomplete", "failed", "noarp"} {
		m := n
		m.State = st
		if NeighMirrored(m) {
			t.Errorf("%s neighbour mirrored", st)
		}
	}
	m := n
	m.MAC = nil
	if NeighMirrored(m) {
		t.Error("neighbour without MAC mirrored")
	}
}

func TestRoute(t *testing.T) {
	r := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.2.3.4/16"), Protocol: 201,
		NextHops: []netlinkmgr.NextHop{
			{Gateway: netip.MustParseAddr("10.0.0.2"), Link: "Ethernet0"},
			{Gateway: netip.MustParseAddr("10.0.1.2"), Link: "Ethernet4"},
		}}
	if got := RouteKey(r); got != "10.2.0.0/16" {
		t.Errorf("key = %q, want host bits clear", got)
	}
	want := schema.Fields{"nexthop": "10.0.0.2,10.0.1.2", "ifname": "Ethernet0,Ethernet4", "protocol": "switchyard"}
	if got := RouteFields(r); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
	conn := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("10.0.0.0/24"), Protocol: 2,
		NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0"}}}
	want = schema.Fields{"nexthop": "0.0.0.0", "ifname": "Ethernet0", "protocol": "kernel"}
	if got := RouteFields(conn); !reflect.DeepEqual(got, want) {
		t.Errorf("connected = %v, want %v", got, want)
	}
	conn6 := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("2001:db8::/64"), Protocol: 3,
		NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0"}}}
	if got := RouteFields(conn6); got["nexthop"] != "::" || got["protocol"] != "boot" {
		t.Errorf("connected v6 = %v", got)
	}
	bh := netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix("192.0.2.0/24"), Protocol: 4, Blackhole: true}
	if got := RouteFields(bh); !reflect.DeepEqual(got, schema.Fields{"blackhole": "true", "protocol": "static"}) {
		t.Errorf("blackhole = %v", got)
	}
	if RouteMirrored(netlinkmgr.RouteInfo{Dst: r.Dst, Table: 255}) {
		t.Error("local-table route mirrored")
	}
	if !RouteMirrored(netlinkmgr.RouteInfo{Dst: r.Dst, Table: 254}) || !RouteMirrored(netlinkmgr.RouteInfo{Dst: r.Dst}) {
		t.Error("main-table route not mirrored")
	}
	if got := ProtocolName(77); got != "77" {
		t.Errorf("ProtocolName(77) = %q", got)
	}
}

func TestCounterFields(t *testing.T) {
	got := CounterFieldsOf(netlinkmgr.LinkStats{RxPackets: 1, TxPackets: 2, RxBytes: 3, TxBytes: 4,
		RxErrors: 5, TxErrors: 6, RxDropped: 7, TxDropped: 8})
	want := schema.Fields{"rx_packets": "1", "tx_packets": "2", "rx_bytes": "3", "tx_bytes": "4",
		"rx_errors": "5", "tx_errors": "6", "rx_dropped": "7", "tx_dropped": "8"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CounterFieldsOf = %v, want %v", got, want)
	}
	if len(CounterFields) != len(want) {
		t.Errorf("CounterFields has %d names, fields %d", len(CounterFields), len(want))
	}
}
