package orchagente2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// Sharing the kernel (issue 13): switchyard changes or deletes only what
// it created and marked (routes and addresses with protocol 201); what
// anyone else made is a conflict it reports and never touches.

// kernelAddrs lists ns's addresses with their protocol (IFA_PROTO), which
// iproute2 6.1 does not print: read through netlinkmgr.
func kernelAddrs(t testing.TB, ns *testns.NS, link string) []netlinkmgr.AddrInfo {
	t.Helper()
	k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: ns.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	as, err := k.Addrs().List(link)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func addrProto(t testing.TB, ns *testns.NS, link, prefix string) (int, bool) {
	p := netip.MustParsePrefix(prefix)
	for _, a := range kernelAddrs(t, ns, link) {
		if a.Prefix == p {
			return a.Protocol, true
		}
	}
	return 0, false
}

// A route of another protocol with the same table, prefix and metric is a
// conflict: error naming its owner, theirs untouched (also by DEL), ours
// applied by itself once theirs goes. Another distance coexists.
func TestRouteConflictWithForeignRoute(t *testing.T) {
	boot := func(r e2eutil.IPRoute) bool { return r.Protocol == nil || r.Proto() == "boot" } // ip -j omits boot
	e, h1, _ := routed(t)
	e.NS.IP("route", "add", "10.77.0.0/16", "via", "10.0.2.2") // proto boot
	e.HSet("STATIC_ROUTE|10.77.0.0/16", "nexthop", "10.0.1.2")
	e.WaitState("STATIC_ROUTE|10.77.0.0/16", "error", "route 10.77.0.0/16 metric 0 exists with protocol boot; not replacing it")
	if rs := e2eutil.Routes(e.NS, "10.77.0.0/16"); len(rs) != 1 || !boot(rs[0]) || rs[0].Gateway != "10.0.2.2" {
		t.Fatalf("foreign route changed: %+v", rs)
	}
	e.Del("STATIC_ROUTE|10.77.0.0/16")
	e.WaitGone("STATIC_ROUTE|10.77.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.77.0.0/16"); len(rs) != 1 || !boot(rs[0]) {
		t.Fatalf("DEL of a key that never applied removed the foreign route: %+v", rs)
	}

	// Another metric coexists, as routing daemons do.
	e.HSet("STATIC_ROUTE|10.77.0.0/16", "nexthop", "10.0.1.2", "distance", "20")
	e.WaitOK("STATIC_ROUTE|10.77.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.77.0.0/16"); len(rs) != 2 {
		t.Fatalf("want the boot route and ours at metric 20: %+v", rs)
	}
	e.Del("STATIC_ROUTE|10.77.0.0/16")
	e.WaitGone("STATIC_ROUTE|10.77.0.0/16")
	e.Eventually("only our metric-20 route removed", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.77.0.0/16")
		return len(rs) == 1 && boot(rs[0]), fmt.Sprint(rs)
	})

	// The conflict goes: the key applies with no user action.
	e.HSet("STATIC_ROUTE|10.77.0.0/16", "nexthop", "10.0.1.2")
	e.WaitState("STATIC_ROUTE|10.77.0.0/16", "error", "exists with protocol boot")
	e.NS.IP("route", "del", "10.77.0.0/16", "proto", "boot")
	e.WaitOK("STATIC_ROUTE|10.77.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.77.0.0/16"); len(rs) != 1 || rs[0].Proto() != "201" || rs[0].Gateway != "10.0.1.2" {
		t.Fatalf("route after the conflict went: %+v", rs)
	}

	// A connected prefix: the kernel's own route stays, hosts stay reachable.
	e.HSet("STATIC_ROUTE|10.0.1.0/24", "nexthop", "10.0.2.2")
	e.WaitState("STATIC_ROUTE|10.0.1.0/24", "error", "route 10.0.1.0/24 metric 0 exists with protocol kernel; not replacing it")
	e.Del("STATIC_ROUTE|10.0.1.0/24")
	e.WaitGone("STATIC_ROUTE|10.0.1.0/24")
	if rs := e2eutil.Routes(e.NS, "10.0.1.0/24"); len(rs) != 1 || rs[0].Proto() != "kernel" || rs[0].Dev != "Ethernet0" {
		t.Fatalf("connected route changed: %+v", rs)
	}
	e2eutil.WaitReachable(t, h1, "10.0.2.2")
}

