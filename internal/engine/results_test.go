package engine

import (
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// A result kept in its compact form reads back whole, and its packed
// form is the fields it writes.
func TestKeptRecordRoundTrip(t *testing.T) {
	for _, r := range []record{
		{res: schema.Result{State: schema.StateOK, Generation: "83ea02484de8e4d2"}},
		{res: schema.Result{State: schema.StateOK, Warning: "unknown field x", Generation: "g"}},
		{res: schema.Result{State: schema.StateError, Reason: "bad", Generation: "g"}},
		{res: schema.Result{State: schema.StatePending, Reason: "waiting for VLAN|Vlan5"}},
		{res: schema.Result{State: "odd", Reason: "r", Warning: "w", Generation: "g"}},
		{res: schema.Result{State: schema.StateOK, Generation: "g"}, extra: schema.Fields{"prog_id": "7"}},
		{},
	} {
		k := keep(r)
		if got := k.record(); !got.equal(r) {
			t.Errorf("keep(%+v).record() = %+v", r, got)
		}
		if k.more != nil && r.res.Reason == "" && r.res.Warning == "" && len(r.extra) == 0 &&
			(r.res.State == schema.StateOK || r.res.State == schema.StateError || r.res.State == schema.StatePending) {
			t.Errorf("%+v: kept with a pointer", r)
		}
		if got := shrink.Unpack(r.pack()); !reflect.DeepEqual(got, map[string]string(r.fields())) {
			t.Errorf("pack(%+v) = %v, fields %v", r, got, r.fields())
		}
	}
}

// setOf with a KeyItems controller keeps the caller's "TABLE|key" string
// (no item built); a string that is not table|key is not trusted, and
// without KeyItems the controller's Item decides as before.
func TestResultsSetOfKeepsCallersKey(t *testing.T) {
	c := NewCache(nil)
	c.Set("ROUTE", "10.0.0.0/24", schema.Fields{"ifname": "eth0"})
	items := 0
	r := newResults(nil, nil, c, []string{"ROUTE"}, func(t, k string) string { items++; return t + "|" + k }, nil)
	r.keyItems = true
	ck := string([]byte("ROUTE|10.0.0.0/24"))
	r.setOf(ck, nil, "ROUTE", "10.0.0.0/24", schema.OK(), nil)
	for k := range r.all() {
		if unsafe.StringData(k) != unsafe.StringData(ck) {
			t.Fatal("result kept under a new string, not the caller's")
		}
	}
	if items != 0 || len(r.pending)+len(r.pendIDs) != 1 {
		t.Fatalf("%d items built, %d writes queued; want 0, 1", items, len(r.pending)+len(r.pendIDs))
	}
	r.setOf("ROUTE|other", nil, "ROUTE", "10.0.0.0/24", schema.Pending("x"), nil)
	r.keyItems = false
	r.setOf(ck, nil, "ROUTE", "10.0.0.0/24", schema.OK(), nil)
	if items != 2 || len(r.all()) != 1 {
		t.Fatalf("%d items built, %d results; want 2, 1", items, len(r.all()))
	}
}

// A result set with the entry it is of is written while its key is
// cached, with or without deletions of other keys since the entry was
// read, and dropped once the key itself is gone.
func TestResultsSetOfEntry(t *testing.T) {
	c := NewCache(nil)
	c.Set("ROUTE", "a", schema.Fields{"ifname": "eth0"})
	c.Set("ROUTE", "b", schema.Fields{"ifname": "eth0"})
	r := newResults(nil, nil, c, []string{"ROUTE"}, func(t, k string) string { return t + "|" + k }, nil)
	r.keyItems = true
	ea, _ := c.Get("ROUTE", "a")
	eb, _ := c.GetInto("ROUTE", "b", schema.Fields{})
	r.setOf("ROUTE|a", &ea, "ROUTE", "a", ea.Stamp(schema.OK()), nil)
	c.Delete("ROUTE", "a")
	r.setOf("ROUTE|b", &eb, "ROUTE", "b", eb.Stamp(schema.OK()), nil) // a deletion since: asked
	if len(r.all()) != 2 {
		t.Fatalf("%d results, want 2", len(r.all()))
	}
	r.setOf("ROUTE|a", &ea, "ROUTE", "a", ea.Stamp(schema.Pending("x")), nil) // a itself is gone
	if got := r.all()["ROUTE|a"].record().res.State; got != schema.StateOK {
		t.Fatalf("result of a deleted key changed to %s", got)
	}
	var zero Entry
	if c.cachedSince(&zero) || !c.cachedSince(&eb) {
		t.Fatal("cachedSince: a zero entry counts as cached, or a cached one does not")
	}
}

// all is every result kept, by "TABLE|key": the slots' and current's.
func (r *results) all() map[string]kept {
	m := map[string]kept{}
	r.byID.Each(func(_ int32, s *slot) {
		if s.has {
			m[s.ck] = s.k
		}
	})
	for ck, k := range r.current {
		m[ck] = k
	}
	return m
}

// Cache ids are the lowest free ones, and deleting the newest keys gives
// the top back; results live in the slot of their key's id while it is
// cached, move out when it leaves (a queued write with them), and are
// never handed to the key that takes the id next.
func TestResultSlotsFollowCacheIDs(t *testing.T) {
	c := NewCache(nil)
	r := newResults(nil, nil, c, []string{"ROUTE"}, func(t, k string) string { return t + "|" + k }, nil)
	r.keyItems = true
	f := schema.Fields{"ifname": "eth0"}
	for _, k := range []string{"a", "b", "c"} {
		c.Set("ROUTE", k, f)
		e, _ := c.Get("ROUTE", k)
		if e.id != int32(k[0]-'a') {
			t.Fatalf("id of %s = %d", k, e.id)
		}
		r.setOf("ROUTE|"+k, &e, "ROUTE", k, e.Stamp(schema.OK()), nil)
	}
	c.Delete("ROUTE", "b") // queued result of b: to pending, result to current
	if _, ok := r.current["ROUTE|b"]; !ok || len(r.pending) != 1 || r.byID.At(1).ck != "" {
		t.Fatalf("b not evicted: current %v pending %v slot %+v", r.current, r.pending, r.byID.At(1))
	}
	c.Set("ROUTE", "d", f) // takes b's id
	e, _ := c.Get("ROUTE", "d")
	if e.id != 1 {
		t.Fatalf("d got id %d, want b's 1", e.id)
	}
	r.setOf("ROUTE|d", &e, "ROUTE", "d", e.Stamp(schema.Pending("x")), nil)
	if got := r.all(); len(got) != 4 || got["ROUTE|b"].record().res.State != schema.StateOK ||
		got["ROUTE|d"].record().res.State != schema.StatePending {
		t.Fatalf("results %v", got)
	}
	r.reconciled("ROUTE|b") // b is not cached: its result goes, a deletion queued
	if _, ok := r.all()["ROUTE|b"]; ok || !r.pending[schema.ResultKey("ROUTE", "b")].del {
		t.Fatal("b's result not removed")
	}
	// A late result of a deleted key (read before the deletion) is dropped.
	ec, _ := c.Get("ROUTE", "c")
	c.Delete("ROUTE", "c")
	r.setOf("ROUTE|c", &ec, "ROUTE", "c", ec.Stamp(schema.Pending("late")), nil)
	if got := r.all()["ROUTE|c"].record().res.State; got != schema.StateOK {
		t.Fatalf("late result of deleted c: %s", got)
	}
	// The bad override unqueues the slot's write.
	r.setBad("ROUTE", "a", schema.Error("bad"))
	if r.byID.At(0).queued {
		t.Fatal("a's result still queued after its error")
	}
	// Deleting everything gives every id and slot back.
	for _, k := range []string{"a", "d"} {
		c.Delete("ROUTE", k)
	}
	if c.nextID != 0 || len(c.freeIDs) != 0 || !r.byID.Empty() || c.nfree != 0 {
		t.Fatalf("ids not given back: next %d free %v nfree %d pages %d", c.nextID, c.freeIDs, c.nfree, r.byID.Pages())
	}
	// Many keys, the older half deleted: the lowest ids are reused.
	for i := range 200 {
		c.Set("ROUTE", strconv.Itoa(i), f)
	}
	for i := range 100 {
		c.Delete("ROUTE", strconv.Itoa(i))
	}
	c.Set("ROUTE", "x", f)
	if e, _ := c.Get("ROUTE", "x"); e.id != 0 || c.nextID != 200 || c.nfree != 99 {
		t.Fatalf("id %d, next %d, free %d", e.id, c.nextID, c.nfree)
	}
	// A key with a high id outliving a burst's deletes keeps its page of
	// slots, not every page.
	for i := range 5000 {
		k := "burst" + strconv.Itoa(i)
		c.Set("ROUTE", k, f)
		e, _ := c.Get("ROUTE", k)
		r.setOf("ROUTE|"+k, &e, "ROUTE", k, e.Stamp(schema.OK()), nil)
	}
	for i := range 4999 {
		c.Delete("ROUTE", "burst"+strconv.Itoa(i))
	}
	if kept := r.byID.Pages(); kept != 1 {
		t.Fatalf("%d pages of slots kept for one result, want 1", kept)
	}
}

// A packer's string is always the record's own packed form, whatever
// came before it (equal records in a row share one string).
func TestPackerMatchesPack(t *testing.T) {
	recs := []record{
		{res: schema.Result{State: schema.StateOK, Generation: "83ea02484de8e4d2"}},
		{res: schema.Result{State: schema.StateOK, Generation: "0000000000000001"}},
		{res: schema.Result{State: schema.StateError, Reason: "bad", Generation: "83ea02484de8e4d2"}},
		{res: schema.Result{State: schema.StatePending, Generation: "83ea02484de8e4d2"}},
		{res: schema.Result{State: schema.StateOK, Warning: "unknown field x", Generation: "83ea02484de8e4d2"}},
		{res: schema.Result{State: schema.StateOK, Generation: "83ea02484de8e4d2"}, extra: schema.Fields{"prog_id": "7"}},
		{res: schema.Result{State: "odd", Generation: "83ea02484de8e4d2"}},
	}
	var p packer
	shared := 0
	prev := ""
	for i := 0; i < 2000; i++ {
		r := recs[(i*7+i/3)%len(recs)]
		if i%5 < 2 {
			r = recs[0]
		}
		got, want := p.pack(keep(r)), r.pack()
		if got != want {
			t.Fatalf("step %d: pack(%+v) = %q, want %q", i, r, got, want)
		}
		if unsafe.StringData(got) == unsafe.StringData(prev) {
			shared++
		}
		prev = got
	}
	if shared == 0 {
		t.Fatal("equal records in a row never shared a string")
	}
}
