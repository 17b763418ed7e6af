package orchagente2e

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// PORTCHANNEL: a bond in 802.3ad mode. The host kernel has no bonding:
// TestPortChannelMissingKernelFeature checks the error there;
// TestVMPortChannelLACP runs LACP against a host's bond in the VM.

// bondPort is what "ip -d -j link show" says of a bond or its port.
type bondPort struct {
	Name      string `json:"ifname"`
	OperState string `json:"operstate"`
	Master    string `json:"master"`
	LinkInfo  struct {
		Kind string `json:"info_kind"`
		Data struct {
			Mode     string `json:"mode"`
			MinLinks int    `json:"min_links"`
			LacpRate string `json:"ad_lacp_rate"`
			AdInfo   struct {
				Aggregator int `json:"aggregator"`
			} `json:"ad_info"`
		} `json:"info_data"`
		SlaveData struct {
			Aggregator int `json:"ad_aggregator_id"`
			ActorState int `json:"ad_actor_oper_port_state"`
		} `json:"info_slave_data"`
	} `json:"linkinfo"`
}

func bondLink(t testing.TB, ns *testns.NS, name string) bondPort {
	t.Helper()
	var ls []bondPort
	ns.JSON(&ls, "-d", "link", "show", "dev", name)
	if len(ls) != 1 {
		t.Fatalf("ip -d link show dev %s: %+v", name, ls)
	}
	return ls[0]
}

// selected reports whether port is in bond's active aggregator, collecting
// and distributing (LACP state bits 0x10 and 0x20).
func selected(t testing.TB, ns *testns.NS, bond, port string) (bool, string) {
	b, p := bondLink(t, ns, bond), bondLink(t, ns, port)
	agg, st := p.LinkInfo.SlaveData.Aggregator, p.LinkInfo.SlaveData.ActorState
	ok := b.LinkInfo.Data.AdInfo.Aggregator != 0 && agg == b.LinkInfo.Data.AdInfo.Aggregator && st&0x30 == 0x30
	return ok, fmt.Sprintf("%s: aggregator %d (bond's active %d), actor state %#x", port, agg, b.LinkInfo.Data.AdInfo.Aggregator, st)
}

// On a kernel without bonding (the host's): the PortChannel is an error
// naming the missing feature, its member and interface wait, bad input is
// an error, and the kernel's links stay as they were.
func TestPortChannelMissingKernelFeature(t *testing.T) {
	testns.RequireRoot(t)
	if ok, _ := kernelcap.Has(kernelcap.Bonding); ok {
		t.Skip("this kernel has bonding: nothing is missing (TestVMPortChannelLACP runs here)")
	}
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	keys := map[string][]string{
		"PORTCHANNEL|PortChannel01":                       {"admin_status", "up", "min_links", "1"},
		"PORTCHANNEL_MEMBER|PortChannel01|Ethernet0":      nil,
		"PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/31": nil,
		"PORTCHANNEL|PortChannel02":                       {"min_links", "0"},
		"PORTCHANNEL|Po3":                                 {"admin_status", "up"},
		"PORTCHANNEL|PortChannel04":                       {"static", "true"},
	}
	for k, kv := range keys {
		e.HSet(k, kv...)
	}
	e.WaitState("PORTCHANNEL|PortChannel01", "error", "kernel lacks bonding")
	e.WaitState("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", "pending", "waiting for PORTCHANNEL|PortChannel01")
	e.WaitState("PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/31", "pending", "waiting for PORTCHANNEL|PortChannel01")
	e.WaitState("PORTCHANNEL|PortChannel02", "error", `field "min_links": "0" is not valid: want an integer 1-1024`)
	e.WaitState("PORTCHANNEL|Po3", "error", `"Po3" is not a PortChannel name`)
	e.WaitState("PORTCHANNEL|PortChannel04", "error", "static PortChannels (no LACP) are not supported")
	delAll(e, slices.Collect(maps.Keys(keys))...)
	if after := linkNames(t, e.NS); !slices.Equal(before, after) {
		t.Fatalf("links changed:\nbefore %q\nafter  %q", before, after)
	}
}

