package schema

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The field policy, one rule for the daemons and swctl:
//
//   - a field switchyard acts on is validated; a bad value is an error;
//   - a field SONiC's YANG model defines for the table but Linux has no use
//     for (lanes, alias, speed, fec, …) is accepted and not acted on;
//   - a field nobody defines is ignored by the parsers and named by
//     UnknownFields, so the daemons can warn about it (a typo such as
//     "admin_stauts" stays visible) and `swctl config load --strict` can
//     refuse it.
//
// docs/schema.md has one table per CONFIG_DB table saying what happens to
// each field.

// SONiC field names switchyard validates or acts on beyond its own (the
// rest of the accepted names live only in sonicFields).
const (
	FieldFamily     = "family"        // INTERFACE / VLAN_INTERFACE address: IPv4 or IPv6 (scope: FieldScope)
	FieldVRFName    = "vrf_name"      // INTERFACE / VLAN_INTERFACE / LOOPBACK_INTERFACE bare key: the VRF it is bound to
	FieldVnetName   = "vnet_name"     // INTERFACE / VLAN_INTERFACE: VNETs are not supported
	FieldAlias      = "alias"         // PORT / VLAN: SONiC's alternative name
	FieldAdvertise  = "advertise"     // STATIC_ROUTE: BGP redistribution, per next hop
	FieldBFD        = "bfd"           // STATIC_ROUTE: BFD-tracked next hops
	FieldDHCPServer = "dhcp_servers@" // VLAN: DHCP relay targets (ConfigDBConnector list form)
)

// sonicFields lists, per table, every field name the table takes: the ones
// switchyard acts on and the ones SONiC's YANG models (sonic-port,
// sonic-vlan, sonic-interface, sonic-loopback-interface, sonic-vrf, sonic-portchannel, sonic-vxlan,
// sonic-static-route) define for it.
// Leaf-lists appear twice: ConfigDBConnector stores a JSON list as
// "name@" with the values joined by commas, while SONiC's CLI writes some
// of them (adv_speeds) as a plain comma string.
var sonicFields = map[string][]string{
	TablePort: {
		FieldAdminStatus, FieldMTU, FieldMAC, FieldDescription,
		FieldAlias, "lanes", "speed", "index", "fec", "autoneg", "adv_speeds", "adv_speeds@",
		"interface_type", "adv_interface_types", "adv_interface_types@", "link_training",
		"mode", "dhcp_rate_limit", "subport", "asic_port_name", "role", "dom_polling",
		"pfc_asym", "tpid", "mux_cable", "macsec", "tx_power", "laser_freq", "fast_linkup",
		"core_id", "core_port_id", "num_voq",
	},
	TableVlan: {
		FieldVlanID, FieldAdminStatus, FieldMTU, FieldMAC, FieldDescription,
		FieldAlias, "dhcp_servers", FieldDHCPServer, "dhcpv6_servers", "dhcpv6_servers@",
		// Older SONiC releases listed the members in the VLAN itself;
		// VLAN_MEMBER entries are what counts.
		"members", "members@",
	},
	TableVlanMember: {FieldTaggingMode},
	TableInterface: {
		// bare "ifname" key
		FieldVRFName, FieldVnetName, "nat_zone", "mpls", "ipv6_use_link_local_only", "mac_addr", "loopback_action",
		// "ifname|addr/len" key
		FieldFamily, FieldScope,
	},
	TableVlanInterface: {
		FieldVRFName, FieldVnetName, "nat_zone", "mpls", "ipv6_use_link_local_only", "mac_addr", "loopback_action",
		"grat_arp", "proxy_arp", "static_anycast_gateway",
		FieldFamily, FieldScope, "secondary",
	},
	TableLoopback: {
		// bare "LoopbackN" key
		FieldVRFName, "nat_zone", FieldAdminStatus,
		// "LoopbackN|addr/len" key
		FieldFamily, FieldScope,
	},
	TableVRF: {FieldVNI, FieldFallback},
	TablePortChannel: {
		FieldAdminStatus, FieldMTU, FieldMinLinks, FieldFastRate, FieldLacpKey, FieldFallback, FieldStatic,
		FieldDescription, "tpid", "system_mac", "mode", "members", "members@",
	},
	TablePortChannelMember: {},
	TableVxlanTunnel:       {FieldSrcIP, FieldDstIP, FieldTTLMode},
	TableVxlanTunnelMap:    {FieldVlan, FieldVNI},
	TableVxlanRemoteVNI:    {FieldVNI},
	TablePortChannelInterface: {
		FieldVRFName, "nat_zone", "mpls", "ipv6_use_link_local_only", "mac_addr", "loopback_action",
		FieldFamily, FieldScope,
	},
	TableStaticRoute: {
		FieldNexthop, FieldIfname, FieldDistance, FieldBlackhole, FieldNexthopVRF, FieldAdvertise, FieldBFD,
	},
	TableFDB: {FieldPort, FieldType},
}

