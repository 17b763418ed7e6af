package orchagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func TestVlanMemberFdbInOrder(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet4", "tagging_mode", "tagged")
	r.set("FDB", "Vlan100|00:11:22:33:44:55", "port", "Ethernet4")
	r.set("VLAN_INTERFACE", "Vlan100|10.1.0.1/24")
	r.settle()
	for _, k := range []string{"VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet0", "VLAN_MEMBER|Vlan100|Ethernet4",
		"FDB|Vlan100|00:11:22:33:44:55", "VLAN_INTERFACE|Vlan100|10.1.0.1/24"} {
		r.want(k, schema.StateOK, "")
	}
	br := r.link("Bridge")
	if br.Bridge == nil || !*br.Bridge.VlanFiltering {
		t.Fatalf("Bridge without vlan_filtering: %+v", br.Bridge)
	}
	v := r.link("Vlan100")
	if v.Kind != "vlan" || v.Vlan.ID != 100 || v.ParentIdx != br.Index || !*v.AdminUp {
		t.Fatalf("Vlan100 = %+v", v)
	}
	if _, ok := r.vids("Bridge")[100]; !ok {
		t.Fatal("no vid 100 self on Bridge")
	}
	e0, e4 := r.vids("Ethernet0"), r.vids("Ethernet4")
	if m := e0[100]; !m.PVID || !m.Untagged || len(e0) != 1 {
		t.Fatalf("Ethernet0 vids = %+v, want only 100 pvid untagged", e0)
	}
	if m, ok := e4[100]; !ok || m.PVID || m.Untagged || len(e4) != 1 {
		t.Fatalf("Ethernet4 vids = %+v, want only 100 tagged", e4)
	}
	if r.link("Ethernet0").MasterIdx != br.Index {
		t.Fatal("Ethernet0 not enslaved to Bridge")
	}
	fdbs, _ := r.k.Fdbs().List("Bridge")
	found := false
	for _, f := range fdbs {
		if f.MAC.String() == "00:11:22:33:44:55" && f.Vlan == 100 && f.Link == "Ethernet4" && f.Static {
			found = true
		}
	}
	if !found {
		t.Fatalf("static fdb missing: %+v", fdbs)
	}
	r.noWrites()
}

// Children written before their parents wait, then apply when the parent
// appears: event-driven, by the parent's result change.
func TestVlanChildrenBeforeParents(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("FDB", "Vlan100|00:11:22:33:44:55", "port", "Ethernet0")
	r.set("VLAN_INTERFACE", "Vlan100|10.1.0.1/24")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet8", "tagging_mode", "tagged")
	r.settle()
	r.want("FDB|Vlan100|00:11:22:33:44:55", schema.StatePending, "waiting for VLAN_MEMBER|Vlan100|Ethernet0")
	r.want("VLAN_INTERFACE|Vlan100|10.1.0.1/24", schema.StatePending, "waiting for VLAN|Vlan100")
	r.want("VLAN_MEMBER|Vlan100|Ethernet0", schema.StatePending, "waiting for VLAN|Vlan100")
	if r.k.Writes() != 0 {
		t.Fatalf("writes while everything waits: %v", r.k.Ops())
	}
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	r.want("VLAN_MEMBER|Vlan100|Ethernet0", schema.StateOK, "")
	r.want("FDB|Vlan100|00:11:22:33:44:55", schema.StateOK, "")
	r.want("VLAN_INTERFACE|Vlan100|10.1.0.1/24", schema.StateOK, "")
	r.want("VLAN_MEMBER|Vlan100|Ethernet8", schema.StatePending, "waiting for netdev Ethernet8")
	r.k.AddPort("Ethernet8")
	r.linkEvent("Ethernet8", false)
	r.settle()
	r.want("VLAN_MEMBER|Vlan100|Ethernet8", schema.StateOK, "")
}

