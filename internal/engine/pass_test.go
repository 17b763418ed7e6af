package engine

import (
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// Results set during the worker's pass of several items are held until
// it ends and then queued together (one write); a result set outside a
// pass is queued at once, and flushed waits for held ones too.
func TestResultsHeldForPass(t *testing.T) {
	c := NewCache(nil)
	for _, k := range []string{"a", "b", "c"} {
		c.Set("ROUTE", k, schema.Fields{"ifname": "eth0"})
	}
	r := newResults(nil, nil, c, []string{"ROUTE"}, func(t, k string) string { return t + "|" + k }, nil)
	kicked := func() bool {
		select {
		case <-r.kick:
			return true
		default:
			return false
		}
	}
	r.set("ROUTE", "a", schema.OK(), nil)
	if len(r.pendIDs) != 1 || !kicked() {
		t.Fatalf("a lone result: %d queued, want 1 with a kick", len(r.pendIDs))
	}
	r.pendIDs = r.pendIDs[:0]
	r.byID.At(r.testID(t, "a")).queued = false

	r.beginPass()
	r.set("ROUTE", "b", schema.OK(), nil)
	r.set("ROUTE", "c", schema.Pending("waiting for x"), nil)
	r.set("ROUTE", "c", schema.OK(), nil) // again: still one write
	if len(r.pendIDs) != 0 || kicked() || r.flushed() {
		t.Fatalf("in the pass: %d queued (want 0), kick or flushed", len(r.pendIDs))
	}
	r.endPass()
	if len(r.pendIDs) != 2 || len(r.passIDs) != 0 || !kicked() {
		t.Fatalf("after the pass: %d queued, %d held; want 2, 0 with a kick", len(r.pendIDs), len(r.passIDs))
	}
	r.endPass() // nothing held: no kick
	if kicked() {
		t.Fatal("an empty pass kicked the writer")
	}
}

// testID is key's Cache id.
func (r *results) testID(t *testing.T, key string) int32 {
	id, ok := r.cache.idOf("ROUTE", key)
	if !ok {
		t.Fatalf("%s not cached", key)
	}
	return id
}
