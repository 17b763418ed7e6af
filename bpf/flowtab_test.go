package bpf

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// flowSet is impair.c flow_find's set index of an IPv4 flow of slot
// (acl.h's hash constants, the top 14 bits).
func flowSet(f frame, slot uint32) uint32 {
	s, d := f.src.As4(), f.dst.As4()
	k0 := uint64(binary.NativeEndian.Uint32(s[:]))<<32 | uint64(binary.NativeEndian.Uint32(d[:]))
	var vlan uint16
	if len(f.vlans) > 0 {
		vlan = f.vlans[0]
	}
	k4 := uint64(f.sport)<<48 | uint64(f.dport)<<32 | uint64(vlan)<<16 | uint64(f.proto)<<8 | 4
	k5 := uint64(1)<<32 | uint64(slot)
	h := k0*0x9E3779B97F4A7C15 + k4*0xA0761D6478BD642F + k5*0xE7037ED1A0B428DB
	return uint32(h >> 50)
}

// TestScopeFlowTable: with scope flow, 1,000 flows that differ in one
// field each (source, destination, ports, VLAN, protocol, family) each
// keep their own periodic counter (every first packet passes, every
// second is dropped): the table's tags are exact. Then a fifth flow in a
// full set of 4 evicts the flow that arrived there first (its state starts
// over), and only that one.
func TestScopeFlowTable(t *testing.T) {
	pinCPU(t)
	p := loadPort(t)
	apply(t, p, nil, RuleSpec{Name: "c", Spec: Spec{LossModel: LossPeriodic, Period: 2}, ScopeFlow: true})
	base := udp4("10.0.0.1", 9)
	var flows []frame
	for i := 0; len(flows) < 1000; i++ {
		f := base
		switch i % 6 {
		case 0:
			f.sport = uint16(1000 + i)
		case 1:
			f.dport = uint16(1000 + i)
		case 2:
			f.src = netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
			f.sport = uint16(i)
		case 3:
			f.dst = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
		case 4:
			f.vlans = []uint16{uint16(1 + i%4000)}
			f.sport = uint16(i)
		case 5:
			f.src, f.dst = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
			f.proto = []uint8{6, 17}[i/6%2]
			f.sport = uint16(i)
		}
		flows = append(flows, f)
	}
	for round, want := range []uint32{xdpPass, xdpDrop} {
		bad := 0
		for _, f := range flows {
			if got := run(t, p, f.bytes()); got != want {
				if bad++; bad <= 3 {
					t.Errorf("round %d, flow %+v: verdict %d, want %d", round+1, f, got, want)
				}
			}
		}
		if bad > 3 {
			t.Errorf("round %d: %d flows with the wrong verdict", round+1, bad)
		}
	}

	// five flows of one set (slot 1: the rule's)
	q := loadPort(t)
	apply(t, q, nil, RuleSpec{Name: "c", Spec: Spec{LossModel: LossPeriodic, Period: 2}, ScopeFlow: true})
	a := udp4("10.0.0.1", 9)
	set := flowSet(a, 1)
	same := []frame{a}
	for i := 1; len(same) < 5 && i < 1<<24; i++ {
		f := a
		f.sport, f.dport = uint16(i), uint16(10+i>>16) // never a's own ports (dport 9)
		if flowSet(f, 1) == set {
			same = append(same, f)
		}
	}
	if len(same) < 5 {
		t.Fatalf("found %d flows of set %d", len(same), set)
	}
	for _, f := range same {
		if got := run(t, q, f.bytes()); got != xdpPass {
			t.Fatalf("first packet of %+v: verdict %d, want pass", f, got)
		}
	}
	// the fifth took the way of the first: the second's state is kept (its
	// second packet is dropped), a's starts over (pass)
	if got := run(t, q, same[1].bytes()); got != xdpDrop {
		t.Errorf("kept flow's second packet: verdict %d, want drop", got)
	}
	if got := run(t, q, same[0].bytes()); got != xdpPass {
		t.Errorf("evicted flow's next packet: verdict %d, want pass (state started over)", got)
	}
}
