package netlinkmgr

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// Fake-only behaviour: the op log, injected failures, feature switches,
// seeding helpers and simulated overflow.

func TestFakeOpLog(t *testing.T) {
	f := NewFake()
	f.AddPort("Ethernet0", "Ethernet4")
	must(t, f.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true)}}))
	must(t, f.Links().Set(LinkInfo{Name: "Ethernet0", MTU: ptr(9100), AdminUp: ptr(true), Master: ptr("Bridge")}))
	must(t, f.Links().Set(LinkInfo{Name: "Ethernet0"})) // no-op: not logged, not counted
	must(t, f.Addrs().Add(AddrInfo{Link: "Bridge", Prefix: pfx("10.0.0.1/24")}))
	must(t, f.Links().Set(LinkInfo{Name: "Bridge", AdminUp: ptr(true)}))
	must(t, f.Routes().Replace(RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.0.2")}}}))
	must(t, f.BridgeVlans().Add(BridgeVlanInfo{Link: "Ethernet0", VID: 100, PVID: true, Untagged: true}))
	must(t, f.Fdbs().Add(FdbInfo{MAC: mac("00:11:22:33:44:55"), Link: "Ethernet0", Vlan: 100}))
	must(t, f.Routes().Del(RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard}))
	_ = f.Links().Del("nope") // failed: counted, not logged
	want := []string{
		"link add Bridge type bridge vlan_filtering=1",
		"link set Ethernet0 mtu=9100 up master=Bridge",
		"addr add 10.0.0.1/24 dev Bridge",
		"link set Bridge up",
		"route replace 10.2.0.0/16 proto 201 metric 0 table 254 nexthop via 10.0.0.2",
		"vlan add dev Ethernet0 vid 100 pvid untagged",
		"fdb add 00:11:22:33:44:55 dev Ethernet0 vlan 100",
		"route del 10.2.0.0/16 proto 201 metric 0 table 254",
	}
	if got := f.Ops(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Ops():\n got %q\nwant %q", got, want)
	}
	if f.Writes() != uint64(len(want)+1) {
		t.Fatalf("Writes() = %d, want %d", f.Writes(), len(want)+1)
	}
	f.ClearOps()
	if len(f.Ops()) != 0 {
		t.Fatal("ClearOps left entries")
	}
	// The route's link was resolved from the gateway, as the kernel does.
	must(t, f.Routes().Replace(RouteInfo{Dst: pfx("10.3.0.0/16"), NextHops: []NextHop{{Gateway: ip("10.0.0.2")}}}))
	rs, _ := f.Routes().List(RouteFilter{})
	if len(rs) != 1 || rs[0].NextHops[0].Link != "Bridge" || rs[0].NextHops[0].Weight != 1 {
		t.Fatalf("routes: %+v", rs)
	}
}

func TestFakeFailNext(t *testing.T) {
	f := NewFake()
	f.AddPort("Ethernet0")
	boom := errors.New("boom")
	f.FailNext("link set Ethernet0", boom)
	if err := f.Links().Set(LinkInfo{Name: "Ethernet0", MTU: ptr(9000)}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the injected error", err)
	}
	if l, _ := f.Links().Get("Ethernet0"); *l.MTU != 1500 {
		t.Fatal("failed set changed the link")
	}
	must(t, f.Links().Set(LinkInfo{Name: "Ethernet0", MTU: ptr(9000)})) // only once
}

func TestFakeHostKernelFeatures(t *testing.T) {
	f := NewFake().HostKernel()
	f.AddPort("Ethernet0")
	must(t, f.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	must(t, f.Links().Set(LinkInfo{Name: "Ethernet0", Master: ptr("Bridge")}))
	cases := map[string]error{
		FeatureVlan:          f.Links().Add(LinkInfo{Name: "Vlan100", Kind: "vlan", Vlan: &VlanOptions{ID: 100, Parent: "Bridge"}}),
		FeatureDummy:         f.Links().Add(LinkInfo{Name: "d0", Kind: "dummy"}),
		FeatureVRF:           f.Links().Add(LinkInfo{Name: "Vrf1", Kind: "vrf", Vrf: &VrfOptions{Table: 1001}}),
		FeatureVlanFiltering: f.Links().Set(LinkInfo{Name: "Bridge", Bridge: &BridgeOptions{VlanFiltering: ptr(true)}}),
	}
	for feat, err := range cases {
		if got, ok := MissingFeature(err); !ok || got != feat {
			t.Errorf("%s: got %v", feat, err)
		}
	}
	err := f.BridgeVlans().Add(BridgeVlanInfo{Link: "Ethernet0", VID: 100})
	if got, _ := MissingFeature(err); got != FeatureVlanFiltering {
		t.Fatalf("bridge vlan add: %v", err)
	}
	if err.Error() != "add vlan 100 on Ethernet0: kernel lacks bridge VLAN filtering (operation not supported)" {
		t.Fatalf("message: %q", err)
	}
	if vs, _ := f.BridgeVlans().List(""); len(vs) != 0 {
		t.Fatalf("host-like fake has vlans %+v", vs)
	}
	if !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatal("FeatureError does not unwrap to the errno")
	}
}

