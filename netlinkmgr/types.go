package netlinkmgr

import (
	"net"
	"net/netip"
	"strconv"
)

// ProtoSwitchyard is the protocol number switchyard stamps on every route
// (rtm_protocol, "ip route show proto 201") and every address (IFA_PROTO,
// "ip address show" on iproute2 6.2+ prints "proto 201") it creates, so
// ownership is provable. Not assigned in /etc/iproute2/rt_protos.
const ProtoSwitchyard = 201

// ProtocolName is iproute2's name of a route protocol number
// (/etc/iproute2/rt_protos), or the number itself.
func ProtocolName(p int) string {
	switch p {
	case 0:
		return "unspec"
	case 1:
		return "redirect"
	case 2:
		return "kernel"
	case 3:
		return "boot"
	case 4:
		return "static"
	case 8:
		return "gated"
	case 9:
		return "ra"
	case 10:
		return "mrt"
	case 11:
		return "zebra"
	case 12:
		return "bird"
	case 13:
		return "dnrouted"
	case 14:
		return "xorp"
	case 15:
		return "ntk"
	case 16:
		return "dhcp"
	case 18:
		return "keepalived"
	case 42:
		return "babel"
	case 99:
		return "openr"
	case 186:
		return "bgp"
	case 187:
		return "isis"
	case 188:
		return "ospf"
	case 189:
		return "rip"
	case 192:
		return "eigrp"
	case ProtoSwitchyard:
		return "switchyard (201)"
	}
	return strconv.Itoa(p)
}

// MainTable is the kernel's main routing table (RT_TABLE_MAIN).
const MainTable = 254

// LinkInfo describes a network device. On writes, nil/unset optional fields
// are left as the kernel has them.
type LinkInfo struct {
	Name    string
	Index   int              // read only
	Kind    string           // "bridge", "vlan", "veth", "dummy", "vxlan" ...; "" = plain device
	MTU     *int             // nil = untouched
	MAC     net.HardwareAddr // nil = untouched
	AdminUp *bool            // nil = untouched
	Master  *string          // nil = untouched; "" = no master (nomaster)
	Alias   *string          // nil = untouched (ifalias; PORT description)

	Bridge *BridgeOptions // kind "bridge" only
	Vlan   *VlanOptions   // kind "vlan" only
	Veth   *VethOptions   // kind "veth" only (Add)
	Vrf    *VrfOptions    // kind "vrf" only (Add; read back)
	Bond   *BondOptions   // kind "bond" only (Add, Set; read back)
	Vxlan  *VxlanOptions  // kind "vxlan" only (Add; read back)

	// Read-only state, filled by Get/List/events.
	OperUp    bool
	OperState string // "up", "down", "lowerlayerdown", "unknown" ...
	MasterIdx int
	ParentIdx int
	Stats     *LinkStats
	// BondSlave is the state of a bond's port (its master is a bond).
	BondSlave *BondSlaveInfo
}

// BridgeOptions are bridge attributes (ip link ... type bridge ...).
type BridgeOptions struct {
	VlanFiltering *bool
	DefaultPVID   *uint16
}

// VlanOptions are 802.1Q device attributes (ip link add link P name N type vlan id ID).
type VlanOptions struct {
	ID     int
	Parent string
}

// VrfOptions are vrf device attributes (ip link add NAME type vrf table T).
// A vrf device is a routing domain: the links enslaved to it (master
// NAME) have their connected and local routes in table T, and routes
// added to T route their traffic.
type VrfOptions struct {
	Table uint32 // the routing table, not 0 (RT_TABLE_UNSPEC) nor 255 (local)
}

// VethOptions name the peer of a new veth pair.
type VethOptions struct {
	PeerName string
}

// LinkStats are the link's 64-bit counters (IFLA_STATS64).
type LinkStats struct {
	RxPackets, TxPackets, RxBytes, TxBytes   uint64
	RxErrors, TxErrors, RxDropped, TxDropped uint64
	// Multicast is the kernel's "multicast" counter: multicast (and, in
	// most drivers, broadcast) packets received — counted by the driver;
	// veth and bridge devices leave it 0. The kernel has no transmit
	// equivalent.
	Multicast uint64
}

// AddrInfo is an address on a link: Prefix keeps host bits (10.0.0.1/24).
type AddrInfo struct {
	Link   string
	Prefix netip.Prefix
	// Protocol is the address's IFA_PROTO (Linux 6.1+): who added it. 0 =
	// unspecified, as an address added by hand or by older software;
	// switchyard marks its own with ProtoSwitchyard. Read by List and
	// events, sent by Add. Equivalent to: ip address add ... proto N
	// (iproute2 6.2+).
	Protocol int
	// Create, on Add only: fail with EEXIST instead of replacing an
	// address that exists (ip address add instead of replace). Never read
	// back.
	Create bool
}

// NextHop is one path of a route.
type NextHop struct {
	Gateway netip.Addr // invalid = none (directly connected)
	Link    string     // "" = let the kernel resolve from Gateway
	Weight  int        // ECMP weight, 1 when unset
}

// RouteInfo is a route. Table 0 means MainTable.
type RouteInfo struct {
	Dst       netip.Prefix
	Table     int
	Protocol  int
	Metric    int
	Blackhole bool
	NextHops  []NextHop
	// Type is the kernel's route type when it is none of unicast and
	// blackhole (read only): "local", "broadcast", "anycast", "multicast",
	// "unreachable", "prohibit", "throw", … — the kernel's own local and
	// broadcast routes of a VRF live in the VRF's table ("ip route show
	// table T" prints the type first). "" = unicast or blackhole.
	Type string
	// Create, on Replace/ReplaceBatch only: fail with EEXIST instead of
	// replacing a route with the same table, destination and metric,
	// whoever owns it (ip route add instead of replace). Never read back.
	Create bool
}

// RouteFilter restricts Routes().List; zero fields match anything.
type RouteFilter struct {
	Table    int // 0 = main
	Protocol int // 0 = any
	Family   int // 0 = both, or unix.AF_INET / unix.AF_INET6
}

// BridgeVlanInfo is one VLAN on a bridge port (or on the bridge itself with Self).
type BridgeVlanInfo struct {
	Link     string
	VID      uint16
	PVID     bool
	Untagged bool
	Self     bool // the bridge device itself ("bridge vlan add dev Bridge vid N self")
}

// FdbInfo is a bridge forwarding entry (AF_BRIDGE neighbour).
type FdbInfo struct {
	MAC    net.HardwareAddr
	Link   string // bridge port
	Master string // the bridge (read); writes use "master" flag when set
	Vlan   uint16 // 0 = none
	Static bool   // static (NUD_NOARP) vs dynamic learned
	Local  bool   // permanent local address of a port (NUD_PERMANENT)
	// Dst is a vxlan device's own entry's remote VTEP (NDA_DST; "bridge
	// fdb show dev VX" prints it as "dst"); invalid for others. Read, and
	// written by AddRemote/DelRemote only.
	Dst netip.Addr
}

// NeighInfo is an IPv4/IPv6 neighbour (ARP / NDP entry).
type NeighInfo struct {
	Link  string
	IP    netip.Addr
	MAC   net.HardwareAddr
	State string // "reachable", "stale", "permanent", "failed", "incomplete", "delay", "probe", "noarp"
}
