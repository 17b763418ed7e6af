package netlinkmgr

import (
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkMsg is an RTM_NEWLINK payload as the kernel sends it: ifinfomsg,
// then attrs.
func linkMsg(index int32, attrs ...*nl.RtAttr) []byte {
	m := nl.NewIfInfomsg(unix.AF_UNSPEC)
	m.Index = index
	b := m.Serialize()
	for _, a := range attrs {
		b = append(b, a.Serialize()...)
	}
	return b
}

func TestLinkMsgName(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"name after mtu", linkMsg(7, nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1500)),
			nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Bridge"))), "Bridge"},
		{"odd length name", linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Vlan1"))), "Vlan1"},
		{"no name", linkMsg(7, nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1500))), ""},
		{"short", []byte{1, 2, 3}, ""},
		{"attr longer than message", append(linkMsg(7), 200, 0, 3, 0, 'x'), ""},
		{"zero-length attr", append(linkMsg(7), 0, 0, 3, 0), ""},
	} {
		if got := string(linkMsgName(c.data)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestLinkMsgMaster(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want int
	}{
		{"port", linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Ethernet0")),
			nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(12))), 12},
		{"no master", linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Ethernet0"))), 0},
		{"short master", linkMsg(7, nl.NewRtAttr(unix.IFLA_MASTER, []byte{1, 2})), 0},
	} {
		if _, got := linkMsgNameMaster(c.data); got != c.want {
			t.Errorf("%s: master %d, want %d", c.name, got, c.want)
		}
	}
}

// FuzzLinkMsgName: any payload is parsed without panicking, a name found
// lies inside it, and where parseLinkMsg (the event reader's decoder)
// takes the message, the master is the one it reads.
func FuzzLinkMsgName(f *testing.F) {
	f.Add(linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Bridge"))))
	f.Add(linkMsg(7, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("Ethernet0")),
		nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(12))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, m := linkMsgNameMaster(data)
		if len(n) > len(data) {
			t.Fatalf("name %q longer than the message", n)
		}
		if w, v := parseLinkMsg(data); v != linkBad && w.master != m {
			t.Fatalf("master %d, parseLinkMsg reads %d", m, w.master)
		}
	})
}
