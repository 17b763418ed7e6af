package redisx

import "github.com/switchyard-net/switchyard/internal/shrink"

// Slots: a caller that names each of its keys by a small integer (the
// engine's Cache ids) has the compact writer keep their fingerprints in
// a slice by that integer instead of a map by key — a burst of 100k
// results is array indexing, not a look-up and an insert per key in a
// 100k-key map.
//
// An epoch tells the holder of a slot: the caller takes a new one
// whenever the slot's key changes, or whenever it writes the key by name
// (Set, SetPacked, Delete) meanwhile; a fingerprint is trusted only
// under its own epoch, so one that is stale is never matched — the key
// is then written in full, which is always safe. Keys written by slot
// are not in Keys (the caller tracks them).

// slotSum is what the writer keeps of a slot: the epoch its fingerprint
// was written under (0 = none).
type slotSum struct {
	ep uint32
	wr written
}

// SetPackedAt is SetPacked of the key the caller holds at slot (>= 0)
// under epoch ep (> 0). Only a compact writer keeps it by slot; any
// other takes it as SetPacked.
func (b *Batch) SetPackedAt(slot int32, ep uint32, key, packed string) {
	b.ops = append(b.ops, op{key: key, packed: packed, slot: slot, ep: ep})
}

// SlotEpoch names a slot under one epoch and the key it held (DropSlots).
type SlotEpoch struct {
	Slot int32
	Ep   uint32
	Key  string
}

// DropSlots moves the fingerprints of slots whose keys left the caller
// to the map by key (the key still holds them in Redis: a later Delete
// by name removes exactly those), each only while it is still under the
// epoch given (a new key there has a new one). Pages of slots left
// empty go.
func (w *StateWriter) DropSlots(gone []SlotEpoch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range gone {
		if e := w.slots.At(g.Slot); e != nil && e.ep == g.Ep && g.Ep != 0 {
			if e.wr.mask != 0 {
				w.sums[g.Key] = e.wr
				shrink.Grew(w.sums, &w.sumPeak)
			}
			w.slots.Vacate(g.Slot)
		}
	}
}

// lookupSum returns o's fingerprint: by slot under o's epoch, else by key
// (loaded, or written by name; taken out of the map for a slot's key).
func (w *StateWriter) lookupSum(o *op) (written, bool) {
	if o.ep == 0 || o.slot < 0 {
		wr, ok := w.sums[o.key]
		return wr, ok
	}
	if e := w.slots.At(o.slot); e != nil && e.ep == o.ep {
		return e.wr, true
	}
	if len(w.sums) == 0 { // a burst of new keys: no look-up at all
		return written{}, false
	}
	wr, ok := w.sums[o.key]
	if ok {
		delete(w.sums, o.key)
		w.sums = shrink.Map(w.sums, &w.sumPeak)
	}
	return wr, ok
}

// storeSlot keeps o's fingerprint now in its slot.
func (w *StateWriter) storeSlot(o *op, now written) {
	if o.packed == "" {
		if e := w.slots.At(o.slot); e != nil && e.ep != 0 {
			w.slots.Vacate(o.slot)
		}
		return
	}
	e := w.slots.Take(o.slot)
	if e.ep == 0 {
		w.slots.Occupied(o.slot)
	}
	*e = slotSum{ep: o.ep, wr: now}
}

// forgetSlot drops o's slot fingerprint (its write may have failed).
func (w *StateWriter) forgetSlot(o *op) {
	if o.ep == 0 || o.slot < 0 {
		return
	}
	if e := w.slots.At(o.slot); e != nil && e.ep == o.ep {
		w.slots.Vacate(o.slot)
	}
}