// Deleting a parent removes its children from the kernel and marks them
// pending; re-adding it restores them.
func TestVlanParentDeleteAndReadd(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.set("FDB", "Vlan100|00:11:22:33:44:55", "port", "Ethernet0")
	r.set("VLAN_INTERFACE", "Vlan100|10.1.0.1/24")
	r.settle()
	r.del("VLAN", "Vlan100")
	r.settle()
	r.noResult("VLAN|Vlan100")
	r.want("VLAN_MEMBER|Vlan100|Ethernet0", schema.StatePending, "waiting for VLAN|Vlan100")
	r.want("FDB|Vlan100|00:11:22:33:44:55", schema.StatePending, "waiting for VLAN_MEMBER|Vlan100|Ethernet0")
	r.want("VLAN_INTERFACE|Vlan100|10.1.0.1/24", schema.StatePending, "waiting for VLAN|Vlan100")
	if _, err := r.k.Links().Get("Vlan100"); !netlinkmgr.IsNotFound(err) {
		t.Fatalf("Vlan100 still there: %v", err)
	}
	if v := r.vids("Ethernet0"); len(v) != 0 {
		t.Fatalf("Ethernet0 keeps vids %v", v)
	}
	if r.link("Ethernet0").MasterIdx != 0 {
		t.Fatal("Ethernet0 still enslaved with no membership left")
	}
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	for _, k := range []string{"VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet0", "FDB|Vlan100|00:11:22:33:44:55", "VLAN_INTERFACE|Vlan100|10.1.0.1/24"} {
		r.want(k, schema.StateOK, "")
	}
	r.noWrites()
}

func TestVlanMemberDriftAndDelete(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.settle()
	// Someone removes the vid behind our back.
	if err := r.k.BridgeVlans().Del(netlinkmgr.BridgeVlanInfo{Link: "Ethernet0", VID: 100}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet0", false)
	r.settle()
	if m := r.vids("Ethernet0")[100]; !m.PVID {
		t.Fatal("member vid not restored")
	}
	// Someone deletes Vlan100.
	if err := r.k.Links().Del("Vlan100"); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Vlan100", true)
	r.settle()
	if r.link("Vlan100").Vlan.ID != 100 {
		t.Fatal("Vlan100 not recreated")
	}
	r.del("VLAN_MEMBER", "Vlan100|Ethernet0")
	r.settle()
	r.noResult("VLAN_MEMBER|Vlan100|Ethernet0")
	if v := r.vids("Ethernet0"); len(v) != 0 || r.link("Ethernet0").MasterIdx != 0 {
		t.Fatalf("member not removed: vids %v", v)
	}
}

func TestVlanUntaggedConflict(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN", "Vlan200", "vlanid", "200")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.settle()
	r.set("VLAN_MEMBER", "Vlan200|Ethernet0", "tagging_mode", "untagged")
	r.settle()
	r.want("VLAN_MEMBER|Vlan200|Ethernet0", schema.StateError, "one untagged VLAN")
	r.del("VLAN_MEMBER", "Vlan100|Ethernet0")
	r.settle()
	r.want("VLAN_MEMBER|Vlan200|Ethernet0", schema.StateOK, "")
}

func TestFdbDrift(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "tagged")
	r.set("FDB", "Vlan100|00:11:22:33:44:55", "port", "Ethernet0")
	r.settle()
	mac, _ := net.ParseMAC("00:11:22:33:44:55")
	e := netlinkmgr.FdbInfo{MAC: mac, Link: "Ethernet0", Master: "Bridge", Vlan: 100, Static: true}
	if err := r.k.Fdbs().Del(e); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Deleted: true, Fdb: &e})
	r.settle()
	if f, ok := r.o.view.fdb(100, "00:11:22:33:44:55"); !ok || f.Link != "Ethernet0" {
		t.Fatal("fdb not restored")
	}
	r.del("FDB", "Vlan100|00:11:22:33:44:55")
	r.settle()
	fdbs, _ := r.k.Fdbs().List("Bridge")
	for _, f := range fdbs {
		if f.MAC.String() == "00:11:22:33:44:55" {
			t.Fatalf("fdb entry left after delete: %+v", f)
		}
	}
}

