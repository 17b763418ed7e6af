package orchagente2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// The TestVLAN* tests need 802.1Q devices and bridge VLAN filtering: on
// the host kernel they skip, in the VM suite (tests/vm/suite.txt) they run.

func requireVLAN(t testing.TB) {
	t.Helper()
	kernelcap.Require(t, kernelcap.VLAN8021Q, kernelcap.VlanFiltering)
}

// vlanHost wires a host namespace to switch port; with tagged, the host
// talks through eth1.VID (a VLAN subinterface in its own namespace).
func vlanHost(t *testing.T, sw *testns.NS, port string, vid int, tagged bool, addrs ...string) *testns.NS {
	t.Helper()
	h := testns.New(t)
	sw.Veth(port, h, "eth1")
	dev := "eth1"
	if tagged {
		dev = fmt.Sprintf("eth1.%d", vid)
		h.IP("link", "add", "link", "eth1", "name", dev, "type", "vlan", "id", fmt.Sprint(vid))
		h.IP("link", "set", dev, "up")
	}
	for _, a := range addrs {
		h.IP("addr", "add", a, "dev", dev)
	}
	return h
}

func TestVLANUntaggedTaggedTraffic(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	h1 := vlanHost(t, e.NS, "Ethernet0", 100, false, "10.100.0.2/24")
	h2 := vlanHost(t, e.NS, "Ethernet4", 100, true, "10.100.0.3/24")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged") // before its VLAN: waits
	e.WaitState("VLAN_MEMBER|Vlan100|Ethernet0", "pending", "waiting for VLAN|Vlan100")
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet4", "tagging_mode", "tagged")
	e.WaitOK("VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet0", "VLAN_MEMBER|Vlan100|Ethernet4")

	var br []struct {
		LinkInfo struct {
			InfoData struct {
				VlanFiltering int `json:"vlan_filtering"`
			} `json:"info_data"`
		} `json:"linkinfo"`
	}
	e.NS.JSON(&br, "-d", "link", "show", "dev", "Bridge")
	if len(br) != 1 || br[0].LinkInfo.InfoData.VlanFiltering != 1 {
		t.Fatalf("Bridge without vlan_filtering 1: %+v", br)
	}
	v := e2eutil.BridgeVlans(e.NS)
	if f, ok := v["Ethernet0"][100]; !ok || !slices.Contains(f, "PVID") || !slices.Contains(f, "Egress Untagged") {
		t.Fatalf("Ethernet0 vlans = %v, want 100 PVID Egress Untagged", v["Ethernet0"])
	}
	if f, ok := v["Ethernet4"][100]; !ok || len(f) != 0 {
		t.Fatalf("Ethernet4 vlans = %v, want 100 tagged", v["Ethernet4"])
	}
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		if _, ok := v[p][1]; ok {
			t.Fatalf("%s keeps vid 1: %v", p, v[p])
		}
	}
	e2eutil.WaitReachable(t, h1, "10.100.0.3")
	e2eutil.WaitReachable(t, h2, "10.100.0.2")

	// Drift: member vid removed, VLAN device deleted → both restored.
	e.NS.Bridge("vlan", "del", "dev", "Ethernet4", "vid", "100")
	e.NS.IP("link", "del", "Vlan100")
	e.Eventually("vid and Vlan100 restored", func() (bool, string) {
		_, vlanDev := e2eutil.Link(e.NS, "Vlan100")
		_, vid := e2eutil.BridgeVlans(e.NS)["Ethernet4"][100]
		return vlanDev && vid, fmt.Sprintf("Vlan100 %v, Ethernet4 vid 100 %v", vlanDev, vid)
	})
	e2eutil.WaitReachable(t, h1, "10.100.0.3")
}