func TestFakeCascadesAndEvents(t *testing.T) {
	f := NewFake()
	f.AddPort("Ethernet0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := f.Watch(ctx, WatchOptions{})
	must(t, err)
	must(t, f.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", AdminUp: ptr(true)}))
	must(t, f.Links().Set(LinkInfo{Name: "Ethernet0", Master: ptr("Bridge"), AdminUp: ptr(true)}))
	if l, _ := f.Links().Get("Bridge"); !l.OperUp || l.OperState != "up" {
		t.Fatalf("bridge with an up port: %+v", l)
	}
	must(t, f.LearnFdb(FdbInfo{MAC: mac("00:11:22:33:44:66"), Link: "Ethernet0"}))
	waitEvent(t, ch, "learned fdb", func(ev Event) bool {
		return ev.Kind == EventFdb && !ev.Fdb.Static && !ev.Fdb.Local && ev.Fdb.Master == "Bridge"
	})
	must(t, f.AddNeigh(NeighInfo{Link: "Bridge", IP: ip("10.0.0.2"), MAC: mac("02:00:00:00:00:02"), State: "reachable"}))
	waitEvent(t, ch, "neigh", func(ev Event) bool { return ev.Kind == EventNeigh && ev.Neigh.IP == ip("10.0.0.2") })
	must(t, f.SetCarrier("Ethernet0", false))
	if l, _ := f.Links().Get("Ethernet0"); l.OperUp || l.OperState != "down" {
		t.Fatalf("carrier off: %+v", l)
	}
	must(t, f.SetStats("Ethernet0", LinkStats{RxPackets: 7}))
	if l, _ := f.Links().Get("Ethernet0"); l.Stats.RxPackets != 7 {
		t.Fatalf("stats: %+v", l.Stats)
	}

	f.Overflow()
	waitEvent(t, ch, "resync", func(ev Event) bool { return ev.Kind == EventResync })
	waitEvent(t, ch, "synced", func(ev Event) bool { return ev.Kind == EventSynced })

	must(t, f.Links().Del("Bridge"))
	waitEvent(t, ch, "fdb flushed with the bridge", func(ev Event) bool { return ev.Kind == EventFdb && ev.Deleted })
	waitEvent(t, ch, "bridge deleted", func(ev Event) bool { return ev.Kind == EventLink && ev.Deleted && ev.Link.Name == "Bridge" })
	if l, _ := f.Links().Get("Ethernet0"); *l.Master != "" {
		t.Fatalf("port still enslaved to a deleted bridge: %+v", l)
	}
	if fs, _ := f.Fdbs().List(""); len(fs) != 0 {
		t.Fatalf("fdb left: %+v", fs)
	}
	if ns, _ := f.Neighs().List(""); len(ns) != 0 {
		t.Fatalf("neighbours left: %+v", ns)
	}
	// Returned objects are copies: changing them does not change the Fake.
	l, _ := f.Links().Get("Ethernet0")
	*l.MTU = 1
	l.MAC[0] = 0xff
	if l2, _ := f.Links().Get("Ethernet0"); *l2.MTU == 1 || l2.MAC[0] == 0xff {
		t.Fatal("Get returned shared state")
	}
}

func TestErrorForms(t *testing.T) {
	err := opErr("del", "link Ethernet0", notFound(unix.ENODEV))
	if err.Error() != "del link Ethernet0: not found (no such device)" {
		t.Fatalf("message %q", err)
	}
	if !IsNotFound(err) || !errors.Is(err, unix.ENODEV) {
		t.Fatal("not-found error does not match ErrNotFound and its errno")
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "del" || oe.Object != "link Ethernet0" {
		t.Fatalf("OpError: %+v", oe)
	}
	fe := mapLinkAddErr("vlan", unix.EOPNOTSUPP)
	if f, ok := MissingFeature(fe); !ok || f != FeatureVlan || fe.Error() != "kernel lacks 802.1Q VLAN support (operation not supported)" {
		t.Fatalf("vlan add EOPNOTSUPP → %v", fe)
	}
	if _, ok := MissingFeature(mapLinkAddErr("bridge", unix.EOPNOTSUPP)); ok {
		t.Fatal("bridge add EOPNOTSUPP taken for a missing feature")
	}
	if !IsNotFound(mapNotFound(unix.ESRCH)) || IsNotFound(mapNotFound(unix.EPERM)) {
		t.Fatal("mapNotFound")
	}
}
