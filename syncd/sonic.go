package syncd

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// This file holds what syncd writes in the shapes SONiC's own readers look
// for (portsyncd's PORT_TABLE field, intfmgrd's INTERFACE_TABLE, the SAI
// counters of COUNTERS_DB), beside switchyard's own names. docs/syncd.md
// ("SONiC's reader shapes") explains each choice.

// FieldNetdevOperStatus is portsyncd's PORT_TABLE field: the kernel
// netdev's operational state, up or down (lldpmgrd and others read it).
const FieldNetdevOperStatus = "netdev_oper_status"

// StateInterfaceTable is SONiC's STATE_DB INTERFACE_TABLE, where intfmgrd
// writes "state ok" for each address it put on an interface. It is also
// where orchagent writes the results of CONFIG_DB INTERFACE keys
// (schema.ResultTable(schema.TableInterface)); see InterfaceKeyOurs.
const StateInterfaceTable = "INTERFACE_TABLE"

// FieldInterfaceState is INTERFACE_TABLE's field, "ok" when the address is
// on the interface.
const FieldInterfaceState = "state"

// InterfaceKeyOurs reports whether syncd owns INTERFACE_TABLE key
// "<if>|<prefix>" (without the table): only keys of VlanN and LoopbackN
// interfaces. The other keys are orchagent's — the results of CONFIG_DB
// INTERFACE, whose names may be neither (schema.ParseInterface) and whose
// state is "ok" once the address is in the kernel. orchagent writes
// VLAN_INTERFACE and LOOPBACK_INTERFACE results to their own tables, so
// INTERFACE_TABLE|VlanN|… and INTERFACE_TABLE|LoopbackN|… are free for
// syncd's mirror of the addresses those tables configured.
func InterfaceKeyOurs(key string) bool {
	ifname, _, ok := strings.Cut(key, schema.StateSep)
	return ok && MirroredInterface(ifname)
}

// MirroredInterface reports whether syncd mirrors a link's addresses into
// INTERFACE_TABLE: VlanN and LoopbackN links (intfmgrd writes every routed
// interface's addresses there; the others' keys hold orchagent's results).
func MirroredInterface(name string) bool { return IsVlanName(name) || schema.IsLoopbackName(name) }

// AddrMirrored reports whether a kernel address belongs in INTERFACE_TABLE:
// a routed (not link-local, not loopback) address on a VlanN or LoopbackN
// link.
// intfmgrd likewise writes no IPv4 link-local address; IPv6 link-local
// addresses are the kernel's own, never configured.
func AddrMirrored(a netlinkmgr.AddrInfo) bool {
	ip := a.Prefix.Addr()
	if !a.Prefix.IsValid() || !MirroredInterface(a.Link) {
		return false
	}
	return !ip.IsLinkLocalUnicast() && !ip.IsLoopback() && !ip.IsUnspecified()
}

// AddrKey is the INTERFACE_TABLE key "<if>|<addr>/<len>" of an address,
// host bits kept, as the CONFIG_DB key that configured it
// (VLAN_INTERFACE|Vlan100|10.1.0.1/24 → INTERFACE_TABLE|Vlan100|10.1.0.1/24).
func AddrKey(a netlinkmgr.AddrInfo) string {
	return a.Link + schema.StateSep + a.Prefix.String()
}

// PortFields renders a configured port's PORT_TABLE fields: LinkFields
// plus portsyncd's netdev_oper_status (the same up/down as oper_status).
func PortFields(l netlinkmgr.LinkInfo) schema.Fields {
	f := LinkFields(l)
	f[FieldNetdevOperStatus] = f[FieldOperStatus]
	return f
}

// CountersPortNameMap is COUNTERS_DB's hash port name → SAI object id
// ("oid:0x…"), where SONiC's readers (portstat, SNMP, telemetry) find the
// COUNTERS:<oid> key of a port.
const CountersPortNameMap = "COUNTERS_PORT_NAME_MAP"

// portOIDType is SAI_OBJECT_TYPE_PORT (1) in the object-type byte (bits
// 48–55) of a SAI object id, where sairedis puts it: switchyard's port ids
// look like a SAI switch's (oid:0x1000000000002) to a reader that decodes
// them.
const portOIDType = uint64(1) << 48

// PortOID is the stable SAI-style object id of a port: the object-type byte
// of a port (portOIDType) over the low 48 bits of the FNV-1a 64 hash of its
// name — the same id for the same name across restarts, Redis flushes and
// hosts, lowercase hex as sairedis writes it ("oid:0x1a4c0ffee1234").
func PortOID(port string) string {
	h := fnv.New64a()
	h.Write([]byte(port))
	return "oid:0x" + strconv.FormatUint(portOIDType|h.Sum64()&(1<<48-1), 16)
}

