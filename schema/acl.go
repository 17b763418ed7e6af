package schema

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ACL tables (SONiC's sonic-acl YANG model; docs/acl-config.md).
const (
	TableACLTable = "ACL_TABLE"
	TableACLRule  = "ACL_RULE"
)

// ACL_TABLE field names (SONiC's; "ports@" and "services@" are the
// ConfigDBConnector list forms, the plain names the older comma strings).
const (
	FieldACLType       = "type"
	FieldACLStage      = "stage"
	FieldACLPorts      = "ports@"
	FieldACLPortsPlain = "ports"
	FieldPolicyDesc    = "policy_desc"
	FieldServices      = "services@"
	FieldServicesPlain = "services"
)

// ACL_RULE field names switchyard applies (SONiC's).
const (
	FieldACLPriority      = "PRIORITY"
	FieldPacketAction     = "PACKET_ACTION"
	FieldIPType           = "IP_TYPE"
	FieldACLSrcIP         = "SRC_IP"
	FieldACLDstIP         = "DST_IP"
	FieldACLSrcIPv6       = "SRC_IPV6"
	FieldACLDstIPv6       = "DST_IPV6"
	FieldIPProtocol       = "IP_PROTOCOL"
	FieldL4SrcPort        = "L4_SRC_PORT"
	FieldL4DstPort        = "L4_DST_PORT"
	FieldL4SrcPortRange   = "L4_SRC_PORT_RANGE"
	FieldL4DstPortRange   = "L4_DST_PORT_RANGE"
	FieldTCPFlags         = "TCP_FLAGS"
	FieldEtherType        = "ETHER_TYPE"
	FieldACLDSCP          = "DSCP"
	FieldACLVlanID        = "VLAN_ID"
	FieldICMPType         = "ICMP_TYPE"
	FieldICMPCode         = "ICMP_CODE"
	FieldICMPv6Type       = "ICMPV6_TYPE"
	FieldICMPv6Code       = "ICMPV6_CODE"
	MaxACLPriority        = 999999 // sonic-acl: PRIORITY uint32 0..999999
	MaxACLNameLen         = 255    // sonic-acl: RULE_NAME length 1..255
	aclDefaultTCPFlagMask = 0x3f   // SONiC's aclorch: TCP_FLAGS without a mask matches the six classic flags
)

// ACL table types switchyard applies (in its XDP / tc data plane).
const (
	ACLTypeL3     = "L3"     // IPv4 (and non-IP) rules
	ACLTypeL3V6   = "L3V6"   // IPv6 rules
	ACLTypeL3V4V6 = "L3V4V6" // both
)

// aclForeignTypes are ACL table types SONiC knows that switchyard accepts
// in CONFIG_DB but does not apply, with who applies them in SONiC.
var aclForeignTypes = map[string]string{
	"L2":                  "L2 tables (MAC matches) are applied by SONiC's orchagent (aclorch) on the ASIC; switchyard's data plane matches L3/L4 only",
	"MIRROR":              "MIRROR tables are applied by SONiC's orchagent (aclorch) with MIRROR_SESSION; switchyard has no port mirroring",
	"MIRRORV6":            "MIRRORV6 tables are applied by SONiC's orchagent (aclorch) with MIRROR_SESSION; switchyard has no port mirroring",
	"MIRROR_DSCP":         "MIRROR_DSCP tables are applied by SONiC's orchagent (aclorch) with MIRROR_SESSION; switchyard has no port mirroring",
	"CTRLPLANE":           "CTRLPLANE tables are applied by SONiC's caclmgrd (iptables rules for the switch's own services); switchyard does not filter control-plane traffic",
	"PFCWD":               "PFCWD tables are created by SONiC's pfcwdorch for the PFC watchdog; switchyard has no PFC",
	"DTEL_FLOW_WATCHLIST": "DTEL tables are applied by SONiC's dtelorch (in-band telemetry); switchyard has none",
	"DTEL_DROP_WATCHLIST": "DTEL tables are applied by SONiC's dtelorch (in-band telemetry); switchyard has none",
	"MCLAG":               "MCLAG tables are created by SONiC's mclagsyncd; switchyard has no MC-LAG",
	"MUX":                 "MUX tables are created by SONiC's muxorch (dual ToR); switchyard has none",
	"DROP":                "DROP tables are created by SONiC's orchagent for dual ToR; switchyard has none",
	"PBH":                 "PBH tables are applied by SONiC's pbhorch (policy-based hashing); switchyard has none",
}

// ACLStage is where an ACL table's rules run on its ports.
type ACLStage string

// ACL stages (sonic-acl stage, canonical lowercase as `config acl add
// table` writes it; INGRESS/EGRESS are accepted too).
const (
	ACLIngress ACLStage = "ingress"
	ACLEgress  ACLStage = "egress"
)

// ACLTable is an ACL_TABLE entry: a named rule set bound to ports.
type ACLTable struct {
	Name        string
	Type        string   // upper case: L3, L3V6, L3V4V6, or a type switchyard does not apply
	Stage       ACLStage // ingress (SONiC's default) or egress
	Ports       []string // netdevs the table is bound to, in order, without duplicates
	Description string   // policy_desc (not acted on)
	Services    []string // services@ (CTRLPLANE tables; not acted on)
	raw         Fields   // the known fields as given (Fields)
}

// Table implements Record.
func (r ACLTable) Table() string { return TableACLTable }

// Key implements Record.
func (r ACLTable) Key() string { return r.Name }

// Fields implements Record: the fields ACL_TABLE takes, as given (see
// ACLRule.Fields: SONiC's spellings round-trip through swctl).
func (r ACLTable) Fields() Fields { return maps.Clone(r.raw) }

// NotApplied is "" for a table type switchyard applies, else the reason it
// is not applied (who applies it in SONiC): the table's result is then
// `state error` with this reason.
func (r ACLTable) NotApplied() string {
	switch r.Type {
	case ACLTypeL3, ACLTypeL3V6, ACLTypeL3V4V6:
		return ""
	}
	if why, ok := aclForeignTypes[r.Type]; ok {
		return "ACL table type " + r.Type + " is not applied by switchyard: " + why
	}
	return fmt.Sprintf("ACL table type %q is not applied by switchyard: custom types (ACL_TABLE_TYPE) are applied by SONiC's orchagent (aclorch); switchyard applies L3, L3V6 and L3V4V6", Clip(r.Type))
}

func init() {
	RegisterTable(TableACLTable, func(k string, f Fields) (Record, error) { return wrap(ParseACLTable(k, f)) })
	RegisterTable(TableACLRule, func(k string, f Fields) (Record, error) { return wrap(ParseACLRule(k, f)) })
}

// ParseACLTable parses and validates an ACL_TABLE entry.
func ParseACLTable(key string, f Fields) (ACLTable, error) {
	var zero ACLTable
	t := TableACLTable
	if p := aclNameProblem("table", key); p != "" {
		return zero, keyError(t, key, p, "a table name such as DATAACL")
	}
	r := ACLTable{Name: key, Stage: ACLIngress, raw: Fields{}}
	for _, k := range aclTableFields {
		if v, ok := f[k]; ok {
			r.raw[k] = v
		}
	}
	v, ok := f[FieldACLType]
	if !ok {
		return zero, fieldError(t, key, FieldACLType, "", "type is required", "L3, L3V6 or L3V4V6")
	}
	typ := strings.ToUpper(v)
	if p := aclNameProblem("type", v); p != "" {
		return zero, valueError(t, key, FieldACLType, v, "L3, L3V6 or L3V4V6 (SONiC's other types are accepted and not applied)")
	}
	r.Type = typ
	if v, ok := f[FieldACLStage]; ok {
		switch v {
		case "ingress", "INGRESS":
			r.Stage = ACLIngress
		case "egress", "EGRESS":
			r.Stage = ACLEgress
		default:
			return zero, valueError(t, key, FieldACLStage, v, "ingress or egress (INGRESS and EGRESS are accepted too)")
		}
	}
	field, list := listField(f, FieldACLPorts, FieldACLPortsPlain)
	for _, p := range list {
		if prob := impPortProblem(p); prob != "" {
			return zero, fieldError(t, key, field, f[field], fmt.Sprintf("port %q: %s", Clip(p), prob), "a comma-separated list of port names")
		}
		if !slices.Contains(r.Ports, p) {
			r.Ports = append(r.Ports, p)
		}
	}
	if v, ok := f[FieldPolicyDesc]; ok {
		if len(v) > 255 {
			return zero, valueError(t, key, FieldPolicyDesc, v, "a description of at most 255 bytes")
		}
		r.Description = v
	}
	_, r.Services = listField(f, FieldServices, FieldServicesPlain)
	return r, nil
}

// listField reads a leaf-list in its "name@" form, or else the plain
// comma string; empty items are dropped.
func listField(f Fields, at, plain string) (string, []string) {
	field := at
	v, ok := f[at]
	if !ok {
		field = plain
		v = f[plain]
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return field, out
}

// aclRuleNameProblem checks a rule name: printable ASCII without spaces
// and "|", at most 255 bytes. `config acl` names null-route rules
// BLOCK_RULE_10.0.0.2/32 and BLOCK_RULE_1000::2/128, so '/' and ':' are
// allowed.
func aclRuleNameProblem(name string) string {
	if name == "" || len(name) > MaxACLNameLen {
		return fmt.Sprintf("rule name must be 1-%d bytes", MaxACLNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || c == '|' {
			return fmt.Sprintf("rule name cannot contain %q: use printable ASCII without spaces and '|'", c)
		}
	}
	return ""
}

// aclNameProblem checks a table name (or type): it becomes part of
// COUNTERS_DB keys ("COUNTERS:<table>:<rule>"), so it stays printable,
// short and free of separators (sonic-acl: [a-zA-Z0-9_-]+).
func aclNameProblem(what, name string) string {
	if name == "" || len(name) > MaxACLNameLen {
		return fmt.Sprintf("%s name must be 1-%d bytes", what, MaxACLNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Sprintf("%s name cannot contain %q: use letters, digits, '_', '-' or '.'", what, c)
		}
	}
	return ""
}

// KnownACLTypes lists the ACL table types ParseACLTable names in its
// reasons: the applied ones first, then SONiC's others, sorted.
func KnownACLTypes() []string {
	out := []string{ACLTypeL3, ACLTypeL3V6, ACLTypeL3V4V6}
	var other []string
	for t := range aclForeignTypes {
		other = append(other, t)
	}
	sort.Strings(other)
	return append(out, other...)
}

// aclTableFields are the fields ACL_TABLE takes (sonic-acl YANG).
var aclTableFields = []string{FieldACLType, FieldACLStage, FieldACLPorts, FieldACLPortsPlain, FieldPolicyDesc,
	FieldServices, FieldServicesPlain}

// aclRuleFields are the fields ACL_RULE takes: the ones switchyard
// applies, then SONiC's others (aclUnsupported).
func aclRuleFields() []string {
	names := []string{FieldACLPriority, FieldPacketAction, FieldIPType, FieldACLSrcIP, FieldACLDstIP,
		FieldACLSrcIPv6, FieldACLDstIPv6, FieldIPProtocol, FieldL4SrcPort, FieldL4DstPort, FieldL4SrcPortRange,
		FieldL4DstPortRange, FieldTCPFlags, FieldEtherType, FieldACLDSCP, FieldACLVlanID, FieldICMPType,
		FieldICMPCode, FieldICMPv6Type, FieldICMPv6Code}
	for n := range aclUnsupported {
		names = append(names, n)
	}
	return names
}
