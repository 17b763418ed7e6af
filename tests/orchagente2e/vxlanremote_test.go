package orchagente2e

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// floodRemotes lists the remotes of dev's all-zeros (flood) entry, as
// bridge -j fdb show dev DEV prints them, sorted.
func floodRemotes(ns *testns.NS, dev string) []string {
	var fdb []struct {
		MAC   string   `json:"mac"`
		Dst   string   `json:"dst"`
		Flags []string `json:"flags"`
		State string   `json:"state"`
	}
	ns.JSON(&fdb, "bridge", "fdb", "show", "dev", dev)
	var out []string
	for _, f := range fdb {
		if f.MAC == "00:00:00:00:00:00" && slices.Contains(f.Flags, "self") && f.State == "permanent" {
			out = append(out, f.Dst)
		}
	}
	sort.Strings(out)
	return out
}

// VXLAN_REMOTE_VNI, head-end replication: one switch whose Vlan100 is
// mapped to VNI 1000 with two remote VTEPs (two addresses of a namespace
// behind the routed underlay port). The vxlan device's flood entry lists
// both; an ARP broadcast from a host in Vlan100 reaches both remotes as
// VXLAN datagrams; deleting one key removes only its remote, and the
// broadcast then reaches the other one only.
func TestVMVxlanRemoteVNI(t *testing.T) {
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering)
	e := e2eutil.NewSwitch(t)
	r, h := testns.New(t), testns.New(t)
	e.NS.Veth("Ethernet8", r, "eth1")
	e.NS.Veth("Ethernet0", h, "eth1")
	r.IP("link", "set", "eth1", "up")
	r.IP("addr", "add", "10.10.1.2/24", "dev", "eth1")
	r.IP("addr", "add", "10.10.1.3/24", "dev", "eth1")
	h.IP("addr", "add", "10.100.0.1/24", "dev", "eth1")
	vtep2 := e2eutil.ListenUDP(t, r, "10.10.1.2", 4789)
	vtep3 := e2eutil.ListenUDP(t, r, "10.10.1.3", 4789)
	e.Start("orchagent", "--log-level", "debug")
	cfg := [][]string{
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet8", "admin_status", "up"},
		{"INTERFACE|Ethernet8|10.10.1.1/24"},
		{"VLAN|Vlan100", "vlanid", "100"}, {"VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged"},
		{"VXLAN_TUNNEL|vtep1", "src_ip", "10.10.1.1"},
		{"VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000"},
		{"VXLAN_REMOTE_VNI|Vlan100|10.10.1.2", "vni", "1000"},
		{"VXLAN_REMOTE_VNI|Vlan100|10.10.1.3", "vni", "1000"},
	}
	var keys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		keys = append(keys, c[0])
	}
	e.WaitOK(keys...)
	if got := floodRemotes(e.NS, "vtep1-100"); !slices.Equal(got, []string{"10.10.1.2", "10.10.1.3"}) {
		t.Fatalf("flood entry of vtep1-100: %q, want 10.10.1.2 and 10.10.1.3", got)
	}
	// ARP for an address nobody has: a broadcast in Vlan100, replicated
	// to every remote.
	broadcast := func() { h.Exec("ping", "-c1", "-W1", "10.100.0.99") }
	e.Eventually("an ARP broadcast from the host reaches both remote VTEPs", func() (bool, string) {
		broadcast()
		return vtep2.Count() > 0 && vtep3.Count() > 0, fmt.Sprintf("10.10.1.2 got %d, 10.10.1.3 got %d", vtep2.Count(), vtep3.Count())
	})

	// Deleting one key removes only its remote.
	e.Del("VXLAN_REMOTE_VNI|Vlan100|10.10.1.3")
	e.WaitGone("VXLAN_REMOTE_VNI|Vlan100|10.10.1.3")
	e.Eventually("only 10.10.1.2 left in the flood entry", func() (bool, string) {
		got := floodRemotes(e.NS, "vtep1-100")
		return slices.Equal(got, []string{"10.10.1.2"}), fmt.Sprint(got)
	})
	vtep2.Settle()
	vtep3.Settle()
	vtep2.Reset()
	vtep3.Reset()
	e.Eventually("a broadcast reaches 10.10.1.2 again", func() (bool, string) {
		broadcast()
		return vtep2.Count() > 0, fmt.Sprintf("10.10.1.2 got %d", vtep2.Count())
	})
	if n := vtep3.Settle(); n != 0 {
		t.Fatalf("the deleted remote 10.10.1.3 still got %d datagrams", n)
	}
	e.WaitOK("VXLAN_REMOTE_VNI|Vlan100|10.10.1.2")
	delAll(e, keys...)
}
