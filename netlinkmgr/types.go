package netlinkmgr

import (
	"net"
	"net/netip"
)

// ProtoSwitchyard is the rtnetlink route protocol number switchyard stamps
// on every route it installs, so ownership is provable ("ip route show
// proto 201"). Not assigned in /etc/iproute2/rt_protos.
const ProtoSwitchyard = 201

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

	// Read-only state, filled by Get/List/events.
	OperUp    bool
	OperState string // "up", "down", "lowerlayerdown", "unknown" ...
	MasterIdx int
	ParentIdx int
	Stats     *LinkStats
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

// VethOptions name the peer of a new veth pair.
type VethOptions struct {
	PeerName string
}

// LinkStats are the link's 64-bit counters (IFLA_STATS64).
type LinkStats struct {
	RxPackets, TxPackets, RxBytes, TxBytes   uint64
	RxErrors, TxErrors, RxDropped, TxDropped uint64
}

// AddrInfo is an address on a link: Prefix keeps host bits (10.0.0.1/24).
type AddrInfo struct {
	Link   string
	Prefix netip.Prefix
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
}

// NeighInfo is an IPv4/IPv6 neighbour (ARP / NDP entry).
type NeighInfo struct {
	Link  string
	IP    netip.Addr
	MAC   net.HardwareAddr
	State string // "reachable", "stale", "permanent", "failed", "incomplete", "delay", "probe", "noarp"
}
