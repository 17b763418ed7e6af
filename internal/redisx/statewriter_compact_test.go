package redisx

import (
	"fmt"
	"reflect"
	"testing"
)

// A compact writer leaves Redis exactly as a plain one does, over a random
// sequence of Sets (fields added, changed, dropped), Deletes, Forgets and
// Loads, with another writer's field in the same hashes; an unchanged Set
// sends nothing.
func TestStateWriterCompactMatchesPlain(t *testing.T) {
	p := newWriterPair(t, []string{"state", "reason", "warning", "generation"})
	ctx, compact := p.ctx, p.test
	for step := 0; step < 400; step++ {
		k := p.keys[p.rng.Intn(len(p.keys))]
		var what string
		switch n := p.rng.Intn(20); {
		case n == 0:
			what = "forget"
			p.both(func(w *StateWriter) error { w.Forget(); return nil })
		case n == 1:
			what = "load"
			p.both(func(w *StateWriter) error { return w.Load(ctx, "R_TABLE|*") })
		case n < 5:
			what = "delete " + k
			p.both(func(w *StateWriter) error { return w.Delete(ctx, k) })
		default:
			f := p.randFields()
			what = fmt.Sprintf("set %s %v", k, f)
			p.both(func(w *StateWriter) error { return w.Set(ctx, k, f) })
			before := compact.Commands()
			if err := compact.Set(ctx, k, f); err != nil {
				t.Fatal(err)
			}
			if len(f) > 0 && compact.Commands() != before { // an empty one is forgotten at once (both writers)
				t.Fatalf("step %d %s: an unchanged Set sent commands", step, what)
			}
		}
		p.same(step, what)
		if pk, ck := p.plain.Keys(), compact.Keys(); !reflect.DeepEqual(pk, ck) {
			t.Fatalf("step %d %s: Keys %v, plain %v", step, what, ck, pk)
		}
	}
}
