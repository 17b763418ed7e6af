package bpf

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
)

// aclPkt is a test packet's fields as the reference matcher sees them.
type aclPkt struct {
	f      frame
	family int // 4, 6, 0 = non-IP
	etype  uint16
}

// refMatch is the ACL semantics, rule by rule, written independently of
// the compiler: every set field must match; ICMP type/code imply ICMP
// (or ICMPv6), TCP flags imply TCP; a non-IP packet matches only rules
// without IP fields.
func refMatch(r *ACLRule, p *aclPkt) bool {
	m := &r.Match
	if r.EtherTypeSet && r.EtherType != p.etype {
		return false
	}
	if m.VLAN != 0 && (len(p.f.vlans) == 0 || p.f.vlans[0] != m.VLAN) {
		return false
	}
	if p.family == 0 {
		return !r.ipFields()
	}
	for _, c := range []struct {
		pf netip.Prefix
		a  netip.Addr
	}{{m.Src, p.f.src}, {m.Dst, p.f.dst}} {
		if c.pf.IsValid() && !c.pf.Contains(c.a) {
			return false
		}
	}
	proto, protoSet := m.Proto, m.ProtoSet
	if r.ICMPTypeSet || r.ICMPCodeSet {
		proto, protoSet = 1, true
		if p.family == 6 {
			proto = 58
		}
		if m.ProtoSet && m.Proto != proto {
			return false
		}
	}
	if r.TCPFlagsMask != 0 {
		proto, protoSet = 6, true
	}
	if protoSet && p.f.proto != proto {
		return false
	}
	var sport, dport uint16
	if p.f.proto == 6 || p.f.proto == 17 {
		sport, dport = p.f.sport, p.f.dport
	}
	if !m.Sport.Contains(sport) || !m.Dport.Contains(dport) {
		return false
	}
	if m.DSCPSet && p.f.dscp != m.DSCP {
		return false
	}
	if r.TCPFlagsMask != 0 && p.f.tcpFlags&r.TCPFlagsMask != r.TCPFlags&r.TCPFlagsMask {
		return false
	}
	if r.ICMPTypeSet && p.f.icmpType != r.ICMPType {
		return false
	}
	if r.ICMPCodeSet && p.f.icmpCode != r.ICMPCode {
		return false
	}
	return true
}

func randACLRule(rnd *rand.Rand, i int) ACLRule {
	r := ACLRule{Name: fmt.Sprintf("R|%03d", i), Priority: rnd.Intn(50), Action: ACLAction(rnd.Intn(2))}
	v6 := rnd.Intn(3) == 0
	pick := func() netip.Prefix {
		if v6 {
			a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(rnd.Intn(3)), 14: 0, 15: byte(rnd.Intn(4))})
			return netip.PrefixFrom(a, []int{0, 32, 48, 126, 128}[rnd.Intn(5)]).Masked()
		}
		a := netip.AddrFrom4([4]byte{10, 0, byte(rnd.Intn(3)), byte(rnd.Intn(4))})
		return netip.PrefixFrom(a, []int{0, 8, 24, 30, 32}[rnd.Intn(5)]).Masked()
	}
	rng := func() PortRange {
		if rnd.Intn(10) == 0 {
			return PortRange{Set: true, Lo: 0, Hi: 0xffff}
		}
		lo := uint16(rnd.Intn(12))
		return PortRange{Set: true, Lo: lo, Hi: lo + uint16(rnd.Intn(6))}
	}
	switch rnd.Intn(8) {
	case 0:
		r.Match.Src = pick()
	case 1:
		r.Match.Dst = pick()
		r.Match.Proto, r.Match.ProtoSet = []uint8{6, 17}[rnd.Intn(2)], true
		r.Match.Dport = rng()
	case 2:
		r.Match.Proto, r.Match.ProtoSet = 6, true
		r.Match.Sport = rng()
	case 3:
		r.TCPFlags, r.TCPFlagsMask = uint8(rnd.Intn(64)), []uint8{0x02, 0x12, 0x10, 0x3f}[rnd.Intn(4)]
	case 4:
		r.ICMPType, r.ICMPTypeSet = uint8(rnd.Intn(3)), true
		if rnd.Intn(2) == 0 {
			r.ICMPCode, r.ICMPCodeSet = uint8(rnd.Intn(2)), true
		}
	case 5:
		r.Match.DSCP, r.Match.DSCPSet = uint8(rnd.Intn(3)), true
		r.Match.Src = pick()
	case 6:
		r.EtherType, r.EtherTypeSet = []uint16{0x0806, 0x0800, 0x86dd, 0x88cc}[rnd.Intn(4)], true
	default:
		r.Match.VLAN = uint16(5 + rnd.Intn(2))
	}
	if rnd.Intn(4) == 0 && !r.EtherTypeSet {
		r.Match.VLAN = uint16(5 + rnd.Intn(2))
	}
	return r
}

