package netlinkmgr

import (
	"errors"
	"os"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testns"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The bond create addBond sends, decoded: what ip link add NAME type bond
// mode 802.3ad miimon 100 min_links 2 lacp_rate fast mtu 9100 up sends.
// (The kernel's side is TestContractReal's "bond devices", in the VM.)
func TestBondLinkRequest(t *testing.T) {
	up, mii, minL, rate, mtu := true, 100, 2, "fast", 9100
	l := LinkInfo{Name: "PortChannel01", Kind: "bond", AdminUp: &up, MTU: &mtu,
		Bond: &BondOptions{Mode: "802.3ad", Miimon: &mii, MinLinks: &minL, LacpRate: &rate}}
	req, err := bondLinkRequest(&l)
	must(t, err)
	if want := uint16(unix.NLM_F_REQUEST | unix.NLM_F_CREATE | unix.NLM_F_EXCL | unix.NLM_F_ACK); req.Flags != want || req.Type != unix.RTM_NEWLINK {
		t.Fatalf("type %d flags %#x, want RTM_NEWLINK %#x", req.Type, req.Flags, want)
	}
	b := req.Serialize()[unix.SizeofNlMsghdr:]
	if flags, change := native.Uint32(b[8:12]), native.Uint32(b[12:16]); flags != unix.IFF_UP || change != unix.IFF_UP {
		t.Fatalf("ifinfomsg flags %#x change %#x, want IFF_UP both", flags, change)
	}
	got := map[string]uint32{}
	name, kind := "", ""
	ok := eachAttr(b[unix.SizeofIfInfomsg:], func(typ uint16, v []byte) bool {
		switch typ & nl.NLA_TYPE_MASK {
		case unix.IFLA_IFNAME:
			name = string(v[:len(v)-1])
		case unix.IFLA_MTU:
			got["mtu"] = native.Uint32(v)
		case unix.IFLA_LINKINFO:
			return eachAttr(v, func(typ uint16, v []byte) bool {
				switch typ & nl.NLA_TYPE_MASK {
				case nl.IFLA_INFO_KIND:
					kind = string(v)
				case nl.IFLA_INFO_DATA:
					return eachAttr(v, func(typ uint16, v []byte) bool {
						switch typ & nl.NLA_TYPE_MASK {
						case nl.IFLA_BOND_MODE:
							got["mode"] = uint32(v[0])
						case nl.IFLA_BOND_MIIMON:
							got["miimon"] = native.Uint32(v)
						case nl.IFLA_BOND_MIN_LINKS:
							got["min_links"] = native.Uint32(v)
						case nl.IFLA_BOND_AD_LACP_RATE:
							got["lacp_rate"] = uint32(v[0])
						}
						return true
					})
				}
				return true
			})
		}
		return true
	})
	want := map[string]uint32{"mtu": 9100, "mode": 4, "miimon": 100, "min_links": 2, "lacp_rate": 1}
	if !ok || name != "PortChannel01" || kind != "bond" || len(got) != len(want) {
		t.Fatalf("decoded ok=%v name %q kind %q attrs %v", ok, name, kind, got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for _, bad := range []BondOptions{{Mode: "lacp"}, {LacpRate: ptr("medium")}} {
		if _, err := bondLinkRequest(&LinkInfo{Name: "b", Kind: "bond", Bond: &bad}); !errors.Is(err, unix.EINVAL) {
			t.Errorf("%+v: %v, want EINVAL", bad, err)
		}
	}
}

// Every mode and rate name the library knows is one the encoder knows,
// with the same number.
func TestBondNamesMatchLibrary(t *testing.T) {
	for name, m := range bondModes {
		if got, ok := netlinkBondMode(name); !ok || got != m {
			t.Errorf("mode %s: library %d (%v), ours %d", name, got, ok, m)
		}
	}
	for name, r := range lacpRates {
		if got, ok := netlinkLacpRate(name); !ok || got != r {
			t.Errorf("lacp_rate %s: library %d (%v), ours %d", name, got, ok, r)
		}
	}
}

func netlinkBondMode(name string) (uint8, bool) {
	m, ok := netlink.StringToBondModeMap[name]
	return uint8(m), ok
}

func netlinkLacpRate(name string) (uint8, bool) {
	r, ok := netlink.StringToBondLacpRateMap[name]
	return uint8(r), ok
}

// rtRequests is how many requests k's route socket has sent (each takes
// two sequence numbers, execEncoded).
func rtRequests(k Kernel) uint32 {
	r := &k.(*kernel).rt
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq / 2
}

// A port's "down" and its master go in one RTM_SETLINK (ip link set NAME
// down master M): the kernel applies the flags before IFLA_MASTER, so the
// port ends down and enslaved, as after two requests. An unknown master
// fails before anything is sent: the port stays up. (A bond's port is the
// same request; the host kernel lacks bonding, a bridge stands in.)
func TestSetDownMasterOneRequest(t *testing.T) {
	ns, k := openReal(t)
	L := k.Links()
	must(t, L.Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	must(t, L.Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}}))
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)}))

	if err := L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false), Master: ptr("NoSuchBond")}); err == nil || !IsNotFound(err) {
		t.Fatalf("down master NoSuchBond: %v, want a not-found error", err)
	}
	if j := judgeLink(t, ns, "Ethernet0"); !j.up() || j.Master != "" {
		t.Fatalf("after a refused down master, ip says %+v: want it up, no master", j)
	}

	before := rtRequests(k)
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false), Master: ptr("Bridge")}))
	if n := rtRequests(k) - before; n != 1 {
		t.Fatalf("down master Bridge took %d requests, want 1", n)
	}
	if j := judgeLink(t, ns, "Ethernet0"); j.up() || j.Master != "Bridge" {
		t.Fatalf("after down master Bridge, ip says %+v: want it down, master Bridge", j)
	}

	// With an mtu between them they stay apart: down, mtu, master.
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(true), Master: ptr("")}))
	before = rtRequests(k)
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false), MTU: ptr(9000), Master: ptr("Bridge")}))
	if n := rtRequests(k) - before; n != 3 {
		t.Fatalf("down mtu master took %d requests, want 3", n)
	}
	if j := judgeLink(t, ns, "Ethernet0"); j.up() || j.Master != "Bridge" || j.Mtu != 9000 {
		t.Fatalf("after down mtu master, ip says %+v", j)
	}
}

