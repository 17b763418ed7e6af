package syncd

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// BridgeName is the one bridge whose FDB syncd mirrors (the brief's kernel
// model: a single bridge named "Bridge").
const BridgeName = "Bridge"

// DefaultUntaggedVID is the VLAN syncd files FDB entries without a VLAN
// under when the bridge does not report its default_pvid: the kernel's
// own default_pvid is 1, so untagged traffic on a bridge without VLAN
// filtering belongs to Vlan1 — as SONiC's default VLAN.
const DefaultUntaggedVID = 1

// STATE_DB field names written by syncd.
const (
	FieldOperStatus  = "oper_status"
	FieldAdminStatus = "admin_status"
	FieldMTU         = "mtu"
	FieldMAC         = "mac"
	FieldPort        = "port"
	FieldType        = "type"
	FieldNeigh       = "neigh"
	FieldFamily      = "family"
	FieldNeighState  = "state"
	FieldNexthop     = "nexthop"
	FieldIfname      = "ifname"
	FieldProtocol    = "protocol"
	FieldBlackhole   = "blackhole"
)

// COUNTERS_DB field names: plain names for the kernel's IFLA_STATS64 fields.
const (
	FieldRxPackets = "rx_packets"
	FieldTxPackets = "tx_packets"
	FieldRxBytes   = "rx_bytes"
	FieldTxBytes   = "tx_bytes"
	FieldRxErrors  = "rx_errors"
	FieldTxErrors  = "tx_errors"
	FieldRxDropped = "rx_dropped"
	FieldTxDropped = "tx_dropped"
)

// OwnedFields lists, per STATE_DB table, the fields syncd owns: the only
// fields it writes or removes there. NEIGH_TABLE's "state" is syncd's (the
// neighbour state); in PORT_TABLE and VLAN_TABLE "state"/"reason" belong to
// orchagent and are never touched. INTERFACE_TABLE's "state" is syncd's
// only in the keys of VlanN interfaces (StateOwnership, InterfaceKeyOurs).
var OwnedFields = map[string][]string{
	schema.StatePortTable:  {FieldOperStatus, FieldNetdevOperStatus, FieldAdminStatus, FieldMTU, FieldMAC},
	StateInterfaceTable:    {FieldInterfaceState},
	schema.StateVlanTable:  {FieldOperStatus, FieldAdminStatus, FieldMTU, FieldMAC},
	schema.StateFDBTable:   {FieldPort, FieldType, FieldRemoteVtep},
	schema.StateNeighTable: {FieldNeigh, FieldFamily, FieldNeighState},
	schema.StateRouteTable: {FieldNexthop, FieldIfname, FieldProtocol, FieldBlackhole},
	StateLagTable:          {FieldOperStatus, FieldAdminStatus, FieldMTU, FieldMinLinks, FieldLagState},
	StateLagMemberTable:    {FieldMemberStatus},
}

// CounterFields are the fields of COUNTERS:<port> that syncd owns.
var CounterFields = []string{
	FieldRxPackets, FieldTxPackets, FieldRxBytes, FieldTxBytes,
	FieldRxErrors, FieldTxErrors, FieldRxDropped, FieldTxDropped,
}

// StateTables are the STATE_DB tables syncd mirrors, in a fixed order.
var StateTables = []string{
	schema.StatePortTable, schema.StateVlanTable, schema.StateFDBTable,
	schema.StateNeighTable, schema.StateRouteTable, StateInterfaceTable,
	StateLagTable, StateLagMemberTable,
}

// StateKey joins a STATE_DB table and key: "PORT_TABLE|Ethernet0".
func StateKey(table, key string) string { return table + schema.StateSep + key }

// SplitStateKey splits "TABLE|key" at the first separator.
func SplitStateKey(k string) (table, key string) {
	table, key, _ = strings.Cut(k, schema.StateSep)
	return table, key
}

var vlanName = regexp.MustCompile(`^Vlan([1-9][0-9]{0,3})$`)

// IsVlanName reports whether a link name is a VLAN device name "VlanN"
// with N in 1-4094.
func IsVlanName(name string) bool {
	m := vlanName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	n, _ := strconv.Atoi(m[1])
	return n <= 4094
}