func TestVLANIsolationAndRouting(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	e2eutil.Sysctl(t, e.NS, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	h1 := vlanHost(t, e.NS, "Ethernet0", 100, false, "10.100.0.2/24", "10.99.0.1/24")
	h2 := vlanHost(t, e.NS, "Ethernet4", 200, false, "10.200.0.2/24", "10.99.0.2/24")
	vlanHost(t, e.NS, "Ethernet8", 100, true, "10.99.0.3/24")
	h1.IP("route", "add", "10.200.0.0/24", "via", "10.100.0.1")
	h2.IP("route", "add", "10.100.0.0/24", "via", "10.200.0.1")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	keys := []string{"VLAN|Vlan100", "VLAN|Vlan200", "VLAN_MEMBER|Vlan100|Ethernet0",
		"VLAN_MEMBER|Vlan200|Ethernet4", "VLAN_MEMBER|Vlan100|Ethernet8"}
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN|Vlan200", "vlanid", "200")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.HSet("VLAN_MEMBER|Vlan200|Ethernet4", "tagging_mode", "untagged")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet8", "tagging_mode", "tagged")
	e.WaitOK(keys...)
	e2eutil.WaitReachable(t, h1, "10.99.0.3") // same VLAN
	if ok, out := e2eutil.Reachable(h1, "10.99.0.2"); ok {
		t.Fatalf("h1 (Vlan100) reached h2 (Vlan200) at layer 2:\n%s", out)
	}
	if ok, _ := e2eutil.Reachable(h1, "10.200.0.2"); ok {
		t.Fatal("routed between VLANs with no VLAN_INTERFACE")
	}
	e.HSet("VLAN_INTERFACE|Vlan100|10.100.0.1/24")
	e.HSet("VLAN_INTERFACE|Vlan200|10.200.0.1/24")
	e.WaitOK("VLAN_INTERFACE|Vlan100|10.100.0.1/24", "VLAN_INTERFACE|Vlan200|10.200.0.1/24")
	e2eutil.WaitReachable(t, h1, "10.200.0.2")
	if ok, out := e2eutil.Reachable(h1, "10.99.0.2"); ok {
		t.Fatalf("VLANs leak at layer 2 once routed:\n%s", out)
	}
}

func TestVLANFdbStatic(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	vlanHost(t, e.NS, "Ethernet0", 100, false)
	vlanHost(t, e.NS, "Ethernet4", 100, true)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	const mac = "02:00:00:00:aa:01"
	e.HSet("FDB|Vlan100|"+mac, "port", "Ethernet4")
	e.WaitState("FDB|Vlan100|"+mac, "pending", "waiting for VLAN_MEMBER|Vlan100|Ethernet4")
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet4", "tagging_mode", "tagged")
	e.WaitOK("VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet4", "FDB|Vlan100|"+mac)
	has := func() (bool, string) {
		var fdb []struct {
			MAC    string `json:"mac"`
			Ifname string `json:"ifname"`
			Vlan   int    `json:"vlan"`
			State  string `json:"state"`
		}
		e.NS.JSON(&fdb, "bridge", "fdb", "show", "br", "Bridge")
		for _, f := range fdb {
			if f.MAC == mac && f.Ifname == "Ethernet4" && f.Vlan == 100 && f.State == "static" {
				return true, ""
			}
		}
		return false, fmt.Sprint(fdb)
	}
	if ok, why := has(); !ok {
		t.Fatalf("static fdb entry missing: %s", why)
	}
	// Moved to another port by hand: its RTM_NEWNEIGH is not the echo of
	// our write (OmitOwnFdbWrites drops only those), so it is put back.
	e.NS.Bridge("fdb", "replace", mac, "dev", "Ethernet0", "master", "static", "vlan", "100")
	e.Eventually("fdb entry moved by hand restored", has)
	e.NS.Bridge("fdb", "del", mac, "dev", "Ethernet4", "master", "vlan", "100")
	e.Eventually("fdb entry deleted by hand restored", has)
	e.Del("FDB|Vlan100|" + mac)
	e.WaitGone("FDB|Vlan100|" + mac)
	if ok, _ := has(); ok {
		t.Fatal("fdb entry left after its key was deleted")
	}
}