// KnownFields returns the fields table takes (acted on or only accepted),
// sorted; nil for a table without a field list (an unknown table).
func KnownFields(table string) []string {
	return slices.Clone(knownSorted(table))
}

// knownSorted is KnownFields without the copy, worked out once per table:
// UnknownFields runs for every key set (a 100k-route burst asked for a
// sorted copy of STATIC_ROUTE's list 100k times). Never modify it.
func knownSorted(table string) []string {
	if v, ok := knownCache.Load(table); ok {
		return v.([]string)
	}
	names := knownFieldsOf(table)
	if names != nil {
		knownCache.Store(table, names)
	}
	return names
}

// knownCache holds knownSorted's lists by table (the lists are fixed at
// build time; an unknown table is not kept, so any string can be asked).
var knownCache sync.Map

// knownFieldsOf builds table's sorted list of fields.
func knownFieldsOf(table string) []string {
	var names []string
	switch table {
	case TableImpairment, TableImpairmentFlow:
		names = knownFields(table)
	case TablePortTuning:
		names = PortTuningFields
	case TableImpairmentSchedule:
		names = scheduleFieldNames
	case TableTrafficGen:
		names = trafficFields
	case TableACLTable:
		names = aclTableFields
	case TableACLRule:
		names = aclRuleFields()
	default:
		names = sonicFields[table]
	}
	if names == nil {
		return nil
	}
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}

// UnknownFields names the fields of f that table does not take, sorted;
// the NULL placeholder is never one. The parsers ignore these fields; a
// daemon reports them with UnknownFieldsWarning in its result's warning.
// For a table without a field list (not one of switchyard's) it is nil.
func UnknownFields(table string, f Fields) []string {
	known := knownSorted(table)
	if known == nil {
		return nil
	}
	var out []string
	for name := range f {
		if name == NullField {
			continue
		}
		look := name
		if table == TableACLRule { // field names are case-insensitive there (aclUpperFields)
			look = strings.ToUpper(name)
		}
		if _, ok := slices.BinarySearch(known, look); !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// UnknownFieldsWarning renders the warning for unknown field names of
// table (as UnknownFields returns them), e.g.
//
//	unknown field "admin_stauts" ignored (did you mean "admin_status"?): PORT takes admin_status, alias, …
//
// It is "" when names is empty. Names are quoted with Clip.
func UnknownFieldsWarning(table string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return unknownText(table, names, "ignored")
}

// FieldsWarning is the warning for the unknown fields of hash f of table
// ("" when there are none): UnknownFieldsWarning of UnknownFields. Its
// signature is the engine's Config.Warn.
func FieldsWarning(table string, f Fields) string {
	return UnknownFieldsWarning(table, UnknownFields(table, f))
}

// CheckKnownFields is the strict form of the policy (`swctl config load
// --strict`): a *FieldError naming the first unknown field of f, or nil.
func CheckKnownFields(table, key string, f Fields) error {
	names := UnknownFields(table, f)
	if len(names) == 0 {
		return nil
	}
	return &FieldError{Table: table, Key: key, Field: names[0], Value: f[names[0]],
		Reason: unknownText(table, names, "not allowed with --strict")}
}

// unknownText says which names are unknown, suggests the nearest known
// field for each where one is close, and lists what table takes.
func unknownText(table string, names []string, verdict string) string {
	known := KnownFields(table)
	var b strings.Builder
	b.WriteString("unknown field")
	if len(names) > 1 {
		b.WriteString("s")
	}
	var hints []string
	for i, n := range names {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" ")
		b.WriteString(strconv.Quote(Clip(n)))
		if s := nearest(n, known); s != "" {
			hints = append(hints, strconv.Quote(s))
		}
	}
	b.WriteString(" ")
	b.WriteString(verdict)
	if len(hints) > 0 {
		b.WriteString(" (did you mean " + strings.Join(hints, ", ") + "?)")
	}
	b.WriteString(": " + table + " takes ")
	if len(known) == 0 {
		b.WriteString("no fields")
	} else {
		b.WriteString(strings.Join(known, ", "))
	}
	return b.String()
}

// nearest returns the known name within edit distance 2 of n (the closest,
// first in sorted order on a tie), or "".
func nearest(n string, known []string) string {
	if len(n) > 64 {
		return ""
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(n, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance of a and b: the
// Levenshtein distance with a swap of two adjacent bytes ("stauts") counted
// as one edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