func upDown(b bool) string {
	if b {
		return "up"
	}
	return "down"
}

// LinkOperUp is the link's oper_status: up when the kernel says the link
// is operationally up ("ip link" state UP).
func LinkOperUp(l netlinkmgr.LinkInfo) bool {
	return l.OperUp || l.OperState == "up"
}

// LinkFields renders a link as the fields of its PORT_TABLE or VLAN_TABLE
// entry: oper_status, admin_status (up/down), mtu (decimal) and mac
// (lowercase). Fields the kernel did not report are absent.
func LinkFields(l netlinkmgr.LinkInfo) schema.Fields {
	f := schema.Fields{FieldOperStatus: upDown(LinkOperUp(l))}
	if l.AdminUp != nil {
		f[FieldAdminStatus] = upDown(*l.AdminUp)
	}
	if l.MTU != nil {
		f[FieldMTU] = strconv.Itoa(*l.MTU)
	}
	if len(l.MAC) > 0 {
		f[FieldMAC] = strings.ToLower(l.MAC.String())
	}
	return f
}

// CounterFieldsOf renders link stats as the fields of COUNTERS:<port>.
func CounterFieldsOf(s netlinkmgr.LinkStats) schema.Fields {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return schema.Fields{
		FieldRxPackets: u(s.RxPackets), FieldTxPackets: u(s.TxPackets),
		FieldRxBytes: u(s.RxBytes), FieldTxBytes: u(s.TxBytes),
		FieldRxErrors: u(s.RxErrors), FieldTxErrors: u(s.TxErrors),
		FieldRxDropped: u(s.RxDropped), FieldTxDropped: u(s.TxDropped),
	}
}

// FdbMirrored reports whether an FDB entry belongs in FDB_TABLE: learned or
// static entries whose master is Bridge. The bridge's own permanent
// addresses (Local) and port "self" entries are not forwarding state.
func FdbMirrored(f netlinkmgr.FdbInfo) bool {
	return f.Master == BridgeName && !f.Local && len(f.MAC) == 6
}

// FdbKey is the FDB_TABLE key "VlanN:mac" of an entry. An entry without a
// VLAN (a bridge without VLAN filtering) is filed under untaggedVID, the
// bridge's default_pvid: the VLAN untagged frames belong to.
func FdbKey(f netlinkmgr.FdbInfo, untaggedVID uint16) string {
	vid := f.Vlan
	if vid == 0 {
		vid = untaggedVID
	}
	return "Vlan" + strconv.Itoa(int(vid)) + ":" + strings.ToLower(f.MAC.String())
}

// FdbFields renders an entry as port and type (static or dynamic).
func FdbFields(f netlinkmgr.FdbInfo) schema.Fields {
	t := "dynamic"
	if f.Static {
		t = "static"
	}
	return schema.Fields{FieldPort: f.Link, FieldType: t}
}

// NeighMirrored reports whether a neighbour belongs in NEIGH_TABLE: it has
// a link-layer address and is usable (not incomplete, failed or noarp —
// noarp entries are multicast/broadcast mappings, not neighbours).
func NeighMirrored(n netlinkmgr.NeighInfo) bool {
	if len(n.MAC) == 0 || !n.IP.IsValid() || n.Link == "" {
		return false
	}
	switch n.State {
	case "incomplete", "failed", "noarp", "none":
		return false
	}
	return true
}

// NeighKey is the NEIGH_TABLE key "ifname|ip".
func NeighKey(n netlinkmgr.NeighInfo) string {
	return n.Link + schema.StateSep + n.IP.Unmap().String()
}

// NeighFields renders a neighbour as neigh (MAC), family (IPv4/IPv6) and
// state (the kernel's NUD state name).
func NeighFields(n netlinkmgr.NeighInfo) schema.Fields {
	fam := "IPv6"
	if n.IP.Unmap().Is4() {
		fam = "IPv4"
	}
	return schema.Fields{
		FieldNeigh:      strings.ToLower(n.MAC.String()),
		FieldFamily:     fam,
		FieldNeighState: n.State,
	}
}

