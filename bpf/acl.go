package bpf

import (
	"crypto/sha256"
	"fmt"
	"sort"
)

// ACLAction is what an ACL rule does with the packets it matches.
type ACLAction uint8

// ACL actions (SONiC PACKET_ACTION FORWARD / DROP).
const (
	ACLForward ACLAction = iota
	ACLDrop
)

// ACLStage is where an ACL runs on a port.
type ACLStage uint8

// ACL stages: ingress runs in the port's XDP program, egress in a tc
// clsact egress program of the same collection (AttachEgress).
const (
	ACLIngress ACLStage = iota
	ACLEgress
)

// String is "ingress" or "egress".
func (s ACLStage) String() string {
	if s == ACLEgress {
		return "egress"
	}
	return "ingress"
}

// ACLRule is one rule of a port's ACL (all tables bound to the port and
// stage, merged). Every set field must match.
type ACLRule struct {
	Name     string // "<table>|<rule>", unique per port+stage; names counters
	Priority int    // higher wins; ties go to the smaller Name
	Action   ACLAction
	// Match is the impairment Match: Src/Dst prefix, Proto, Sport/Dport
	// ranges (TCP and UDP ports), DSCP, VLAN (outer VID).
	Match        Match
	EtherType    uint16 // with EtherTypeSet
	EtherTypeSet bool
	// TCPFlags matches when flags&TCPFlagsMask == TCPFlags&TCPFlagsMask;
	// mask 0 = any.
	TCPFlags, TCPFlagsMask   uint8
	ICMPType, ICMPCode       uint8 // ICMP or ICMPv6, by the rule's family
	ICMPTypeSet, ICMPCodeSet bool
}

// ACLRuleError says a rule cannot be held by the data plane.
type ACLRuleError struct {
	Name   string
	Reason string
}

// Error names the rule and the reason.
func (e *ACLRuleError) Error() string { return fmt.Sprintf("ACL rule %s: %s", e.Name, e.Reason) }

// Limits of one port's ACL (they match acl.h).
const (
	ACLMaxRules   = 16384 - 1 // rules per port and stage (counter index 0 counts unmatched packets)
	ACLMaxShapes  = 64        // distinct match shapes per stage and address family
	ACLMaxEntries = 262144    // hash entries per stage and address family (port ranges expand)
	aclNameLen    = 64        // bytes of a rule name, with its NUL
	aclStride     = ACLMaxRules + 1
	aclBloomShift = 20 // pre-check bits per stage and family: 2^20 (acl.h ACL_BLOOM_SHIFT)
)

// ACLPlan is the compiled rule set of one port and stage: rules in rank
// order and, per address family, the shapes (sorted by their best rank)
// and hash entries.
type ACLPlan struct {
	// Names and actions in rank order (rank = index).
	names   []string
	actions []ACLAction
	fam     [2]aclFamily // 0: IPv4 and non-IP, 1: IPv6
	digest  string       // of the ranked rules: equal digests, equal plans
}

type aclFamily struct {
	shapes []impairAclShape
	// entries: key (shape set) -> rank of the best rule holding it
	entries map[aclFields]uint32
	// fallback: rank of the best rule matching every IP packet of the
	// family (noRank: none)
	fallback uint32
	// dskip: the destination-port pre-check (acl_dport.go); nil: none
	dskip *[1 << aclDportShift]uint64
	// askip: the address pre-check, source and destination
	// (acl_precheck.go); nil: none
	askip [2]*[1 << aclAddrShift]uint64
	// vskip: the VLAN pre-check (acl_precheck.go); nil: none
	vskip *[4096]uint64
}

// Rules returns the rule names in rank order (best first).
func (p *ACLPlan) Rules() []string { return append([]string(nil), p.names...) }

// Lookups is the number of hash lookups the data plane does, at most, for
// a packet of family 4 (or non-IP) or 6: one per shape.
func (p *ACLPlan) Lookups(family int) int {
	if family == 6 {
		return len(p.fam[1].shapes)
	}
	return len(p.fam[0].shapes)
}

// ip fields: does the rule match anything only IP packets have?
func (r *ACLRule) ipFields() bool {
	m := &r.Match
	return m.Src.IsValid() || m.Dst.IsValid() || m.ProtoSet || m.Sport.Set || m.Dport.Set || m.DSCPSet ||
		r.TCPFlagsMask != 0 || r.ICMPTypeSet || r.ICMPCodeSet
}