// A connected prefix whose route event orchagent never hears (the kernel
// drops the prefix routes of table main for it, OmitKernelPrefixRoutes):
// a STATIC_ROUTE to it is a conflict (the create meets it), and once the
// address goes, by hand or by a DEL of our INTERFACE key, the key
// applies with no user action.
func TestRouteConflictWithUnheardPrefixRoute(t *testing.T) {
	e, _, _ := routed(t)
	for _, ours := range []bool{false, true} {
		if ours {
			e.HSet("INTERFACE|Ethernet0|10.0.9.1/24")
			e.WaitOK("INTERFACE|Ethernet0|10.0.9.1/24")
		} else {
			e.NS.IP("addr", "add", "10.0.9.1/24", "dev", "Ethernet0")
		}
		e.HSet("STATIC_ROUTE|10.0.9.0/24", "nexthop", "10.0.2.2")
		e.WaitState("STATIC_ROUTE|10.0.9.0/24", "error", "route 10.0.9.0/24 metric 0 exists with protocol kernel; not replacing it")
		if ours {
			e.Del("INTERFACE|Ethernet0|10.0.9.1/24")
			e.WaitGone("INTERFACE|Ethernet0|10.0.9.1/24")
		} else {
			e.NS.IP("addr", "del", "10.0.9.1/24", "dev", "Ethernet0")
		}
		e.WaitOK("STATIC_ROUTE|10.0.9.0/24")
		if rs := e2eutil.Routes(e.NS, "10.0.9.0/24"); len(rs) != 1 || rs[0].Proto() != "201" || rs[0].Gateway != "10.0.2.2" {
			t.Fatalf("route after the address went (ours %v): %+v", ours, rs)
		}
		e.Del("STATIC_ROUTE|10.0.9.0/24")
		e.WaitGone("STATIC_ROUTE|10.0.9.0/24")
		e.Eventually("our route removed", func() (bool, string) {
			rs := e2eutil.Routes(e.NS, "10.0.9.0/24")
			return len(rs) == 0, fmt.Sprint(rs)
		})
	}
}

// A port set up gets its addresses' prefix routes back, whose events
// orchagent does not hear (OmitKernelPrefixRoutes): a route waiting for a
// connected route to its gateway applies once the port is up (on its link
// event, or on the IPv6 prefix routes' events, which still come: the unit
// test TestGatewayReachableWhenLinkUp checks the link event alone).
func TestGatewayReachableWhenPortUp(t *testing.T) {
	e, _, _ := routed(t)
	e.NS.IP("link", "set", "Ethernet4", "down")
	e.HSet("STATIC_ROUTE|10.66.0.0/16", "nexthop", "10.0.2.2")
	e.WaitState("STATIC_ROUTE|10.66.0.0/16", "pending", "waiting for a connected route to next hop 10.0.2.2")
	e.NS.IP("link", "set", "Ethernet4", "up")
	e.WaitOK("STATIC_ROUTE|10.66.0.0/16")
	if rs := e2eutil.Routes(e.NS, "10.66.0.0/16"); len(rs) != 1 || rs[0].Proto() != "201" || rs[0].Gateway != "10.0.2.2" {
		t.Fatalf("route after the port came up: %+v", rs)
	}
}

