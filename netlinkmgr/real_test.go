package netlinkmgr

import (
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// Integration tests: the real Kernel in a fresh namespace, judged by
// iproute2's JSON output.

func TestOpenMissingNamespace(t *testing.T) {
	_, err := Open(Options{NetNS: "swt-does-not-exist"})
	if err == nil {
		t.Fatal("Open of a missing namespace succeeded")
	}
	if want := "network namespace swt-does-not-exist not found (ip netns add swt-does-not-exist)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
	if !IsNotFound(err) {
		t.Fatalf("error %v is not a not-found error", err)
	}
}

func TestRealLinks(t *testing.T) {
	ns, k := openReal(t)
	L := k.Links()
	must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	must(t, L.Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}}))
	if err := L.Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer9"}}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second add of Ethernet0: %v, want an 'exists' error", err)
	}
	if j := judgeLink(t, ns, "Bridge"); j.Linkinfo.InfoKind != "bridge" {
		t.Fatalf("Bridge kind %q", j.Linkinfo.InfoKind)
	}
	if j := judgeLink(t, ns, "peer0"); j.Linkinfo.InfoKind != "veth" {
		t.Fatalf("peer0 kind %q", j.Linkinfo.InfoKind)
	}

	m := mac("02:11:22:33:44:55")
	must(t, L.Set(LinkInfo{Name: "Ethernet0", MTU: ptr(9100), MAC: m, AdminUp: ptr(true), Master: ptr("Bridge"), Alias: ptr("uplink 1")}))
	j := judgeLink(t, ns, "Ethernet0")
	if j.Mtu != 9100 || j.Address != m.String() || !j.up() || j.Master != "Bridge" || j.Ifalias != "uplink 1" {
		t.Fatalf("after set, ip says %+v", j)
	}
	got, err := L.Get("Ethernet0")
	must(t, err)
	if *got.MTU != 9100 || got.MAC.String() != m.String() || !*got.AdminUp || *got.Master != "Bridge" ||
		*got.Alias != "uplink 1" || got.Kind != "veth" || got.Veth == nil || got.Veth.PeerName != "peer0" || got.Stats == nil {
		t.Fatalf("Get: %+v", got)
	}
	br, err := L.Get("Bridge")
	must(t, err)
	if got.MasterIdx != br.Index || br.Bridge == nil || br.Bridge.VlanFiltering == nil {
		t.Fatalf("Get Bridge %+v / port master idx %d", br, got.MasterIdx)
	}

	// Set touches only the set fields.
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false)}))
	j = judgeLink(t, ns, "Ethernet0")
	if j.up() || j.Mtu != 9100 || j.Master != "Bridge" || j.Ifalias != "uplink 1" {
		t.Fatalf("after admin down, ip says %+v", j)
	}
	must(t, L.Set(LinkInfo{Name: "Ethernet0", Master: ptr(""), Alias: ptr("")}))
	if j = judgeLink(t, ns, "Ethernet0"); j.Master != "" || j.Ifalias != "" {
		t.Fatalf("after nomaster, ip says %+v", j)
	}

	all, err := L.List()
	must(t, err)
	var names []string
	for _, l := range all {
		names = append(names, l.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "Bridge,Ethernet0,lo,peer0" {
		t.Fatalf("List: %v", names)
	}

	must(t, L.Del("Ethernet0"))
	if out, _ := ns.TryIP("link", "show", "dev", "peer0"); !strings.Contains(out, "does not exist") {
		t.Fatalf("peer0 still there after deleting Ethernet0: %s", out)
	}
}

func TestRealAddLinkWithSettings(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", MTU: ptr(9000), AdminUp: ptr(true), Alias: ptr("the bridge")}))
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet4", Kind: "veth", Veth: &VethOptions{PeerName: "peer4"}, Master: ptr("Bridge"), MTU: ptr(9000)}))
	if j := judgeLink(t, ns, "Bridge"); j.Mtu != 9000 || !j.up() || j.Ifalias != "the bridge" {
		t.Fatalf("Bridge: %+v", j)
	}
	if j := judgeLink(t, ns, "Ethernet4"); j.Master != "Bridge" || j.up() {
		t.Fatalf("Ethernet4: %+v", j)
	}
}

func TestRealAddrs(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}}))
	A := k.Addrs()
	for _, p := range []string{"10.0.0.1/24", "2001:db8::1/64", "10.0.0.1/24"} { // twice: replace semantics
		must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx(p)}))
	}
	if got := judgeAddrs(t, ns, "Ethernet0"); !got["10.0.0.1/24"] || !got["2001:db8::1/64"] || len(got) != 2 {
		t.Fatalf("ip says %v", got)
	}
	list, err := A.List("Ethernet0")
	must(t, err)
	if len(list) != 2 {
		t.Fatalf("List: %v", list)
	}
	must(t, A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
	if got := judgeAddrs(t, ns, "Ethernet0"); got["10.0.0.1/24"] || len(got) != 1 {
		t.Fatalf("after del, ip says %v", got)
	}
	mustNotFound(t, "del absent address", A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
	mustNotFound(t, "add on absent link", A.Add(AddrInfo{Link: "nope", Prefix: pfx("10.9.0.1/24")}))
	all, err := A.List("")
	must(t, err)
	lo := false
	for _, a := range all {
		lo = lo || (a.Link == "lo" && a.Prefix == pfx("127.0.0.1/8"))
	}
	if !lo {
		t.Fatalf("List(\"\") lacks lo's 127.0.0.1/8: %v", all)
	}
}

func TestRealFdb(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", AdminUp: ptr(true)}))
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}, Master: ptr("Bridge")}))
	F := k.Fdbs()
	e := FdbInfo{MAC: mac("00:11:22:33:44:55"), Link: "Ethernet0"}
	must(t, F.Add(e))
	must(t, F.Add(e)) // replace semantics
	var fs []bridgeFdb
	ns.JSON(&fs, "bridge", "fdb", "show", "br", "Bridge")
	found := false
	for _, f := range fs {
		if f.Mac == "00:11:22:33:44:55" {
			found = true
			if f.Ifname != "Ethernet0" || f.State != "static" {
				t.Fatalf("bridge fdb says %+v", f)
			}
		}
	}
	if !found {
		t.Fatalf("entry missing from bridge fdb: %+v", fs)
	}
	list, err := F.List("Bridge")
	must(t, err)
	var mine, local int
	for _, f := range list {
		if f.Master != "Bridge" {
			t.Fatalf("List(Bridge) returned an entry of %q: %+v", f.Master, f)
		}
		if f.MAC.String() == "00:11:22:33:44:55" && f.Link == "Ethernet0" && f.Static && !f.Local && f.Vlan == 0 {
			mine++
		}
		if f.Local {
			local++
		}
	}
	if mine != 1 || local == 0 {
		t.Fatalf("List(Bridge) = %+v", list)
	}
	must(t, F.Del(e))
	mustNotFound(t, "del absent fdb", F.Del(e))
	mustNotFound(t, "fdb on absent link", F.Add(FdbInfo{MAC: e.MAC, Link: "nope"}))
}

