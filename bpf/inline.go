package bpf

import "sort"

// Inline entries (inline.h): the ACL (acl.h tab4/tab6) and the
// impairment classifier (impair.c port_cfg.tab4) hold, in a published
// array value, the best-ranked entry of each slot of a hash map, the slot
// being the top bits of the entry's pre-check hash (aclHash of its key
// words), and a flag per slot telling whether other entries share it. A
// key equal to its slot's entry matches with no hash lookup; a different
// key in an unshared slot has no entry; only a shared slot goes to the
// hash.

// inlineEntry is one entry offered to an inline table: its key words
// (unused words zero) and rank (lower wins).
type inlineEntry struct {
	w    [6]uint64
	rank uint32
}

// inlineSlots assigns ents to a table of 1<<shift slots: pick[s] is the
// index in ents of the entry slot s holds (-1: empty), more[s] whether
// other entries hash to s. Each slot holds its best-ranked entry (ties:
// the smaller key words, so the same entries fill the same way whatever
// their order).
func inlineSlots(ents []inlineEntry, shift uint) (pick []int32, more []bool) {
	order := make([]int, len(ents))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := &ents[order[i]], &ents[order[j]]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		for x := range a.w {
			if a.w[x] != b.w[x] {
				return a.w[x] < b.w[x]
			}
		}
		return false
	})
	pick = make([]int32, 1<<shift)
	more = make([]bool, 1<<shift)
	for i := range pick {
		pick[i] = -1
	}
	for _, i := range order {
		s := inlineSlot(ents[i].w, shift)
		if pick[s] >= 0 {
			more[s] = true
			continue
		}
		pick[s] = int32(i)
	}
	return pick, more
}

// inlineSlot is the slot of key words w in a table of 1<<shift slots
// (inline.h: the top bits of the pre-check hash).
func inlineSlot(w [6]uint64, shift uint) uint64 { return aclHash(w) >> (64 - shift) }