// The same with an 802.3ad bond (the VM; the host kernel lacks bonding):
// the port ends enslaved, and up (the bond opens its port itself).
func TestSetDownMasterOneRequestBond(t *testing.T) {
	ns, k := openReal(t)
	L := k.Links()
	err := L.Add(LinkInfo{Name: "PortChannel01", Kind: "bond", AdminUp: ptr(true), Bond: &BondOptions{Mode: "802.3ad"}})
	skipIfMissing(t, err)
	must(t, err)
	must(t, L.Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}}))
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)}))
	before := rtRequests(k)
	must(t, L.Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(false), Master: ptr("PortChannel01")}))
	if n := rtRequests(k) - before; n != 1 {
		t.Fatalf("down master PortChannel01 took %d requests, want 1", n)
	}
	if j := judgeLink(t, ns, "Ethernet0"); !j.up() || j.Master != "PortChannel01" {
		t.Fatalf("after down master PortChannel01, ip says %+v: want it up (the bond opened it), master PortChannel01", j)
	}
}

// Get teaches the ifindex cache the link it read (a member's port is read,
// then set by index: one RTM_GETLINK, not two), and a renamed link's old
// name is not kept.
func TestGetLearnsIfindex(t *testing.T) {
	ns, k := openReal(t)
	kk := k.(*kernel)
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet0", Kind: "veth", Veth: &VethOptions{PeerName: "peer0"}}))
	kk.idx.mu.Lock()
	if kk.idx.sock == nil {
		kk.idx.mu.Unlock()
		t.Fatal("ifindex cache is off (RTNLGRP_LINK subscription failed)")
	}
	kk.idx.drain()
	kk.idx.clear() // as for a port made before the cache opened
	kk.idx.mu.Unlock()
	l, err := k.Links().Get("Ethernet0")
	must(t, err)
	idx, cached, err := kk.ifindex("Ethernet0")
	must(t, err)
	if !cached || idx != l.Index || l.Index == 0 {
		t.Fatalf("after Get (index %d): ifindex %d cached %v, want the same index from the cache", l.Index, idx, cached)
	}
	ns.IP("link", "set", "Ethernet0", "name", "Ethernet9")
	if _, _, err := kk.ifindex("Ethernet0"); !IsNotFound(err) {
		t.Fatalf("renamed Ethernet0: ifindex %v, want not found", err)
	}
	if idx, cached, err := kk.ifindex("Ethernet9"); err != nil || !cached || idx != l.Index {
		t.Fatalf("Ethernet9: ifindex %d cached %v %v, want %d from the cache", idx, cached, err, l.Index)
	}
}

// A link event's parent index is named only when the parent is in this
// namespace: a veth whose peer is elsewhere (IFLA_LINK_NETNSID) carries
// the peer's index there, which the watcher used to look up here, one
// RTM_GETLINK per port at its first event.
func TestLinkEventParentOtherNamespace(t *testing.T) {
	ns, k := openReal(t)
	ns.Veth("Ethernet0", testns.New(t), "eth0") // peer in another namespace
	ns.Veth("Ethernet4", nil, "peer4")          // peer here
	kk := k.(*kernel)
	get := func(name string) linkUpdate {
		t.Helper()
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: kk.raw}
		req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
		req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
		must(t, err)
		u, ok, err := decodeLink(unix.RTM_NEWLINK, 0, msgs[0])
		if err != nil || !ok {
			t.Fatalf("decodeLink %s: %v %v", name, ok, err)
		}
		return u
	}
	u := get("Ethernet0")
	if u.w.netnsid < 0 || u.w.parent == 0 {
		t.Fatalf("Ethernet0: netnsid %d parent %d, want a peer in another namespace", u.w.netnsid, u.w.parent)
	}
	if _, _, parent, _ := u.indexes(); parent != 0 {
		t.Fatalf("Ethernet0: parent %d to name, want 0 (the peer is not here)", parent)
	}
	peer4, err := k.Links().Get("peer4")
	must(t, err)
	u4 := get("Ethernet4")
	if _, _, parent, _ := u4.indexes(); parent != peer4.Index {
		t.Fatalf("Ethernet4: parent %d to name, want peer4's %d", parent, peer4.Index)
	}
}

