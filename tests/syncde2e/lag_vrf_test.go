package syncde2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// judgeVrfRoutes lists the ROUTE_TABLE keys of VRF vrf from "ip -j route
// show table T": its unicast and blackhole routes, as "vrf:prefix" — not
// the kernel's local, broadcast, anycast and multicast routes the table
// holds too.
func judgeVrfRoutes(ns *testns.NS, vrf, table string) []string {
	var out []string
	for _, fam := range []string{"-4", "-6"} {
		var rs []struct {
			Dst  string `json:"dst"`
			Type string `json:"type"`
		}
		ns.JSON(&rs, fam, "route", "show", "table", table)
		for _, r := range rs {
			switch r.Type {
			case "local", "broadcast", "anycast", "multicast":
				continue
			}
			out = append(out, "ROUTE_TABLE|"+vrf+":"+canonPrefix(r.Dst, fam == "-6"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestVMLagAndVrfMirror runs syncd on a real bond in 802.3ad mode whose
// two ports go to a host's bond running LACP, and on a VRF holding the
// same prefix as the main table: LAG_TABLE and LAG_MEMBER_TABLE follow
// LACP selection, a member's link, min_links and membership; the VRF's
// routes appear as ROUTE_TABLE|Vrf_blue:prefix (not its local and
// broadcast routes) beside the main table's; bond, vrf, dummy and vxlan
// devices never appear in PORT_TABLE. Needs bonding, VRF and dummy (the
// VM); the host kernel skips.
func TestVMLagAndVrfMirror(t *testing.T) {
	testns.RequireRoot(t)
	kernelcap.Require(t, kernelcap.Bonding, kernelcap.VRF, kernelcap.Dummy)
	s := e2eutil.NewSwitch(t)
	h := testns.New(t)
	e2eutil.DisableIPv6(t, h)
	s.NS.Veth("Ethernet0", h, "eth1")
	s.NS.Veth("Ethernet4", h, "eth2")
	h.IP("link", "add", "bond0", "type", "bond", "mode", "802.3ad", "lacp_rate", "fast", "miimon", "100")
	for _, p := range []string{"eth1", "eth2"} {
		h.IP("link", "set", p, "down")
		h.IP("link", "set", p, "master", "bond0")
	}
	h.IP("link", "set", "bond0", "up")
	h.IP("addr", "add", "10.0.0.2/24", "dev", "bond0")

	s.NS.IP("link", "add", "PortChannel01", "type", "bond", "mode", "802.3ad", "lacp_rate", "fast",
		"miimon", "100", "min_links", "1")
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		s.NS.IP("link", "set", p, "down")
		s.NS.IP("link", "set", p, "master", "PortChannel01")
	}
	s.NS.IP("link", "set", "PortChannel01", "up")
	s.NS.IP("addr", "add", "10.0.0.1/24", "dev", "PortChannel01")

	// Vrf_blue with the same 10.0.0.0/24 on Ethernet8, and a static route.
	h2 := s.Host("Ethernet8", "eth0")
	h2.IP("addr", "add", "10.0.0.2/24", "dev", "eth0")
	s.NS.IP("link", "add", "Vrf_blue", "type", "vrf", "table", "1001")
	s.NS.IP("link", "set", "Vrf_blue", "up")
	s.NS.IP("link", "set", "Ethernet8", "master", "Vrf_blue")
	s.NS.IP("link", "set", "Ethernet8", "up")
	s.NS.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet8")
	s.NS.IP("route", "add", "10.9.0.0/16", "via", "10.0.0.2", "vrf", "Vrf_blue")
	s.NS.IP("link", "add", "Loopback0", "type", "dummy")
	s.NS.IP("link", "set", "Loopback0", "up")
	s.NS.IP("link", "add", "vtep1-100", "type", "vxlan", "id", "1000", "dstport", "4789", "local", "10.0.0.1")

	for _, p := range []string{"Ethernet0", "Ethernet4", "Ethernet8"} {
		s.HSet("PORT|"+p, "admin_status", "up")
	}
	s.Start("syncd", "--counters-interval", "200ms")

	s.WaitHash(s.State, "LAG_TABLE|PortChannel01", map[string]string{"admin_status": "up", "oper_status": "up",
		"mtu": "1500", "min_links": "1", "state": "ok"})
	s.Eventually("both members enabled", func() (bool, string) {
		a := e2eutil.HGetAll(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet0")["status"]
		b := e2eutil.HGetAll(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4")["status"]
		return a == "enabled" && b == "enabled", a + " " + b
	})
	if got, want := e2eutil.Keys(s.State, "PORT_TABLE|*"), []string{"PORT_TABLE|Ethernet0", "PORT_TABLE|Ethernet4", "PORT_TABLE|Ethernet8"}; !slices.Equal(got, want) {
		t.Errorf("PORT_TABLE keys = %v, want only the CONFIG_DB ports %v", got, want)
	}
	e2eutil.Ping(t, h, "10.0.0.1", 2)

	// Routes: the same prefix in main (PortChannel01) and Vrf_blue (Ethernet8).
	s.WaitHash(s.State, "ROUTE_TABLE|10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0", "ifname": "PortChannel01", "protocol": "kernel"})
	s.WaitHash(s.State, "ROUTE_TABLE|Vrf_blue:10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0", "ifname": "Ethernet8", "protocol": "kernel"})
	s.WaitHash(s.State, "ROUTE_TABLE|Vrf_blue:10.9.0.0/16", map[string]string{"nexthop": "10.0.0.2", "ifname": "Ethernet8", "protocol": "boot"})
	s.Eventually("Vrf_blue's keys are its table's routes", func() (bool, string) {
		got, want := e2eutil.Keys(s.State, "ROUTE_TABLE|Vrf_blue:*"), judgeVrfRoutes(s.NS, "Vrf_blue", "1001")
		return slices.Equal(got, want), fmt.Sprintf("STATE_DB %v, kernel %v", got, want)
	})

	// One member's link down: deselected; the PortChannel stays up.
	h.IP("link", "set", "eth2", "down")
	s.WaitField(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", "status", "disabled")
	s.WaitField(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet0", "status", "enabled")
	s.WaitField(s.State, "LAG_TABLE|PortChannel01", "oper_status", "up")
	// min_links 2 with one member: down.
	s.NS.IP("link", "set", "PortChannel01", "type", "bond", "min_links", "2")
	s.WaitField(s.State, "LAG_TABLE|PortChannel01", "min_links", "2")
	s.WaitField(s.State, "LAG_TABLE|PortChannel01", "oper_status", "down")
	h.IP("link", "set", "eth2", "up")
	s.WaitField(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4", "status", "enabled")
	s.WaitField(s.State, "LAG_TABLE|PortChannel01", "oper_status", "up")

	// A port leaving the bond loses its member key.
	s.NS.IP("link", "set", "Ethernet4", "nomaster")
	s.Eventually("Ethernet4's member key gone", func() (bool, string) {
		got := e2eutil.HGetAll(s.State, "LAG_MEMBER_TABLE|PortChannel01|Ethernet4")
		return len(got) == 0, fmt.Sprint(got)
	})

	// The VRF goes: its routes go; the bond goes.
	s.NS.IP("link", "del", "Vrf_blue")
	s.Eventually("Vrf_blue's routes gone", func() (bool, string) {
		got := e2eutil.Keys(s.State, "ROUTE_TABLE|Vrf_blue:*")
		return len(got) == 0, fmt.Sprint(got)
	})
	// Ethernet8, back in the default VRF with its address, adds its
	// connected route to main's: two paths of one prefix.
	s.WaitHash(s.State, "ROUTE_TABLE|10.0.0.0/24", map[string]string{"nexthop": "0.0.0.0,0.0.0.0", "ifname": "Ethernet8,PortChannel01"})
	s.NS.IP("link", "del", "PortChannel01")
	s.Eventually("LAG keys gone", func() (bool, string) {
		got := e2eutil.Keys(s.State, "LAG_*")
		return len(got) == 0, fmt.Sprint(got)
	})
}
