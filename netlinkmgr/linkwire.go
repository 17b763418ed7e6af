package netlinkmgr

import (
	"encoding/binary"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Link event messages decoded without the library, for the kinds a
// switch makes by the thousand (plain devices, bridge, vlan, veth, vrf,
// dummy, bond and a bond's ports): the library's LinkDeserialize
// allocates a Link, a copy of the datagram and ~20 objects per message,
// and reads every attribute. parseLinkMsg reads only what toLinkInfo
// takes from the library's Link (FuzzParseLinkMsg compares the two
// LinkInfos); any other kind, or a port of a vrf, is left to the library.

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
	bond                                *wireBond
	slaveKind                           string         // the last IFLA_INFO_SLAVE_KIND
	bondSlave                           *wireBondSlave // set by slave kind "bond"
}

// wireBond is what bondInfo reads of a bond (the library's zero Bond when
// an attribute is absent).
type wireBond struct {
	mode, lacpRate   uint8
	miimon, minLinks int
}

// wireBondSlave is what bondSlaveInfo reads of a bond's port.
type wireBondSlave struct {
	state, mii, actorOper uint8
	aggregator, partner   uint16
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
				w.slaveKind = kind
				switch kind {
				case "bond":
					w.bondSlave = &wireBondSlave{} // as the library: a new one
				case "bridge":
				default:
					*verdict = max(*verdict, linkLibrary)
				}
				return true
			}
			// A new kind starts a new link, as in the library.
			w.vlanFiltering, w.defaultPVID, w.vlanID, w.vrfTable, w.bond = nil, nil, 0, 0, nil
			switch kind {
			case "bridge", "vlan", "veth", "vrf", "dummy":
				w.kind = kind
			case "bond":
				w.kind, w.bond = kind, &wireBond{}
			default:
				*verdict = max(*verdict, linkLibrary)
			}
		case unix.IFLA_INFO_DATA:
			if w.kind == "bond" {
				return eachAttr(v, w.bond.parse)
			}
			return eachAttr(v, func(dt uint16, d []byte) bool { return w.parseInfoData(dt, d) })
		case unix.IFLA_INFO_SLAVE_DATA:
			if w.slaveKind == "bond" {
				return eachAttr(v, w.bondSlave.parse)
			}
		}
		return true
	})
}

// bondAttrLen is the length the library reads of each bond attribute
// (parseBondData): a shorter one would panic it, and is malformed here.
var bondAttrLen = map[uint16]int{
	nl.IFLA_BOND_MODE: 1, nl.IFLA_BOND_ACTIVE_SLAVE: 4, nl.IFLA_BOND_MIIMON: 4, nl.IFLA_BOND_UPDELAY: 4,
	nl.IFLA_BOND_DOWNDELAY: 4, nl.IFLA_BOND_USE_CARRIER: 1, nl.IFLA_BOND_ARP_INTERVAL: 4,
	nl.IFLA_BOND_ARP_VALIDATE: 4, nl.IFLA_BOND_ARP_ALL_TARGETS: 4, nl.IFLA_BOND_PRIMARY: 4,
	nl.IFLA_BOND_PRIMARY_RESELECT: 1, nl.IFLA_BOND_FAIL_OVER_MAC: 1, nl.IFLA_BOND_XMIT_HASH_POLICY: 1,
	nl.IFLA_BOND_RESEND_IGMP: 4, nl.IFLA_BOND_NUM_PEER_NOTIF: 1, nl.IFLA_BOND_ALL_SLAVES_ACTIVE: 1,
	nl.IFLA_BOND_MIN_LINKS: 4, nl.IFLA_BOND_LP_INTERVAL: 4, nl.IFLA_BOND_PACKETS_PER_SLAVE: 4,
	nl.IFLA_BOND_AD_LACP_RATE: 1, nl.IFLA_BOND_AD_SELECT: 1, nl.IFLA_BOND_AD_ACTOR_SYS_PRIO: 2,
	nl.IFLA_BOND_AD_USER_PORT_KEY: 2, nl.IFLA_BOND_AD_ACTOR_SYSTEM: 6, nl.IFLA_BOND_TLB_DYNAMIC_LB: 1,
}

// parse reads one attribute of a bond's IFLA_INFO_DATA.
func (b *wireBond) parse(typ uint16, v []byte) bool {
	if len(v) < bondAttrLen[typ] {
		return false
	}
	switch typ {
	case nl.IFLA_BOND_MODE:
		b.mode = v[0]
	case nl.IFLA_BOND_MIIMON:
		b.miimon = int(native.Uint32(v))
	case nl.IFLA_BOND_MIN_LINKS:
		b.minLinks = int(native.Uint32(v))
	case nl.IFLA_BOND_AD_LACP_RATE:
		b.lacpRate = v[0]
	}
	return true
}

// bondSlaveAttrLen is the length the library reads of each bond port
// attribute (parseBondSlaveData).
var bondSlaveAttrLen = map[uint16]int{
	nl.IFLA_BOND_SLAVE_STATE: 1, nl.IFLA_BOND_SLAVE_MII_STATUS: 1, nl.IFLA_BOND_SLAVE_LINK_FAILURE_COUNT: 4,
	nl.IFLA_BOND_SLAVE_PERM_HWADDR: 6, nl.IFLA_BOND_SLAVE_QUEUE_ID: 2, nl.IFLA_BOND_SLAVE_AD_AGGREGATOR_ID: 2,
	nl.IFLA_BOND_SLAVE_AD_ACTOR_OPER_PORT_STATE: 1, nl.IFLA_BOND_SLAVE_AD_PARTNER_OPER_PORT_STATE: 2,
}

// parse reads one attribute of a bond port's IFLA_INFO_SLAVE_DATA.
func (s *wireBondSlave) parse(typ uint16, v []byte) bool {
	if len(v) < bondSlaveAttrLen[typ] {
		return false
	}
	switch typ {
	case nl.IFLA_BOND_SLAVE_STATE:
		s.state = v[0]
	case nl.IFLA_BOND_SLAVE_MII_STATUS:
		s.mii = v[0]
	case nl.IFLA_BOND_SLAVE_AD_AGGREGATOR_ID:
		s.aggregator = native.Uint16(v)
	case nl.IFLA_BOND_SLAVE_AD_ACTOR_OPER_PORT_STATE:
		s.actorOper = v[0]
	case nl.IFLA_BOND_SLAVE_AD_PARTNER_OPER_PORT_STATE:
		s.partner = native.Uint16(v)
	}
	return true
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
	case "bond":
		l.Bond = bondInfo(&netlink.Bond{Mode: netlink.BondMode(w.bond.mode), Miimon: w.bond.miimon,
			MinLinks: w.bond.minLinks, LacpRate: netlink.BondLacpRate(w.bond.lacpRate)})
	}
	if s := w.bondSlave; s != nil {
		l.BondSlave = bondSlaveInfo(&netlink.BondSlave{State: netlink.BondSlaveState(s.state),
			MiiStatus: netlink.BondSlaveMiiStatus(s.mii), AggregatorId: s.aggregator,
			AdActorOperPortState: s.actorOper, AdPartnerOperPortState: s.partner})
	}
	return l
}
