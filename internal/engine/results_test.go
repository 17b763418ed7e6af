package engine

import (
	"reflect"
	"testing"

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
