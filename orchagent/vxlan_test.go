package orchagent

import (
	"context"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func TestVxlanTunnelMap(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, k)
	r.set("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000")
	r.settle()
	r.want("VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", schema.StatePending, "waiting for VXLAN_TUNNEL|vtep1")
	r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1", "dst_ip", "10.1.0.2")
	r.settle()
	r.want("VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", schema.StatePending, "waiting for VLAN|Vlan100")
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	r.want("VXLAN_TUNNEL|vtep1", schema.StateOK, "")
	r.want("VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", schema.StateOK, "")
	d := r.link("vtep1-100")
	want := netlinkmgr.VxlanOptions{VNI: 1000, Local: netip.MustParseAddr("10.1.0.1"), Remote: netip.MustParseAddr("10.1.0.2"),
		Port: vxlanPort, Learning: true}
	if d.Kind != "vxlan" || *d.Vxlan != want || *d.Master != BridgeName || !*d.AdminUp || *d.Alias != ownerAlias {
		t.Fatalf("vtep1-100: %+v %+v", d, d.Vxlan)
	}
	if v := r.vids("vtep1-100"); len(v) != 1 || !v[100].PVID || !v[100].Untagged {
		t.Fatalf("vids of vtep1-100: %+v", v)
	}
	r.noWrites()

	// The tunnel's dst_ip changes: the device is made again.
	r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1", "dst_ip", "10.1.0.3")
	r.settle()
	if d := r.link("vtep1-100"); d.Vxlan.Remote != netip.MustParseAddr("10.1.0.3") || *d.Master != BridgeName {
		t.Fatalf("after dst_ip change: %+v", d.Vxlan)
	}
	// The map moves to Vlan200: the old device goes.
	r.set("VLAN", "Vlan200", "vlanid", "200")
	r.set("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100", "vlan", "Vlan200", "vni", "1000")
	r.settle()
	if _, err := k.Links().Get("vtep1-100"); !netlinkmgr.IsNotFound(err) {
		t.Fatalf("vtep1-100 left behind: %v %+v", k.Ops(), r.sink.m)
	}
	if v := r.vids("vtep1-200"); len(v) != 1 || !v[200].PVID {
		t.Fatalf("vids of vtep1-200: %+v", v)
	}
	// Bad input and a device we did not make.
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "vtep2-100", Kind: "vxlan", Vxlan: &netlinkmgr.VxlanOptions{VNI: 7}}); err != nil {
		t.Fatal(err)
	}
	r.set("VXLAN_TUNNEL", "vtep2", "src_ip", "10.1.0.1")
	r.set("VXLAN_TUNNEL_MAP", "vtep2|m", "vlan", "Vlan100", "vni", "2000")
	r.set("VXLAN_TUNNEL", "vtep3", "dst_ip", "10.1.0.2")
	r.settle()
	r.want("VXLAN_TUNNEL_MAP|vtep2|m", schema.StateError, "netdev vtep2-100 exists (kind vxlan) and is not a vxlan device created by switchyard")
	r.want("VXLAN_TUNNEL|vtep3", schema.StateError, `field "src_ip": required field is missing`)

	// Deleting the map deletes its device; the foreign one stays.
	for _, key := range [][2]string{{"VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100"}, {"VXLAN_TUNNEL_MAP", "vtep2|m"}} {
		r.del(key[0], key[1])
	}
	r.settle()
	if _, err := k.Links().Get("vtep1-200"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("vtep1-200 not deleted with its map")
	}
	if _, err := k.Links().Get("vtep2-100"); err != nil {
		t.Fatal("foreign vtep2-100 deleted")
	}
}

func TestVxlanSweepAndRestart(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	cfg := func(r *rig) {
		r.set("VLAN", "Vlan100", "vlanid", "100")
		r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1")
		r.set("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000")
	}
	first := newRig(t, k)
	cfg(first)
	first.set("VLAN", "Vlan300", "vlanid", "300")
	first.set("VXLAN_TUNNEL_MAP", "vtep1|map_3000_Vlan300", "vlan", "Vlan300", "vni", "3000")
	first.settle()
	before := k.Writes()
	second := newRig(t, k)
	cfg(second)
	second.set("VLAN", "Vlan300", "vlanid", "300")
	second.settle()
	if n := k.Writes() - before; n != 0 {
		t.Fatalf("restart made %d writes: %v", n, k.Ops())
	}
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Links().Get("vtep1-300"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("stale vtep1-300 not swept")
	}
	if v := second.vids("vtep1-100"); len(v) != 1 {
		t.Fatalf("sweep touched vtep1-100's vids: %+v", v)
	}
}