func TestRealNeighs(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}, AdminUp: ptr(true)}))
	must(t, k.Addrs().Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
	ns.IP("neigh", "replace", "10.0.0.2", "lladdr", "02:00:00:00:00:02", "dev", "Ethernet0", "nud", "permanent")
	ns.IP("-6", "neigh", "replace", "2001:db8::2", "lladdr", "02:00:00:00:00:03", "dev", "Ethernet0", "nud", "reachable")
	got, err := k.Neighs().List("Ethernet0")
	must(t, err)
	want := map[string]string{"10.0.0.2": "permanent 02:00:00:00:00:02", "2001:db8::2": "reachable 02:00:00:00:00:03"}
	have := map[string]string{}
	for _, n := range got {
		have[n.IP.String()] = n.State + " " + n.MAC.String()
	}
	for ipS, w := range want {
		if have[ipS] != w && !(ipS == "2001:db8::2" && strings.HasSuffix(have[ipS], "02:00:00:00:00:03")) {
			t.Fatalf("neighbour %s: got %q want %q (all: %v)", ipS, have[ipS], w, have)
		}
	}
	_, err = k.Neighs().List("nope")
	mustNotFound(t, "neighbours of absent link", err)
}

func TestRealNotFound(t *testing.T) {
	_, k := openReal(t)
	_, err := k.Links().Get("nope")
	mustNotFound(t, "get", err)
	mustNotFound(t, "set", k.Links().Set(LinkInfo{Name: "nope", MTU: ptr(1400)}))
	mustNotFound(t, "del", k.Links().Del("nope"))
	mustNotFound(t, "master", k.Links().Add(LinkInfo{Name: "x", Kind: "bridge", Master: ptr("nope")}))
	if err := k.Links().Del("nope"); !strings.Contains(err.Error(), "del link nope") {
		t.Fatalf("error %q does not name op and object", err)
	}
}

