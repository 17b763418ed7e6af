package bpf

import "math/bits"

// Shape merging (as TupleMerge does): every shape a packet searches costs
// ~3 ns, so when a coarser shape's entries can be re-expressed in a finer
// shape (the finer mask has every bit of the coarser one, a few more) by
// enumerating the extra bits, the coarser shape goes, one hash entry per
// combination. Typical case: the 64- and 16-port blocks of a port range
// folded into the exact-port shape of the same prefixes. The cheapest
// merge goes first, while the entries stay within the budget.
const (
	mergeMaxBits   = 6 // at most 64 entries for one
	mergeBudgetX   = 8 // entries after merging <= 8 x before ...
	mergeBudgetMin = 4096
)

// aclMerge turns shape merging on (benchmarks compare with it off).
var aclMerge = true

// maskWords is a mask (or key) as one bit vector: the IPv6 word layout
// (IPv4 keys have zeros in the unused address words).
func maskWords(f aclFields) [6]uint64 { return f.words(true) }

func fieldsOf(w [6]uint64) aclFields {
	return aclFields{
		Src:   [4]uint32{uint32(w[0] >> 32), uint32(w[0]), uint32(w[1] >> 32), uint32(w[1])},
		Dst:   [4]uint32{uint32(w[2] >> 32), uint32(w[2]), uint32(w[3] >> 32), uint32(w[3])},
		Sport: uint16(w[4] >> 48), Dport: uint16(w[4] >> 32), Vlan: uint16(w[4] >> 16), Etype: uint16(w[4]),
		Shape: uint8(w[5] >> 40), Proto: uint8(w[5] >> 32), Dscp: uint8(w[5] >> 24), Tcpflags: uint8(w[5] >> 16),
		IcmpType: uint8(w[5] >> 8), IcmpCode: uint8(w[5]),
	}
}

// extraBits lists the bits of fine not in coarse; ok is false unless
// fine has every bit of coarse.
func extraBits(coarse, fine [6]uint64) (pos [][2]int, ok bool) {
	for i := range fine {
		if coarse[i]&^fine[i] != 0 {
			return nil, false
		}
		for x := fine[i] &^ coarse[i]; x != 0; x &= x - 1 {
			pos = append(pos, [2]int{i, bits.TrailingZeros64(x)})
		}
	}
	return pos, len(pos) > 0
}

// mergeShapes merges shapes of one family's entries (mask+key -> rank)
// while it pays; the result matches exactly the packets entries matched,
// each with the same best rank. Shapes of non-IP rules (IPv4 family
// index, L2-only masks) and fallback shapes stay as they are.
func mergeShapes(entries map[maskedKey]uint32, v6 bool) map[maskedKey]uint32 {
	if !aclMerge {
		return entries
	}
	budget := max(mergeBudgetX*len(entries), mergeBudgetMin)
	budget = min(budget, ACLMaxEntries/2)
	byMask := map[aclFields][]maskedKey{}
	for ek := range entries {
		byMask[ek.mask] = append(byMask[ek.mask], ek)
	}
	for {
		var (
			bestA, bestB aclFields
			bestPos      [][2]int
			bestCost     = -1
		)
		for a, ka := range byMask {
			if fallbackShape(a) || (!v6 && l2only(a)) {
				continue
			}
			wa := maskWords(a)
			for b := range byMask {
				if b == a || fallbackShape(b) {
					continue
				}
				pos, ok := extraBits(wa, maskWords(b))
				if !ok || len(pos) > mergeMaxBits {
					continue
				}
				cost := len(ka) * ((1 << len(pos)) - 1)
				if bestCost < 0 || cost < bestCost {
					bestA, bestB, bestPos, bestCost = a, b, pos, cost
				}
			}
		}
		if bestCost < 0 || len(entries)+bestCost > budget {
			return entries
		}
		wb := maskWords(bestB)
		for _, ek := range byMask[bestA] {
			rank := entries[ek]
			delete(entries, ek)
			kw := maskWords(ek.key)
			for c := 0; c < 1<<len(bestPos); c++ {
				w := kw
				for j, p := range bestPos {
					if c>>j&1 == 1 {
						w[p[0]] |= 1 << p[1]
					}
				}
				for i := range w {
					w[i] &= wb[i]
				}
				nk := maskedKey{mask: bestB, key: fieldsOf(w)}
				if cur, ok := entries[nk]; !ok {
					entries[nk] = rank
					byMask[bestB] = append(byMask[bestB], nk)
				} else if rank < cur {
					entries[nk] = rank
				}
			}
		}
		delete(byMask, bestA)
	}
}
