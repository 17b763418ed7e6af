package syncd

import (
	"context"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func TestSAICountersOf(t *testing.T) {
	for _, c := range []struct {
		name string
		in   netlinkmgr.LinkStats
		want schema.Fields
	}{
		{"multicast split from unicast", netlinkmgr.LinkStats{RxPackets: 100, TxPackets: 70, RxBytes: 9000, TxBytes: 6000,
			RxErrors: 1, TxErrors: 2, RxDropped: 3, TxDropped: 4, Multicast: 30},
			schema.Fields{SAIInOctets: "9000", SAIInUcastPkts: "70", SAIInNonUcastPkts: "30", SAIInErrors: "1", SAIInDiscards: "3",
				SAIOutOctets: "6000", SAIOutUcastPkts: "70", SAIOutNonUcastPkts: "0", SAIOutErrors: "2", SAIOutDiscards: "4"}},
		{"veth: no multicast counter", netlinkmgr.LinkStats{RxPackets: 5, TxPackets: 6},
			schema.Fields{SAIInOctets: "0", SAIInUcastPkts: "5", SAIInNonUcastPkts: "0", SAIInErrors: "0", SAIInDiscards: "0",
				SAIOutOctets: "0", SAIOutUcastPkts: "6", SAIOutNonUcastPkts: "0", SAIOutErrors: "0", SAIOutDiscards: "0"}},
		{"multicast above packets (a driver's race) never underflows", netlinkmgr.LinkStats{RxPackets: 5, Multicast: 9},
			schema.Fields{SAIInOctets: "0", SAIInUcastPkts: "0", SAIInNonUcastPkts: "5", SAIInErrors: "0", SAIInDiscards: "0",
				SAIOutOctets: "0", SAIOutUcastPkts: "0", SAIOutNonUcastPkts: "0", SAIOutErrors: "0", SAIOutDiscards: "0"}},
	} {
		if got := SAICountersOf(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: SAICountersOf = %v, want %v", c.name, got, c.want)
		}
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range SAICountersOf(netlinkmgr.LinkStats{}) {
			if !yield(k) {
				return
			}
		}
	})
	if want := slices.Sorted(slices.Values(SAICounterFields)); !reflect.DeepEqual(got, want) {
		t.Errorf("SAICountersOf writes %v, SAICounterFields owns %v", got, want)
	}
}

func TestPortOIDStableAndSAIShaped(t *testing.T) {
	shape := regexp.MustCompile(`^oid:0x1[0-9a-f]{12}$`)
	seen := map[string]string{}
	for i := range 512 {
		p := "Ethernet" + string(rune('0'+i%10)) + string(rune('a'+i/10%26)) + string(rune('a'+i/260))
		id := PortOID(p)
		if !shape.MatchString(id) {
			t.Fatalf("PortOID(%s) = %q, want oid:0x1 followed by 12 hex digits", p, id)
		}
		if q, dup := seen[id]; dup {
			t.Fatalf("PortOID(%s) = PortOID(%s) = %s", p, q, id)
		}
		seen[id] = p
	}
	// Fixed forever: readers and dashboards keep these ids across restarts.
	if got, want := PortOID("Ethernet0"), "oid:0x163a1249b5d5a"; got != want {
		t.Errorf("PortOID(Ethernet0) = %s, want %s (the id must never change)", got, want)
	}
}

func TestPortFieldsNetdevOperStatus(t *testing.T) {
	l := netlinkmgr.LinkInfo{Name: "Ethernet0", OperState: "down", AdminUp: ptr(true), MTU: ptr(9100)}
	want := schema.Fields{"oper_status": "down", "netdev_oper_status": "down", "admin_status": "up", "mtu": "9100"}
	if got := PortFields(l); !reflect.DeepEqual(got, want) {
		t.Errorf("PortFields = %v, want %v", got, want)
	}
	l.OperUp = true
	if got := PortFields(l)["netdev_oper_status"]; got != "up" {
		t.Errorf("netdev_oper_status = %q, want up", got)
	}
}

