package redisx

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

// A compact writer whose keys are written by slot (the engine's
// protocol: a new epoch when a key takes a slot or is written by name; a
// key moving slots is deleted by name first or next written by name)
// leaves Redis exactly as a plain writer does, over a random sequence
// with Forgets and Loads; an unchanged slot write sends nothing, and no
// map entry is kept per slot-written key.
func TestStateWriterSlotsMatchPlain(t *testing.T) {
	p := newWriterPair(t, []string{"generation", "reason", "state", "warning"})
	ctx, sw := p.ctx, p.test
	type held struct {
		slot   int32
		ep     uint32
		byName bool
	}
	var epoch uint32
	next := func() uint32 { epoch++; return epoch }
	at := map[string]*held{}
	owner := map[int32]string{}
	for i, k := range p.keys {
		at[k] = &held{slot: int32(i), ep: next()}
		owner[int32(i)] = k
	}
	for step := 0; step < 2000; step++ {
		k := p.keys[p.rng.Intn(len(p.keys))]
		h := at[k]
		var what string
		switch n := p.rng.Intn(24); {
		case n == 0:
			what = "forget"
			p.both(func(w *StateWriter) error { w.Forget(); return nil })
		case n == 1:
			what = "load"
			p.both(func(w *StateWriter) error { return w.Load(ctx, "R_TABLE|*") })
		case n < 5:
			what = "delete " + k
			p.both(func(w *StateWriter) error { return w.Delete(ctx, k) })
			h.ep = next()
		case n < 7: // to a free slot: its result stays, next written by name
			what = "move " + k
			free := int32(0)
			for owner[free] != "" {
				free++
			}
			delete(owner, h.slot)
			owner[free] = k
			if p.rng.Intn(2) == 0 { // the engine drops an evicted slot's epoch
				sw.DropSlots([]SlotEpoch{{Slot: h.slot, Ep: h.ep, Key: k}})
			}
			h.slot, h.ep, h.byName = free, next(), true
		default:
			f := p.randFields()
			what = fmt.Sprintf("set %s %v", k, f)
			if err := p.plain.Set(ctx, k, f); err != nil {
				t.Fatal(err)
			}
			set := func() {
				b := sw.Batch()
				if h.byName {
					b.SetPacked(k, shrink.Pack(f))
					h.byName, h.ep = false, next()
				} else {
					b.SetPackedAt(h.slot, h.ep, k, shrink.Pack(f))
				}
				if err := b.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			set()
			before := sw.Commands()
			set()
			if len(f) > 0 && sw.Commands() != before {
				t.Fatalf("step %d %s: an unchanged write sent commands", step, what)
			}
		}
		p.same(step, what)
	}
}

// BenchmarkStateWriterUnchanged100k: the writer's own cost per result
// when the engine queues 100,000 results Redis already holds (nothing is
// sent): by key, a look-up in a 100k-key map each; by slot
// (SetPackedAt), array indexing. ns/key is the whole pass over 100k keys
// divided by 100k.
func BenchmarkStateWriterUnchanged100k(b *testing.B) {
	for _, bySlot := range []bool{false, true} {
		name := "name"
		if bySlot {
			name = "slot"
		}
		b.Run(name, func(b *testing.B) {
			_, c := startRedis(b)
			ctx := context.Background()
			w := NewStateWriter(c.DB(6), []string{"generation", "reason", "state", "warning"})
			w.Compact()
			const n = 100000
			keys := make([]string, n)
			for j := range keys {
				keys[j] = fmt.Sprintf("STATIC_ROUTE_TABLE|10.%d.%d.0/24", j/256, j%256)
			}
			packed := shrink.Pack(map[string]string{"state": "ok", "generation": "83ea02484de8e4d2"})
			bt := w.Batch()
			pass := func() {
				for j, k := range keys { // slot j under epoch 1
					if bySlot {
						bt.SetPackedAt(int32(j), 1, k, packed)
					} else {
						bt.SetPacked(k, packed)
					}
					if j%256 == 255 || j == n-1 {
						if err := bt.Flush(ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			pass() // written once: every later pass sends nothing
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				pass()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/key")
		})
	}
}

// Dropped slots give their pages back: one surviving high slot keeps one
// page; a drop under an old epoch leaves a newer fingerprint alone.
func TestStateWriterDropSlots(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	w := NewStateWriter(c.DB(6), []string{"generation", "state"})
	w.Compact()
	b := w.Batch()
	packed := shrink.Pack(map[string]string{"state": "ok"})
	var gone []SlotEpoch
	for i := range int32(3000) {
		b.SetPackedAt(i, 7, fmt.Sprintf("T|%d", i), packed)
		if i < 2999 {
			gone = append(gone, SlotEpoch{Slot: i, Ep: 7, Key: fmt.Sprintf("T|%d", i)})
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.DropSlots([]SlotEpoch{{Slot: 2999, Ep: 6, Key: "T|2999"}}) // an older epoch: kept
	w.DropSlots(gone)
	kept := w.slots.Pages()
	if e := w.slots.At(2999); kept != 1 || e == nil || e.ep != 7 || len(w.sums) != 2999 {
		t.Fatalf("%d pages kept, slot 2999 %+v, %d fingerprints by key", kept, e, len(w.sums))
	}
	for i := range 2999 { // the keys, deleted by name, take their fingerprints along
		b.Delete(fmt.Sprintf("T|%d", i))
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.DB(6).DBSize(ctx).Result(); len(w.sums) != 0 || n != 1 {
		t.Fatalf("%d fingerprints by key, %d keys in Redis after the deletes", len(w.sums), n)
	}
}
