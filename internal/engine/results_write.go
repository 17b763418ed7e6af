package engine

import (
	"context"
	"errors"
	"time"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// maxResultWrites bounds the results of slots one flush writes: in a
// burst the writer falls behind and found 10k–100k queued at once, and
// every array of such a flush (the slots here; the batch's operations,
// arguments and commands in redisx, kept up to 4,096, 16,384 and 2,730)
// was made anew and let go — a third of what a 100k-route burst
// allocated in orchagent (docs/performance.md, routes6). 2,048 results
// are still one round trip each, and every one of those arrays is reused.
const maxResultWrites = 2048

// idleTrim is how long the writer has nothing to write before it lets go
// of the arrays it keeps from one flush to the next (trim): a burst grows
// them to a flush of maxResultWrites (~0.6 MB with the StateWriter's),
// which an idle daemon would otherwise hold for good. A burst's flushes
// follow each other within milliseconds, so it reuses them throughout.
const idleTrim = time.Second

// run writes queued results until ctx is done, retrying with backoff
// while Redis fails (the newest result of each key wins).
func (r *results) run(ctx context.Context) {
	retry := 50 * time.Millisecond
	var b *redisx.Batch // reused: its operations' array is kept
	var slots []slotWrite
	idle := time.NewTimer(idleTrim)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			idle.Stop()
		case <-idle.C:
			b, slots = nil, nil
			r.trim()
			continue
		}
		for {
			r.mu.Lock()
			batch := r.pending
			r.pending, r.spare = r.spare, nil
			if r.pending == nil {
				r.pending = map[string]write{}
			}
			// Slots are taken under mu (a result set meanwhile queues its
			// slot again) and written after the map's writes, which are
			// older or of other keys (setBad and removal unqueue a slot).
			// At most maxResultWrites slots per flush; the rest stay
			// queued, in order, for the next turn of this loop.
			ids := r.pendIDs
			slots = slots[:0]
			k := 0
			for ; k < len(ids) && len(slots) < maxResultWrites; k++ {
				id := ids[k]
				if s := r.byID.At(id); s != nil {
					if s.queued {
						s.queued = false
						ep := s.ep
						if s.byName {
							ep, s.byName = 0, false
							r.newEpochLocked(s)
						}
						slots = append(slots, slotWrite{id: id, ep: ep, ck: s.ck, k: s.k})
					}
				}
			}
			var done []int32 // ids, all taken: the next batch's array
			if k < len(ids) {
				r.pendIDs = ids[:copy(ids, ids[k:])]
			} else {
				r.pendIDs, r.spareID = r.spareID, nil
				done = ids
			}
			n := len(batch) + len(slots)
			r.writing = n > 0
			dropped := r.dropped
			r.dropped = nil
			r.mu.Unlock()
			if len(dropped) > 0 && r.sw != nil {
				r.sw.DropSlots(dropped) // epochs of keys gone: never matched by a new key's
			}
			if done != nil && cap(done) <= 4096 { // kept for the next batch; a 100k one is let go
				r.mu.Lock()
				r.spareID = done[:0]
				r.mu.Unlock()
			}
			if n == 0 {
				idle.Reset(idleTrim)
				break
			}
			if b == nil {
				b = r.sw.Batch()
			}
			var pk packer
			for k, w := range batch {
				if w.del {
					b.Delete(k)
				} else {
					b.SetPacked(k, pk.pack(w.k))
				}
			}
			for i := range slots {
				t, k := splitConfigKey(slots[i].ck)
				if slots[i].ep == 0 {
					b.SetPacked(schema.ResultKey(t, k), pk.pack(slots[i].k))
				} else {
					b.SetPackedAt(slots[i].id, slots[i].ep, schema.ResultKey(t, k), pk.pack(slots[i].k))
				}
			}
			err := b.Flush(ctx)
			r.mu.Lock()
			r.writing = false
			r.mu.Unlock()
			r.m.resultBatch(n, err)
			if err == nil {
				retry = 50 * time.Millisecond
				if len(batch) <= 4096 { // kept for the next batch; a 100k one is let go
					clear(batch)
					r.mu.Lock()
					r.spare = batch
					r.mu.Unlock()
				}
				clear(slots)
				if cap(slots) > 4096 {
					slots = nil
				}
				continue
			}
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return
			}
			r.log.WithError(err).WithField("keys", n).Warn("write results to STATE_DB: retrying")
			r.mu.Lock()
			for k, rec := range batch {
				if _, newer := r.pending[k]; !newer {
					r.pending[k] = rec
				}
			}
			for _, sw := range slots {
				// Again from its slot, unless the key left it (then as it was).
				if s := r.byID.At(sw.id); s != nil && s.ck == sw.ck {
					if s.has {
						s.byName = true // what Redis holds is unknown now
						r.queueLocked(sw.id, s)
					}
					continue
				}
				t, k := splitConfigKey(sw.ck)
				if sk := schema.ResultKey(t, k); !r.hasPendingLocked(sk) {
					r.pending[sk] = write{k: sw.k}
				}
			}
			r.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			if retry < 2*time.Second {
				retry *= 2
			}
		}
	}
}

// trim lets go of the arrays and maps the writer keeps for its next
// flush (its own and the StateWriter's) when they hold nothing.
func (r *results) trim() {
	r.mu.Lock()
	r.spare, r.spareID = nil, nil
	if len(r.pending) == 0 {
		r.pending = map[string]write{} // a map keeps its table when emptied
	}
	if len(r.pendIDs) == 0 {
		r.pendIDs = nil
	}
	if len(r.passIDs) == 0 {
		r.passIDs = nil
	}
	r.mu.Unlock()
	if r.sw != nil {
		r.sw.Trim()
	}
}

func (r *results) hasPendingLocked(sk string) bool {
	_, ok := r.pending[sk]
	return ok
}