func TestInterfaceTableOwnership(t *testing.T) {
	if StateInterfaceTable != schema.ResultTable(schema.TableInterface) {
		t.Fatalf("StateInterfaceTable %q is not where orchagent writes INTERFACE results (%q)",
			StateInterfaceTable, schema.ResultTable(schema.TableInterface))
	}
	for key, want := range map[string][]string{
		"INTERFACE_TABLE|Vlan100|10.1.0.1/24":     {"state"},
		"INTERFACE_TABLE|Loopback0|10.1.0.1/32":   {"state"},
		"INTERFACE_TABLE|Ethernet0|10.0.0.1/24":   nil, // orchagent's INTERFACE result
		"INTERFACE_TABLE|Vlanx|10.0.0.1/24":       nil,
		"INTERFACE_TABLE|Vlan100":                 nil,
		"PORT_TABLE|Ethernet0":                    {"admin_status", "mac", "mtu", "netdev_oper_status", "oper_status"},
		"VLAN_INTERFACE_TABLE|Vlan100|1.2.3.4/24": nil,
	} {
		if got := StateOwnership(key); !reflect.DeepEqual(got, want) {
			t.Errorf("StateOwnership(%s) = %v, want %v", key, got, want)
		}
	}
	for key, want := range map[string][]string{
		"COUNTERS_PORT_NAME_MAP":        {"*"},
		"COUNTERS:oid:0x1000000000002":  slices.Sorted(slices.Values(SAICounterFields)),
		"COUNTERS:Ethernet0":            slices.Sorted(slices.Values(CounterFields)),
		"IMPAIRMENT_COUNTERS:Ethernet0": nil,
	} {
		if got := CountersOwnership(key); !reflect.DeepEqual(got, want) {
			t.Errorf("CountersOwnership(%s) = %v, want %v", key, got, want)
		}
	}
}

func addrEv(link, prefix string, del bool) netlinkmgr.Event {
	a := netlinkmgr.AddrInfo{Link: link, Prefix: netip.MustParsePrefix(prefix)}
	return netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Addr: &a, Deleted: del}
}

func TestViewInterfaceAddresses(t *testing.T) {
	v := NewView()
	m := map[string]schema.Fields{}
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Vlan100", Index: 7}, false))
	v.Apply(linkEv(eth("Ethernet0", 2, true), false))
	v.Apply(addrEv("Vlan100", "10.1.0.1/24", false))
	v.Apply(addrEv("Vlan100", "2001:db8::1/64", false))
	v.Apply(addrEv("Vlan100", "fe80::1/64", false))     // link-local: the kernel's
	v.Apply(addrEv("Vlan100", "169.254.1.1/16", false)) // link-local: not routed
	v.Apply(addrEv("Ethernet0", "10.0.0.1/24", false))  // orchagent's INTERFACE result
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Loopback0", Index: 9}, false))
	v.Apply(addrEv("Loopback0", "10.1.0.1/32", false))
	mirror(v, m)
	ok := schema.Fields{"state": "ok"}
	want := map[string]schema.Fields{
		"INTERFACE_TABLE|Loopback0|10.1.0.1/32":  ok,
		"INTERFACE_TABLE|Vlan100|10.1.0.1/24":    ok,
		"INTERFACE_TABLE|Vlan100|2001:db8::1/64": ok,
		"VLAN_TABLE|Vlan100":                     {"oper_status": "down"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("mirror = %v, want %v", m, want)
	}

	v.Apply(addrEv("Vlan100", "2001:db8::1/64", true))
	mirror(v, m)
	if _, ok := m["INTERFACE_TABLE|Vlan100|2001:db8::1/64"]; ok {
		t.Error("deleted address still mirrored")
	}

	// A rename carries the addresses along (no address event for it).
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Vlan200", Index: 7}, false))
	mirror(v, m)
	if _, ok := m["INTERFACE_TABLE|Vlan200|10.1.0.1/24"]; !ok || m["INTERFACE_TABLE|Vlan100|10.1.0.1/24"] != nil {
		t.Errorf("after rename Vlan100 -> Vlan200: %v", m)
	}

	// A listing that does not deliver the address drops it; a deleted link
	// takes its addresses along.
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventResync})
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Vlan200", Index: 7}, false))
	v.Apply(addrEv("Vlan200", "10.9.0.1/24", false))
	v.Apply(netlinkmgr.Event{Kind: netlinkmgr.EventSynced})
	mirror(v, m)
	if m["INTERFACE_TABLE|Vlan200|10.1.0.1/24"] != nil || m["INTERFACE_TABLE|Vlan200|10.9.0.1/24"] == nil {
		t.Errorf("after relisting: %v", m)
	}
	v.Apply(linkEv(netlinkmgr.LinkInfo{Name: "Vlan200", Index: 7}, true))
	mirror(v, m)
	if len(m) != 0 {
		t.Errorf("after deleting Vlan200: %v", m)
	}
}