// families gives the address families the rule's entries go in (4: the
// IPv4 / non-IP hash, 6: the IPv6 hash), or a reason it matches nothing.
func (r *ACLRule) families() ([]int, string) {
	fam := r.Match.Family()
	if r.EtherTypeSet {
		switch r.EtherType {
		case 0x0800:
			if fam == 6 {
				return nil, "ETHER_TYPE 0x0800 (IPv4) with IPv6 fields matches no packet"
			}
			fam = 4
		case 0x86dd:
			if fam == 4 {
				return nil, "ETHER_TYPE 0x86DD (IPv6) with IPv4 fields matches no packet"
			}
			fam = 6
		default:
			if r.ipFields() {
				return nil, fmt.Sprintf("ETHER_TYPE %#04x is not IP: IP fields match no packet of it", r.EtherType)
			}
			return []int{4}, ""
		}
	}
	if r.Match.Src.IsValid() && r.Match.Dst.IsValid() && r.Match.Src.Addr().Is4() != r.Match.Dst.Addr().Is4() {
		return nil, "source and destination prefixes of different address families"
	}
	if r.Match.ProtoSet && fam != 0 {
		if (r.Match.Proto == 1 && fam == 6) || (r.Match.Proto == 58 && fam == 4) {
			return nil, fmt.Sprintf("IP protocol %d is not of the rule's address family", r.Match.Proto)
		}
	}
	switch fam {
	case 4:
		return []int{4}, ""
	case 6:
		return []int{6}, ""
	}
	return []int{4, 6}, ""
}

// check reports what the data plane cannot match in r, or "".
func (r *ACLRule) check() string {
	m := &r.Match
	if r.Name == "" {
		return "empty name"
	}
	if len(r.Name) >= aclNameLen {
		return fmt.Sprintf("name longer than %d bytes", aclNameLen-1)
	}
	if r.Action > ACLDrop {
		return fmt.Sprintf("unknown action %d", r.Action)
	}
	if m.DSCPSet && m.DSCP > 63 {
		return fmt.Sprintf("DSCP %d above 63", m.DSCP)
	}
	if m.VLAN > 4095 {
		return fmt.Sprintf("VLAN_ID %d above 4095", m.VLAN)
	}
	for _, pr := range []PortRange{m.Sport, m.Dport} {
		if pr.Set && pr.Lo > pr.Hi {
			return fmt.Sprintf("port range %d-%d is empty", pr.Lo, pr.Hi)
		}
	}
	icmp := r.ICMPTypeSet || r.ICMPCodeSet
	if icmp && m.ProtoSet && m.Proto != 1 && m.Proto != 58 {
		return fmt.Sprintf("ICMP_TYPE/ICMP_CODE with IP_PROTOCOL %d", m.Proto)
	}
	if icmp && (m.Sport.Set || m.Dport.Set) {
		return "ICMP_TYPE/ICMP_CODE with L4 ports"
	}
	if r.TCPFlagsMask != 0 && (icmp || (m.ProtoSet && m.Proto != 6)) {
		return "TCP_FLAGS on a rule that is not TCP"
	}
	if (m.Sport.Set || m.Dport.Set) && m.ProtoSet && m.Proto != 6 && m.Proto != 17 {
		return fmt.Sprintf("L4 ports with IP_PROTOCOL %d (the data plane reads TCP and UDP ports)", m.Proto)
	}
	return ""
}

// aclKey builds the mask and key of a rule for family fam (4 or 6),
// without ports (the caller expands them).
func (r *ACLRule) aclKey(fam int) (mask, key aclFields) {
	m := &r.Match
	proto, protoSet := m.Proto, m.ProtoSet
	if !protoSet && (r.ICMPTypeSet || r.ICMPCodeSet) {
		proto, protoSet = 1, true
		if fam == 6 {
			proto = 58
		}
	}
	if !protoSet && r.TCPFlagsMask != 0 {
		proto, protoSet = 6, true
	}
	if protoSet {
		mask.Proto, key.Proto = 0xff, proto
	}
	if m.DSCPSet {
		mask.Dscp, key.Dscp = 0x3f, m.DSCP
	}
	if r.TCPFlagsMask != 0 {
		mask.Tcpflags, key.Tcpflags = r.TCPFlagsMask, r.TCPFlags&r.TCPFlagsMask
	}
	if m.VLAN != 0 {
		mask.Vlan, key.Vlan = 0x0fff, m.VLAN
	}
	if r.EtherTypeSet {
		mask.Etype, key.Etype = 0xffff, r.EtherType
	}
	if r.ICMPTypeSet {
		mask.IcmpType, key.IcmpType = 0xff, r.ICMPType
	}
	if r.ICMPCodeSet {
		mask.IcmpCode, key.IcmpCode = 0xff, r.ICMPCode
	}
	mask.Src, key.Src = prefixWords(m.Src)
	mask.Dst, key.Dst = prefixWords(m.Dst)
	return mask, key
}