// ReconcileBatch with FDB keys: their writes go out together (one
// Fdbs().AddBatch per run of consecutive FDB keys), each key gets its own
// outcome and error at its own position, a failed entry does not stop the
// others, and a key of another table in between sees the entries before
// it written (the order of writes across tables is unchanged).
func TestReconcileBatchFdb(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "tagged")
	r.settle()
	r.set("FDB", "Vlan100|02:00:00:00:00:01", "port", "Ethernet0")
	r.set("FDB", "Vlan100|02:00:00:00:00:02", "port", "Ethernet0")
	r.set("FDB", "Vlan100|02:00:00:00:00:03", "port", "Ethernet4") // not a member yet
	r.set("FDB", "Vlan100|02:00:00:00:00:04", "port", "Ethernet0")
	r.set("FDB", "Vlan100|zz", "port", "Ethernet0")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet4", "tagging_mode", "tagged")
	r.set("FDB", "Vlan100|02:00:00:00:00:05", "port", "Ethernet4")
	r.o.Drain()
	k.FailNext("fdb add 02:00:00:00:00:02", errors.New("no buffer space available"))
	keys := []string{"FDB|Vlan100|02:00:00:00:00:01", "FDB|Vlan100|02:00:00:00:00:02", "FDB|Vlan100|02:00:00:00:00:03",
		"FDB|Vlan100|02:00:00:00:00:04", "FDB|Vlan100|zz", "VLAN_MEMBER|Vlan100|Ethernet4", "FDB|Vlan100|02:00:00:00:00:05"}
	errs := r.o.ReconcileBatch(context.Background(), keys)
	for i, err := range errs {
		if (err != nil) != (i == 1) {
			t.Fatalf("errs[%d] (%s) = %v; want an error only for the failed write", i, keys[i], err)
		}
	}
	r.want("FDB|Vlan100|02:00:00:00:00:01", schema.StateOK, "")
	r.want("FDB|Vlan100|02:00:00:00:00:02", schema.StateError, "no buffer space")
	r.want("FDB|Vlan100|02:00:00:00:00:03", schema.StatePending, "waiting for VLAN_MEMBER|Vlan100|Ethernet4")
	r.want("FDB|Vlan100|02:00:00:00:00:04", schema.StateOK, "")
	r.want("FDB|Vlan100|zz", schema.StateError, "")
	r.want("VLAN_MEMBER|Vlan100|Ethernet4", schema.StateOK, "")
	r.want("FDB|Vlan100|02:00:00:00:00:05", schema.StateOK, "")
	var ops []string
	for _, op := range k.Ops() {
		if strings.HasPrefix(op, "fdb") || strings.HasPrefix(op, "vlan add") && strings.Contains(op, "Ethernet4") {
			ops = append(ops, op)
		}
	}
	want := []string{"fdb add 02:00:00:00:00:01 dev Ethernet0 vlan 100", "fdb add 02:00:00:00:00:04 dev Ethernet0 vlan 100",
		"vlan add", "fdb add 02:00:00:00:00:05 dev Ethernet4 vlan 100"}
	if len(ops) != len(want) {
		t.Fatalf("ops %q, want %q", ops, want)
	}
	for i := range want {
		if !strings.HasPrefix(ops[i], want[i]) {
			t.Fatalf("ops %q, want %q", ops, want)
		}
	}
	// The member's result wakes the pending entry; the retry of the failed
	// one succeeds; then nothing is left to write.
	r.o.enqueue("FDB|Vlan100|02:00:00:00:00:02")
	r.settle()
	for i := 1; i <= 5; i++ {
		r.want(fmt.Sprintf("FDB|Vlan100|02:00:00:00:00:%02d", i), schema.StateOK, "")
	}
	r.noWrites()
}
