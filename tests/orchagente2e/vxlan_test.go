package orchagente2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// VXLAN_TUNNEL and VXLAN_TUNNEL_MAP: a vxlan device per map bridged into
// Bridge on its VLAN. The VLAN needs 802.1Q and bridge VLAN filtering, so
// the traffic test runs in the VM; on the host the map waits for its VLAN.

// On the host kernel: the tunnel is ok (it has no kernel object), its map
// waits for the VLAN (an error there: no 802.1Q), bad input is an error,
// and no link appears.
func TestVxlanWaitsForVlanOnHostKernel(t *testing.T) {
	testns.RequireRoot(t)
	if ok, _ := kernelcap.Has(kernelcap.VLAN8021Q); ok {
		t.Skip("this kernel has 802.1Q: TestVMVxlanTwoSwitches runs here")
	}
	e := e2eutil.NewSwitch(t)
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	keys := map[string][]string{
		"VXLAN_TUNNEL|vtep1":                      {"src_ip", "10.1.0.1", "dst_ip", "10.1.0.2"},
		"VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100": {"vlan", "Vlan100", "vni", "1000"},
		"VLAN|Vlan100":                            {"vlanid", "100"},
		"VXLAN_TUNNEL|vtep2":                      {"src_ip", "10.1.0.1", "dst_ip", "2001:db8::2"},
		"VXLAN_TUNNEL_MAP|vtep1|bad":              {"vlan", "Vlan100", "vni", "0"},
		"VXLAN_REMOTE_VNI|Vlan100|10.1.0.3":       {"vni", "1000"},
		"VXLAN_REMOTE_VNI|Vlan100|10.1.0.4":       {"vni", "2000"},
		"VXLAN_REMOTE_VNI|Vlan100|10.1.0.04":      {"vni", "1000"},
	}
	for k, kv := range keys {
		e.HSet(k, kv...)
	}
	e.WaitOK("VXLAN_TUNNEL|vtep1")
	e.WaitState("VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", "pending", "waiting for VLAN|Vlan100")
	e.WaitState("VXLAN_TUNNEL|vtep2", "error", "dst_ip is not of src_ip's address family")
	e.WaitState("VXLAN_TUNNEL_MAP|vtep1|bad", "error", `field "vni": "0" is not valid: want an integer 1-16777215`)
	e.WaitState("VXLAN_REMOTE_VNI|Vlan100|10.1.0.3", "pending", "waiting for VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100")
	e.WaitState("VXLAN_REMOTE_VNI|Vlan100|10.1.0.4", "pending",
		"waiting for a VXLAN_TUNNEL_MAP mapping Vlan100 to vni 2000 (VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100 maps it to vni 1000)")
	e.WaitState("VXLAN_REMOTE_VNI|Vlan100|10.1.0.04", "error", `"10.1.0.04" is not an IP address`)
	delAll(e, slices.Collect(maps.Keys(keys))...)
	if after := linkNames(t, e.NS); !slices.Equal(before, after) {
		t.Fatalf("links changed:\nbefore %q\nafter  %q", before, after)
	}
}

// vxlanSwitch configures one switch: a host port in Vlan100, a routed
// underlay port towards the router, Loopback0 as the VTEP and a static
// route to the other VTEP, and the tunnel with its map.
func vxlanSwitch(e *e2eutil.Switch, underlay, gw, lo, remote string) []string {
	cfg := [][]string{
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet8", "admin_status", "up"},
		{"INTERFACE|Ethernet8|" + underlay},
		{"LOOPBACK_INTERFACE|Loopback0"}, {"LOOPBACK_INTERFACE|Loopback0|" + lo + "/32"},
		{"STATIC_ROUTE|" + remote + "/32", "nexthop", gw},
		{"VLAN|Vlan100", "vlanid", "100"}, {"VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged"},
		{"VXLAN_TUNNEL|vtep1", "src_ip", lo, "dst_ip", remote},
		{"VXLAN_TUNNEL_MAP|vtep1|map_1000_Vlan100", "vlan", "Vlan100", "vni", "1000"},
	}
	var keys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		keys = append(keys, c[0])
	}
	return keys
}