// Shape flags (acl.h ACL_SHAPE_*).
const (
	aclShapeL2 = 1
	aclShapeFB = 2
	noRank     = 0xffffffff
)

// fallbackShape: the mask is empty or only the ethertype, so its entries
// match every IP packet of the family or none.
func fallbackShape(m aclFields) bool {
	return m == aclFields{} || m == aclFields{Etype: 0xffff}
}

// l2only: the mask has only fields a non-IP packet has.
func l2only(m aclFields) bool {
	z := aclFields{Vlan: m.Vlan, Etype: m.Etype}
	return m == z
}

// CompileACL ranks rules (priority, then name) and compiles them to the
// data plane's shapes and hash entries; a rule the maps cannot hold is an
// *ACLRuleError naming it (the first such rule in rank order).
func CompileACL(rules []ACLRule) (*ACLPlan, error) {
	sorted := append([]ACLRule(nil), rules...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Priority != sorted[j].Priority {
			return sorted[i].Priority > sorted[j].Priority
		}
		return sorted[i].Name < sorted[j].Name
	})
	p := &ACLPlan{}
	sum := sha256.New()
	for i := range sorted {
		fmt.Fprintf(sum, "%+v\n", sorted[i])
	}
	p.digest = string(sum.Sum(nil))
	type shapeAcc struct{ best uint32 }
	shapes := [2]map[aclFields]*shapeAcc{{}, {}}
	entries := [2]map[maskedKey]uint32{{}, {}}
	for rank := range sorted {
		r := &sorted[rank]
		if rank > 0 && sorted[rank-1].Name == r.Name {
			return nil, &ACLRuleError{Name: r.Name, Reason: "name used by two rules"}
		}
		if rank >= ACLMaxRules {
			return nil, &ACLRuleError{Name: r.Name, Reason: fmt.Sprintf("more than %d rules on one port and stage", ACLMaxRules)}
		}
		if why := r.check(); why != "" {
			return nil, &ACLRuleError{Name: r.Name, Reason: why}
		}
		fams, why := r.families()
		if why != "" {
			return nil, &ACLRuleError{Name: r.Name, Reason: why}
		}
		p.names = append(p.names, r.Name)
		p.actions = append(p.actions, r.Action)
		for _, fam := range fams {
			fi := 0
			if fam == 6 {
				fi = 1
			}
			mask, key := r.aclKey(fam)
			if fam == 4 && len(fams) == 1 && !r.EtherTypeSet {
				// IPv4 only: the IPv4 hash also serves non-IP packets, so
				// pin the ethertype (SRC_IP 0.0.0.0/0 must not match ARP)
				mask.Etype, key.Etype = 0xffff, 0x0800
			}
			for _, sp := range portBlocks(r.Match.Sport) {
				for _, dp := range portBlocks(r.Match.Dport) {
					mm, kk := mask, key
					mm.Sport, kk.Sport = sp.mask, sp.val
					mm.Dport, kk.Dport = dp.mask, dp.val
					sa := shapes[fi][mm]
					if sa == nil {
						if len(shapes[fi]) >= ACLMaxShapes {
							return nil, &ACLRuleError{Name: r.Name, Reason: fmt.Sprintf(
								"its match needs a %dth distinct IPv%d match shape (combination of fields, prefix lengths, port-range block sizes, TCP flag mask): a stage takes at most %d",
								ACLMaxShapes+1, fam, ACLMaxShapes)}
						}
						sa = &shapeAcc{best: uint32(rank)}
						shapes[fi][mm] = sa
					}
					ek := maskedKey{mm, kk}
					if _, dup := entries[fi][ek]; !dup { // an earlier (better) rule keeps it
						entries[fi][ek] = uint32(rank)
						if len(entries[fi]) > ACLMaxEntries {
							return nil, &ACLRuleError{Name: r.Name, Reason: fmt.Sprintf(
								"the rules expand to more than %d IPv%d match entries (port ranges split into aligned blocks)", ACLMaxEntries, fam)}
						}
					}
				}
			}
		}
	}
	for fi := range entries {
		entries[fi] = mergeShapes(entries[fi], fi == 1)
		shapes[fi] = map[aclFields]*shapeAcc{}
		for ek, rank := range entries[fi] {
			if a := shapes[fi][ek.mask]; a == nil || rank < a.best {
				shapes[fi][ek.mask] = &shapeAcc{best: rank}
			}
		}
	}
	for fi := range shapes {
		type sh struct {
			mask aclFields
			best uint32
		}
		var list []sh
		for m, a := range shapes[fi] {
			list = append(list, sh{m, a.best})
		}
		sort.Slice(list, func(i, j int) bool {
			if list[i].best != list[j].best {
				return list[i].best < list[j].best
			}
			return fmt.Sprint(list[i].mask) < fmt.Sprint(list[j].mask)
		})
		idx := map[aclFields]uint8{}
		f := aclFamily{entries: map[aclFields]uint32{}, fallback: noRank}
		for i, s := range list {
			idx[s.mask] = uint8(i)
			var flags uint32
			if fi == 0 && l2only(s.mask) {
				flags |= aclShapeL2
			}
			if fallbackShape(s.mask) {
				flags |= aclShapeFB
			}
			f.shapes = append(f.shapes, impairAclShape{M: s.mask.words(fi == 1), Best: s.best, Flags: flags})
		}
		ipEtype := []uint16{0x0800, 0x86dd}[fi]
		for ek, rank := range entries[fi] {
			key := ek.key
			key.Shape = idx[ek.mask]
			f.entries[key] = rank
			if fallbackShape(ek.mask) && (key.Etype == 0 || key.Etype == ipEtype) {
				f.fallback = min(f.fallback, rank)
			}
		}
		f.dskip = aclDportSkip(f.shapes, f.entries, fi == 1)
		f.vskip = aclVlanSkip(f.shapes, f.entries, fi == 1)
		for dir := range f.askip {
			f.askip[dir] = aclAddrSkip(f.shapes, f.entries, fi, dir)
		}
		p.fam[fi] = f
	}
	return p, nil
}

