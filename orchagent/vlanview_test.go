package orchagent

import (
	"context"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// forget makes the view lag behind the kernel: name's last event not
// consumed yet.
func (r *rig) forget(name string) {
	r.o.view.mu.Lock()
	delete(r.o.view.links, name)
	r.o.view.mu.Unlock()
}

// The VLAN paths read links from the view (vlanview.go). A VLAN device
// the view has not seen yet fails its create with EEXIST and is then
// read from the kernel: ours, it gets its fields; someone else's (on
// another parent), the key says so. Batched and one by one.
func TestVlanViewBehindDevice(t *testing.T) {
	for _, batched := range []bool{true, false} {
		k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
		r := newRig(t, k)
		r.batched = batched
		r.set("VLAN", "Vlan10", "vlanid", "10")
		r.settle()
		r.want("VLAN|Vlan10", schema.StateOK, "")
		// A hand-made Vlan20 on Ethernet0, unknown to the view.
		must(t, k.Links().Add(netlinkmgr.LinkInfo{Name: "Vlan20", Kind: "vlan", Vlan: &netlinkmgr.VlanOptions{ID: 20, Parent: "Ethernet0"}}))
		r.forget("Vlan10")
		r.set("VLAN", "Vlan10", "vlanid", "10", "mtu", "1400")
		r.set("VLAN", "Vlan20", "vlanid", "20")
		r.reconcile(r.o.Drain())
		r.want("VLAN|Vlan10", schema.StateOK, "")
		if l := r.link("Vlan10"); *l.MTU != 1400 {
			t.Fatalf("batched %v: Vlan10 mtu %d, want 1400 (set on the device the view had not seen)", batched, *l.MTU)
		}
		r.want("VLAN|Vlan20", schema.StateError, "not created by orchagent")
		if l := r.link("Vlan20"); l.ParentIdx != r.link("Ethernet0").Index {
			t.Fatalf("batched %v: hand-made Vlan20 changed: %+v", batched, l)
		}
	}
}

// A port the view shows free but the kernel has on another master (its
// event not consumed yet) is read before it is enslaved: not moved, the
// member says why.
func TestVlanViewBehindPortMaster(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("VLAN", "Vlan10", "vlanid", "10")
	r.settle()
	must(t, k.Links().Add(netlinkmgr.LinkInfo{Name: "br9", Kind: "bridge"}))
	r.settle() // the view knows br9 and a free Ethernet4
	br9 := "br9"
	must(t, k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet4", Master: &br9}))
	r.set("VLAN_MEMBER", "Vlan10|Ethernet4", "tagging_mode", "tagged")
	r.o.ReconcileBatch(context.Background(), r.o.Drain())
	r.want("VLAN_MEMBER|Vlan10|Ethernet4", schema.StateError, "enslaved to another master (br9)")
	if l := r.link("Ethernet4"); l.MasterIdx != r.link("br9").Index {
		t.Fatalf("Ethernet4 moved off br9: %+v", l)
	}
}
