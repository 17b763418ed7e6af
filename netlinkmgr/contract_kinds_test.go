package netlinkmgr

import (
	"errors"
	"slices"
	"sort"
	"testing"

	"golang.org/x/sys/unix"
)

// The contract scenarios of the link kinds the newer CONFIG_DB tables use
// (dummy, vrf, bond, vxlan), run by TestContract* with the others.
func init() { contractScenarios = append(contractScenarios, kindScenarios...) }

var kindScenarios = []scenario{
	{"dummy devices", func(t *testing.T, e env) {
		err := e.k.Links().Add(LinkInfo{Name: "Loopback0", Kind: "dummy", AdminUp: ptr(true)})
		skipIfLacks(t, err, FeatureDummy)
		must(t, err)
		must(t, e.k.Addrs().Add(AddrInfo{Link: "Loopback0", Prefix: pfx("10.1.0.1/32"), Protocol: ProtoSwitchyard, Create: true}))
		l := getLink(t, e.k, "Loopback0")
		if l.Kind != "dummy" || !*l.AdminUp {
			t.Fatalf("Get: %+v", l)
		}
		as, err := e.k.Addrs().List("Loopback0")
		must(t, err)
		if as = globalAddrs(as); len(as) != 1 || as[0].Prefix != pfx("10.1.0.1/32") || as[0].Protocol != ProtoSwitchyard {
			t.Fatalf("addresses: %+v", as)
		}
		must(t, e.k.Links().Del("Loopback0"))
		_, err = e.k.Links().Get("Loopback0")
		mustNotFound(t, "dummy after del", err)
	}},
	{"vrf devices", func(t *testing.T, e env) {
		L := e.k.Links()
		if err := L.Add(LinkInfo{Name: "Vrf_bad", Kind: "vrf", Vrf: &VrfOptions{Table: 254}}); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("vrf on the main table: %v, want EINVAL", err)
		}
		err := L.Add(LinkInfo{Name: "Vrf_blue", Kind: "vrf", AdminUp: ptr(true), Vrf: &VrfOptions{Table: 1001}})
		skipIfLacks(t, err, FeatureVRF)
		must(t, err)
		vrf := getLink(t, e.k, "Vrf_blue")
		if vrf.Kind != "vrf" || vrf.Vrf == nil || vrf.Vrf.Table != 1001 || !*vrf.AdminUp {
			t.Fatalf("Get: %+v", vrf)
		}
		upPort(t, e, "Ethernet0", "10.0.0.1/24")
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("Vrf_blue")}))
		if l := getLink(t, e.k, "Ethernet0"); *l.Master != "Vrf_blue" || l.MasterIdx != vrf.Index {
			t.Fatalf("enslaved port: master %q idx %d, want Vrf_blue %d", *l.Master, l.MasterIdx, vrf.Index)
		}
		R := e.k.Routes()
		r := RouteInfo{Dst: pfx("10.9.0.0/16"), Table: 1001, Protocol: ProtoSwitchyard,
			NextHops: []NextHop{{Gateway: ip("10.0.0.2"), Link: "Ethernet0"}}}
		must(t, R.Replace(r))
		rs, err := R.List(RouteFilter{Table: 1001, Protocol: ProtoSwitchyard})
		must(t, err)
		if len(rs) != 1 || rs[0].String() != "10.9.0.0/16 proto 201 metric 0 table 1001 nexthop via 10.0.0.2 dev Ethernet0" {
			t.Fatalf("table 1001: %v", rs)
		}
		if rs, _ := R.List(RouteFilter{Protocol: ProtoSwitchyard}); len(rs) != 0 {
			t.Fatalf("main table holds the VRF's route: %v", rs)
		}
		must(t, R.Del(r))
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		if l := getLink(t, e.k, "Ethernet0"); *l.Master != "" || l.MasterIdx != 0 {
			t.Fatalf("released port: %+v", l)
		}
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("Vrf_blue")}))
		must(t, L.Del("Vrf_blue"))
		if l := getLink(t, e.k, "Ethernet0"); *l.Master != "" {
			t.Fatalf("port of a deleted vrf: master %q", *l.Master)
		}
	}},
	{"bond devices", func(t *testing.T, e env) {
		L := e.k.Links()
		minL, rate, mii := 1, "fast", 100
		err := L.Add(LinkInfo{Name: "PortChannel01", Kind: "bond", Alias: ptr("x"),
			Bond: &BondOptions{Mode: "802.3ad", Miimon: &mii, MinLinks: &minL, LacpRate: &rate}})
		skipIfLacks(t, err, FeatureBond)
		must(t, err)
		b := getLink(t, e.k, "PortChannel01")
		if b.Kind != "bond" || b.Bond == nil || b.Bond.Mode != "802.3ad" || *b.Bond.MinLinks != 1 ||
			*b.Bond.LacpRate != "fast" || *b.Bond.Miimon != 100 {
			t.Fatalf("Get: %+v %+v", b, b.Bond)
		}
		for _, p := range []string{"Ethernet0", "Ethernet4"} {
			e.port(p)
			must(t, L.Set(LinkInfo{Name: p, Master: ptr("PortChannel01")}))
			if l := getLink(t, e.k, p); *l.Master != "PortChannel01" || l.MasterIdx != b.Index || l.BondSlave == nil {
				t.Fatalf("%s enslaved: master %q idx %d slave %+v", p, *l.Master, l.MasterIdx, l.BondSlave)
			}
		}
		must(t, L.Set(LinkInfo{Name: "PortChannel01", MTU: ptr(9000)}))
		if l := getLink(t, e.k, "Ethernet4"); *l.MTU != 9000 {
			t.Fatalf("port mtu %d, want the bond's 9000", *l.MTU)
		}
		must(t, L.Set(LinkInfo{Name: "PortChannel01", Bond: &BondOptions{MinLinks: ptr(2)}}))
		if b := getLink(t, e.k, "PortChannel01"); *b.Bond.MinLinks != 2 {
			t.Fatalf("min_links %d, want 2", *b.Bond.MinLinks)
		}
		must(t, L.Set(LinkInfo{Name: "PortChannel01", AdminUp: ptr(true)}))
		if err := L.Set(LinkInfo{Name: "PortChannel01", Bond: &BondOptions{LacpRate: ptr("slow")}}); err == nil {
			t.Fatal("lacp_rate changed while the bond is up")
		}
		must(t, L.Set(LinkInfo{Name: "PortChannel01", AdminUp: ptr(false), Bond: &BondOptions{LacpRate: ptr("slow")}}))
		if b := getLink(t, e.k, "PortChannel01"); *b.Bond.LacpRate != "slow" {
			t.Fatalf("lacp_rate %s, want slow", *b.Bond.LacpRate)
		}
		must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr("")}))
		if l := getLink(t, e.k, "Ethernet0"); *l.Master != "" || l.BondSlave != nil {
			t.Fatalf("released port: %+v", l)
		}
		must(t, L.Del("PortChannel01"))
		if l := getLink(t, e.k, "Ethernet4"); *l.Master != "" {
			t.Fatalf("port of a deleted bond: master %q", *l.Master)
		}
	}},
	{"vxlan devices", func(t *testing.T, e env) {
		L := e.k.Links()
		want := VxlanOptions{VNI: 1000, Local: ip("10.1.0.1"), Remote: ip("10.1.0.2"), Port: 4789, Learning: true}
		err := L.Add(LinkInfo{Name: "vtep1-100", Kind: "vxlan", Vxlan: &want})
		skipIfLacks(t, err, FeatureVxlan)
		must(t, err)
		l := getLink(t, e.k, "vtep1-100")
		if l.Kind != "vxlan" || l.Vxlan == nil || *l.Vxlan != want {
			t.Fatalf("Get: %+v vxlan %+v, want %+v", l, l.Vxlan, want)
		}
		err = L.Add(LinkInfo{Name: "vtep1-200", Kind: "vxlan", Vxlan: &VxlanOptions{VNI: 1000, Local: ip("10.1.0.1"), Port: 4789}})
		if !errors.Is(err, unix.EEXIST) {
			t.Fatalf("a second device of VNI 1000: %v, want EEXIST", err)
		}
		if err := L.Add(LinkInfo{Name: "vtep1-300", Kind: "vxlan", Vxlan: &VxlanOptions{}}); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("VNI 0: %v, want EINVAL", err)
		}
		must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		must(t, L.Set(LinkInfo{Name: "vtep1-100", Master: ptr("Bridge"), AdminUp: ptr(true)}))
		if l := getLink(t, e.k, "vtep1-100"); *l.Master != "Bridge" || !*l.AdminUp {
			t.Fatalf("enslaved: %+v", l)
		}
		must(t, L.Del("vtep1-100"))
		_, err = L.Get("vtep1-100")
		mustNotFound(t, "vxlan after del", err)
	}},
	{"vxlan remotes (head-end replication)", func(t *testing.T, e env) {
		L, F := e.k.Links(), e.k.Fdbs()
		err := L.Add(LinkInfo{Name: "vtep1-100", Kind: "vxlan",
			Vxlan: &VxlanOptions{VNI: 1000, Local: ip("10.1.0.1"), Remote: ip("10.1.0.9"), Port: 4789, Learning: true}})
		skipIfLacks(t, err, FeatureVxlan)
		must(t, err)
		must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
		must(t, L.Set(LinkInfo{Name: "vtep1-100", Master: ptr("Bridge"), AdminUp: ptr(true)}))
		zero := mac("00:00:00:00:00:00")
		for _, d := range []string{"10.1.0.2", "10.1.0.3", "10.1.0.2"} { // the second .2 is a no-op
			must(t, F.AddRemote(FdbInfo{MAC: zero, Link: "vtep1-100", Dst: ip(d)}))
		}
		remotes := func() []string {
			fs, err := F.List("")
			must(t, err)
			var out []string
			for _, f := range fs {
				if f.Link == "vtep1-100" && f.Master == "" && f.MAC.String() == zero.String() {
					out = append(out, f.Dst.String())
				}
			}
			sort.Strings(out)
			return out
		}
		// The device's own remote (dst_ip) is an entry too.
		if got := remotes(); !slices.Equal(got, []string{"10.1.0.2", "10.1.0.3", "10.1.0.9"}) {
			t.Fatalf("remotes: %v", got)
		}
		must(t, F.DelRemote(FdbInfo{MAC: zero, Link: "vtep1-100", Dst: ip("10.1.0.2")}))
		if got := remotes(); !slices.Equal(got, []string{"10.1.0.3", "10.1.0.9"}) {
			t.Fatalf("remotes after deleting 10.1.0.2: %v", got)
		}
		must(t, F.DelRemote(FdbInfo{MAC: zero, Link: "vtep1-100", Dst: ip("10.1.0.2")})) // not there: no error
		mustNotFound(t, "remote of a missing device", F.DelRemote(FdbInfo{MAC: zero, Link: "vtep9-100", Dst: ip("10.1.0.2")}))
		// Released from Bridge, the device keeps its own entries.
		must(t, L.Set(LinkInfo{Name: "vtep1-100", Master: ptr("")}))
		if got := remotes(); !slices.Equal(got, []string{"10.1.0.3", "10.1.0.9"}) {
			t.Fatalf("remotes after release: %v", got)
		}
		must(t, L.Del("vtep1-100"))
		if got := remotes(); len(got) != 0 {
			t.Fatalf("remotes after the device went: %v", got)
		}
	}},
}
