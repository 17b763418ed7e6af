package netlinkmgr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The contract suite: one table of scenarios, run against the Fake (with
// every feature, and with the CI host kernel's gaps) and against the real
// kernel in a fresh namespace, so the Fake cannot drift from the kernel.
// Scenarios observe only through the Kernel interface.

// env is one world a scenario runs in.
type env struct {
	k    Kernel
	port func(name string) // a front-panel-like device, admin down
}

type scenario struct {
	name string
	run  func(t *testing.T, e env)
}

func TestContractFake(t *testing.T) {
	for _, sc := range contractScenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := NewFake()
			sc.run(t, env{k: f, port: func(n string) { f.AddPort(n) }})
		})
	}
}

func TestContractFakeHostKernel(t *testing.T) {
	for _, sc := range contractScenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := NewFake().HostKernel()
			sc.run(t, env{k: f, port: func(n string) { f.AddPort(n) }})
		})
	}
}

func TestContractReal(t *testing.T) {
	for _, sc := range contractScenarios {
		t.Run(sc.name, func(t *testing.T) {
			ns, k := openReal(t)
			sc.run(t, env{k: k, port: func(n string) {
				// A veth whose peer is up: carrier like a cabled port.
				ns.IP("link", "add", n, "type", "veth", "peer", "name", "p"+n)
				ns.IP("link", "set", "p"+n, "up")
			}})
		})
	}
}

// globalAddrs leaves out the IPv6 link-local addresses the kernel adds.
func globalAddrs(as []AddrInfo) []AddrInfo {
	var out []AddrInfo
	for _, a := range as {
		if !a.Prefix.Addr().IsLinkLocalUnicast() {
			out = append(out, a)
		}
	}
	return out
}

// staticFdbs leaves out local (permanent), learned and self entries.
func staticFdbs(fs []FdbInfo) []FdbInfo {
	var out []FdbInfo
	for _, f := range fs {
		if f.Static && !f.Local && f.Master != "" {
			out = append(out, f)
		}
	}
	return out
}

func getLink(t *testing.T, k Kernel, name string) LinkInfo {
	t.Helper()
	l, err := k.Links().Get(name)
	must(t, err)
	return l
}

// upPort makes an up port holding prefix.
func upPort(t *testing.T, e env, name, prefix string) {
	e.port(name)
	must(t, e.k.Links().Set(LinkInfo{Name: name, AdminUp: ptr(true)}))
	must(t, e.k.Addrs().Add(AddrInfo{Link: name, Prefix: pfx(prefix)}))
}

