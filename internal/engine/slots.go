package engine

import (
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// slot is the result of a cached key, at the key's Cache id: a burst of
// results is array indexing, not look-ups and inserts in 100k-key maps.
// A key leaving the cache (Cache.Delete → evict) takes its result to
// current.
type slot struct {
	ck     string // "TABLE|key"; "" = free
	k      kept
	ep     uint32 // the writer's epoch of the slot (Batch.SetPackedAt): new when the key changes or is written by name
	has    bool   // k is the key's result
	queued bool   // k is to be written (in pendIDs)
	// byName: STATE_DB holds a result the writer knows under another
	// slot or epoch (the key left the cache and came back): the next
	// write goes by name, in full.
	byName bool
}

// slotWrite is a queued slot's write as a batch takes it.
type slotWrite struct {
	id int32
	ep uint32 // 0: by name
	ck string
	k  kept
}

// slotLocked returns id's slot, taken over for ck: a previous key's
// result there is moved to current, a result of ck in current moved in.
func (r *results) slotLocked(id int32, ck string) *slot {
	s := r.byID.Take(id)
	if s.ck != ck {
		if s.ck != "" {
			r.evictLocked(id, s)
			s = r.byID.Take(id)
		}
		s.ck = ck
		r.byID.Occupied(id)
		r.newEpochLocked(s)
		if len(r.current) > 0 {
			if k, ok := r.current[ck]; ok {
				s.k, s.has, s.byName = k, true, true
				delete(r.current, ck)
			}
		}
	}
	return s
}

// newEpochLocked gives s a new epoch: what the writer keeps of the slot
// under the old one is never trusted again (its key changed, or was
// written by name).
func (r *results) newEpochLocked(s *slot) {
	r.epoch++
	if r.epoch == 0 {
		r.epoch++
	}
	s.ep = r.epoch
}

// slotOfLocked is the slot holding table|key's result, nil when none.
func (r *results) slotOfLocked(table, key, ck string) *slot {
	if id, ok := r.cache.idOf(table, key); ok {
		if s := r.byID.At(id); s != nil && s.ck == ck {
			return s
		}
	}
	return nil
}

// evict is the cache's word that id's key is gone (Cache.onEvict): its
// result moves to current (reconciled removes it), a queued write of it
// to pending, and the writer lets its fingerprint of the slot go.
func (r *results) evict(id int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.byID.At(id); s != nil && s.ck != "" {
		r.evictLocked(id, s)
	}

}

func (r *results) evictLocked(id int32, s *slot) {
	dt, dk := splitConfigKey(s.ck)
	r.dropped = append(r.dropped, redisx.SlotEpoch{Slot: id, Ep: s.ep, Key: schema.ResultKey(dt, dk)})
	select {
	case r.kick <- struct{}{}:
	default:
	}
	if s.has {
		r.current[s.ck] = s.k
		shrink.Grew(r.current, &r.peaks[0])
		if s.queued {
			t, k := splitConfigKey(s.ck)
			r.putLocked(schema.ResultKey(t, k), write{k: s.k})
		}
	}
	r.byID.Vacate(id)
}
