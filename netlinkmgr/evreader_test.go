package netlinkmgr

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"reflect"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestDecodeLink: AF_BRIDGE link messages and other types are skipped
// unparsed, a truncated message is an error, the common kinds are
// decoded here and the rest by the library.
func TestDecodeLink(t *testing.T) {
	named := linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Vlan100")))
	bridge := append([]byte(nil), named...)
	bridge[0] = unix.AF_BRIDGE
	u, ok, err := decodeLink(unix.RTM_NEWLINK, 0, named)
	if l := u.info(nil); err != nil || !ok || u.lib != nil || l.Name != "Vlan100" || l.Index != 7 || u.deleted {
		t.Fatalf("AF_UNSPEC: %+v, %v", u, err)
	}
	if u, ok, err := decodeLink(unix.RTM_DELLINK, 0, named); err != nil || !ok || !u.deleted {
		t.Fatalf("RTM_DELLINK: %+v, %v", u, err)
	}
	bond := linkMsg(8, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("PortChannel1")), linkInfoAttr("bond"))
	if u, ok, err := decodeLink(unix.RTM_NEWLINK, 0, bond); err != nil || !ok || u.lib != nil || u.info(nil).Kind != "bond" {
		t.Fatalf("bond: %+v, %v; want decoded here", u, err)
	}
	vxlan := linkMsg(8, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Vxlan1")), linkInfoAttr("vxlan"))
	if u, ok, err := decodeLink(unix.RTM_NEWLINK, 0, vxlan); err != nil || !ok || u.lib == nil || u.info(nil).Kind != "vxlan" {
		t.Fatalf("vxlan: %+v, %v; want the library's", u, err)
	}
	for _, c := range []struct {
		name string
		t    uint16
		data []byte
	}{{"AF_BRIDGE", unix.RTM_NEWLINK, bridge}, {"AF_BRIDGE delete", unix.RTM_DELLINK, bridge}, {"RTM_NEWADDR", unix.RTM_NEWADDR, named}} {
		if u, ok, err := decodeLink(c.t, 0, c.data); err != nil || ok {
			t.Errorf("%s: %+v, %v; want skipped", c.name, u, err)
		}
	}
	if _, _, err := decodeLink(unix.RTM_NEWLINK, 0, named[:8]); err == nil {
		t.Errorf("truncated: no error")
	}
}

// linkInfoAttr is IFLA_LINKINFO with kind and data attributes.
func linkInfoAttr(kind string, data ...*nl.RtAttr) *nl.RtAttr {
	li := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	li.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind+"\x00"))
	if len(data) > 0 {
		d := li.AddRtAttr(nl.IFLA_INFO_DATA, nil)
		for _, a := range data {
			d.AddChild(a)
		}
	}
	return li
}