// An address added by hand is never replaced nor deleted: a key naming
// it is an error (also an invalid one), DEL leaves it, and the key
// applies once the hand-made address goes. Ours carry protocol 201, so a
// stale one is swept after a restart; a hand-made one never is.
func TestHandMadeAddressUntouched(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet2", peer, "eth1")
	e.NS.IP("addr", "add", "10.0.2.1/24", "dev", "Ethernet2")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()

	e.HSet("INTERFACE|Ethernet2|10.0.2.1/24", "bogus", "1")
	e.WaitState("INTERFACE|Ethernet2|10.0.2.1/24", "error", "")
	e.Del("INTERFACE|Ethernet2|10.0.2.1/24")
	e.WaitGone("INTERFACE|Ethernet2|10.0.2.1/24")
	if !slices.Contains(e2eutil.Addrs(e.NS, "Ethernet2"), "10.0.2.1/24") {
		t.Fatal("DEL of an invalid key removed the hand-made address")
	}

	e.HSet("INTERFACE|Ethernet2|10.0.2.1/24")
	e.WaitState("INTERFACE|Ethernet2|10.0.2.1/24", "error", "address 10.0.2.1/24 on Ethernet2 exists with protocol unspec")
	if p, ok := addrProto(t, e.NS, "Ethernet2", "10.0.2.1/24"); !ok || p != 0 {
		t.Fatalf("hand-made address re-marked: proto %d present %v", p, ok)
	}
	e.Del("INTERFACE|Ethernet2|10.0.2.1/24")
	e.WaitGone("INTERFACE|Ethernet2|10.0.2.1/24")
	if !slices.Contains(e2eutil.Addrs(e.NS, "Ethernet2"), "10.0.2.1/24") {
		t.Fatal("DEL of a conflicting key removed the hand-made address")
	}

	// The conflict goes: ours is added, marked 201.
	e.HSet("INTERFACE|Ethernet2|10.0.2.1/24")
	e.WaitState("INTERFACE|Ethernet2|10.0.2.1/24", "error", "exists with protocol unspec")
	e.NS.IP("addr", "del", "10.0.2.1/24", "dev", "Ethernet2")
	e.WaitOK("INTERFACE|Ethernet2|10.0.2.1/24")
	if p, ok := addrProto(t, e.NS, "Ethernet2", "10.0.2.1/24"); !ok || p != netlinkmgr.ProtoSwitchyard {
		t.Fatalf("our address: proto %d present %v", p, ok)
	}
	e.HSet("INTERFACE|Ethernet2|2001:db8:2::1/64")
	e.WaitOK("INTERFACE|Ethernet2|2001:db8:2::1/64")
	if p, ok := addrProto(t, e.NS, "Ethernet2", "2001:db8:2::1/64"); !ok || p != netlinkmgr.ProtoSwitchyard {
		t.Fatalf("our IPv6 address: proto %d present %v", p, ok)
	}

	// Sweep: config deleted while down removes ours, never a hand-made one.
	e.NS.IP("addr", "add", "10.0.3.1/24", "dev", "Ethernet2")
	e.Procs["orchagent"].Kill()
	e.Del("INTERFACE|Ethernet2|10.0.2.1/24", "INTERFACE|Ethernet2|2001:db8:2::1/64")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.Eventually("stale addresses of ours swept", func() (bool, string) {
		a := e2eutil.Addrs(e.NS, "Ethernet2")
		return !slices.Contains(a, "10.0.2.1/24") && !slices.Contains(a, "2001:db8:2::1/64"), fmt.Sprint(a)
	})
	if !slices.Contains(e2eutil.Addrs(e.NS, "Ethernet2"), "10.0.3.1/24") {
		t.Fatal("the sweep removed a hand-made address")
	}
}

// Next hops are checked against what can ever work: the switch's own
// address, a broadcast or loopback address is an error with a reason; a
// gateway the kernel refuses on a connected subnet is an error with the
// kernel's reason; pending only while something can appear.
func TestGatewayValidation(t *testing.T) {
	e, _, _ := routed(t)
	cases := []struct{ key, gw, reason string }{
		{"STATIC_ROUTE|10.60.0.0/16", "10.0.1.1", "next hop 10.0.1.1 is an address of this switch (on Ethernet0)"},
		{"STATIC_ROUTE|2001:db8:60::/48", "2001:db8:1::1", "next hop 2001:db8:1::1 is an address of this switch (on Ethernet0)"},
		{"STATIC_ROUTE|10.61.0.0/16", "10.0.1.255", "next hop 10.0.1.255 is the broadcast address of 10.0.1.0/24 on Ethernet0"},
		{"STATIC_ROUTE|10.62.0.0/16", "127.0.0.1", "next hop 127.0.0.1 is a loopback address"},
		{"STATIC_ROUTE|2001:db8:62::/48", "::1", "next hop ::1 is a loopback address"},
		{"STATIC_ROUTE|10.63.0.0/16", "10.0.3.2", "waiting for a connected route to next hop 10.0.3.2"},
	}
	for _, c := range cases {
		e.HSet(c.key, "nexthop", c.gw)
	}
	for _, c := range cases {
		state := "error"
		if strings.HasPrefix(c.reason, "waiting") {
			state = "pending"
		}
		e.WaitState(c.key, state, c.reason)
	}
	for _, dst := range []string{"10.60.0.0/16", "10.61.0.0/16", "10.62.0.0/16", "10.63.0.0/16"} {
		if rs := e2eutil.Routes(e.NS, dst); len(rs) != 0 {
			t.Fatalf("route %s installed: %+v", dst, rs)
		}
	}
	// The pending one applies once its subnet appears.
	e.HSet("INTERFACE|Ethernet4|10.0.3.1/24")
	e.WaitOK("INTERFACE|Ethernet4|10.0.3.1/24", "STATIC_ROUTE|10.63.0.0/16")

	// On a connected subnet but refused by the kernel (an extra
	// broadcast address made by hand in the local table): the kernel's
	// reason, as an error; applied once that goes.
	e.NS.IP("route", "add", "broadcast", "10.0.2.50", "dev", "Ethernet4", "table", "local", "scope", "link")
	e.HSet("STATIC_ROUTE|10.64.0.0/16", "nexthop", "10.0.2.50")
	e.WaitState("STATIC_ROUTE|10.64.0.0/16", "error",
		"the kernel refuses next hop 10.0.2.50 (on Ethernet4, subnet 10.0.2.0/24): replace route 10.64.0.0/16 table 254: Nexthop has invalid gateway")
	e.NS.IP("route", "del", "broadcast", "10.0.2.50", "dev", "Ethernet4", "table", "local")
	e.WaitOK("STATIC_ROUTE|10.64.0.0/16")
}

