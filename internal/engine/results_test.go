package engine

import (
	"reflect"
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
	for k := range r.current {
		if unsafe.StringData(k) != unsafe.StringData(ck) {
			t.Fatal("result kept under a new string, not the caller's")
		}
	}
	if items != 0 || len(r.pending) != 1 {
		t.Fatalf("%d items built, %d writes queued; want 0, 1", items, len(r.pending))
	}
	r.setOf("ROUTE|other", nil, "ROUTE", "10.0.0.0/24", schema.Pending("x"), nil)
	r.keyItems = false
	r.setOf(ck, nil, "ROUTE", "10.0.0.0/24", schema.OK(), nil)
	if items != 2 || len(r.current) != 1 {
		t.Fatalf("%d items built, %d results; want 2, 1", items, len(r.current))
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
	if len(r.current) != 2 {
		t.Fatalf("%d results, want 2", len(r.current))
	}
	r.setOf("ROUTE|a", &ea, "ROUTE", "a", ea.Stamp(schema.Pending("x")), nil) // a itself is gone
	if got := r.current["ROUTE|a"].record().res.State; got != schema.StateOK {
		t.Fatalf("result of a deleted key changed to %s", got)
	}
	var zero Entry
	if c.cachedSince(&zero) || !c.cachedSince(&eb) {
		t.Fatal("cachedSince: a zero entry counts as cached, or a cached one does not")
	}
}