func linkSeeds() [][]byte {
	name := func(n string) *nl.RtAttr { return nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(n)) }
	u32 := func(typ int, v uint32) *nl.RtAttr { return nl.NewRtAttr(typ, nl.Uint32Attr(v)) }
	stats := make([]byte, binary.Size(netlink.LinkStatistics64{}))
	for i := range stats {
		stats[i] = byte(i)
	}
	return [][]byte{
		linkMsg(3, name("Bridge"), u32(unix.IFLA_MTU, 9100), nl.NewRtAttr(unix.IFLA_ADDRESS, []byte{2, 0, 0, 0, 0, 1}),
			nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{6}), nl.NewRtAttr(unix.IFLA_STATS64, stats),
			linkInfoAttr("bridge", nl.NewRtAttr(nl.IFLA_BR_VLAN_FILTERING, []byte{1}), nl.NewRtAttr(nl.IFLA_BR_VLAN_DEFAULT_PVID, nl.Uint16Attr(1)))),
		linkMsg(9, name("Vlan100"), u32(unix.IFLA_LINK, 3), u32(unix.IFLA_MASTER, 12), nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated("uplink")),
			linkInfoAttr("vlan", nl.NewRtAttr(nl.IFLA_VLAN_ID, nl.Uint16Attr(100)))),
		linkMsg(12, name("Vrf1"), linkInfoAttr("vrf", u32(nl.IFLA_VRF_TABLE, 1001))),
		linkMsg(4, name("Ethernet0"), u32(unix.IFLA_LINK, 5), u32(unix.IFLA_MASTER, 3), nl.NewRtAttr(unix.IFLA_STATS, stats[:binary.Size(netlink.LinkStatistics32{})]),
			linkInfoAttr("veth")),
		linkMsg(6, name("Ethernet8"), u32(unix.IFLA_LINK, 5), u32(unix.IFLA_LINK_NETNSID, 0), linkInfoAttr("veth")),
		linkMsg(1, name("lo"), nl.NewRtAttr(unix.IFLA_ADDRESS, make([]byte, 6)), nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{0})),
		linkMsg(20, name("PortChannel1"), nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated("switchyard")),
			linkInfoAttr("bond", nl.NewRtAttr(nl.IFLA_BOND_MODE, []byte{4}), u32(nl.IFLA_BOND_MIIMON, 100),
				u32(nl.IFLA_BOND_MIN_LINKS, 2), nl.NewRtAttr(nl.IFLA_BOND_AD_LACP_RATE, []byte{1}),
				u32(nl.IFLA_BOND_UPDELAY, 0), nl.NewRtAttr(nl.IFLA_BOND_AD_ACTOR_SYSTEM, make([]byte, 6)))),
		linkMsg(21, name("Ethernet12"), u32(unix.IFLA_MASTER, 20), u32(unix.IFLA_LINK, 5), u32(unix.IFLA_LINK_NETNSID, 0),
			bondSlaveInfoAttr("veth", nl.NewRtAttr(nl.IFLA_BOND_SLAVE_STATE, []byte{0}), nl.NewRtAttr(nl.IFLA_BOND_SLAVE_MII_STATUS, []byte{0}),
				u32(nl.IFLA_BOND_SLAVE_LINK_FAILURE_COUNT, 3), nl.NewRtAttr(nl.IFLA_BOND_SLAVE_AD_AGGREGATOR_ID, nl.Uint16Attr(7)),
				nl.NewRtAttr(nl.IFLA_BOND_SLAVE_AD_ACTOR_OPER_PORT_STATE, []byte{0x3d}),
				nl.NewRtAttr(nl.IFLA_BOND_SLAVE_AD_PARTNER_OPER_PORT_STATE, nl.Uint16Attr(1)))),
	}
}

// bondSlaveInfoAttr is IFLA_LINKINFO of a kind's link that is a bond's
// port: IFLA_INFO_SLAVE_KIND "bond" and its IFLA_INFO_SLAVE_DATA.
func bondSlaveInfoAttr(kind string, data ...*nl.RtAttr) *nl.RtAttr {
	li := linkInfoAttr(kind)
	li.AddRtAttr(nl.IFLA_INFO_SLAVE_KIND, nl.NonZeroTerminated("bond\x00"))
	d := li.AddRtAttr(nl.IFLA_INFO_SLAVE_DATA, nil)
	for _, a := range data {
		d.AddChild(a)
	}
	return li
}

// checkLinkMsg compares parseLinkMsg with the library's LinkDeserialize
// and toLinkInfo on b, when parseLinkMsg decodes it and the library does
// not refuse (or panic on) it.
func checkLinkMsg(t *testing.T, b []byte) {
	t.Helper()
	w, verdict := parseLinkMsg(b)
	if verdict != linkOwn || len(b) < unix.SizeofIfInfomsg || b[0] == unix.AF_BRIDGE {
		return
	}
	l, err := libLink(b)
	if err != nil {
		return // the library refuses attributes parseLinkMsg does not read
	}
	names := map[int]string{3: "Bridge", 5: "peer", 12: "Vrf1"}
	want, got := toLinkInfo(l, names), *w.linkInfo(names, new(linkBox))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %s\nlibrary %s", fmtLink(got), fmtLink(want))
	}
}

func fmtLink(l LinkInfo) string {
	return fmt.Sprintf("%+v mtu %v up %v master %q alias %q bridge %+v vlan %+v vrf %+v veth %+v stats %+v",
		l, *l.MTU, *l.AdminUp, *l.Master, *l.Alias, l.Bridge, l.Vlan, l.Vrf, l.Veth, l.Stats)
}

