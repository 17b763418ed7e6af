package orchagent

import (
	"context"
	"net/netip"
	"slices"
	"sort"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// remotes lists the remotes of dev's flood (all-zeros) entry, sorted.
func (r *rig) remotes(dev string) []string {
	r.t.Helper()
	fs, err := r.k.Fdbs().List("")
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		if f.Link == dev && f.Master == "" && f.MAC.String() == "00:00:00:00:00:00" {
			out = append(out, f.Dst.String())
		}
	}
	sort.Strings(out)
	return out
}

func (r *rig) wantRemotes(dev string, want ...string) {
	r.t.Helper()
	if got := r.remotes(dev); !slices.Equal(got, want) {
		r.t.Fatalf("remotes of %s: %q, want %q (ops %q)", dev, got, want, r.k.Ops())
	}
}

func TestVxlanRemoteVNI(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, k)
	const a, b = "VXLAN_REMOTE_VNI|Vlan100|10.0.0.2", "VXLAN_REMOTE_VNI|Vlan100|10.0.0.3"
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.2", "vni", "1000")
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.3", "vni", "1000")
	r.settle()
	r.want(a, schema.StatePending, "waiting for a VXLAN_TUNNEL_MAP mapping Vlan100 to vni 1000")
	r.set("VXLAN_TUNNEL_MAP", "vtep1|other", "vlan", "Vlan100", "vni", "2000")
	r.settle()
	r.want(a, schema.StatePending, "waiting for a VXLAN_TUNNEL_MAP mapping Vlan100 to vni 1000 (VXLAN_TUNNEL_MAP|vtep1|other maps it to vni 2000)")
	r.del("VXLAN_TUNNEL_MAP", "vtep1|other")
	r.set("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000")
	r.settle()
	r.want(a, schema.StatePending, "waiting for VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100")
	r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1", "dst_ip", "10.0.0.9")
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.settle()
	r.want(a, schema.StateOK, "")
	r.want(b, schema.StateOK, "")
	// The tunnel's dst_ip is the device's own remote.
	r.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.3", "10.0.0.9")
	r.noWrites()

	// A key naming the tunnel's dst_ip is ok; its delete leaves the
	// device's own remote. A remote of another family is an error.
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.9", "vni", "1000")
	r.set("VXLAN_REMOTE_VNI", "Vlan100|2001:db8::2", "vni", "1000")
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.1.0.1", "vni", "1000")
	r.settle()
	r.want("VXLAN_REMOTE_VNI|Vlan100|10.0.0.9", schema.StateOK, "")
	r.want("VXLAN_REMOTE_VNI|Vlan100|2001:db8::2", schema.StateError,
		"2001:db8::2 is not of the address family of VXLAN_TUNNEL|vtep1's src_ip 10.1.0.1")
	r.want("VXLAN_REMOTE_VNI|Vlan100|10.1.0.1", schema.StateError, "10.1.0.1 is VXLAN_TUNNEL|vtep1's own src_ip")
	r.del("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.9")
	r.del("VXLAN_REMOTE_VNI", "Vlan100|2001:db8::2")
	r.del("VXLAN_REMOTE_VNI", "Vlan100|10.1.0.1")
	r.settle()
	r.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.3", "10.0.0.9")

	// Drift: a remote deleted behind our back comes back.
	gone := netlinkmgr.FdbInfo{MAC: zeroMAC, Link: "vtep1-100", Dst: netip.MustParseAddr("10.0.0.3")}
	if err := k.Fdbs().DelRemote(gone); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Deleted: true, Fdb: &gone})
	r.settle()
	r.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.3", "10.0.0.9")

	// The device is made again (dst_ip changed): the remotes follow.
	r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1", "dst_ip", "10.0.0.8")
	r.settle()
	r.want(a, schema.StateOK, "")
	r.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.3", "10.0.0.8")

	// Deleting one key removes only its remote.
	r.del("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.2")
	r.settle()
	r.noResult(a)
	r.wantRemotes("vtep1-100", "10.0.0.3", "10.0.0.8")

	// A vni no map gives the VLAN: pending, and its remote leaves the device.
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.3", "vni", "3000")
	r.settle()
	r.want(b, schema.StatePending, "waiting for a VXLAN_TUNNEL_MAP mapping Vlan100 to vni 3000 (VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100 maps it to vni 1000)")
	r.wantRemotes("vtep1-100", "10.0.0.8")
	r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.3", "vni", "1000")
	r.settle()
	r.wantRemotes("vtep1-100", "10.0.0.3", "10.0.0.8")

	// The map goes: the device and its remotes go, the key waits.
	r.del("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100")
	r.settle()
	r.want(b, schema.StatePending, "waiting for a VXLAN_TUNNEL_MAP mapping Vlan100 to vni 1000")
	r.wantRemotes("vtep1-100")
}

// After a restart with a key deleted meanwhile, the sweep removes its
// remote and nothing else: the other key's, the device's own (dst_ip),
// and the remotes of a device we did not make stay.
func TestVxlanRemoteSweep(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	cfg := func(r *rig) {
		r.set("VLAN", "Vlan100", "vlanid", "100")
		r.set("VXLAN_TUNNEL", "vtep1", "src_ip", "10.1.0.1", "dst_ip", "10.0.0.9")
		r.set("VXLAN_TUNNEL_MAP", "vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000")
		r.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.2", "vni", "1000")
	}
	first := newRig(t, k)
	cfg(first)
	first.set("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.3", "vni", "1000")
	first.settle()
	first.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.3", "10.0.0.9")
	foreign := netlinkmgr.FdbInfo{MAC: zeroMAC, Link: "vx9", Dst: netip.MustParseAddr("10.0.0.4")}
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "vx9", Kind: "vxlan", Vxlan: &netlinkmgr.VxlanOptions{VNI: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Fdbs().AddRemote(foreign); err != nil {
		t.Fatal(err)
	}

	before := k.Writes()
	second := newRig(t, k)
	cfg(second)
	second.settle()
	if n := k.Writes() - before; n != 0 {
		t.Fatalf("restart made %d writes: %v", n, k.Ops())
	}
	second.want("VXLAN_REMOTE_VNI|Vlan100|10.0.0.2", schema.StateOK, "")
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	second.wantRemotes("vtep1-100", "10.0.0.2", "10.0.0.9")
	second.wantRemotes("vx9", "10.0.0.4")
	// A key deleted after the restart: its remote goes, the device's own stays.
	second.del("VXLAN_REMOTE_VNI", "Vlan100|10.0.0.2")
	second.settle()
	second.wantRemotes("vtep1-100", "10.0.0.9")
}
