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
	r.setOf(ck, "ROUTE", "10.0.0.0/24", schema.OK(), nil)
	for k := range r.current {
		if unsafe.StringData(k) != unsafe.StringData(ck) {
			t.Fatal("result kept under a new string, not the caller's")
		}
	}
	if items != 0 || len(r.pending) != 1 {
		t.Fatalf("%d items built, %d writes queued; want 0, 1", items, len(r.pending))
	}
	r.setOf("ROUTE|other", "ROUTE", "10.0.0.0/24", schema.Pending("x"), nil)
	r.keyItems = false
	r.setOf(ck, "ROUTE", "10.0.0.0/24", schema.OK(), nil)
	if items != 2 || len(r.current) != 1 {
		t.Fatalf("%d items built, %d results; want 2, 1", items, len(r.current))
	}
}