// libLink is the library's LinkDeserialize, whose panic is an error.
func libLink(b []byte) (l netlink.Link, err error) {
	defer func() {
		if recover() != nil {
			err = unix.EINVAL
		}
	}()
	return netlink.LinkDeserialize(&unix.NlMsghdr{Type: unix.RTM_NEWLINK}, append([]byte(nil), b...))
}

func TestParseLinkMsg(t *testing.T) {
	for _, b := range linkSeeds() {
		if _, v := parseLinkMsg(b); v != linkOwn {
			t.Fatalf("seed not decoded (%d): % x", v, b)
		}
		checkLinkMsg(t, b)
	}
	short := linkMsg(9, linkInfoAttr("vlan", nl.NewRtAttr(nl.IFLA_VLAN_ID, []byte{1})))
	if _, v := parseLinkMsg(short); v != linkBad {
		t.Errorf("1-byte IFLA_VLAN_ID: %d, want linkBad", v)
	}
	short = linkMsg(20, linkInfoAttr("bond", nl.NewRtAttr(nl.IFLA_BOND_UPDELAY, []byte{1})))
	if _, v := parseLinkMsg(short); v != linkBad {
		t.Errorf("1-byte IFLA_BOND_UPDELAY: %d, want linkBad", v)
	}
	// The bond and its port as the library reads them, field by field.
	seeds := linkSeeds()
	w, _ := parseLinkMsg(seeds[len(seeds)-2])
	l := w.linkInfo(nil, new(linkBox))
	if b := l.Bond; l.Kind != "bond" || b == nil || b.Mode != "802.3ad" || *b.Miimon != 100 || *b.MinLinks != 2 || *b.LacpRate != "fast" {
		t.Errorf("bond: %s %+v", l.Kind, l.Bond)
	}
	w, _ = parseLinkMsg(seeds[len(seeds)-1])
	l = w.linkInfo(map[int]string{20: "PortChannel1"}, new(linkBox))
	if s := l.BondSlave; *l.Master != "PortChannel1" || s == nil || s.State != "active" || s.MiiStatus != "up" || s.AggregatorID != 7 ||
		s.ActorOperPortState != 0x3d || s.PartnerOperPortState != 1 {
		t.Errorf("bond port: master %q %+v", *l.Master, l.BondSlave)
	}
}

// TestParseLinkMsgKernel: every AF_UNSPEC link message the kernel sends
// for a bridge, veth ports and a VLAN device (when the kernel has 802.1Q)
// decodes as the library decodes it.
func TestParseLinkMsgKernel(t *testing.T) {
	for _, m := range kernelLinkMsgs(t) {
		if _, v := parseLinkMsg(m); v != linkOwn {
			t.Fatalf("not decoded (%d): % x", v, m)
		}
		checkLinkMsg(t, m)
	}
}

// FuzzParseLinkMsg: what parseLinkMsg decodes reads as the library's
// LinkDeserialize and toLinkInfo read it; it never panics.
func FuzzParseLinkMsg(f *testing.F) {
	for _, b := range linkSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkLinkMsg(t, b) })
}

// neighMsg is an RTM_NEWNEIGH payload: ndmsg, then attrs.
func neighMsg(family uint8, idx uint32, state uint16, attrs ...*nl.RtAttr) []byte {
	b := []byte{family, 0, 0, 0}
	b = native.AppendUint32(b, idx)
	b = native.AppendUint16(b, state)
	b = append(b, unix.NTF_MASTER, 0)
	for _, a := range attrs {
		b = append(b, a.Serialize()...)
	}
	return b
}