// TestDaemonSonicShapes: the SONiC reader shapes on the Fake kernel and a
// real redis-server — the name map, SAI counters, netdev_oper_status and
// INTERFACE_TABLE — next to orchagent's INTERFACE result, which syncd must
// neither adopt nor remove.
func TestDaemonSonicShapes(t *testing.T) {
	ctx := context.Background()
	orchResult := "INTERFACE_TABLE|Ethernet0|10.0.0.1/24"
	orchError := "INTERFACE_TABLE|Vlan100|10.6.0.1/24"
	h := newHarness(t, func(h *harness) {
		h.k.AddPort("Ethernet0", "Ethernet4")
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)})
		h.k.Links().Add(netlinkmgr.LinkInfo{Name: "Vlan100", Kind: "bridge", AdminUp: ptr(true)})
		h.k.Addrs().Add(netlinkmgr.AddrInfo{Link: "Vlan100", Prefix: netip.MustParsePrefix("10.1.0.1/24")})
		h.k.Addrs().Add(netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")})
		h.k.SetStats("Ethernet0", netlinkmgr.LinkStats{RxPackets: 10, TxPackets: 4, RxBytes: 1000, Multicast: 3})
		h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
		h.config.HSet(ctx, "PORT|Ethernet4", "admin_status", "up")
		h.state.HSet(ctx, orchResult, "state", "ok")                                  // orchagent's
		h.state.HSet(ctx, "INTERFACE_TABLE|Vlan100|10.7.0.1/24", "state", "ok")       // stale, ours
		h.state.HSet(ctx, orchError, "state", "error", "reason", "Vlan100 is a VLAN") // orchagent's, invalid INTERFACE key
		h.cnt.HSet(ctx, "COUNTERS:oid:0x1000000000bad", SAIInOctets, "5")             // stale, ours
		h.cnt.HSet(ctx, CountersPortNameMap, "Ethernet99", "oid:0x1000000000bad")     // stale, ours
	})
	oid0, oid4 := PortOID("Ethernet0"), PortOID("Ethernet4")
	h.hashIs(h.cnt, CountersPortNameMap, map[string]string{"Ethernet0": oid0, "Ethernet4": oid4})
	h.hashIs(h.cnt, "COUNTERS:"+oid0, map[string]string{
		SAIInOctets: "1000", SAIInUcastPkts: "7", SAIInNonUcastPkts: "3", SAIInErrors: "0", SAIInDiscards: "0",
		SAIOutOctets: "0", SAIOutUcastPkts: "4", SAIOutNonUcastPkts: "0", SAIOutErrors: "0", SAIOutDiscards: "0"})
	h.hashIs(h.cnt, "COUNTERS:oid:0x1000000000bad", nil)
	h.hashIs(h.state, "INTERFACE_TABLE|Vlan100|10.1.0.1/24", map[string]string{"state": "ok"})
	h.hashIs(h.state, "INTERFACE_TABLE|Vlan100|10.7.0.1/24", nil)
	h.hashIs(h.state, orchResult, map[string]string{"state": "ok"})
	h.hashIs(h.state, orchError, map[string]string{"state": "error", "reason": "Vlan100 is a VLAN"})
	// orchagent's engine, starting, removes results of no CONFIG_DB key —
	// syncd's VlanN keys among them: syncd notices and writes them back.
	h.state.HDel(ctx, "INTERFACE_TABLE|Vlan100|10.1.0.1/24", "state")
	h.hashIs(h.state, "INTERFACE_TABLE|Vlan100|10.1.0.1/24", map[string]string{"state": "ok"})
	h.eventually("netdev_oper_status", func() (bool, string) {
		v := h.state.HGet(ctx, "PORT_TABLE|Ethernet0", "netdev_oper_status").Val()
		return v == "up", "netdev_oper_status " + v
	})

	// Counters move; a port leaving CONFIG_DB takes its counters and its
	// name-map entry along; orchagent's key stays whatever happens.
	h.k.SetStats("Ethernet0", netlinkmgr.LinkStats{RxPackets: 20, TxPackets: 4, RxBytes: 2000, Multicast: 3})
	h.eventually("IN_UCAST moves", func() (bool, string) {
		v := h.cnt.HGet(ctx, "COUNTERS:"+oid0, SAIInUcastPkts).Val()
		return v == "17", "IN_UCAST " + v
	})
	h.config.Del(ctx, "PORT|Ethernet4")
	h.hashIs(h.cnt, CountersPortNameMap, map[string]string{"Ethernet0": oid0})
	h.hashIs(h.cnt, "COUNTERS:"+oid4, nil)
	h.hashIs(h.cnt, "COUNTERS:Ethernet4", nil)
	h.k.Addrs().Del(netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")})
	h.k.Addrs().Del(netlinkmgr.AddrInfo{Link: "Vlan100", Prefix: netip.MustParsePrefix("10.1.0.1/24")})
	h.hashIs(h.state, "INTERFACE_TABLE|Vlan100|10.1.0.1/24", nil)
	h.hashIs(h.state, orchResult, map[string]string{"state": "ok"})
}
