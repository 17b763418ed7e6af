package netlinkmgr

import (
	"errors"
	"testing"

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