// RouteMirrored reports whether a route may belong in ROUTE_TABLE: a route
// of the main table, or of another table but local (255) and default (253)
// — shown while a VRF device uses that table (VrfRouteKey). The kernel's
// own local, broadcast, anycast and multicast routes, which a VRF's table
// holds beside its routes, are not forwarding routes and never mirrored.
func RouteMirrored(r netlinkmgr.RouteInfo) bool {
	if !r.Dst.IsValid() || r.Table == 255 || r.Table == 253 {
		return false
	}
	switch r.Type {
	case "local", "broadcast", "anycast", "multicast":
		return false
	}
	return true
}

// RouteKey is the ROUTE_TABLE key of a main-table route: the prefix in
// canonical form (host bits clear), e.g. "10.1.0.0/16", "0.0.0.0/0",
// "2001:db8::/32".
func RouteKey(r netlinkmgr.RouteInfo) string {
	return r.Dst.Masked().String()
}

// VrfRouteKey is the ROUTE_TABLE key of a route in VRF vrf's table:
// fpmsyncd's "<vrf>:<prefix>", e.g. "Vrf_blue:10.0.0.0/24". ok is false for
// a VRF whose name does not start with "Vrf" (fpmsyncd skips those: the
// name must tell the key from an IPv6 prefix).
func VrfRouteKey(vrf string, prefix netip.Prefix) (string, bool) {
	if !IsVrfName(vrf) {
		return "", false
	}
	return vrf + ":" + prefix.Masked().String(), true
}

// IsVrfName reports whether a vrf device's routes are mirrored: its name
// starts with "Vrf" (SONiC's VRF names, fpmsyncd's VRF_PREFIX).
func IsVrfName(name string) bool { return strings.HasPrefix(name, "Vrf") && len(name) > 3 }

// RouteFields renders a route as SONiC's fpmsyncd does: nexthop and ifname
// as parallel comma lists (a directly connected path has nexthop 0.0.0.0 or
// ::), protocol as its name (ProtocolName), and blackhole=true instead of
// next hops for a blackhole route.
func RouteFields(r netlinkmgr.RouteInfo) schema.Fields {
	f := schema.Fields{FieldProtocol: ProtocolName(r.Protocol)}
	if r.Blackhole {
		f[FieldBlackhole] = "true"
		return f
	}
	if len(r.NextHops) == 0 {
		return f
	}
	zero := "0.0.0.0"
	if r.Dst.Addr().Is6() && !r.Dst.Addr().Is4In6() {
		zero = "::"
	}
	gws := make([]string, len(r.NextHops))
	ifs := make([]string, len(r.NextHops))
	for i, nh := range r.NextHops {
		gws[i] = zero
		if nh.Gateway.IsValid() {
			gws[i] = nh.Gateway.Unmap().String()
		}
		ifs[i] = nh.Link
	}
	f[FieldNexthop] = strings.Join(gws, ",")
	f[FieldIfname] = strings.Join(ifs, ",")
	return f
}

// protocolNames are /etc/iproute2/rt_protos plus switchyard's own number.
var protocolNames = map[int]string{
	0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static",
	8: "gated", 9: "ra", 10: "mrt", 11: "zebra", 12: "bird", 13: "dnrouted",
	14: "xorp", 15: "ntk", 16: "dhcp", 17: "mrouted", 18: "keepalived",
	42: "babel", 99: "openr", 186: "bgp", 187: "isis", 188: "ospf",
	189: "rip", 192: "eigrp",
	netlinkmgr.ProtoSwitchyard: "switchyard",
}

// ProtocolName names an rtnetlink route protocol as iproute2 does ("kernel",
// "boot", "static", "switchyard" for 201); unknown numbers stay decimal.
func ProtocolName(p int) string {
	if n, ok := protocolNames[p]; ok {
		return n
	}
	return strconv.Itoa(p)
}

// fdbID identifies a bridge FDB entry as the kernel does: one bridge, so
// MAC and VLAN. A MAC moving to another port is an update of the same
// entry (the kernel sends RTM_NEWNEIGH with the new port, no delete).
type fdbID struct {
	mac  string
	vlan uint16
}