// Issue 11: an IPv4 route naming only an interface (kernel scope link) is
// removed by DEL and by the sweep.
func TestInterfaceOnlyRouteDeleted(t *testing.T) {
	e, _, _ := routed(t)
	e.HSet("STATIC_ROUTE|1.2.3.7/32", "ifname", "Ethernet0")
	e.HSet("STATIC_ROUTE|1.2.3.8/32", "ifname", "Ethernet0")
	e.WaitOK("STATIC_ROUTE|1.2.3.7/32", "STATIC_ROUTE|1.2.3.8/32")
	e.Del("STATIC_ROUTE|1.2.3.7/32")
	e.WaitGone("STATIC_ROUTE|1.2.3.7/32")
	if rs := e2eutil.Routes(e.NS, "1.2.3.7/32"); len(rs) != 0 {
		t.Fatalf("interface route left after DEL: %+v", rs)
	}
	e.Procs["orchagent"].Kill()
	e.Del("STATIC_ROUTE|1.2.3.8/32")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.Eventually("interface route swept", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "1.2.3.8/32")
		return len(rs) == 0, fmt.Sprint(rs)
	})
}

// foreignSnap is every object switchyard does not own, as iproute2 JSON
// keyed by identity: links, addresses not in ours, main-table routes
// except protocol 201 and the kernel's connected routes of our subnets.
func foreignSnap(t testing.TB, ns *testns.NS, ours []string) map[string]string {
	t.Helper()
	own := map[string]bool{}
	var subnets []netip.Prefix
	for _, o := range ours {
		own[o] = true
		subnets = append(subnets, netip.MustParsePrefix(o).Masked())
	}
	out := map[string]string{}
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	var links []map[string]any
	ns.JSON(&links, "link", "show")
	for _, l := range links {
		out["link "+fmt.Sprint(l["ifname"])] = enc(l)
	}
	var as []struct {
		Ifname string           `json:"ifname"`
		Info   []map[string]any `json:"addr_info"`
	}
	ns.JSON(&as, "addr", "show")
	for _, l := range as {
		for _, a := range l.Info {
			id := fmt.Sprintf("%v/%v", a["local"], a["prefixlen"])
			if own[id] {
				continue
			}
			out["addr "+l.Ifname+" "+id] = enc(a)
		}
	}
	for _, fam := range []string{"-4", "-6"} {
		var rs []map[string]any
		ns.JSON(&rs, fam, "route", "show", "table", "main")
		for _, r := range rs {
			proto := fmt.Sprint(r["protocol"])
			if proto == "201" {
				continue
			}
			dst := fmt.Sprint(r["dst"])
			if proto == "kernel" {
				if p, err := netip.ParsePrefix(dst); err == nil && slices.Contains(subnets, p) {
					continue
				}
			}
			out[fmt.Sprintf("route %s %s metric %v proto %s", fam, dst, r["metric"], proto)] = enc(r)
		}
	}
	return out
}

