package bpf

import "math/bits"

// Destination-port pre-check (acl.h dskip): per address family, one
// 64-bit word per bucket of destination ports naming the shapes a packet
// whose port falls in the bucket cannot match, so the data plane skips
// them without computing their key. A shape that does not pin the port
// (or pins so few of its bits that its entries take more than
// aclDportMaxPorts ports each) is never skipped.
const (
	aclDportShift    = 13 // acl.h ACL_DPORT_SHIFT
	aclDportMaxPorts = 1024
)

// aclDportBucket is acl.h's acl_dport_bucket.
func aclDportBucket(port uint16) uint32 {
	return uint32(port) * 0x9E3779B1 >> (32 - aclDportShift)
}

// aclDportSkip computes the pre-check of one family's shapes and entries
// (keys with their shape index).
func aclDportSkip(shapes []impairAclShape, entries map[aclFields]uint32, v6 bool) *[1 << aclDportShift]uint64 {
	w := 1 // the word of the masks holding the ports (acl.h s1)
	if v6 {
		w = 4
	}
	var pinned uint64 // shapes the pre-check applies to
	for i, s := range shapes {
		if m := uint16(s.M[w] >> 32); m != 0 && 16-bits.OnesCount16(m) <= bits.Len(aclDportMaxPorts)-1 {
			pinned |= 1 << i
		}
	}
	if pinned == 0 {
		return nil
	}
	var covered [1 << aclDportShift]uint64 // shapes with an entry taking a port of the bucket
	for k := range entries {
		i := k.Shape
		if pinned>>i&1 == 0 {
			continue
		}
		m := uint16(shapes[i].M[w] >> 32)
		free := ^m
		// every port p with p & m == k.Dport: k.Dport plus each subset of the free bits
		for sub := uint16(0); ; sub = (sub - free) & free {
			covered[aclDportBucket(k.Dport|sub)] |= 1 << i
			if sub == free {
				break
			}
		}
	}
	out := new([1 << aclDportShift]uint64)
	for b := range out {
		out[b] = pinned &^ covered[b]
	}
	return out
}