// A PortChannel of two ports to a host whose bond runs LACP too: both
// ports are selected and traffic flows; one member's link down deselects
// it and traffic keeps flowing; min_links 2 takes the PortChannel down;
// the PortChannel as a tagged VLAN member carries the VLAN; deleting every
// key leaves the links as before.
func TestVMPortChannelLACP(t *testing.T) {
	kernelcap.Require(t, kernelcap.Bonding)
	e := e2eutil.NewSwitch(t)
	h := testns.New(t)
	e.NS.Veth("Ethernet0", h, "eth1")
	e.NS.Veth("Ethernet4", h, "eth2")
	h.IP("link", "add", "bond0", "type", "bond", "mode", "802.3ad", "lacp_rate", "fast", "miimon", "100")
	for _, p := range []string{"eth1", "eth2"} {
		h.IP("link", "set", p, "down")
		h.IP("link", "set", p, "master", "bond0")
	}
	h.IP("link", "set", "bond0", "up")
	h.IP("addr", "add", "10.0.0.2/24", "dev", "bond0")
	before := linkNames(t, e.NS)
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	pc := []string{"admin_status", "up", "mtu", "9100", "min_links", "1", "fast_rate", "true", "lacp_key", "auto"}
	cfg := [][]string{
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet4", "admin_status", "up"},
		append([]string{"PORTCHANNEL|PortChannel01"}, pc...),
		{"PORTCHANNEL_MEMBER|PortChannel01|Ethernet0"}, {"PORTCHANNEL_MEMBER|PortChannel01|Ethernet4"},
		{"PORTCHANNEL_INTERFACE|PortChannel01"}, {"PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/24"},
	}
	var keys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		keys = append(keys, c[0])
	}
	e.WaitOK(keys...)
	b := bondLink(t, e.NS, "PortChannel01")
	if b.LinkInfo.Kind != "bond" || b.LinkInfo.Data.Mode != "802.3ad" || b.LinkInfo.Data.LacpRate != "fast" {
		t.Fatalf("PortChannel01: %+v", b.LinkInfo)
	}
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		e.Eventually(p+" selected by LACP", func() (bool, string) { return selected(t, e.NS, "PortChannel01", p) })
	}
	e2eutil.WaitReachable(t, h, "10.0.0.1")

	// One member's link down: deselected, traffic keeps flowing.
	h.IP("link", "set", "eth2", "down")
	e.Eventually("Ethernet4 deselected", func() (bool, string) {
		ok, why := selected(t, e.NS, "PortChannel01", "Ethernet4")
		return !ok, why
	})
	if ok, why := selected(t, e.NS, "PortChannel01", "Ethernet0"); !ok {
		t.Fatalf("the remaining member is not selected: %s", why)
	}
	e2eutil.WaitReachable(t, h, "10.0.0.1")

	// min_links 2 with one member up: the PortChannel goes down.
	e.HSet("PORTCHANNEL|PortChannel01", append(pc[:4:4], "min_links", "2", "fast_rate", "true")...)
	e.Eventually("PortChannel01 down with min_links 2", func() (bool, string) {
		b := bondLink(t, e.NS, "PortChannel01")
		return b.OperState != "UP" && b.LinkInfo.Data.MinLinks == 2, b.OperState
	})
	h.IP("link", "set", "eth2", "up")
	e.Eventually("PortChannel01 up with both members", func() (bool, string) {
		b := bondLink(t, e.NS, "PortChannel01")
		return b.OperState == "UP", b.OperState
	})
	e2eutil.WaitReachable(t, h, "10.0.0.1")

	// The PortChannel as a tagged member of Vlan100.
	if ok, _ := kernelcap.Has(kernelcap.VLAN8021Q); ok {
		e.Del("PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/24")
		h.IP("link", "add", "link", "bond0", "name", "bond0.100", "type", "vlan", "id", "100")
		h.IP("addr", "add", "10.100.0.2/24", "dev", "bond0.100")
		h.IP("link", "set", "bond0.100", "up")
		vlan := [][]string{{"VLAN|Vlan100", "vlanid", "100"}, {"VLAN_MEMBER|Vlan100|PortChannel01", "tagging_mode", "tagged"},
			{"VLAN_INTERFACE|Vlan100|10.100.0.1/24"}}
		for _, c := range vlan {
			e.HSet(c[0], c[1:]...)
			keys = append(keys, c[0])
		}
		e.WaitOK("VLAN|Vlan100", "VLAN_MEMBER|Vlan100|PortChannel01", "VLAN_INTERFACE|Vlan100|10.100.0.1/24")
		e2eutil.WaitReachable(t, h, "10.100.0.1")
	}

	delAll(e, keys...)
	e.Eventually("links as before (Bridge stays: it is never deleted)", func() (bool, string) {
		after := slices.DeleteFunc(linkNames(t, e.NS), func(l string) bool { return l == "Bridge bridge " })
		return slices.Equal(before, after), fmt.Sprintf("before %q after %q", before, after)
	})
}