// bridgeWithPort makes Bridge (up) with port Ethernet0 enslaved.
func bridgeWithPort(t *testing.T, e env) {
	must(t, e.k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", AdminUp: ptr(true)}))
	e.port("Ethernet0")
	must(t, e.k.Links().Set(LinkInfo{Name: "Ethernet0", Master: ptr("Bridge"), AdminUp: ptr(true)}))
}

var contractScenarios = []scenario{
	{"set follows a master and a link recreated under their names", func(t *testing.T, e env) {
		// Set sends by cached index (linkset.go): a stale index must
		// not fail nor reach another link.
		bridgeWithPort(t, e)
		L := e.k.Links()
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		old := getLink(t, e.k, "Bridge").Index
		must(t, L.Del("Bridge"))
		must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false), Master: ptr("Bridge")}))
		br, p := getLink(t, e.k, "Bridge"), getLink(t, e.k, "Ethernet0")
		if br.Index == old {
			t.Logf("the new Bridge has the old one's index %d", old)
		}
		if *p.Master != "Bridge" || p.MasterIdx != br.Index || *p.AdminUp {
			t.Fatalf("Ethernet0: master %q (%d, Bridge is %d), up %v", *p.Master, p.MasterIdx, br.Index, *p.AdminUp)
		}
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		must(t, L.Del("Ethernet0"))
		e.port("Ethernet0")
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Alias: ptr("x"), MAC: mac("02:00:00:00:00:42"), AdminUp: ptr(true)}))
		if p := getLink(t, e.k, "Ethernet0"); *p.Alias != "x" || p.MAC.String() != "02:00:00:00:00:42" || !*p.AdminUp {
			t.Fatalf("Ethernet0 after set: %+v", p)
		}
	}},
	{"set touches only set fields", func(t *testing.T, e env) {
		e.port("Ethernet0")
		L := e.k.Links()
		must(t, L.Set(LinkInfo{Name: "Ethernet0", MTU: ptr(9100)}))
		l := getLink(t, e.k, "Ethernet0")
		if *l.MTU != 9100 || *l.AdminUp {
			t.Fatalf("after mtu: %+v", l)
		}
		m := mac("02:aa:bb:cc:dd:ee")
		must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(true), MAC: m, Alias: ptr("to spine")}))
		l = getLink(t, e.k, "Ethernet0")
		if *l.MTU != 9100 || !*l.AdminUp || !bytes.Equal(l.MAC, m) || *l.Alias != "to spine" || *l.Master != "" {
			t.Fatalf("after up/mac/alias: %+v", l)
		}
		must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("Bridge")}))
		br := getLink(t, e.k, "Bridge")
		if l = getLink(t, e.k, "Ethernet0"); *l.Master != "Bridge" || l.MasterIdx != br.Index || br.Kind != "bridge" {
			t.Fatalf("after master: %+v (bridge %+v)", l, br)
		}
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		if l = getLink(t, e.k, "Ethernet0"); *l.Master != "" || l.MasterIdx != 0 || *l.MTU != 9100 {
			t.Fatalf("after nomaster: %+v", l)
		}
	}},
	{"add of an existing link is EEXIST", func(t *testing.T, e env) {
		must(t, e.k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		err := e.k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"})
		if !errors.Is(err, unix.EEXIST) {
			t.Fatalf("got %v, want EEXIST", err)
		}
	}},
	{"absent objects are not-found", func(t *testing.T, e env) {
		k := e.k
		_, err := k.Links().Get("nope")
		mustNotFound(t, "get link", err)
		mustNotFound(t, "set link", k.Links().Set(LinkInfo{Name: "nope", AdminUp: ptr(true)}))
		mustNotFound(t, "del link", k.Links().Del("nope"))
		mustNotFound(t, "master", func() error {
			e.port("Ethernet0")
			return k.Links().Set(LinkInfo{Name: "Ethernet0", Master: ptr("nope")})
		}())
		mustNotFound(t, "addr on absent link", k.Addrs().Add(AddrInfo{Link: "nope", Prefix: pfx("10.0.0.1/24")}))
		mustNotFound(t, "del absent addr", k.Addrs().Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
		mustNotFound(t, "del absent route", k.Routes().Del(RouteInfo{Dst: pfx("10.9.0.0/16"), Protocol: ProtoSwitchyard}))
		mustNotFound(t, "route via absent link", k.Routes().Replace(RouteInfo{Dst: pfx("10.9.0.0/16"), NextHops: []NextHop{{Link: "nope"}}}))
		mustNotFound(t, "fdb on absent link", k.Fdbs().Add(FdbInfo{MAC: mac("00:11:22:33:44:55"), Link: "nope"}))
		mustNotFound(t, "vlan on absent link", k.BridgeVlans().Add(BridgeVlanInfo{Link: "nope", VID: 10}))
		mustNotFound(t, "vlan parent", k.Links().Add(LinkInfo{Name: "Vlan10", Kind: "vlan", Vlan: &VlanOptions{ID: 10, Parent: "nope"}}))
		_, err = k.Neighs().List("nope")
		mustNotFound(t, "neighbours of absent link", err)
	}},
	{"veth pairs live and die together", func(t *testing.T, e env) {
		must(t, e.k.Links().Add(LinkInfo{Name: "vA", Kind: "veth", Veth: &VethOptions{PeerName: "vB"}, MTU: ptr(2000)}))
		b := getLink(t, e.k, "vB")
		if b.Kind != "veth" || *b.MTU != 2000 || b.Veth == nil || b.Veth.PeerName != "vA" {
			t.Fatalf("peer: %+v", b)
		}
		must(t, e.k.Links().Del("vA"))
		_, err := e.k.Links().Get("vB")
		mustNotFound(t, "peer after del", err)
	}},
	{"addresses have replace semantics", func(t *testing.T, e env) {
		e.port("Ethernet0")
		A := e.k.Addrs()
		for i := 0; i < 2; i++ {
			must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
			must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("2001:db8::1/64")}))
		}
		as, err := A.List("Ethernet0")
		must(t, err)
		if as = globalAddrs(as); len(as) != 2 || as[0].Link != "Ethernet0" {
			t.Fatalf("List: %+v", as)
		}
		must(t, A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("2001:db8::1/64")}))
		mustNotFound(t, "second del", A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("2001:db8::1/64")}))
		as, _ = A.List("Ethernet0")
		if as = globalAddrs(as); len(as) != 1 || as[0].Prefix != pfx("10.0.0.1/24") {
			t.Fatalf("List after del: %+v", as)
		}
	}},
	{"routes: replace, ECMP, blackhole, metrics, delete match", func(t *testing.T, e env) {
		upPort(t, e, "Ethernet1", "10.0.1.1/24")
		upPort(t, e, "Ethernet2", "10.0.2.1/24")
		R := e.k.Routes()
		ecmp := RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{
			{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}, {Gateway: ip("10.0.2.2"), Link: "Ethernet2", Weight: 2}}}
		must(t, R.Replace(ecmp))
		must(t, R.Replace(ecmp))
		must(t, R.Replace(RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, Metric: 50, Blackhole: true}))
		must(t, R.Replace(RouteInfo{Dst: pfx("10.3.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.2.2")}}}))
		must(t, R.Replace(RouteInfo{Dst: pfx("2001:db8:5::/48"), Protocol: ProtoSwitchyard, Blackhole: true}))
		rs, err := R.List(RouteFilter{Protocol: ProtoSwitchyard})
		must(t, err)
		got := map[string]RouteInfo{}
		for _, r := range rs {
			got[r.String()] = r
		}
		want := []string{
			"10.2.0.0/16 proto 201 metric 0 table 254 nexthop via 10.0.1.2 dev Ethernet1 nexthop via 10.0.2.2 dev Ethernet2 weight 2",
			"blackhole 10.2.0.0/16 proto 201 metric 50 table 254",
			"10.3.0.0/16 proto 201 metric 0 table 254 nexthop via 10.0.2.2 dev Ethernet2",
			"blackhole 2001:db8:5::/48 proto 201 metric 1024 table 254",
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Fatalf("missing %q in %v", w, rs)
			}
		}
		if len(rs) != len(want) {
			t.Fatalf("List = %v, want %v", rs, want)
		}
		// Walk hands over what List returns, route by route.
		var walked []string
		must(t, R.(RouteWalker).Walk(RouteFilter{Protocol: ProtoSwitchyard}, func(r *RouteInfo) { walked = append(walked, r.String()) },
			func() { walked = walked[:0] }))
		if len(walked) != len(rs) {
			t.Fatalf("Walk = %v, List = %v", walked, rs)
		}
		for i := range rs {
			if walked[i] != rs[i].String() {
				t.Fatalf("Walk = %v, List = %v", walked, rs)
			}
		}
		mustNotFound(t, "del other protocol", R.Del(RouteInfo{Dst: pfx("10.3.0.0/16"), Protocol: 202}))
		mustNotFound(t, "del other metric", R.Del(RouteInfo{Dst: pfx("10.3.0.0/16"), Metric: 9}))
		must(t, R.Del(RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, Metric: 50}))
		must(t, R.Del(RouteInfo{Dst: pfx("2001:db8:5::/48"), Protocol: ProtoSwitchyard}))
		rs, _ = R.List(RouteFilter{Protocol: ProtoSwitchyard, Family: unix.AF_INET})
		if len(rs) != 2 {
			t.Fatalf("after dels: %v", rs)
		}
		if err := R.Replace(RouteInfo{Dst: pfx("10.4.0.0/16"), NextHops: []NextHop{{Gateway: ip("192.0.2.1")}}}); err == nil {
			t.Fatal("unreachable gateway accepted")
		}
		e.port("Ethernet3")
		if err := R.Replace(RouteInfo{Dst: pfx("10.4.0.0/16"), NextHops: []NextHop{{Link: "Ethernet3"}}}); !errors.Is(err, unix.ENETDOWN) {
			t.Fatalf("route via a down link: %v, want ENETDOWN", err)
		}
	}},
	{"enslaved port has a local fdb entry", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		p := getLink(t, e.k, "Ethernet0")
		fs, err := e.k.Fdbs().List("Bridge")
		must(t, err)
		for _, f := range fs {
			if f.Local && f.Link == "Ethernet0" && bytes.Equal(f.MAC, p.MAC) && f.Master == "Bridge" {
				return
			}
		}
		t.Fatalf("no local entry for %s in %+v", p.MAC, fs)
	}},
	{"static fdb entries", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		F := e.k.Fdbs()
		ent := FdbInfo{MAC: mac("00:11:22:33:44:55"), Link: "Ethernet0"}
		must(t, F.Add(ent))
		must(t, F.Add(ent))
		fs, err := F.List("Bridge")
		must(t, err)
		// With VLAN support the kernel also adds the entry on each of the
		// port's VLANs (here the default PVID 1); VLAN 0 is the one asked for.
		var vlan0 []FdbInfo
		for _, f := range staticFdbs(fs) {
			if f.Vlan == 0 {
				vlan0 = append(vlan0, f)
			} else if f.Vlan != 1 {
				t.Fatalf("entry on unexpected vlan: %+v", f)
			}
		}
		if fs = vlan0; len(fs) != 1 || !fs[0].Static || fs[0].Local || fs[0].Master != "Bridge" || fs[0].Link != "Ethernet0" || fs[0].Vlan != 0 {
			t.Fatalf("List: %+v", fs)
		}
		must(t, F.Del(ent))
		mustNotFound(t, "second del", F.Del(ent))
		if fs, _ = F.List("Bridge"); len(staticFdbs(fs)) != 0 {
			t.Fatalf("left after del: %+v", staticFdbs(fs))
		}
		e.port("Ethernet9")
		if err := F.Add(FdbInfo{MAC: ent.MAC, Link: "Ethernet9"}); err == nil {
			t.Fatal("fdb entry on a non-port accepted")
		}
	}},
	{"fdb add batch", func(t *testing.T, e env) {
		// More entries than one netlink message carries, with failures in
		// the middle that do not stop the entries after them.
		bridgeWithPort(t, e)
		e.port("Ethernet9") // not a bridge port
		var es []FdbInfo
		for i := 0; i < 150; i++ {
			ent := FdbInfo{MAC: mac(fmt.Sprintf("02:00:00:00:%02x:%02x", i/256, i%256)), Link: "Ethernet0"}
			switch i {
			case 5:
				ent.Link = "nope"
			case 70:
				ent.Link = "Ethernet9"
			}
			es = append(es, ent)
		}
		es = append(es, es[0]) // replace semantics within one batch
		errs := e.k.Fdbs().AddBatch(es)
		if len(errs) != len(es) {
			t.Fatalf("%d errors for %d entries", len(errs), len(es))
		}
		for i, err := range errs {
			switch i {
			case 5:
				mustNotFound(t, "fdb on absent link", err)
			case 70:
				if err == nil {
					t.Fatal("fdb entry on a non-port accepted")
				}
			default:
				must(t, err)
			}
		}
		fs, err := e.k.Fdbs().List("Bridge")
		must(t, err)
		got := map[string]bool{}
		for _, f := range staticFdbs(fs) {
			if f.Vlan == 0 {
				if f.Link != "Ethernet0" || got[f.MAC.String()] {
					t.Fatalf("unexpected entry %+v", f)
				}
				got[f.MAC.String()] = true
			}
		}
		if len(got) != 148 || !got["02:00:00:00:00:95"] || got["02:00:00:00:00:05"] || got["02:00:00:00:00:46"] {
			t.Fatalf("%d static vlan-0 entries, want 148 (all but 5 and 70): %v", len(got), got)
		}
		if errs := e.k.Fdbs().AddBatch(nil); len(errs) != 0 {
			t.Fatalf("empty batch: %v", errs)
		}
	}},
	{"fdb add batch with vlans", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		err := e.k.Links().Set(LinkInfo{Name: "Bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true)}})
		skipIfMissing(t, err)
		must(t, err)
		must(t, e.k.BridgeVlans().Add(BridgeVlanInfo{Link: "Ethernet0", VID: 200}))
		errs := e.k.Fdbs().AddBatch([]FdbInfo{
			{MAC: mac("00:11:22:33:44:66"), Link: "Ethernet0", Vlan: 200},
			{MAC: mac("00:11:22:33:44:77"), Link: "Ethernet0", Vlan: 300}, // not on the port
			{MAC: mac("00:11:22:33:44:88"), Link: "Ethernet0", Vlan: 200},
		})
		must(t, errs[0])
		if !errors.Is(errs[1], unix.EINVAL) || !strings.Contains(errs[1].Error(), "vlan 300 not configured") {
			t.Fatalf("fdb on unconfigured vlan: %v, want EINVAL naming vlan 300", errs[1])
		}
		must(t, errs[2])
		fs, _ := e.k.Fdbs().List("Bridge")
		if fs = staticFdbs(fs); len(fs) != 2 || fs[0].Vlan != 200 || fs[1].Vlan != 200 {
			t.Fatalf("fdb with vlan: %+v", fs)
		}
	}},
	{"bridge vlans", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		err := e.k.Links().Set(LinkInfo{Name: "Bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true)}})
		skipIfMissing(t, err)
		must(t, err)
		V := e.k.BridgeVlans()
		must(t, V.Add(BridgeVlanInfo{Link: "Ethernet0", VID: 100, PVID: true, Untagged: true}))
		must(t, V.Add(BridgeVlanInfo{Link: "Ethernet0", VID: 200}))
		must(t, V.Add(BridgeVlanInfo{Link: "Bridge", VID: 100, Self: true}))
		vs, err := V.List("Ethernet0")
		must(t, err)
		want := []BridgeVlanInfo{{Link: "Ethernet0", VID: 1, Untagged: true}, // lost pvid to 100
			{Link: "Ethernet0", VID: 100, PVID: true, Untagged: true}, {Link: "Ethernet0", VID: 200}}
		if len(vs) != 3 || vs[0] != want[0] || vs[1] != want[1] || vs[2] != want[2] {
			t.Fatalf("List = %+v, want %+v", vs, want)
		}
		must(t, V.Add(BridgeVlanInfo{Link: "Ethernet0", VID: 1, PVID: true}))
		must(t, V.Del(BridgeVlanInfo{Link: "Ethernet0", VID: 1}))
		must(t, V.Del(BridgeVlanInfo{Link: "Ethernet0", VID: 1})) // the kernel ignores an absent VLAN
		bs, err := V.List("Bridge")
		must(t, err)
		if len(bs) != 2 || bs[1] != (BridgeVlanInfo{Link: "Bridge", VID: 100, Self: true}) {
			t.Fatalf("bridge vlans = %+v", bs)
		}
		must(t, e.k.Fdbs().Add(FdbInfo{MAC: mac("00:11:22:33:44:66"), Link: "Ethernet0", Vlan: 200}))
		fs, _ := e.k.Fdbs().List("Bridge")
		if fs = staticFdbs(fs); len(fs) != 1 || fs[0].Vlan != 200 {
			t.Fatalf("fdb with vlan: %+v", fs)
		}
		if err := e.k.Fdbs().Add(FdbInfo{MAC: mac("00:11:22:33:44:77"), Link: "Ethernet0", Vlan: 300}); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("fdb on unconfigured vlan: %v, want EINVAL", err)
		}
	}},
	{"vlan devices", func(t *testing.T, e env) {
		must(t, e.k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		err := e.k.Links().Add(LinkInfo{Name: "Vlan100", Kind: "vlan", Vlan: &VlanOptions{ID: 100, Parent: "Bridge"}})
		skipIfMissing(t, err)
		must(t, err)
		l := getLink(t, e.k, "Vlan100")
		br := getLink(t, e.k, "Bridge")
		if l.Kind != "vlan" || l.Vlan == nil || l.Vlan.ID != 100 || l.Vlan.Parent != "Bridge" || l.ParentIdx != br.Index || !bytes.Equal(l.MAC, br.MAC) {
			t.Fatalf("Get: %+v", l)
		}
		must(t, e.k.Links().Del("Bridge"))
		_, err = e.k.Links().Get("Vlan100")
		mustNotFound(t, "vlan after parent del", err)
	}},
	{"writes count mutating calls", func(t *testing.T, e env) {
		e.port("Ethernet0")
		before := e.k.Writes()
		must(t, e.k.Links().Set(LinkInfo{Name: "Ethernet0"}))
		_, _ = e.k.Links().List()
		_, _ = e.k.Routes().List(RouteFilter{})
		if d := e.k.Writes() - before; d != 0 {
			t.Fatalf("reads/no-op set made %d writes", d)
		}
		must(t, e.k.Links().Set(LinkInfo{Name: "Ethernet0", MTU: ptr(1400), AdminUp: ptr(true)}))
		_ = e.k.Addrs().Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.9.9.9/24")})
		if d := e.k.Writes() - before; d != 2 {
			t.Fatalf("Writes delta %d, want 2", d)
		}
	}},
	{"watch delivers typed events", func(t *testing.T, e env) {
		bridgeWithPort(t, e)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := e.k.Watch(ctx, WatchOptions{ListExisting: true})
		must(t, err)
		sawPort := false
		waitEvent(t, ch, "initial listing", func(ev Event) bool {
			sawPort = sawPort || (ev.Kind == EventLink && ev.Link.Name == "Ethernet0" && *ev.Link.Master == "Bridge")
			return ev.Kind == EventSynced
		})
		if !sawPort {
			t.Fatal("listing lacked Ethernet0")
		}
		must(t, e.k.Addrs().Add(AddrInfo{Link: "Bridge", Prefix: pfx("10.1.0.1/24")}))
		waitEvent(t, ch, "addr", func(ev Event) bool {
			return ev.Kind == EventAddr && !ev.Deleted && ev.Addr.Link == "Bridge" && ev.Addr.Prefix == pfx("10.1.0.1/24")
		})
		ent := FdbInfo{MAC: mac("00:11:22:33:44:55"), Link: "Ethernet0"}
		must(t, e.k.Fdbs().Add(ent))
		waitEvent(t, ch, "fdb add", func(ev Event) bool {
			if ev.Kind == EventNeigh && ev.Neigh.MAC.String() == "00:11:22:33:44:55" {
				t.Fatalf("FDB entry delivered as a neighbour: %+v", ev.Neigh)
			}
			return ev.Kind == EventFdb && !ev.Deleted && bytes.Equal(ev.Fdb.MAC, ent.MAC) && ev.Fdb.Static && ev.Fdb.Master == "Bridge" && ev.Fdb.Link == "Ethernet0"
		})
		must(t, e.k.Fdbs().Del(ent))
		waitEvent(t, ch, "fdb del", func(ev Event) bool {
			return ev.Kind == EventFdb && ev.Deleted && bytes.Equal(ev.Fdb.MAC, ent.MAC)
		})
		must(t, e.k.Links().Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		waitEvent(t, ch, "nomaster", func(ev Event) bool {
			if ev.Kind == EventLink && ev.Link.Name == "Ethernet0" && ev.Deleted {
				t.Fatal("leaving the bridge was delivered as a link deletion")
			}
			return ev.Kind == EventLink && ev.Link.Name == "Ethernet0" && *ev.Link.Master == ""
		})
		must(t, e.k.Links().Del("Bridge"))
		waitEvent(t, ch, "link del", func(ev Event) bool {
			return ev.Kind == EventLink && ev.Deleted && ev.Link.Name == "Bridge"
		})
		cancel()
		for range ch { // the channel closes once ctx is done
		}
	}},
}

// waitEvent reads ch until match returns true. The bound is generous; it
// only turns a missing event into a failure instead of a hang.
func waitEvent(t *testing.T, ch <-chan Event, what string, match func(Event) bool) {
	t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("waiting for %s: channel closed", what)
			}
			if match(ev) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s event within 90s", what)
		}
	}
}
