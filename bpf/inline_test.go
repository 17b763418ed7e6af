package bpf

import (
	"fmt"
	"math/rand"
	"net/netip"
	"sort"
	"testing"
)

// impMatches is the reference matcher of one IMPAIRMENT_FLOW match for
// a UDP or TCP frame f.
func impMatches(m *Match, f frame) bool {
	if fam := m.Family(); fam == 4 && !f.dst.Is4() || fam == 6 && f.dst.Is4() {
		return false
	}
	if m.Src.IsValid() && !m.Src.Contains(f.src) || m.Dst.IsValid() && !m.Dst.Contains(f.dst) {
		return false
	}
	if m.ProtoSet && m.Proto != f.proto || m.DSCPSet && m.DSCP != f.dscp {
		return false
	}
	if !m.Sport.Contains(f.sport) || !m.Dport.Contains(f.dport) {
		return false
	}
	if m.VLAN != 0 && (len(f.vlans) == 0 || f.vlans[0] != m.VLAN) {
		return false
	}
	return true
}

// inlineRules is a random rule set of n rules in a few shapes, most of
// them /32 destinations with a destination port range (aligned blocks:
// several entries each), so that thousands of IPv4 entries share the
// 4,096 inline slots; a third are IPv6 rules (to6 of the IPv4 ones).
func inlineRules(rnd *rand.Rand, n int) []RuleSpec {
	var v6 bool
	addr := func(bits int) netip.Prefix {
		a := netip.AddrFrom4([4]byte{10, byte(rnd.Intn(4)), byte(rnd.Intn(8)), byte(rnd.Intn(256))})
		if v6 {
			a, bits = to6(a), bits+96
		}
		return netip.PrefixFrom(a, bits).Masked()
	}
	var out []RuleSpec
	for i := 0; i < n; i++ {
		v6 = rnd.Intn(3) == 0
		var m Match
		switch rnd.Intn(8) {
		case 0, 1, 2, 3:
			m = Match{Dst: addr(32), Proto: 17, ProtoSet: true, Dport: ports(1000, 1999)}
		case 4:
			m = Match{Dst: addr(24), Proto: 17, ProtoSet: true}
		case 5:
			m = Match{Src: addr(16), Dport: ports(53, 53)}
		case 6:
			m = Match{Dst: addr(28), VLAN: uint16(1 + rnd.Intn(3))}
		case 7:
			m = Match{DSCP: uint8(rnd.Intn(4)), DSCPSet: true, Proto: 6, ProtoSet: true}
		}
		out = append(out, RuleSpec{Name: fmt.Sprintf("r%04d", i), Priority: rnd.Intn(50), Match: m})
	}
	return out
}

// to6 maps 10.a.b.c to 2001:db8::a:b:c (the IPv6 rules and packets of
// the inline tests).
func to6(a netip.Addr) netip.Addr {
	b := [16]byte{0x20, 0x01, 0x0d, 0xb8}
	v := a.As4()
	copy(b[12:], v[:])
	return netip.AddrFrom16(b)
}

// inlinePacket is a UDP or TCP frame matching rule r (or, one time in
// four, a random one near the rule set's addresses).
func inlinePacket(rnd *rand.Rand, r *RuleSpec) frame {
	f := frame{
		src:   netip.AddrFrom4([4]byte{10, byte(rnd.Intn(4)), byte(rnd.Intn(8)), byte(rnd.Intn(256))}),
		dst:   netip.AddrFrom4([4]byte{10, byte(rnd.Intn(4)), byte(rnd.Intn(8)), byte(rnd.Intn(256))}),
		proto: []uint8{6, 17}[rnd.Intn(2)], sport: uint16(rnd.Intn(65536)), dport: uint16(900 + rnd.Intn(1200)),
		dscp: uint8(rnd.Intn(4)),
	}
	if rnd.Intn(3) == 0 {
		f.vlans = []uint16{uint16(1 + rnd.Intn(3))}
	}
	m := &r.Match
	if fam := m.Family(); fam == 6 || fam == 0 && rnd.Intn(2) == 0 {
		f.src, f.dst = to6(f.src), to6(f.dst)
	}
	if rnd.Intn(4) == 0 {
		return f
	}
	if m.Src.IsValid() {
		f.src = m.Src.Addr()
	}
	if m.Dst.IsValid() {
		b := m.Dst.Addr().As16()
		host := m.Dst.Addr().BitLen() - m.Dst.Bits() // 0..8 here
		b[15] |= byte(rnd.Intn(256)) & ^byte(0xff<<host)
		f.dst = netip.AddrFrom16(b)
		if m.Dst.Addr().Is4() {
			f.dst = f.dst.Unmap()
		}
	}
	if m.ProtoSet {
		f.proto = m.Proto
	}
	if m.DSCPSet {
		f.dscp = m.DSCP
	}
	if m.Dport.Set {
		f.dport = m.Dport.Lo + uint16(rnd.Intn(int(m.Dport.Hi-m.Dport.Lo)+1))
	}
	if m.VLAN != 0 {
		f.vlans = []uint16{m.VLAN}
	}
	return f
}