func neighSeeds() [][]byte {
	mac := []byte{2, 0, 0, 1, 2, 3}
	vlan := make([]byte, 2)
	native.PutUint16(vlan, 100)
	fdb, _ := net.ParseMAC("02:00:00:01:02:03")
	return [][]byte{
		neighMsg(unix.AF_BRIDGE, 7, unix.NUD_NOARP, nl.NewRtAttr(unix.NDA_LLADDR, mac),
			nl.NewRtAttr(unix.NDA_MASTER, nl.Uint32Attr(3)), nl.NewRtAttr(unix.NDA_VLAN, vlan),
			nl.NewRtAttr(unix.NDA_CACHEINFO, make([]byte, 16))),
		neighMsg(unix.AF_BRIDGE, 9, unix.NUD_PERMANENT, nl.NewRtAttr(unix.NDA_LLADDR, mac),
			nl.NewRtAttr(unix.NDA_DST, []byte{192, 0, 2, 1})),
		neighMsg(unix.AF_INET, 7, unix.NUD_REACHABLE, nl.NewRtAttr(unix.NDA_DST, []byte{10, 0, 0, 2}),
			nl.NewRtAttr(unix.NDA_LLADDR, mac)),
		neighMsg(unix.AF_INET6, 7, unix.NUD_STALE, nl.NewRtAttr(unix.NDA_DST, net.ParseIP("fe80::1")),
			nl.NewRtAttr(unix.NDA_LLADDR, mac)),
		neighMsg(unix.AF_INET, 7, unix.NUD_FAILED, nl.NewRtAttr(unix.NDA_DST, net.ParseIP("10.0.0.3"))),
		neighMsg(unix.AF_INET, 7, unix.NUD_NOARP, nl.NewRtAttr(unix.NDA_DST, []byte{10, 0, 0, 4}),
			nl.NewRtAttr(unix.NDA_LLADDR, []byte{198, 51, 100, 1})),
		appendFdbMsg(nil, 1, 7, &FdbInfo{MAC: fdb, Vlan: 4094})[unix.SizeofNlMsghdr:],
	}
}

// checkNeighMsg compares parseNeighMsg with the library's NeighDeserialize
// on b (which must not be a 16-byte NDA_LLADDR of an IPv6 tunnel). A
// message the library refuses or panics on is only parsed.
func checkNeighMsg(t *testing.T, b []byte) {
	t.Helper()
	w, ok := parseNeighMsg(b)
	n, err := libNeigh(b)
	if err != nil || !ok {
		return // the library stops at a bad attribute; parseNeighMsg may not
	}
	if w.family != n.Family || w.index != n.LinkIndex || w.state != n.State || w.typ != n.Type ||
		w.master != n.MasterIndex || w.vlan != n.Vlan || w.hasIP != (n.IP != nil) || w.ip != ipToAddr(n.IP) ||
		!bytes.Equal(w.mac, n.HardwareAddr) || (w.mac == nil) != (n.HardwareAddr == nil) {
		t.Fatalf("parsed %+v, library %+v", w, n)
	}
}

// libNeigh is the library's NeighDeserialize, whose panic (an attribute
// shorter than its type's value) is an error.
func libNeigh(b []byte) (n *netlink.Neigh, err error) {
	defer func() {
		if recover() != nil {
			err = unix.EINVAL
		}
	}()
	return netlink.NeighDeserialize(b)
}

func TestParseNeighMsg(t *testing.T) {
	for _, b := range neighSeeds() {
		checkNeighMsg(t, b)
	}
	w, ok := parseNeighMsg(neighSeeds()[0])
	if !ok || w.family != unix.AF_BRIDGE || w.index != 7 || w.master != 3 || w.vlan != 100 || w.mac.String() != "02:00:00:01:02:03" {
		t.Fatalf("FDB entry: %+v %v", w, ok)
	}
	if _, ok := parseNeighMsg(neighSeeds()[0][:10]); ok {
		t.Errorf("truncated ndmsg parsed")
	}
	short := neighMsg(unix.AF_BRIDGE, 7, 0, nl.NewRtAttr(unix.NDA_VLAN, []byte{1}))
	if _, ok := parseNeighMsg(short); ok {
		t.Errorf("1-byte NDA_VLAN parsed")
	}
}

// FuzzParseNeighMsg: parseNeighMsg reads what the library's
// NeighDeserialize reads, and never panics.
func FuzzParseNeighMsg(f *testing.F) {
	for _, b := range neighSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if hasAttrLen(b, unix.NDA_LLADDR, 16) {
			parseNeighMsg(b) // the library asks the kernel about the link
			return
		}
		checkNeighMsg(t, b)
	})
}

// hasAttrLen reports whether ndmsg b has an attribute typ of n bytes.
func hasAttrLen(b []byte, typ uint16, n int) bool {
	if len(b) < unix.SizeofNdMsg {
		return false
	}
	for a := b[unix.SizeofNdMsg:]; len(a) >= rtaHdr; {
		l := int(native.Uint16(a[0:2]))
		if l < rtaHdr || l > len(a) {
			return false
		}
		if native.Uint16(a[2:4]) == typ && l-rtaHdr == n {
			return true
		}
		a = a[min(rtaAlign(l), len(a)):]
	}
	return false
}

