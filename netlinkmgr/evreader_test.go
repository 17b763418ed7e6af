package netlinkmgr

import (
	"bytes"
	"context"
	"net"
	"os"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestLinkUpdate: AF_BRIDGE link messages and other types are skipped
// unparsed, a truncated message is an error, the rest is the library's.
func TestLinkUpdate(t *testing.T) {
	named := linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Vlan100")))
	bridge := append([]byte(nil), named...)
	bridge[0] = unix.AF_BRIDGE
	u, err := linkUpdate(unix.RTM_NEWLINK, 0, named)
	if err != nil || u.Link == nil || u.Link.Attrs().Name != "Vlan100" || u.Link.Attrs().Index != 7 || u.Header.Type != unix.RTM_NEWLINK {
		t.Fatalf("AF_UNSPEC: %+v, %v", u, err)
	}
	if u, err := linkUpdate(unix.RTM_DELLINK, 0, named); err != nil || u.Link == nil || u.Header.Type != unix.RTM_DELLINK {
		t.Fatalf("RTM_DELLINK: %+v, %v", u, err)
	}
	for _, c := range []struct {
		name string
		t    uint16
		data []byte
	}{{"AF_BRIDGE", unix.RTM_NEWLINK, bridge}, {"AF_BRIDGE delete", unix.RTM_DELLINK, bridge}, {"RTM_NEWADDR", unix.RTM_NEWADDR, named}} {
		if u, err := linkUpdate(c.t, 0, c.data); err != nil || u.Link != nil {
			t.Errorf("%s: %+v, %v; want skipped", c.name, u, err)
		}
	}
	if _, err := linkUpdate(unix.RTM_NEWLINK, 0, named[:8]); err == nil {
		t.Errorf("truncated: no error")
	}
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
func recordedEvents(b *testing.B) (unspec, bridge, fdb [][]byte) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (a network namespace)")
	}
	ns := testns.New(b)
	ns.IP("link", "add", "Bridge", "type", "bridge")
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		ns.IP("link", "add", p, "type", "veth", "peer", "name", p+"p")
		ns.IP("link", "set", p, "master", "Bridge", "up")
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

// BenchmarkLinkEvents: per link message, the library's reader path
// (LinkSubscribe: a copy of the datagram, DeserializeIfInfomsg and
// LinkDeserialize of every message; Watch then dropped AF_BRIDGE ones)
// against linkUpdate, on messages recorded from the kernel; and per FDB
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
	for _, c := range []struct {
		name string
		msgs [][]byte
	}{{"bridge", bridge}, {"unspec", unspec}} {
		b.Run(c.name+"/library", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				library(c.msgs[i%len(c.msgs)])
			}
		})
		b.Run(c.name+"/own", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := linkUpdate(unix.RTM_NEWLINK, 0, c.msgs[i%len(c.msgs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

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