// Links().Master answers from the ifindex cache once it knows the link and
// its master — from a List (seeded under the cache's mutex), a lookup or
// the link's own messages — and follows every change made behind its
// back: enslave, a master renamed or deleted, release, a link made later.
// The judge is ip -j link show.
func TestRealLinksMasterCached(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(*testns.NS)
	kk := k.(*kernel)
	if kk.idx.sock == nil {
		t.Fatal("ifindex cache is off (RTNLGRP_LINK subscription failed)")
	}
	ns.IP("link", "add", "br0", "type", "bridge")
	ns.IP("link", "add", "br1", "type", "bridge")
	ns.IP("link", "set", "Ethernet1", "master", "br1")
	if _, err := k.Links().List(); err != nil { // what orchagent's Prime does
		t.Fatal(err)
	}
	judge := func(link string) string {
		t.Helper()
		var ls []struct {
			Master string `json:"master"`
		}
		ns.JSON(&ls, "link", "show", "dev", link)
		if len(ls) != 1 {
			t.Fatalf("ip -j link show dev %s: %d links", link, len(ls))
		}
		return ls[0].Master
	}
	check := func(step, link, want string) {
		t.Helper()
		if j := judge(link); j != want {
			t.Fatalf("%s: ip says %s's master is %q, the test wants %q", step, link, j, want)
		}
		m, known := kk.idx.masterOf(link)
		if !known {
			t.Fatalf("%s: the cache does not know %s's master (a request per call)", step, link)
		}
		if m != want {
			t.Fatalf("%s: cached master of %s %q, want %q", step, link, m, want)
		}
		got, err := k.Links().Master(link)
		must(t, err)
		if got != want {
			t.Fatalf("%s: Master(%s) %q, want %q", step, link, got, want)
		}
	}
	check("after List", "Ethernet2", "")
	check("after List", "Ethernet1", "br1")
	ns.IP("link", "set", "Ethernet2", "master", "br0")
	check("enslaved behind our back", "Ethernet2", "br0")
	ns.IP("link", "set", "br0", "name", "brX")
	check("master renamed", "Ethernet2", "brX")
	ns.IP("link", "set", "Ethernet2", "nomaster")
	check("released", "Ethernet2", "")
	ns.IP("link", "del", "br1")
	check("master deleted", "Ethernet1", "")
	ns.IP("link", "add", "New1", "type", "veth", "peer", "name", "peerM")
	ns.IP("link", "set", "New1", "master", "brX")
	check("a link made later", "New1", "brX")
	if _, err := k.Links().Master("Nope1"); !IsNotFound(err) {
		t.Fatalf("Master of an absent link: %v, want not found", err)
	}
	// A link the cache forgot (an overflow clears it) is read instead.
	kk.idx.mu.Lock()
	kk.idx.clear()
	kk.idx.mu.Unlock()
	if m, err := k.Links().Master("New1"); err != nil || m != "brX" {
		t.Fatalf("Master after the cache was cleared: %q, %v; want brX", m, err)
	}
}

// BenchmarkLinkMaster: a port's master read as a member's enslave used to
// (Links().Get: an RTM_GETLINK, the library's parse of the answer, the
// master's name from the cache) and as it does now (Links().Master: the
// ifindex cache, drained). A veth port on a bridge, in a fresh namespace.
//
//	go test -run '^$' -bench LinkMaster -benchmem ./netlinkmgr
func BenchmarkLinkMaster(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (a network namespace)")
	}
	ns := testns.New(b)
	k, err := Open(Options{NetNS: ns.Name})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	ns.IP("link", "add", "br0", "type", "bridge")
	ns.Veth("Ethernet0", testns.New(b), "eth0")
	ns.IP("link", "set", "Ethernet0", "master", "br0")
	if _, err := k.Links().List(); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		get  func() (string, error)
	}{
		{"get", func() (string, error) {
			l, err := k.Links().Get("Ethernet0")
			return *l.Master, err
		}},
		{"master", func() (string, error) { return k.Links().Master("Ethernet0") }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if m, err := c.get(); err != nil || m != "br0" {
					b.Fatalf("master %q, %v; want br0", m, err)
				}
			}
		})
	}
}