// TestImpairInlineReference: the data plane (shape filter, inline
// entries, blooms, hash) against the reference matcher, counted per rule,
// with thousands of IPv4 and IPv6 entries (many in shared slots), after
// changes of the rule set; and every entry of matches4 is inline or its slot is shared.
func TestImpairInlineReference(t *testing.T) {
	p := loadPort(t)
	rnd := rand.New(rand.NewSource(15))
	for round := 0; round < 3; round++ {
		rules := inlineRules(rnd, 600+200*round)
		plan, err := Compile(&Spec{}, rules)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(plan); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := p.readCfg()
		if err != nil {
			t.Fatal(err)
		}
		have, err := p.readMatches()
		if err != nil {
			t.Fatal(err)
		}
		n4, n6, inl, shared := 0, 0, 0, 0
		for e, v := range have {
			var k []uint64
			var r, idx, more uint32
			if e.v4 {
				n4++
				w := impWords4(to4(e.key))
				s := &cfg.Tab4[inlineSlot(w, impTabShift)]
				if s.K == [3]uint64{w[0], w[1], w[2]} {
					k = w[:3]
				}
				r, idx, more = s.Rank, s.Idx, s.More
			} else {
				n6++
				w := impWords6(e.key)
				s := &cfg.Tab6[inlineSlot(w, impTabShift)]
				if s.K == w {
					k = w[:]
				}
				r, idx, more = s.Rank, s.Idx, s.More
			}
			switch {
			case k != nil:
				inl++
				if r != v.Rank || idx != v.Slot || cfg.Prof[idx] != v.Prof {
					t.Errorf("round %d: inline entry %+v: rank %d slot %d, the hash has %d %d (or another profile)", round, e.key, r, idx, v.Rank, v.Slot)
				}
			case more == 0:
				t.Errorf("round %d: entry %+v (v4 %v) neither inline nor announced by its slot", round, e.key, e.v4)
			default:
				shared++
			}
		}
		if shared == 0 {
			t.Errorf("round %d: %d IPv4 entries, none in a shared slot: the test wants shared slots", round, n4)
		}
		t.Logf("round %d: %d rules, %d IPv4 and %d IPv6 entries: %d inline, %d in shared slots only", round, len(rules), n4, n6, inl, shared)

		ranked := append([]RuleSpec(nil), rules...)
		sort.SliceStable(ranked, func(i, j int) bool {
			if ranked[i].Priority != ranked[j].Priority {
				return ranked[i].Priority > ranked[j].Priority
			}
			return ranked[i].Name < ranked[j].Name
		})
		before, err := p.Counters()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]uint64{}
		for i := 0; i < 1500; i++ {
			f := inlinePacket(rnd, &rules[rnd.Intn(len(rules))])
			name := "" // the port profile
			for j := range ranked {
				if impMatches(&ranked[j].Match, f) {
					name = ranked[j].Name
					break
				}
			}
			want[name]++
			if got := run(t, p, f.bytes()); got != xdpPass {
				t.Fatalf("verdict %d", got)
			}
		}
		after, err := p.Counters()
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range after {
			if got := c.RxPackets - before[name].RxPackets; got != want[name] {
				t.Errorf("round %d: rule %q counted %d packets, the reference %d", round, name, got, want[name])
			}
		}
	}
}
