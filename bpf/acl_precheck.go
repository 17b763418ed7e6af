package bpf

import (
	"net/netip"
)

// Address pre-check (acl.h apm, askip): per address family and direction
// (source, destination), one 64-bit word per bucket of address prefixes
// naming the shapes a packet whose prefix falls in the bucket cannot
// match, so the data plane skips them without computing their key (as the
// destination-port pre-check, acl_dport.go; the three are ORed). The
// prefix is a /16 for IPv4 and a /48 for IPv6: a shape whose mask covers
// the whole prefix (a longer prefix, e.g. every /24, /32, /64, /128 rule)
// is skipped for addresses outside its entries' prefixes; a shorter one
// (or none) is never skipped.
const aclAddrShift = 13 // acl.h ACL_ADDR_SHIFT

// aclAddrBits is the pre-check's prefix length per family (IPv4, IPv6).
var aclAddrBits = [2]int{16, 48}

// aclAddrBucket is acl.h's acl_addr_bucket of a key word ANDed with the
// field's mask.
func aclAddrBucket(w uint64) uint32 {
	return uint32(w * 0xD6E8FEB86659FD93 >> (64 - aclAddrShift))
}

// aclAddrField gives the key word (acl.h acl_key) and mask of family
// fi's (0 IPv4, 1 IPv6) pre-check prefix of the source (dir 0) or
// destination (dir 1): acl.h's ACL_APM4_SRC, ACL_APM4_DST, ACL_APM6.
func aclAddrField(fi, dir int) (word int, mask uint64) {
	a := netip.IPv4Unspecified()
	if fi == 1 {
		a = netip.IPv6Unspecified()
	}
	m, _ := prefixWords(netip.PrefixFrom(a, aclAddrBits[fi]))
	var f aclFields
	if dir == 0 {
		f.Src = m
	} else {
		f.Dst = m
	}
	for i, w := range f.words(fi == 1) {
		if w != 0 {
			return i, w
		}
	}
	panic("bpf: empty address pre-check mask")
}

// aclAddrSkip computes the pre-check of one family's shapes and entries
// (keys with their shape index) for one direction; nil when no shape pins
// the whole prefix.
func aclAddrSkip(shapes []impairAclShape, entries map[aclFields]uint32, fi, dir int) *[1 << aclAddrShift]uint64 {
	w, pm := aclAddrField(fi, dir)
	var pinned uint64
	for i, s := range shapes {
		if s.M[w]&pm == pm {
			pinned |= 1 << i
		}
	}
	if pinned == 0 {
		return nil
	}
	var covered [1 << aclAddrShift]uint64 // shapes with an entry in the bucket
	for k := range entries {
		if pinned>>k.Shape&1 == 1 {
			covered[aclAddrBucket(k.words(fi == 1)[w]&pm)] |= 1 << k.Shape
		}
	}
	out := new([1 << aclAddrShift]uint64)
	for b := range out {
		out[b] = pinned &^ covered[b]
	}
	return out
}

// aclCandidates gives acl.h's acl_hdr cand: the shapes searched for an
// IPv4, an IPv6 and a non-IP packet.
func aclCandidates(fam *[2]aclFamily) (cand [3]uint64) {
	for fi := range fam {
		for i, s := range fam[fi].shapes {
			if s.Flags&aclShapeFB == 0 {
				cand[fi] |= 1 << i
			}
			if fi == 0 && s.Flags&aclShapeL2 != 0 {
				cand[2] |= 1 << i
			}
		}
	}
	return cand
}

// aclVlanSkip computes the VLAN pre-check of one family's shapes and
// entries (acl.h vskip): per VLAN ID (0: untagged), exact, the shapes
// pinning (part of) the VID that have no entry taking it; nil when no
// shape pins the VID.
func aclVlanSkip(shapes []impairAclShape, entries map[aclFields]uint32, v6 bool) *[4096]uint64 {
	w := 1 // the word of the masks holding the VLAN ID (acl.h s1)
	if v6 {
		w = 4
	}
	vlan := func(s impairAclShape) uint16 { return uint16(s.M[w]>>16) & 0x0fff }
	var pinned uint64
	for i, s := range shapes {
		if vlan(s) != 0 {
			pinned |= 1 << i
		}
	}
	if pinned == 0 {
		return nil
	}
	var covered [4096]uint64
	for k := range entries {
		if pinned>>k.Shape&1 == 0 {
			continue
		}
		free := ^vlan(shapes[k.Shape]) & 0x0fff
		// every VID v with v & mask == k.Vlan: k.Vlan plus each subset of the free bits
		for sub := uint16(0); ; sub = (sub - free) & free {
			covered[(k.Vlan|sub)&0x0fff] |= 1 << k.Shape
			if sub == free {
				break
			}
		}
	}
	out := new([4096]uint64)
	for v := range out {
		out[v] = pinned &^ covered[v]
	}
	return out
}

// aclTabShift is acl.h's ACL_TAB_SHIFT: inline entries per family.
const aclTabShift = 10

// aclInline fills family fi's inline entries of hdr (acl.h tab4/tab6):
// each slot holds the best-ranked entry whose pre-check hash names it
// (ties: the smaller key words, so the same plan fills the same way), and
// more is set when the slot has other entries (then in the hash only).
func aclInline(hdr *impairAclHdr, fi int, f *aclFamily, plan *ACLPlan, idx []uint32) {
	ents := make([]inlineEntry, 0, len(f.entries))
	for k, rank := range f.entries {
		ents = append(ents, inlineEntry{k.words(fi == 1), rank})
	}
	pick, more := inlineSlots(ents, aclTabShift)
	for s, i := range pick {
		var m uint32
		if more[s] {
			m = 1
		}
		if fi == 0 {
			t := &hdr.Tab4[s]
			*t = impairAclEnt4{Rank: noRank, More: m}
			if i >= 0 {
				e := &ents[i]
				*t = impairAclEnt4{K: [3]uint64{e.w[0], e.w[1], e.w[2]}, Rank: e.rank, Idx: idx[e.rank], Action: uint32(plan.actions[e.rank]), More: m}
			}
		} else {
			t := &hdr.Tab6[s]
			*t = impairAclEnt6{Rank: noRank, More: m}
			if i >= 0 {
				e := &ents[i]
				*t = impairAclEnt6{K: e.w, Rank: e.rank, Idx: idx[e.rank], Action: uint32(plan.actions[e.rank]), More: m}
			}
		}
	}
}