func sameSnap(t testing.TB, what string, want, have map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if have[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s:\n  before %s\n  after  %s", k, v, have[k]))
		}
	}
	for k, v := range have {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s appeared: %s", k, v))
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... %d more", len(diffs)-20))
		}
		t.Fatalf("%s: foreign objects changed:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// ipBatch runs "ip -n NS -batch -" with lines: one process making many
// changes, as a routing daemon does.
func ipBatch(ns *testns.NS, lines []string) error {
	cmd := exec.Command("ip", "-n", ns.Name, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip -batch: %v: %s", err, out)
	}
	return nil
}

// churn runs a second process that adds 200 routes of protocol bgp and
// deletes them again (net zero), as a routing daemon reconverging does,
// while the caller restarts or sweeps.
func churn(ns *testns.NS, second int) <-chan error {
	done := make(chan error, 1)
	go func() {
		var add, del []string
		for i := 0; i < 200; i++ {
			r := fmt.Sprintf("10.%d.%d.0/24 via 192.168.77.1 proto bgp", 220+second, i)
			add = append(add, "route add "+r)
			del = append(del, "route del "+r)
		}
		if err := ipBatch(ns, add); err != nil {
			done <- err
			return
		}
		done <- ipBatch(ns, del)
	}()
	return done
}

// More than 1,000 foreign objects (routes of two other protocols, one set
// installed by a second process while orchagent starts, hand-made
// addresses on a port orchagent manages, a foreign bridge with ports)
// are identical, as "ip -j" shows them, across orchagent's start,
// kill -9 and restart, a Redis restart, the sweep and the removal of all
// config; another 200 routes come and go during the restart and the sweep.
func TestForeignObjectsSurviveRestartsAndSweep(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	h1 := testns.New(t)
	h2 := testns.New(t)
	e.NS.Veth("Ethernet0", h1, "eth1")
	e.NS.Veth("Ethernet4", h2, "eth1")
	mgmt := testns.New(t)
	e.NS.Veth("eth9", mgmt, "mgmt")
	e.NS.IP("addr", "add", "192.168.77.10/24", "dev", "eth9")
	e.NS.IP("link", "add", "br0", "type", "bridge")
	e.NS.IP("link", "set", "br0", "up")
	var setup []string
	for i := 0; i < 20; i++ {
		setup = append(setup, fmt.Sprintf("link add brp%d type veth peer name brq%d", i, i),
			fmt.Sprintf("link set brp%d master br0", i), fmt.Sprintf("link set brp%d up", i))
	}
	for i := 0; i < 300; i++ {
		setup = append(setup, fmt.Sprintf("addr add 10.50.%d.%d/32 dev Ethernet0", i/250, i%250+1))
	}
	for i := 0; i < 600; i++ {
		setup = append(setup, fmt.Sprintf("route add 10.%d.%d.0/24 via 192.168.77.1 proto bird", 200+i/250, i%250))
	}
	if err := ipBatch(e.NS, setup); err != nil {
		t.Fatal(err)
	}
	settled(t, e.NS)
	ours := []string{"10.0.1.1/24", "10.0.2.1/24", "2001:db8:1::1/64"}
	before := foreignSnap(t, e.NS, ours)

	// A routing daemon installs its routes while orchagent starts.
	daemon := make(chan error, 1)
	go func() {
		var lines []string
		for i := 0; i < 400; i++ {
			lines = append(lines, fmt.Sprintf("route add 10.%d.%d.0/24 via 192.168.77.1 proto bgp", 210+i/250, i%250))
		}
		lines = append(lines, "route add 10.99.0.0/16 via 192.168.77.1 proto bgp")
		daemon <- ipBatch(e.NS, lines)
	}()
	e.Start("orchagent", "--log-level", "debug")
	config := func() []string {
		keys := []string{"INTERFACE|Ethernet0|10.0.1.1/24", "INTERFACE|Ethernet4|10.0.2.1/24", "INTERFACE|Ethernet0|2001:db8:1::1/64"}
		for _, k := range keys {
			e.HSet(k)
		}
		for i := 0; i < 50; i++ {
			k := fmt.Sprintf("STATIC_ROUTE|10.100.%d.0/24", i)
			e.HSet(k, "nexthop", "10.0.2.2")
			keys = append(keys, k)
		}
		// Same prefix as a bird route: a conflict. Same prefix as the
		// daemon's, another distance: coexists.
		e.HSet("STATIC_ROUTE|10.200.5.0/24", "nexthop", "10.0.2.2")
		e.HSet("STATIC_ROUTE|10.99.0.0/16", "nexthop", "10.0.2.2", "distance", "30")
		e.SetInitialized()
		return append(keys, "STATIC_ROUTE|10.99.0.0/16")
	}
	keys := config()
	if err := <-daemon; err != nil {
		t.Fatal(err)
	}
	e.WaitOK(keys...)
	e.WaitState("STATIC_ROUTE|10.200.5.0/24", "error", "exists with protocol bird")
	settled(t, e.NS)
	after := foreignSnap(t, e.NS, ours)
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("start: %s changed:\n  before %s\n  after  %s", k, v, after[k])
		}
	}
	if n := len(after); n < 1000 {
		t.Fatalf("only %d foreign objects", n)
	}
	t.Logf("%d foreign objects", len(after))

	// kill -9 and restart, while a routing daemon churns.
	busy := churn(e.NS, 0)
	e.Procs["orchagent"].Kill()
	e.Start("orchagent", "--log-level", "debug")
	// The killed process's results are still in STATE_DB: wait for the new
	// one's scan, so the Redis restart below finds its keys cached.
	e.Procs["orchagent"].WaitLog("the restarted orchagent's scan", "CONFIG_DB scanned")
	e.WaitOK(keys...)
	e.WaitState("STATIC_ROUTE|10.200.5.0/24", "error", "exists with protocol bird")
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	sameSnap(t, "restart", after, foreignSnap(t, e.NS, ours))

	// Redis restarted empty, config reloaded.
	e.Redis.Restart()
	e.Procs["orchagent"].WaitLog("the hold of the empty Redis's deletions", "key gone while CONFIG_DB_INITIALIZED is not 1")
	keys = config()
	e.WaitOK(keys...)
	sameSnap(t, "redis restart", after, foreignSnap(t, e.NS, ours))

	// Sweep: config deleted while down.
	e.Procs["orchagent"].Kill()
	for i := 0; i < 25; i++ {
		e.Del(fmt.Sprintf("STATIC_ROUTE|10.100.%d.0/24", i))
	}
	e.Del("STATIC_ROUTE|10.200.5.0/24", "STATIC_ROUTE|10.99.0.0/16")
	busy = churn(e.NS, 1)
	e.Start("orchagent", "--log-level", "debug")
	e.WaitOK("STATIC_ROUTE|10.100.30.0/24")
	e.Eventually("stale routes swept", func() (bool, string) {
		rs := e2eutil.Routes(e.NS, "10.100.0.0/24")
		rs2 := e2eutil.Routes(e.NS, "10.99.0.0/16")
		return len(rs) == 0 && len(rs2) == 1, fmt.Sprint(rs, rs2)
	})
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	sameSnap(t, "sweep", after, foreignSnap(t, e.NS, ours))

	// Everything deleted.
	all, _ := e.Config.Keys(t.Context(), "*|*").Result()
	e.Del(all...)
	e.Eventually("all of ours removed", func() (bool, string) {
		var rs []e2eutil.IPRoute
		e.NS.JSON(&rs, "route", "show", "proto", "201")
		a := e2eutil.Addrs(e.NS, "Ethernet0")
		return len(rs) == 0 && !slices.Contains(a, "10.0.1.1/24"), fmt.Sprint(len(rs), a)
	})
	sameSnap(t, "delete all", after, foreignSnap(t, e.NS, ours))
}

// A port enslaved to Bridge by hand carries no vid (vlan_default_pvid 0):
// the sweep releases only ports that carried a VLAN of ours. VM suite.
func TestVLANHandEnslavedPortNotSwept(t *testing.T) {
	requireVLAN(t)
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.NS.Veth("Ethernet8", peer, "eth8")
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("VLAN|Vlan100", "vlanid", "100")
	e.HSet("VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged")
	e.WaitOK("VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet0")
	e.NS.IP("link", "set", "Ethernet8", "master", "Bridge")
	e.Procs["orchagent"].Kill()
	e.Del("VLAN_MEMBER|Vlan100|Ethernet0")
	e.Start("orchagent", "--log-level", "debug")
	e.Eventually("stale member released by the sweep", func() (bool, string) {
		l, _ := e2eutil.Link(e.NS, "Ethernet0")
		return l.Master == "", l.Master
	})
	if l, _ := e2eutil.Link(e.NS, "Ethernet8"); l.Master != "Bridge" {
		t.Fatalf("hand-enslaved Ethernet8 released (master %q)", l.Master)
	}
}