// recordedEvents dumps, from a fresh namespace with a bridge and two
// veth ports, the kernel's link messages of both families and its
// AF_BRIDGE neighbours (the same bytes its events carry: one fill
// function serves both).
func recordedEvents(b testing.TB) (unspec, bridge, fdb [][]byte) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (a network namespace)")
	}
	ns := testns.New(b)
	ns.IP("link", "add", "Bridge", "type", "bridge")
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		ns.IP("link", "add", p, "type", "veth", "peer", "name", p+"p")
		ns.IP("link", "set", p, "master", "Bridge", "up")
	}
	// 802.1Q, where the kernel has it (the full-kernel VM).
	_, _ = ns.TryIP("link", "add", "link", "Bridge", "name", "Vlan100", "type", "vlan", "id", "100")
	// An 802.3ad bond with a port, where the kernel has bonding.
	if _, err := ns.TryIP("link", "add", "PortChannel1", "up", "type", "bond", "mode", "802.3ad", "miimon", "100", "min_links", "1", "lacp_rate", "fast"); err == nil {
		ns.IP("link", "add", "Ethernet8", "type", "veth", "peer", "name", "Ethernet8p")
		ns.IP("link", "set", "Ethernet8", "master", "PortChannel1")
	}
	ns.Bridge("fdb", "replace", "02:00:00:00:00:01", "dev", "Ethernet0", "master", "static")
	k, err := Open(Options{NetNS: ns.Name})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	dump := func(typ, reply int, msg nl.NetlinkRequestData) [][]byte {
		req := nl.NewNetlinkRequest(typ, unix.NLM_F_DUMP)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: k.(*kernel).raw}
		req.AddData(msg)
		msgs, err := req.Execute(unix.NETLINK_ROUTE, uint16(reply))
		if err != nil || len(msgs) == 0 {
			b.Fatalf("dump %d: %d messages, %v", typ, len(msgs), err)
		}
		return msgs
	}
	unspec = dump(unix.RTM_GETLINK, unix.RTM_NEWLINK, nl.NewIfInfomsg(unix.AF_UNSPEC))
	bridge = dump(unix.RTM_GETLINK, unix.RTM_NEWLINK, nl.NewIfInfomsg(unix.AF_BRIDGE))
	fdb = dump(unix.RTM_GETNEIGH, unix.RTM_NEWNEIGH, &netlink.Ndmsg{Family: unix.AF_BRIDGE})
	return unspec, bridge, fdb
}

// kernelLinkMsgs is recordedEvents' AF_UNSPEC link messages.
func kernelLinkMsgs(t *testing.T) [][]byte {
	unspec, _, _ := recordedEvents(t)
	return unspec
}

// BenchmarkLinkEvents: per link message, the library's reader path
// (LinkSubscribe: a copy of the datagram, DeserializeIfInfomsg and
// LinkDeserialize of every message; Watch then dropped AF_BRIDGE ones)
// against linkUpdate, on messages recorded from the kernel (and a bond's
// and its port's, from linkSeeds: the host has no bonding); and per FDB
// neighbour message, NeighDeserialize and toFdbInfo against
// parseNeighMsg and the FdbInfo neighEvent builds.
//
//	go test -run '^$' -bench 'LinkEvents|NeighEvents' -benchmem ./netlinkmgr
func BenchmarkLinkEvents(b *testing.B) {
	unspec, bridge, _ := recordedEvents(b)
	library := func(m []byte) netlink.LinkUpdate {
		m = append([]byte(nil), m...)
		hdr := unix.NlMsghdr{Type: unix.RTM_NEWLINK}
		l, err := netlink.LinkDeserialize(&hdr, m)
		if err != nil {
			b.Fatal(err)
		}
		return netlink.LinkUpdate{IfInfomsg: *nl.DeserializeIfInfomsg(m), Header: hdr, Link: l}
	}
	seeds := linkSeeds() // the last two: a bond and a bond's port
	for _, c := range []struct {
		name string
		msgs [][]byte
	}{{"bridge", bridge}, {"unspec", unspec}, {"bond", seeds[len(seeds)-2:]}} {
		b.Run(c.name+"/library", func(b *testing.B) {
			names := map[int]string{}
			for i := 0; i < b.N; i++ {
				u := library(c.msgs[i%len(c.msgs)])
				if u.IfInfomsg.Family != unix.AF_BRIDGE {
					l := toLinkInfo(u.Link, names)
					sinkLink = &l
				}
			}
		})
		b.Run(c.name+"/own", func(b *testing.B) {
			names := map[int]string{}
			for i := 0; i < b.N; i++ {
				u, ok, err := decodeLink(unix.RTM_NEWLINK, 0, c.msgs[i%len(c.msgs)])
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					sinkLink = u.info(names)
				}
			}
		})
	}
}