// TestVMPortChannelMemberImpaired: impaird impairs a PortChannel's member
// ports (XDP on each bond slave, under LACP): a 100% rule for UDP 9001 on
// both members drops every such datagram arriving over the PortChannel,
// other traffic (LACPDUs, UDP 9002) passes, and deleting the rules lets
// 9001 through again.
func TestVMPortChannelMemberImpaired(t *testing.T) {
	kernelcap.Require(t, kernelcap.Bonding)
	e := e2eutil.NewSwitch(t)
	h := testns.New(t)
	e.NS.Veth("Ethernet0", h, "eth1")
	e.NS.Veth("Ethernet4", h, "eth2")
	h.IP("link", "add", "bond0", "type", "bond", "mode", "802.3ad", "lacp_rate", "fast", "miimon", "100")
	for _, p := range []string{"eth1", "eth2"} {
		h.IP("link", "set", p, "down")
		h.IP("link", "set", p, "master", "bond0")
	}
	h.IP("link", "set", "bond0", "up")
	h.IP("addr", "add", "10.0.0.2/24", "dev", "bond0")
	e.Start("orchagent")
	e.Start("impaird")
	e.SetInitialized()
	cfg := [][]string{
		{"PORT|Ethernet0", "admin_status", "up"}, {"PORT|Ethernet4", "admin_status", "up"},
		{"PORTCHANNEL|PortChannel01", "admin_status", "up", "min_links", "1", "fast_rate", "true"},
		{"PORTCHANNEL_MEMBER|PortChannel01|Ethernet0"}, {"PORTCHANNEL_MEMBER|PortChannel01|Ethernet4"},
		{"PORTCHANNEL_INTERFACE|PortChannel01"}, {"PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/24"},
	}
	var keys []string
	for _, c := range cfg {
		e.HSet(c[0], c[1:]...)
		keys = append(keys, c[0])
	}
	e.WaitOK(keys...)
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		e.Eventually(p+" selected by LACP", func() (bool, string) { return selected(t, e.NS, "PortChannel01", p) })
	}
	e2eutil.WaitReachable(t, h, "10.0.0.1")

	r9001 := e2eutil.ListenUDP(t, e.NS, "10.0.0.1", 9001)
	r9002 := e2eutil.ListenUDP(t, e.NS, "10.0.0.1", 9002)
	through := func(r *e2eutil.UDPCounter, port, n int) int64 {
		before := r.Count()
		e2eutil.SendUDP(t, e2eutil.DialUDP(t, h, "10.0.0.1", port), n)
		return r.Settle() - before
	}
	var flows []string
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		k := "IMPAIRMENT_FLOW|" + p + "|block"
		e.HSet(k, "proto", "udp", "dport", "9001", "loss", "100")
		flows = append(flows, k)
	}
	e.WaitOK(flows...)
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		if id, _ := e2eutil.XDPProg(e.NS, p); id == 0 {
			t.Fatalf("no XDP program on member %s", p)
		}
	}
	if n := through(r9001, 9001, 200); n != 0 {
		t.Errorf("%d of 200 datagrams to UDP 9001 crossed the impaired members", n)
	}
	if n := through(r9002, 9002, 50); n == 0 {
		t.Errorf("UDP 9002 blocked too")
	}
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		if ok, why := selected(t, e.NS, "PortChannel01", p); !ok {
			t.Errorf("%s deselected while impaired (LACPDUs must pass): %s", p, why)
		}
	}
	for _, k := range flows {
		e.Del(k)
		e.WaitGone(k)
	}
	e.Eventually("UDP 9001 passes once the rules are gone", func() (bool, string) {
		n := through(r9001, 9001, 20)
		return n > 0, fmt.Sprintf("%d of 20", n)
	})
}
