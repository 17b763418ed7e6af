package bpf

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"testing"
)

// spreadAddr moves a test address (10.0.x.y, 2001:db8:0:z::w) into one
// of a few /16s (IPv4) or /48s (IPv6), so the address pre-check has
// prefixes to skip.
func spreadAddr(rnd *rand.Rand, a netip.Addr) netip.Addr {
	if !a.IsValid() {
		return a
	}
	b := a.As16()
	if a.Is4() {
		v := a.As4()
		v[0] = []byte{10, 172}[rnd.Intn(2)]
		v[1] = byte(rnd.Intn(4))
		return netip.AddrFrom4(v)
	}
	b[4] = byte(rnd.Intn(3))
	return netip.AddrFrom16(b)
}

// precheckRules is a random rule set (randACLRule) with its prefixes
// spread over a few /16s and /48s, restricted to the families keep
// allows (4, 6; non-IP rules go with 4); noEtype: no ETHER_TYPE rules
// (no fallback, so more packets are decided by the search).
func precheckRules(t *testing.T, rnd *rand.Rand, n int, keep map[int]bool, noEtype bool) []ACLRule {
	var rules []ACLRule
	for i := 0; len(rules) < n && i < 20*n; i++ {
		r := randACLRule(rnd, i)
		for _, pf := range []*netip.Prefix{&r.Match.Src, &r.Match.Dst} {
			if pf.IsValid() {
				*pf = netip.PrefixFrom(spreadAddr(rnd, pf.Addr()), pf.Bits()).Masked()
			}
		}
		fams, why := r.families()
		if why != "" || len(fams) == 0 {
			continue
		}
		ok := true
		for _, f := range fams {
			ok = ok && keep[f]
		}
		if !ok {
			continue
		}
		if r.check() != "" || (noEtype && r.EtherTypeSet) {
			continue
		}
		rules = append(rules, r)
	}
	_, err := CompileACL(rules)
	for err != nil && len(rules) > 1 { // e.g. a 65th shape: fewer rules
		var re *ACLRuleError
		if !errors.As(err, &re) {
			t.Fatal(err)
		}
		rules = rules[:len(rules)-1]
		_, err = CompileACL(rules)
	}
	return rules
}

// TestACLPrecheckTables: the address and VLAN pre-checks never skip a
// shape for its own entries' keys, and every entry is either the inline
// entry of its slot or its slot says "more" (acl_precheck.go).
func TestACLPrecheckTables(t *testing.T) {
	rnd := rand.New(rand.NewSource(16))
	for set := 0; set < 6; set++ {
		rules := precheckRules(t, rnd, 200, map[int]bool{4: true, 6: true}, false)
		plan, err := CompileACL(rules)
		if err != nil {
			t.Fatal(err)
		}
		var hdr impairAclHdr
		idx := make([]uint32, len(plan.names))
		for fi := range plan.fam {
			f := &plan.fam[fi]
			aclInline(&hdr, fi, f, plan, idx)
			skipped := 0
			for k, rank := range f.entries {
				w := k.words(fi == 1)
				for dir, sk := range f.askip {
					if sk == nil {
						continue
					}
					ww, pm := aclAddrField(fi, dir)
					if sk[aclAddrBucket(w[ww]&pm)]>>k.Shape&1 == 1 {
						t.Fatalf("set %d family %d: entry %+v: the address pre-check (dir %d) skips its shape for its own prefix", set, fi, k, dir)
					}
				}
				if f.vskip != nil && f.vskip[k.Vlan&0x0fff]>>k.Shape&1 == 1 {
					t.Fatalf("set %d family %d: entry %+v: the VLAN pre-check skips its shape for its own VID", set, fi, k)
				}
				slot := aclHash(w) >> (64 - aclTabShift)
				var inK [6]uint64
				var inRank, more uint32
				if fi == 0 {
					e := hdr.Tab4[slot]
					copy(inK[:], e.K[:])
					inRank, more = e.Rank, e.More
				} else {
					e := hdr.Tab6[slot]
					inK, inRank, more = e.K, e.Rank, e.More
				}
				switch {
				case inK == w && inRank == rank:
				case inK == w:
					t.Fatalf("set %d family %d: entry %+v inline with rank %d, want %d", set, fi, k, inRank, rank)
				case inRank == noRank || more == 0:
					t.Fatalf("set %d family %d: entry %+v neither inline nor announced by its slot (%+v rank %d more %d)", set, fi, k, inK, inRank, more)
				case inRank > rank:
					t.Fatalf("set %d family %d: slot %d holds rank %d inline, a better entry (rank %d) only in the hash", set, fi, slot, inRank, rank)
				}
			}
			for _, sk := range f.askip {
				if sk == nil {
					continue
				}
				for _, s := range sk {
					for i := range f.shapes {
						skipped += int(s >> i & 1)
					}
				}
			}
			t.Logf("set %d family %d: %d rules, %d shapes, %d entries, %.1f shapes skipped per address bucket", set, fi, len(rules), len(f.shapes), len(f.entries), float64(skipped)/float64(2<<aclAddrShift))
		}
	}
}