func randACLPkt(rnd *rand.Rand) aclPkt {
	var p aclPkt
	switch rnd.Intn(5) {
	case 0:
		p.family, p.etype = 0, []uint16{0x0806, 0x88cc}[rnd.Intn(2)]
		p.f.etherType = p.etype
	case 1, 2:
		p.family, p.etype = 6, 0x86dd
		a := func() netip.Addr {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(rnd.Intn(3)), 14: 0, 15: byte(rnd.Intn(4))})
		}
		p.f.src, p.f.dst = a(), a()
		p.f.proto = []uint8{6, 17, 58, 1}[rnd.Intn(4)]
	default:
		p.family, p.etype = 4, 0x0800
		a := func() netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(rnd.Intn(3)), byte(rnd.Intn(4))}) }
		p.f.src, p.f.dst = a(), a()
		p.f.proto = []uint8{6, 17, 1, 58}[rnd.Intn(4)]
	}
	p.f.sport, p.f.dport = uint16(rnd.Intn(20)), uint16(rnd.Intn(20))
	p.f.dscp = uint8(rnd.Intn(3))
	p.f.tcpFlags = uint8(rnd.Intn(64))
	p.f.icmpType, p.f.icmpCode = uint8(rnd.Intn(3)), uint8(rnd.Intn(2))
	if rnd.Intn(3) == 0 {
		p.f.vlans = []uint16{uint16(5 + rnd.Intn(2))}
	}
	if p.family == 0 {
		f := p.f
		p.f = frame{etherType: f.etherType, vlans: f.vlans}
	}
	return p
}

// TestACLReference: random rule sets, ingress (XDP) and egress (tc), (every field kind, overlapping
// prefixes and port ranges, ties) against random packets; the data
// plane's verdict and each rule's counter must equal a rule-by-rule
// reference matcher's.
func TestACLReference(t *testing.T) {
	p := loadPort(t)
	rnd := rand.New(rand.NewSource(3))
	for set := 0; set < 8; set++ {
		var rules []ACLRule
		for i := 0; len(rules) < 150 && i < 1000; i++ {
			r := randACLRule(rnd, i)
			if set%2 == 0 && r.EtherTypeSet {
				continue // no fallback: more packets decided by the search, or by nothing
			}
			if _, err := CompileACL(append(rules, r)); err != nil {
				var re *ACLRuleError
				if !errors.As(err, &re) {
					t.Fatal(err)
				}
				continue // e.g. a 65th shape, or a field the rule cannot have
			}
			rules = append(rules, r)
		}
		plan, err := CompileACL(rules)
		if err != nil {
			t.Fatal(err)
		}
		pkts := make([]aclPkt, 1500)
		for n := range pkts {
			pkts[n] = randACLPkt(rnd)
		}
		matched := refCheck(t, p, plan, rules, pkts, fmt.Sprintf("set %d", set))
		t.Logf("set %d: %d rules, %d/%d shapes, %d packets matched a rule", set, len(rules), plan.Lookups(4), plan.Lookups(6), matched)
	}
}

// refCheck applies plan (compiled from rules) on both stages of p, runs
// pkts through the XDP and the tc program, and checks each verdict and
// each rule's counter against the rule-by-rule reference matcher; it
// returns the packets a rule matched.
func refCheck(t *testing.T, p *Port, plan *ACLPlan, rules []ACLRule, pkts []aclPkt, label string) uint64 {
	t.Helper()
	for _, st := range []ACLStage{ACLIngress, ACLEgress} {
		if err := p.ApplyACL(st, plan); err != nil {
			t.Fatal(err)
		}
	}
	before := aclCounters(t, p, ACLIngress)
	beforeE := aclCounters(t, p, ACLEgress)
	want := map[string]uint64{}
	for _, pk := range pkts {
		var best *ACLRule
		for i := range rules {
			r := &rules[i]
			if refMatch(r, &pk) && (best == nil || r.Priority > best.Priority || (r.Priority == best.Priority && r.Name < best.Name)) {
				best = r
			}
		}
		verdict := uint32(xdpPass)
		if best != nil {
			want[best.Name]++
			if best.Action == ACLDrop {
				verdict = xdpDrop
			}
		}
		name := "none"
		if best != nil {
			name = fmt.Sprintf("%+v", *best)
		}
		if got := run(t, p, pk.f.bytes()); got != verdict {
			t.Fatalf("%s: packet %+v: verdict %d, want %d (rule %s)", label, pk.f, got, verdict, name)
		}
		tcWant := uint32(tcActUnspec)
		if verdict == xdpDrop {
			tcWant = tcActShot
		}
		if got, err := p.objs.AclEgress.Run(&ebpf.RunOptions{Data: pk.f.bytes()}); err != nil || got != tcWant {
			t.Fatalf("%s: egress: packet %+v: %#x (%v), want %#x (rule %s)", label, pk.f, got, err, tcWant, name)
		}
	}
	after := aclCounters(t, p, ACLIngress)
	afterE := aclCounters(t, p, ACLEgress)
	for _, r := range rules {
		if got := after[r.Name].Packets - before[r.Name].Packets; got != want[r.Name] {
			t.Errorf("%s: rule %+v counted %d packets, want %d", label, r, got, want[r.Name])
		}
		if got := afterE[r.Name].Packets - beforeE[r.Name].Packets; got != want[r.Name] {
			t.Errorf("%s: egress rule %+v counted %d packets, want %d", label, r, got, want[r.Name])
		}
	}
	return sum(want)
}