func TestVLANParentDeleteReadd(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	h1 := vlanHost(t, e.NS, "Ethernet0", 100, false, "10.100.0.2/24")
	vlanHost(t, e.NS, "Ethernet4", 100, true, "10.100.0.3/24")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	const mac = "02:00:00:00:aa:02"
	children := []string{"VLAN_MEMBER|Vlan100|Ethernet0", "VLAN_MEMBER|Vlan100|Ethernet4",
		"VLAN_INTERFACE|Vlan100|10.100.0.1/24", "FDB|Vlan100|" + mac}
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet4", "tagging_mode", "tagged")
	e.HSet("VLAN_INTERFACE|Vlan100|10.100.0.1/24")
	e.HSet("FDB|Vlan100|"+mac, "port", "Ethernet0")
	e.WaitOK(append([]string{"VLAN|Vlan100"}, children...)...)
	e2eutil.WaitReachable(t, h1, "10.100.0.1")

	e.Del("VLAN|Vlan100")
	e.WaitGone("VLAN|Vlan100")
	e.WaitState("VLAN_MEMBER|Vlan100|Ethernet0", "pending", "waiting for VLAN|Vlan100")
	e.WaitState("VLAN_INTERFACE|Vlan100|10.100.0.1/24", "pending", "waiting for VLAN|Vlan100")
	e.WaitState("FDB|Vlan100|"+mac, "pending", "waiting for VLAN_MEMBER|Vlan100|Ethernet0")
	if _, ok := e2eutil.Link(e.NS, "Vlan100"); ok {
		t.Fatal("Vlan100 still exists after its VLAN key was deleted")
	}
	e.Eventually("members out of VLAN 100", func() (bool, string) {
		v := e2eutil.BridgeVlans(e.NS)
		_, a := v["Ethernet0"][100]
		_, b := v["Ethernet4"][100]
		return !a && !b, fmt.Sprint(v)
	})

	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.WaitOK(append([]string{"VLAN|Vlan100"}, children...)...)
	e2eutil.WaitReachable(t, h1, "10.100.0.1")
	e2eutil.WaitReachable(t, h1, "10.100.0.3")
}

// VLAN config deleted while orchagent was down: VlanN, Bridge's vid and
// the member go once CONFIG_DB_INITIALIZED is 1, not before; Bridge and the
// port stay.
func TestVLANSweepAfterRestart(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	vlanHost(t, e.NS, "Ethernet0", 200, false)
	vlanHost(t, e.NS, "Ethernet4", 100, false)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet4", "tagging_mode", "untagged")
	e.HSet("VLAN|Vlan200", "vlanid", "200")
	e.HSet("VLAN_MEMBER|Vlan200|Ethernet0", "tagging_mode", "untagged")
	e.WaitOK("VLAN|Vlan100", "VLAN|Vlan200", "VLAN_MEMBER|Vlan200|Ethernet0", "VLAN_MEMBER|Vlan100|Ethernet4")

	e.Procs["orchagent"].Kill()
	e.Del("CONFIG_DB_INITIALIZED")
	e.Del("VLAN|Vlan200", "VLAN_MEMBER|Vlan200|Ethernet0")
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("PORT|Ethernet96", "mtu", "1400") // a marker: the new process is reconciling
	e.WaitState("PORT|Ethernet96", "pending", "waiting for netdev")
	if _, ok := e2eutil.Link(e.NS, "Vlan200"); !ok {
		t.Fatal("Vlan200 swept before CONFIG_DB_INITIALIZED")
	}
	e.SetInitialized()
	e.Eventually("stale VLAN 200 swept", func() (bool, string) {
		_, dev := e2eutil.Link(e.NS, "Vlan200")
		v := e2eutil.BridgeVlans(e.NS)
		_, self := v["Bridge"][200]
		_, member := v["Ethernet0"][200]
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return !dev && !self && !member && l.Master == "", fmt.Sprintf("Vlan200 %v, self vid %v, member vid %v, master %q", dev, self, member, l.Master)
	})
	if _, ok := e2eutil.Link(e.NS, "Vlan100"); !ok {
		t.Fatal("configured Vlan100 swept")
	}
	if l, _ := e2eutil.Link(e.NS, "Ethernet4"); l.Master != "Bridge" {
		t.Fatal("configured member released")
	}
}