// SAI port counter names written in COUNTERS:<oid>.
const (
	SAIInOctets       = "SAI_PORT_STAT_IF_IN_OCTETS"
	SAIInUcastPkts    = "SAI_PORT_STAT_IF_IN_UCAST_PKTS"
	SAIInNonUcastPkts = "SAI_PORT_STAT_IF_IN_NON_UCAST_PKTS"
	SAIInErrors       = "SAI_PORT_STAT_IF_IN_ERRORS"
	SAIInDiscards     = "SAI_PORT_STAT_IF_IN_DISCARDS"

	SAIOutOctets       = "SAI_PORT_STAT_IF_OUT_OCTETS"
	SAIOutUcastPkts    = "SAI_PORT_STAT_IF_OUT_UCAST_PKTS"
	SAIOutNonUcastPkts = "SAI_PORT_STAT_IF_OUT_NON_UCAST_PKTS"
	SAIOutErrors       = "SAI_PORT_STAT_IF_OUT_ERRORS"
	SAIOutDiscards     = "SAI_PORT_STAT_IF_OUT_DISCARDS"
)

// SAICounterFields are the fields of COUNTERS:<oid> that syncd owns.
var SAICounterFields = []string{
	SAIInOctets, SAIInUcastPkts, SAIInNonUcastPkts, SAIInErrors, SAIInDiscards,
	SAIOutOctets, SAIOutUcastPkts, SAIOutNonUcastPkts, SAIOutErrors, SAIOutDiscards,
}

// SAICountersOf maps the kernel's link statistics onto SAI port counters.
// The kernel does not split unicast from the rest, so: IN_NON_UCAST is the
// receive "multicast" counter (multicast and, per driver, broadcast; 0 on
// veth), IN_UCAST is rx_packets minus it (never below 0); nothing counts
// transmitted multicast, so every transmitted packet is OUT_UCAST and
// OUT_NON_UCAST is 0. ERRORS and DISCARDS are rx/tx_errors and
// rx/tx_dropped, OCTETS rx/tx_bytes (the kernel counts L2 frames without
// FCS; a switch ASIC usually counts it: 4 bytes a packet fewer here).
func SAICountersOf(s netlinkmgr.LinkStats) schema.Fields {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	mc := min(s.Multicast, s.RxPackets)
	return schema.Fields{
		SAIInOctets: u(s.RxBytes), SAIInUcastPkts: u(s.RxPackets - mc), SAIInNonUcastPkts: u(mc),
		SAIInErrors: u(s.RxErrors), SAIInDiscards: u(s.RxDropped),
		SAIOutOctets: u(s.TxBytes), SAIOutUcastPkts: u(s.TxPackets), SAIOutNonUcastPkts: "0",
		SAIOutErrors: u(s.TxErrors), SAIOutDiscards: u(s.TxDropped),
	}
}

// stateTables is OwnTables over OwnedFields; StateOwnership narrows it.
var stateTables = redisx.OwnTables(schema.StateSep, OwnedFields)

// StateOwnership is what syncd owns in STATE_DB: OwnedFields per table,
// and in INTERFACE_TABLE only the keys InterfaceKeyOurs accepts — the rest
// are orchagent's results, never loaded, written or removed by syncd.
func StateOwnership(key string) []string {
	table, rest := SplitStateKey(key)
	if table == StateInterfaceTable && !InterfaceKeyOurs(rest) {
		return nil
	}
	return stateTables(key)
}

// CountersOwnership is what syncd owns in COUNTERS_DB: the whole
// COUNTERS_PORT_NAME_MAP, SAICounterFields in COUNTERS:oid:… and
// CounterFields in the other COUNTERS:<port> keys.
func CountersOwnership(key string) []string {
	switch {
	case key == CountersPortNameMap:
		return allFields
	case strings.HasPrefix(key, schema.CountersKey(schema.CountersTable, "oid:")):
		return saiOwned
	case strings.HasPrefix(key, schema.CountersKey(schema.CountersTable, "")):
		return plainOwned
	}
	return nil
}

// The owned lists in the writer's form (sorted, compacted), built once.
var (
	allFields  = []string{redisx.AllFields}
	saiOwned   = redisx.OwnFields(SAICounterFields...)("")
	plainOwned = redisx.OwnFields(CounterFields...)("")
)