func sum(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// FuzzCompileACL: any rule compiles or is refused with an *ACLRuleError
// naming it; a compiled plan's entries are their own masked values
// (key & mask == key, what the data plane's lookup needs), every shape's
// best rank is a rank of one of its entries, the port pre-check never
// skips an entry's shape for the entry's own port, and the fallback holds
// only match-all or IP-ethertype rules.
func FuzzCompileACL(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(80), uint16(443), uint8(6), uint8(0x12))
	f.Add(uint64(0xffffffff), uint64(0), uint16(0), uint16(65535), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, a, b uint64, lo, hi uint16, proto, flags uint8) {
		rnd := rand.New(rand.NewSource(int64(a ^ b<<1)))
		var rules []ACLRule
		for i := 0; i < 1+int(a%5); i++ {
			r := randACLRule(rnd, i)
			switch (b >> (i * 3)) & 7 {
			case 0:
				r.Match.Dport = PortRange{Set: true, Lo: lo, Hi: hi}
			case 1:
				r.Match.Proto, r.Match.ProtoSet = proto, true
			case 2:
				r.TCPFlags, r.TCPFlagsMask = flags, flags>>1|1
			case 3:
				r.Match.Src = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a), byte(a >> 8), byte(a >> 16), byte(a >> 24)}), int(proto%33)).Masked()
			case 4:
				r.EtherType, r.EtherTypeSet = lo, true
			}
			rules = append(rules, r)
		}
		plan, err := CompileACL(rules)
		if err != nil {
			var re *ACLRuleError
			if !errors.As(err, &re) || re.Name == "" {
				t.Fatalf("CompileACL: %v; want an *ACLRuleError naming a rule", err)
			}
			return
		}
		for fi, fam := range plan.fam {
			best := map[uint8]uint32{}
			for k, rank := range fam.entries {
				if int(k.Shape) >= len(fam.shapes) {
					t.Fatalf("entry %+v: shape %d of %d", k, k.Shape, len(fam.shapes))
				}
				w, m := k.words(fi == 1), fam.shapes[k.Shape].M
				for i := 0; i < 6; i++ {
					mi := m[i]
					if (fi == 0 && i == 2) || (fi == 1 && i == 5) {
						mi |= 0xff << 40 // the shape index
					}
					if w[i]&^mi != 0 {
						t.Fatalf("entry %+v: word %d %#x has bits outside its mask %#x", k, i, w[i], mi)
					}
				}
				if b, ok := best[k.Shape]; !ok || rank < b {
					best[k.Shape] = rank
				}
				if fam.dskip != nil && fam.dskip[aclDportBucket(k.Dport)]>>k.Shape&1 == 1 {
					t.Fatalf("entry %+v: the port pre-check skips its shape for its own port", k)
				}
				for dir, sk := range fam.askip {
					if ww, pm := aclAddrField(fi, dir); sk != nil && sk[aclAddrBucket(w[ww]&pm)]>>k.Shape&1 == 1 {
						t.Fatalf("entry %+v: the address pre-check (dir %d) skips its shape for its own prefix", k, dir)
					}
				}
				if fam.vskip != nil && fam.vskip[k.Vlan&0x0fff]>>k.Shape&1 == 1 {
					t.Fatalf("entry %+v: the VLAN pre-check skips its shape for its own VID", k)
				}
			}
			for i, s := range fam.shapes {
				if b, ok := best[uint8(i)]; ok && b != s.Best {
					t.Fatalf("shape %d: best rank %d, entries' best %d", i, s.Best, b)
				}
			}
			if r := fam.fallback; r != noRank {
				rule := rules[0]
				for _, x := range rules {
					if x.Name == plan.names[r] {
						rule = x
					}
				}
				// /0 prefixes and 0-65535 ranges match every packet of the family
				rule.Match.Src, rule.Match.Dst = netip.Prefix{}, netip.Prefix{}
				for _, pr := range []*PortRange{&rule.Match.Sport, &rule.Match.Dport} {
					if pr.Lo == 0 && pr.Hi == 0xffff {
						*pr = PortRange{}
					}
				}
				if rule.ipFields() || rule.Match.VLAN != 0 {
					t.Fatalf("fallback rule %+v has fields", rule)
				}
			}
		}
	})
}