func TestRealFeatures(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}, Master: ptr("Bridge")}))
	t.Run("vlan device", func(t *testing.T) {
		err := k.Links().Add(LinkInfo{Name: "Vlan100", Kind: "vlan", Vlan: &VlanOptions{ID: 100, Parent: "Bridge"}})
		if err != nil {
			assertFeature(t, err, FeatureVlan)
		}
		j := judgeLink(t, ns, "Vlan100")
		if j.Linkinfo.InfoKind != "vlan" || j.Linkinfo.InfoData["id"] != float64(100) {
			t.Fatalf("ip says %+v", j)
		}
		got, err := k.Links().Get("Vlan100")
		must(t, err)
		if got.Vlan == nil || got.Vlan.ID != 100 || got.Vlan.Parent != "Bridge" {
			t.Fatalf("Get: %+v", got)
		}
	})
	t.Run("dummy device", func(t *testing.T) {
		err := k.Links().Add(LinkInfo{Name: "dummy0", Kind: "dummy"})
		if err != nil {
			assertFeature(t, err, FeatureDummy)
		}
		if j := judgeLink(t, ns, "dummy0"); j.Linkinfo.InfoKind != "dummy" {
			t.Fatalf("ip says %+v", j)
		}
	})
	t.Run("vlan filtering", func(t *testing.T) {
		err := k.Links().Set(LinkInfo{Name: "Bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true), DefaultPVID: ptr(uint16(0))}})
		if err != nil {
			assertFeature(t, err, FeatureVlanFiltering)
		}
		if j := judgeLink(t, ns, "Bridge"); j.Linkinfo.InfoData["vlan_filtering"] != float64(1) {
			t.Fatalf("ip says %+v", j.Linkinfo)
		}
	})
	t.Run("bridge vlans", func(t *testing.T) {
		err := k.BridgeVlans().Add(BridgeVlanInfo{Link: "Ethernet0", VID: 100, PVID: true, Untagged: true})
		if err != nil {
			assertFeature(t, err, FeatureVlanFiltering)
		}
		must(t, k.BridgeVlans().Add(BridgeVlanInfo{Link: "Bridge", VID: 100, Self: true}))
		var vs []struct {
			Ifname string `json:"ifname"`
			Vlans  []struct {
				Vlan  int      `json:"vlan"`
				Flags []string `json:"flags"`
			} `json:"vlans"`
		}
		ns.JSON(&vs, "bridge", "vlan", "show")
		seen := map[string]bool{}
		for _, v := range vs {
			for _, x := range v.Vlans {
				if x.Vlan == 100 {
					seen[v.Ifname] = true
				}
			}
		}
		if !seen["Ethernet0"] || !seen["Bridge"] {
			t.Fatalf("bridge vlan show: %+v", vs)
		}
		list, err := k.BridgeVlans().List("Ethernet0")
		must(t, err)
		ok := false
		for _, v := range list {
			ok = ok || (v.VID == 100 && v.PVID && v.Untagged && !v.Self)
		}
		if !ok {
			t.Fatalf("List: %+v", list)
		}
		must(t, k.BridgeVlans().Del(BridgeVlanInfo{Link: "Ethernet0", VID: 100}))
		must(t, k.BridgeVlans().Del(BridgeVlanInfo{Link: "Ethernet0", VID: 100})) // absent: the kernel ignores it
	})
}

// assertFeature checks a FeatureError names feature and says so, then
// skips: the rest of the test needs a kernel with the feature.
func assertFeature(t *testing.T, err error, feature string) {
	t.Helper()
	f, ok := MissingFeature(err)
	if !ok || f != feature {
		t.Fatalf("error %v: want a FeatureError for %q", err, feature)
	}
	if !strings.Contains(err.Error(), "kernel lacks "+feature) {
		t.Fatalf("error %q does not say 'kernel lacks %s'", err, feature)
	}
	skipIfMissing(t, err)
}

func TestRealWrites(t *testing.T) {
	_, k := openReal(t)
	if k.Writes() != 0 {
		t.Fatalf("fresh kernel has %d writes", k.Writes())
	}
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	must(t, k.Links().Set(LinkInfo{Name: "Bridge", MTU: ptr(1400), AdminUp: ptr(true)}))
	must(t, k.Links().Set(LinkInfo{Name: "Bridge"})) // nothing to change: no write
	if _, err := k.Links().Get("Bridge"); err != nil {
		t.Fatal(err)
	}
	_, _ = k.Links().List()
	_ = k.Links().Del("nope") // failed writes count too
	if got := k.Writes(); got != 3 {
		t.Fatalf("Writes() = %d, want 3", got)
	}
}

// TestRealOpenByPathAndCurrent: NetNSPath and the caller's own namespace
// (empty Options, here entered with Do) reach the same namespace.
func TestRealOpenByPathAndCurrent(t *testing.T) {
	ns := testns.New(t)
	k, err := Open(Options{NetNSPath: ns.Path()})
	must(t, err)
	defer k.Close()
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	if j := judgeLink(t, ns, "Bridge"); j.Linkinfo.InfoKind != "bridge" {
		t.Fatalf("ip says %+v", j)
	}
	var cur Kernel
	must(t, ns.Do(func() error { var err error; cur, err = Open(Options{}); return err }))
	defer cur.Close()
	// The handle stays bound to the namespace after Do restored the thread.
	if _, err := cur.Links().Get("Bridge"); err != nil {
		t.Fatalf("Open(Options{}) inside the namespace: %v", err)
	}
	if _, err := Open(Options{NetNSPath: "/proc/self/ns/does-not-exist"}); !IsNotFound(err) || !strings.Contains(err.Error(), "network namespace file") {
		t.Fatalf("missing path: %v", err)
	}
}

// TestRealIfindexCache: writes that resolve a link name through the
// ifindex cache follow links renamed, deleted and re-created behind the
// wrapper's back, and a stale index the kernel refuses is looked up again.
func TestRealIfindexCache(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(*testns.NS)
	R := k.Routes()
	dev := func(dst string) string {
		t.Helper()
		return env.routes(t, "route", "show", "proto", "201")[dst].Dev
	}
	route := func(dst, link string) RouteInfo {
		return RouteInfo{Dst: pfx(dst), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Link: link}}}
	}
	must(t, R.Replace(route("10.9.0.0/16", "Ethernet1"))) // caches Ethernet1
	if d := dev("10.9.0.0/16"); d != "Ethernet1" {
		t.Fatalf("route dev %q, want Ethernet1", d)
	}

	// Renamed, and a new link takes the name: the name means the new link.
	ns.IP("link", "set", "Ethernet1", "down")
	ns.IP("link", "set", "Ethernet1", "name", "Old1")
	ns.IP("link", "add", "Ethernet1", "type", "veth", "peer", "name", "peerN")
	ns.IP("link", "set", "Ethernet1", "up")
	ns.IP("link", "set", "peerN", "up")
	must(t, R.Replace(route("10.10.0.0/16", "Ethernet1")))
	if d := dev("10.10.0.0/16"); d != "Ethernet1" {
		t.Fatalf("after rename and re-create, route dev %q, want the new Ethernet1", d)
	}
	must(t, k.Addrs().Add(AddrInfo{Link: "Ethernet1", Prefix: pfx("10.0.9.1/24")}))
	if a := judgeAddrs(t, ns, "Ethernet1"); !a["10.0.9.1/24"] {
		t.Fatalf("address not on the new Ethernet1: %v", a)
	}

	// Deleted and re-created (a new ifindex).
	ns.IP("link", "del", "Ethernet1")
	mustNotFound(t, "route via a deleted link", R.Replace(route("10.11.0.0/16", "Ethernet1")))
	ns.IP("link", "add", "Ethernet1", "type", "veth", "peer", "name", "peerN")
	ns.IP("link", "set", "Ethernet1", "up")
	ns.IP("link", "set", "peerN", "up")
	must(t, R.Replace(route("10.11.0.0/16", "Ethernet1")))
	if d := dev("10.11.0.0/16"); d != "Ethernet1" {
		t.Fatalf("after delete and re-create, route dev %q, want Ethernet1", d)
	}

	// A cached index the kernel no longer knows (as if its message were
	// lost) is refused with ENODEV and looked up again.
	kk := k.(*kernel)
	kk.idx.mu.Lock()
	if kk.idx.sock == nil {
		kk.idx.mu.Unlock()
		t.Fatal("ifindex cache is off (RTNLGRP_LINK subscription failed)")
	}
	kk.idx.forgetIndex(kk.idx.byName["Ethernet2"])
	kk.idx.byName["Ethernet2"], kk.idx.byIndex[99999] = 99999, "Ethernet2"
	kk.idx.mu.Unlock()
	must(t, R.Replace(route("10.12.0.0/16", "Ethernet2")))
	if d := dev("10.12.0.0/16"); d != "Ethernet2" {
		t.Fatalf("after a stale cached index, route dev %q, want Ethernet2", d)
	}

	// A link made after the cache opened is learnt from its own
	// message: its first use needs no lookup, and the index is its.
	ns.IP("link", "add", "New1", "type", "veth", "peer", "name", "peerM")
	ns.IP("link", "set", "New1", "up")
	idx, cached, err := kk.ifindex("New1")
	must(t, err)
	var want []struct {
		Ifindex int `json:"ifindex"`
	}
	ns.JSON(&want, "link", "show", "New1")
	if len(want) != 1 || !cached || idx != want[0].Ifindex {
		t.Fatalf("New1: ifindex %d cached %v, want %+v from the cache", idx, cached, want)
	}
	if n := kk.nameOf(idx); n != "New1" {
		t.Fatalf("nameOf(%d) = %q, want New1", idx, n)
	}
	// Renamed: the old name is forgotten, the new one learnt.
	ns.IP("link", "set", "New1", "down")
	ns.IP("link", "set", "New1", "name", "New2")
	if _, _, err := kk.ifindex("New1"); !IsNotFound(err) {
		t.Fatalf("New1 after the rename: %v, want not found", err)
	}
	if n := kk.nameOf(idx); n != "New2" {
		t.Fatalf("nameOf(%d) after the rename = %q, want New2", idx, n)
	}
}