// aclFields is an ACL key (or mask) field by field while compiling; the
// data plane's form is its words (acl.h struct acl_key).
type aclFields struct {
	Shape, Proto, Dscp, Tcpflags uint8
	Vlan, Etype, Sport, Dport    uint16
	IcmpType, IcmpCode           uint8
	Src, Dst                     [4]uint32
}

// words renders k as acl.h's key words: IPv4 addr, s1, s2; IPv6 four
// address words, s1, s2.
func (k aclFields) words(v6 bool) [6]uint64 {
	s1 := uint64(k.Sport)<<48 | uint64(k.Dport)<<32 | uint64(k.Vlan)<<16 | uint64(k.Etype)
	s2 := uint64(k.Shape)<<40 | uint64(k.Proto)<<32 | uint64(k.Dscp)<<24 | uint64(k.Tcpflags)<<16 |
		uint64(k.IcmpType)<<8 | uint64(k.IcmpCode)
	if !v6 {
		return [6]uint64{uint64(k.Src[0])<<32 | uint64(k.Dst[0]), s1, s2}
	}
	return [6]uint64{uint64(k.Src[0])<<32 | uint64(k.Src[1]), uint64(k.Src[2])<<32 | uint64(k.Src[3]),
		uint64(k.Dst[0])<<32 | uint64(k.Dst[1]), uint64(k.Dst[2])<<32 | uint64(k.Dst[3]), s1, s2}
}

// aclHash is the pre-check hash of key words w (shape index set); acl.h
// computes the same per packet.
func aclHash(w [6]uint64) uint64 {
	c := [6]uint64{0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB}
	var h uint64
	for i := range w {
		h += w[i] * c[i]
	}
	return h
}

// aclBloomBits gives the word of its family's bloom and the bits in it
// that the key of hash h sets (acl.h acl_bloom_has: two bits in one word).
func aclBloomBits(h uint64) (word uint32, bits uint64) {
	word = uint32(h>>(64-aclBloomShift+6)) & (1<<(aclBloomShift-6) - 1)
	return word, 1<<(h>>(64-aclBloomShift)&63) | 1<<(h*0xBF58476D1CE4E5B9>>58)
}

// maskedKey is one hash entry while compiling: its shape's mask and its
// key (shape index not yet known).
type maskedKey struct{ mask, key aclFields }
