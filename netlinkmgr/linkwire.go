package netlinkmgr

import (
	"encoding/binary"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link event messages decoded without the library, for the kinds a
// switch makes by the thousand (plain devices, bridge, vlan, veth, vrf,
// dummy): the library's LinkDeserialize allocates a Link, a copy of the
// datagram and ~20 objects per message, and reads every attribute.
// parseLinkMsg reads only what toLinkInfo takes from the library's Link
// (FuzzParseLinkMsg compares the two LinkInfos); any other kind, or a
// port of a bond or vrf (whose slave data LinkInfo carries or the library
// parses), is left to the library.

// wireLink is a link message decoded: what toLinkInfo reads from the
// library's Link, with indexes instead of names.
type wireLink struct {
	index, mtu, master, parent, netnsid int
	flags                               uint32
	operState                           uint8
	name, alias, kind                   string
	mac                                 net.HardwareAddr // nil when absent or all zero
	stats                               *LinkStats
	vlanFiltering                       *bool   // bridge
	defaultPVID                         *uint16 // bridge
	vlanID                              int     // vlan
	vrfTable                            uint32  // vrf
}

// linkParse is parseLinkMsg's verdict.
type linkParse int

const (
	linkOwn     linkParse = iota // decoded here
	linkLibrary                  // a kind or slave this decoder leaves to the library
	linkBad                      // malformed (the library would panic or fail)
)

var (
	sizeStats64 = binary.Size(netlink.LinkStatistics64{})
	sizeStats32 = binary.Size(netlink.LinkStatistics32{})
)

// parseLinkMsg decodes an ifinfomsg and its attributes as LinkDeserialize
// reads them for toLinkInfo: IFLA_IFNAME, IFLA_MTU, IFLA_ADDRESS,
// IFLA_MASTER, IFLA_LINK, IFLA_LINK_NETNSID, IFLA_IFALIAS,
// IFLA_OPERSTATE, IFLA_STATS64 (else IFLA_STATS) and IFLA_LINKINFO's kind
// and, for bridge, vlan and vrf, their data.
func parseLinkMsg(b []byte) (w wireLink, verdict linkParse) {
	if len(b) < unix.SizeofIfInfomsg {
		return w, linkBad
	}
	// struct ifinfomsg: family, pad, type (u16), index (s32), flags,
	// change (u32).
	w.index, w.flags, w.netnsid = int(int32(native.Uint32(b[4:8]))), native.Uint32(b[8:12]), -1
	var stats32, stats64 []byte
	ok := eachAttr(b[unix.SizeofIfInfomsg:], func(typ uint16, v []byte) bool {
		switch typ {
		case unix.IFLA_IFNAME, unix.IFLA_IFALIAS:
			if len(v) == 0 {
				return false
			}
			s := string(v[:len(v)-1])
			if typ == unix.IFLA_IFNAME {
				w.name = s
			} else {
				w.alias = s
			}
		case unix.IFLA_MTU, unix.IFLA_MASTER, unix.IFLA_LINK, unix.IFLA_LINK_NETNSID:
			if len(v) < 4 {
				return false
			}
			x := int(native.Uint32(v))
			switch typ {
			case unix.IFLA_MTU:
				w.mtu = x
			case unix.IFLA_MASTER:
				w.master = x
			case unix.IFLA_LINK:
				w.parent = x
			default:
				w.netnsid = x
			}
		case unix.IFLA_ADDRESS:
			for _, c := range v {
				if c != 0 {
					w.mac = append(net.HardwareAddr(nil), v...)
					break
				}
			}
		case unix.IFLA_OPERSTATE:
			if len(v) == 0 {
				return false
			}
			w.operState = v[0]
		case unix.IFLA_STATS:
			stats32 = v
		case unix.IFLA_STATS64:
			stats64 = v
		case unix.IFLA_LINKINFO:
			return w.parseLinkInfo(v, &verdict)
		}
		return true
	})
	if !ok {
		return w, linkBad
	}
	if verdict != linkOwn {
		return w, verdict
	}
	switch {
	case stats64 != nil:
		if len(stats64) < sizeStats64 {
			return w, linkBad
		}
		u := func(i int) uint64 { return native.Uint64(stats64[8*i:]) }
		w.stats = &LinkStats{RxPackets: u(0), TxPackets: u(1), RxBytes: u(2), TxBytes: u(3),
			RxErrors: u(4), TxErrors: u(5), RxDropped: u(6), TxDropped: u(7), Multicast: u(8)}
	case stats32 != nil:
		if len(stats32) < sizeStats32 {
			return w, linkBad
		}
		u := func(i int) uint64 { return uint64(native.Uint32(stats32[4*i:])) }
		w.stats = &LinkStats{RxPackets: u(0), TxPackets: u(1), RxBytes: u(2), TxBytes: u(3),
			RxErrors: u(4), TxErrors: u(5), RxDropped: u(6), TxDropped: u(7), Multicast: u(8)}
	}
	return w, linkOwn
}

// parseLinkInfo reads IFLA_LINKINFO v into w; a kind or slave kind this
// decoder leaves to the library sets *verdict. It reports false for a
// malformed attribute.
func (w *wireLink) parseLinkInfo(v []byte, verdict *linkParse) bool {
	return eachAttr(v, func(typ uint16, v []byte) bool {
		switch typ {
		case unix.IFLA_INFO_KIND, unix.IFLA_INFO_SLAVE_KIND:
			if len(v) == 0 {
				return false
			}
			kind := string(v[:len(v)-1])
			if typ == unix.IFLA_INFO_SLAVE_KIND {
				if kind != "bridge" {
					*verdict = max(*verdict, linkLibrary)
				}
				return true
			}
			// A new kind starts a new link, as in the library.
			w.vlanFiltering, w.defaultPVID, w.vlanID, w.vrfTable = nil, nil, 0, 0
			switch kind {
			case "bridge", "vlan", "veth", "vrf", "dummy":
				w.kind = kind
			default:
				*verdict = max(*verdict, linkLibrary)
			}
		case unix.IFLA_INFO_DATA:
			return eachAttr(v, func(dt uint16, d []byte) bool { return w.parseInfoData(dt, d) })
		}
		return true
	})
}

// parseInfoData reads one attribute of IFLA_INFO_DATA for w's kind.
func (w *wireLink) parseInfoData(typ uint16, v []byte) bool {
	need := 0
	switch {
	case w.kind == "bridge" && typ == unix.IFLA_BR_VLAN_FILTERING:
		need = 1
	case w.kind == "bridge" && typ == unix.IFLA_BR_VLAN_DEFAULT_PVID, w.kind == "vlan" && typ == unix.IFLA_VLAN_ID:
		need = 2
	case w.kind == "bridge" && (typ == unix.IFLA_BR_AGEING_TIME || typ == unix.IFLA_BR_HELLO_TIME),
		w.kind == "vlan" && typ == unix.IFLA_VLAN_FLAGS, w.kind == "vrf" && typ == unix.IFLA_VRF_TABLE:
		need = 4
	case w.kind == "bridge" && typ == unix.IFLA_BR_MCAST_SNOOPING:
		need = 1
	case w.kind == "bridge" && typ == unix.IFLA_BR_GROUP_FWD_MASK:
		need = 2
	case w.kind == "vlan" && typ == unix.IFLA_VLAN_PROTOCOL:
		need = 2
	}
	if len(v) < need {
		return false // the library would index past it
	}
	switch {
	case w.kind == "bridge" && typ == unix.IFLA_BR_VLAN_FILTERING:
		f := v[0] == 1
		w.vlanFiltering = &f
	case w.kind == "bridge" && typ == unix.IFLA_BR_VLAN_DEFAULT_PVID:
		p := native.Uint16(v)
		w.defaultPVID = &p
	case w.kind == "vlan" && typ == unix.IFLA_VLAN_ID:
		w.vlanID = int(native.Uint16(v))
	case w.kind == "vrf" && typ == unix.IFLA_VRF_TABLE:
		w.vrfTable = native.Uint32(v)
	}
	return true
}

// eachAttr calls fn with each attribute of b (type without the nested
// and byte-order bits kept as sent) until fn reports false; it reports
// false then, or when an attribute's length is out of bounds.
func eachAttr(b []byte, fn func(typ uint16, v []byte) bool) bool {
	for len(b) >= rtaHdr {
		l := int(native.Uint16(b[0:2]))
		if l < rtaHdr || l > len(b) {
			return false
		}
		if !fn(native.Uint16(b[2:4]), b[rtaHdr:l]) {
			return false
		}
		b = b[min(rtaAlign(l), len(b)):]
	}
	return true
}

// linkBox is a LinkInfo with room for what its MTU, AdminUp, Master and
// Alias point to: one allocation per event.
type linkBox struct {
	l             LinkInfo
	mtu           int
	up            bool
	master, alias string
}

// linkInfo converts w into box as toLinkInfo converts the library's Link
// and returns it; names resolves link indexes.
func (w *wireLink) linkInfo(names map[int]string, box *linkBox) *LinkInfo {
	box.mtu, box.up, box.master, box.alias = w.mtu, w.flags&unix.IFF_UP != 0, names[w.master], w.alias
	box.l = LinkInfo{
		Name: w.name, Index: w.index, Kind: w.kind,
		MTU: &box.mtu, MAC: w.mac, AdminUp: &box.up, Master: &box.master, Alias: &box.alias,
		OperState: operStateName(netlink.LinkOperState(w.operState)), MasterIdx: w.master, ParentIdx: w.parent,
		Stats: w.stats,
	}
	l := &box.l
	l.OperUp = w.operState == uint8(netlink.OperUp) ||
		(w.operState == uint8(netlink.OperUnknown) && w.flags&unix.IFF_RUNNING != 0)
	switch w.kind {
	case "bridge":
		vf := w.vlanFiltering != nil && *w.vlanFiltering
		l.Bridge = &BridgeOptions{VlanFiltering: &vf, DefaultPVID: w.defaultPVID}
	case "vlan":
		l.Vlan = &VlanOptions{ID: w.vlanID}
		if w.netnsid < 0 {
			l.Vlan.Parent = names[w.parent]
		}
	case "vrf":
		l.Vrf = &VrfOptions{Table: w.vrfTable}
	case "veth":
		if p := names[w.parent]; p != "" && w.netnsid < 0 {
			l.Veth = &VethOptions{PeerName: p}
		}
	}
	return l
}