var sinkLink *LinkInfo

func BenchmarkNeighEvents(b *testing.B) {
	_, _, fdb := recordedEvents(b)
	names := map[int]string{}
	var sink *FdbInfo
	b.Run("library", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m := append([]byte(nil), fdb[i%len(fdb)]...) // the library's reader copies each datagram
			n, err := netlink.NeighDeserialize(m)
			if err != nil {
				b.Fatal(err)
			}
			u := netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: *n}
			e := toFdbInfo(u.Neigh, names)
			sink = &e
		}
	})
	b.Run("own", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			w, ok := parseNeighMsg(fdb[i%len(fdb)])
			if !ok {
				b.Fatal("not parsed")
			}
			sink = &FdbInfo{MAC: w.mac, Link: names[w.index], Master: names[w.master], Vlan: uint16(w.vlan),
				Static: w.state&unix.NUD_NOARP != 0, Local: w.state&unix.NUD_PERMANENT != 0, Dst: w.ip}
		}
	})
	_ = sink
}

// TestRealWatchLinkNeighEvents: through the own readers, a port's
// enslaving and deletion, a neighbour's replacement and deletion and an
// FDB entry's arrive as events (the AF_BRIDGE link messages the kernel
// sends on enslaving do not stop them).
func TestRealWatchLinkNeighEvents(t *testing.T) {
	ns, k := openReal(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{})
	must(t, err)
	ns.IP("link", "add", "Bridge", "type", "bridge")
	ns.IP("link", "add", "Ethernet0", "type", "veth", "peer", "name", "peer0")
	ns.IP("link", "set", "Ethernet0", "master", "Bridge", "up")
	waitEvent(t, ch, "port enslaved", func(ev Event) bool {
		return ev.Kind == EventLink && !ev.Deleted && ev.Link.Name == "Ethernet0" && ev.Link.Kind == "veth" &&
			*ev.Link.Master == "Bridge" && *ev.Link.AdminUp
	})
	ns.IP("link", "set", "Bridge", "up")
	ns.IP("neigh", "replace", "2001:db8::9", "lladdr", "02:00:00:00:00:09", "dev", "Bridge", "nud", "reachable")
	waitEvent(t, ch, "neigh", func(ev Event) bool {
		return ev.Kind == EventNeigh && !ev.Deleted && ev.Neigh.IP == ip("2001:db8::9") && ev.Neigh.Link == "Bridge" &&
			ev.Neigh.MAC.String() == "02:00:00:00:00:09" && ev.Neigh.State == "reachable"
	})
	ns.IP("neigh", "del", "2001:db8::9", "dev", "Bridge")
	waitEvent(t, ch, "neigh del", func(ev Event) bool {
		return ev.Kind == EventNeigh && ev.Deleted && ev.Neigh.IP == ip("2001:db8::9")
	})
	ns.Bridge("fdb", "replace", "02:00:00:00:00:0a", "dev", "Ethernet0", "master", "static")
	waitEvent(t, ch, "fdb", func(ev Event) bool {
		return ev.Kind == EventFdb && !ev.Deleted && ev.Fdb.MAC.String() == "02:00:00:00:00:0a" && ev.Fdb.Link == "Ethernet0" &&
			ev.Fdb.Master == "Bridge" && ev.Fdb.Static && !ev.Fdb.Local
	})
	ns.IP("link", "del", "Ethernet0")
	waitEvent(t, ch, "port deleted", func(ev Event) bool {
		return ev.Kind == EventLink && ev.Deleted && ev.Link.Name == "Ethernet0"
	})
	cancel()
	for range ch {
	}
}