// TestACLPrecheckReference: the data plane against the reference
// matcher (refCheck) where the pre-checks decide: prefixes and packets
// spread over /16s and /48s, packets of a family with no rules of that
// family (an IPv4 packet with only IPv6 rules, and the reverse; non-IP
// packets with only IP rules), untagged and tagged packets against VLAN
// rules, and one slot of the inline entries shared by many entries.
func TestACLPrecheckReference(t *testing.T) {
	p := loadPort(t)
	rnd := rand.New(rand.NewSource(17))
	for _, c := range []struct {
		name string
		keep map[int]bool
	}{
		{"both families", map[int]bool{4: true, 6: true}},
		{"IPv6 rules only", map[int]bool{6: true}},
		{"IPv4 and non-IP rules only", map[int]bool{4: true}},
	} {
		for set := 0; set < 3; set++ {
			rules := precheckRules(t, rnd, 150, c.keep, set%2 == 0)
			if len(rules) == 0 {
				t.Fatalf("%s: no rules", c.name)
			}
			plan, err := CompileACL(rules)
			if err != nil {
				t.Fatal(err)
			}
			pkts := make([]aclPkt, 1000)
			for n := range pkts {
				pk := randACLPkt(rnd)
				pk.f.src, pk.f.dst = spreadAddr(rnd, pk.f.src), spreadAddr(rnd, pk.f.dst)
				pkts[n] = pk
			}
			label := fmt.Sprintf("%s, set %d", c.name, set)
			matched := refCheck(t, p, plan, rules, pkts, label)
			t.Logf("%s: %d rules, %d/%d shapes, %d of %d packets matched a rule", label, len(rules), plan.Lookups(4), plan.Lookups(6), matched, len(pkts))
		}
	}
	// Many entries of one shape: 2,000 /32 sources, so most inline slots
	// are taken and many say "more" (a hash lookup after the inline
	// compare); every other packet is a source of a rule.
	var rules []ACLRule
	var srcs []netip.Addr
	for i := 0; i < 2000; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		srcs = append(srcs, a)
		rules = append(rules, ACLRule{Name: fmt.Sprintf("M|%04d", i), Priority: 10 + i%7, Action: ACLAction(i % 2), Match: Match{Src: netip.PrefixFrom(a, 32)}})
	}
	plan, err := CompileACL(rules)
	if err != nil {
		t.Fatal(err)
	}
	var pkts []aclPkt
	for n := 0; n < 1000; n++ {
		pk := aclPkt{family: 4, etype: 0x0800, f: frame{src: srcs[rnd.Intn(len(srcs))], dst: addr("10.9.9.9"), proto: 17, sport: 1, dport: 2}}
		if n%2 == 1 {
			pk.f.src = netip.AddrFrom4([4]byte{10, byte(rnd.Intn(8)), byte(rnd.Intn(256)), 2})
		}
		pkts = append(pkts, pk)
	}
	if matched := refCheck(t, p, plan, rules, pkts, "2,000 sources"); matched < 400 {
		t.Fatalf("2,000 sources: %d of 1000 packets matched, want about 500", matched)
	}
}