// Two switch namespaces, each with its own redis-server and orchagent,
// joined by a VXLAN tunnel between their loopbacks over a routed underlay
// (a router namespace between them): hosts in Vlan100 on both sides ping
// each other, and each switch's Bridge has learned the remote host's MAC
// behind its vxlan device, with the remote VTEP as its destination.
func TestVMVxlanTwoSwitches(t *testing.T) {
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering, kernelcap.Dummy)
	e1, e2 := e2eutil.NewSwitch(t), e2eutil.NewSwitch(t)
	r := testns.New(t)
	e2eutil.Sysctl(t, r, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	e1.NS.Veth("Ethernet8", r, "eth1")
	e2.NS.Veth("Ethernet8", r, "eth2")
	r.IP("addr", "add", "10.10.1.2/24", "dev", "eth1")
	r.IP("addr", "add", "10.10.2.2/24", "dev", "eth2")
	r.IP("route", "add", "10.1.0.1/32", "via", "10.10.1.1")
	r.IP("route", "add", "10.1.0.2/32", "via", "10.10.2.1")
	h1, h2 := testns.New(t), testns.New(t)
	e1.NS.Veth("Ethernet0", h1, "eth1")
	e2.NS.Veth("Ethernet0", h2, "eth1")
	h1.IP("addr", "add", "10.100.0.1/24", "dev", "eth1")
	h2.IP("addr", "add", "10.100.0.2/24", "dev", "eth1")
	before := linkNames(t, e1.NS)
	e1.Start("orchagent", "--log-level", "debug")
	e2.Start("orchagent", "--log-level", "debug")
	k1 := vxlanSwitch(e1, "10.10.1.1/24", "10.10.1.2", "10.1.0.1", "10.1.0.2")
	k2 := vxlanSwitch(e2, "10.10.2.1/24", "10.10.2.2", "10.1.0.2", "10.1.0.1")
	e1.WaitOK(k1...)
	e2.WaitOK(k2...)
	var links []struct {
		LinkInfo struct {
			Kind string `json:"info_kind"`
			Data struct {
				ID       int    `json:"id"`
				Local    string `json:"local"`
				Remote   string `json:"remote"`
				Port     int    `json:"port"`
				Learning bool   `json:"learning"`
			} `json:"info_data"`
		} `json:"linkinfo"`
		Master string `json:"master"`
	}
	e1.NS.JSON(&links, "-d", "link", "show", "dev", "vtep1-100")
	if d := links[0]; d.LinkInfo.Kind != "vxlan" || d.LinkInfo.Data.ID != 1000 || d.LinkInfo.Data.Local != "10.1.0.1" ||
		d.LinkInfo.Data.Remote != "10.1.0.2" || d.LinkInfo.Data.Port != 4789 || !d.LinkInfo.Data.Learning || d.Master != "Bridge" {
		t.Fatalf("vtep1-100 on sw1: %+v", d)
	}
	e2eutil.WaitReachable(t, h1, "10.100.0.2")
	e2eutil.WaitReachable(t, h2, "10.100.0.1")

	// sw1's Bridge learned h2's MAC behind the tunnel, towards 10.1.0.2.
	var hl []struct {
		Address string `json:"address"`
	}
	h2.JSON(&hl, "link", "show", "dev", "eth1")
	mac := hl[0].Address
	e1.Eventually("h2's MAC learned behind vtep1-100 on sw1", func() (bool, string) {
		var fdb []struct {
			MAC    string `json:"mac"`
			Vlan   int    `json:"vlan"`
			Master string `json:"master"`
			Dst    string `json:"dst"`
		}
		e1.NS.JSON(&fdb, "bridge", "fdb", "show", "dev", "vtep1-100")
		bridged, remote := false, false
		for _, f := range fdb {
			if f.MAC != mac {
				continue
			}
			bridged = bridged || (f.Master == "Bridge" && f.Vlan == 100)
			remote = remote || f.Dst == "10.1.0.2"
		}
		return bridged && remote, fmt.Sprintf("%s in %+v", mac, fdb)
	})

	// Deleting sw1's keys: its links are as before (Bridge stays).
	delAll(e1, k1...)
	e1.Eventually("sw1's links as before (Bridge stays)", func() (bool, string) {
		after := slices.DeleteFunc(linkNames(t, e1.NS), func(l string) bool { return strings.HasPrefix(l, "Bridge ") })
		return slices.Equal(before, after), fmt.Sprintf("before %q after %q", before, after)
	})
}
