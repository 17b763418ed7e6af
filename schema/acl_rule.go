package schema

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ACL packet actions (sonic-types packet_action). switchyard applies
// FORWARD and DROP; the others are accepted in CONFIG_DB and reported by
// Applicable.
const (
	ACLActionForward = "FORWARD"
	ACLActionDrop    = "DROP"
	ACLActionAccept  = "ACCEPT" // CTRLPLANE tables (caclmgrd)
)

// IP_TYPE values (sonic-types ip_type) and what each selects.
var aclIPTypes = map[string]string{
	"ANY": "ANY", "IP": "IP",
	"IPV4": "IPV4", "IPV4ANY": "IPV4ANY", "IPv4ANY": "IPV4ANY",
	"IPV6": "IPV6", "IPV6ANY": "IPV6ANY", "IPv6ANY": "IPV6ANY",
	"ARP": "ARP", "NON_IP": "NON_IP", "NON_IP4": "NON_IP4", "NON_IPv6": "NON_IPV6", "NON_IPV6": "NON_IPV6",
}

// aclUnsupported are SONiC ACL_RULE fields (sonic-acl YANG, aclorch) that
// switchyard accepts in CONFIG_DB but whose data plane cannot act on
// them: a rule with one is `state error` naming the field.
var aclUnsupported = map[string]string{
	"IN_PORTS":                     "matching the ingress port in a rule is not supported: bind the table to the port (ACL_TABLE ports@)",
	"OUT_PORTS":                    "matching the egress port in a rule is not supported: bind an egress table to the port (ACL_TABLE ports@)",
	"OUTER_VLAN_ID":                "OUTER_VLAN_ID is not supported: use VLAN_ID (the outer 802.1Q VID)",
	"OUTER_VLAN_PRI":               "matching the 802.1Q priority is not supported",
	"OUTER_VLAN_CFI":               "matching the 802.1Q CFI/DEI bit is not supported",
	"INNER_VLAN_ID":                "matching an inner VLAN is not supported",
	"NEXT_HEADER":                  "NEXT_HEADER is not supported: use IP_PROTOCOL (the first next header of IPv6 packets)",
	"TC":                           "matching the traffic class is not supported (switchyard has no TC maps)",
	"SRC_MAC":                      "MAC matches are not supported (L2 tables are not applied)",
	"DST_MAC":                      "MAC matches are not supported (L2 tables are not applied)",
	"PCP":                          "matching the 802.1Q priority is not supported",
	"DEI":                          "matching the 802.1Q DEI bit is not supported",
	"INNER_ETHER_TYPE":             "matching inner (tunnelled) headers is not supported",
	"INNER_IP_PROTOCOL":            "matching inner (tunnelled) headers is not supported",
	"INNER_L4_SRC_PORT":            "matching inner (tunnelled) headers is not supported",
	"INNER_L4_DST_PORT":            "matching inner (tunnelled) headers is not supported",
	"INNER_SRC_IP":                 "matching inner (tunnelled) headers is not supported",
	"TUNNEL_VNI":                   "matching a VXLAN VNI is not supported",
	"TUNNEL_TERM":                  "matching tunnel termination is not supported",
	"BTH_OPCODE":                   "matching RoCEv2 headers is not supported",
	"AETH_SYNDROME":                "matching RoCEv2 headers is not supported",
	"MIRROR_ACTION":                "mirror actions are not supported (switchyard has no port mirroring)",
	"MIRROR_INGRESS_ACTION":        "mirror actions are not supported (switchyard has no port mirroring)",
	"MIRROR_EGRESS_ACTION":         "mirror actions are not supported (switchyard has no port mirroring)",
	"REDIRECT_ACTION":              "redirect actions are not supported: switchyard applies PACKET_ACTION FORWARD and DROP",
	"POLICER_ACTION":               "policer actions are not supported: use IMPAIRMENT_FLOW rate for policing",
	"INNER_SRC_MAC_REWRITE_ACTION": "rewrite actions are not supported",
}

// ACLRule is an ACL_RULE entry "table|rule". Optional matches are unset
// as documented per field; every set one must match.
type ACLRule struct {
	TableName, Name string
	Priority        int    // 0-999999, higher wins; ties go to the smaller name
	Action          string // PACKET_ACTION in upper case ("REDIRECT:Ethernet4" kept whole); "" = absent
	IPType          string // canonical IP_TYPE (IPV4ANY, …); "" = absent
	Src, Dst        netip.Prefix
	Proto           int // IP_PROTOCOL 0-255; -1 = any
	SrcPort         PortRange
	DstPort         PortRange
	SrcPortIsRange  bool // SrcPort came as L4_SRC_PORT_RANGE
	DstPortIsRange  bool
	TCPFlags        uint8
	TCPFlagsMask    uint8 // 0 = TCP_FLAGS absent
	EtherType       int   // -1 = any
	DSCP            int   // 0-63; -1 = any
	VLAN            int   // 1-4094; 0 = any
	ICMPType        int   // -1 = any
	ICMPCode        int   // -1 = any
	ICMPv6          bool  // ICMPType/ICMPCode came as ICMPV6_TYPE/ICMPV6_CODE
	// Unsupported holds the SONiC fields the data plane cannot act on, as
	// given (Applicable names the first).
	Unsupported Fields
	raw         Fields // the known fields as given (Fields)
}

// Table implements Record.
func (r ACLRule) Table() string { return TableACLRule }

// Key implements Record.
func (r ACLRule) Key() string { return r.TableName + ConfigSep + r.Name }

// Fields implements Record: the fields ACL_RULE takes, spelled as given
// (names and values). SONiC's tools write several spellings of one value
// (ETHER_TYPE 2048 and 0x0800, "priority" and "PRIORITY", prefixes with
// host bits set); keeping them makes `swctl config load` of a SONiC
// config_db.json write back exactly what it read. The typed fields are
// what the daemons act on.
func (r ACLRule) Fields() Fields { return maps.Clone(r.raw) }

// Family is 4 or 6 when the rule's prefixes, IP_TYPE, ETHER_TYPE or ICMP
// fields pin the address family, else 0.
func (r ACLRule) Family() int {
	for _, p := range []netip.Prefix{r.Src, r.Dst} {
		if p.IsValid() {
			if p.Addr().Is4() {
				return 4
			}
			return 6
		}
	}
	switch {
	case r.IPType == "IPV4" || r.IPType == "IPV4ANY" || r.EtherType == 0x0800:
		return 4
	case r.IPType == "IPV6" || r.IPType == "IPV6ANY" || r.EtherType == 0x86dd:
		return 6
	case r.ICMPType >= 0 || r.ICMPCode >= 0:
		if r.ICMPv6 {
			return 6
		}
		return 4
	}
	return 0
}

// Applicable is nil when switchyard's data plane can apply the rule, else
// a *FieldError naming the field it cannot (an unsupported SONiC match or
// action, an action other than FORWARD or DROP, a missing action).
func (r ACLRule) Applicable() error {
	t, key := TableACLRule, r.Key()
	if len(r.Unsupported) > 0 {
		names := make([]string, 0, len(r.Unsupported))
		for n := range r.Unsupported {
			names = append(names, n)
		}
		sort.Strings(names)
		n := names[0]
		return fieldError(t, key, n, r.Unsupported[n], aclUnsupported[n], "")
	}
	switch {
	case r.Action == ACLActionForward || r.Action == ACLActionDrop:
	case r.Action == "":
		return fieldError(t, key, FieldPacketAction, "", "PACKET_ACTION is required", "FORWARD or DROP")
	case r.Action == ACLActionAccept:
		return fieldError(t, key, FieldPacketAction, r.Action, "ACCEPT is the action of CTRLPLANE tables (caclmgrd)", "FORWARD or DROP")
	default:
		return fieldError(t, key, FieldPacketAction, r.Action, "action "+strconv.Quote(Clip(r.Action))+" is not supported: switchyard applies FORWARD and DROP", "")
	}
	switch r.IPType {
	case "NON_IP", "NON_IP4", "NON_IPV6":
		return fieldError(t, key, FieldIPType, r.IPType, "negative IP_TYPE matches are not supported", "ANY, IP, IPV4ANY, IPV6ANY or ARP")
	}
	return nil
}

// ParseACLRule parses and validates an ACL_RULE entry "table|rule".
func ParseACLRule(key string, f Fields) (ACLRule, error) {
	var zero ACLRule
	t := TableACLRule
	const allowed = "table|rule, e.g. DATAACL|RULE_1"
	parts := strings.Split(key, ConfigSep)
	if len(parts) != 2 {
		return zero, keyError(t, key, "key needs exactly two parts", allowed)
	}
	if p := aclNameProblem("table", parts[0]); p != "" {
		return zero, keyError(t, key, p, allowed)
	}
	if p := aclRuleNameProblem(parts[1]); p != "" {
		return zero, keyError(t, key, p, allowed)
	}
	raw := Fields{}
	known := KnownFields(TableACLRule)
	for k, v := range f {
		if _, ok := slices.BinarySearch(known, strings.ToUpper(k)); ok {
			raw[k] = v
		}
	}
	f = aclUpperFields(f)
	r := ACLRule{raw: raw, TableName: parts[0], Name: parts[1], Proto: -1, EtherType: -1, DSCP: -1, ICMPType: -1, ICMPCode: -1}
	v, ok := f[FieldACLPriority]
	if !ok {
		return zero, fieldError(t, key, FieldACLPriority, "", "PRIORITY is required", "an integer 0-999999 (higher wins)")
	}
	n, ok := aclNumber(v, MaxACLPriority)
	if !ok {
		return zero, valueError(t, key, FieldACLPriority, v, "an integer 0-999999 (higher wins)")
	}
	r.Priority = n
	if v, ok := f[FieldPacketAction]; ok {
		for i := 0; i < len(v); i++ {
			if v[i] <= ' ' || v[i] >= 0x7f {
				return zero, valueError(t, key, FieldPacketAction, v, "FORWARD or DROP")
			}
		}
		r.Action = strings.ToUpper(v)
		if len(v) > 9 && strings.EqualFold(v[:9], "REDIRECT:") {
			r.Action = "REDIRECT:" + v[9:] // the port name keeps its case
		}
	}
	if v, ok := f[FieldIPType]; ok {
		c, ok := aclIPTypes[v]
		if !ok {
			return zero, valueError(t, key, FieldIPType, v, "ANY, IP, IPV4, IPV4ANY, IPV6, IPV6ANY, ARP, NON_IP, NON_IP4 or NON_IPv6")
		}
		r.IPType = c
	}
	if err := parseACLAddrs(key, f, &r); err != nil {
		return zero, err
	}
	if err := parseACLL4(key, f, &r); err != nil {
		return zero, err
	}
	if err := parseACLMisc(key, f, &r); err != nil {
		return zero, err
	}
	for name, v := range f {
		if _, ok := aclUnsupported[name]; ok {
			if r.Unsupported == nil {
				r.Unsupported = Fields{}
			}
			r.Unsupported[name] = v
		}
	}
	return r, nil
}

// parseACLAddrs reads SRC_IP/DST_IP (IPv4) and SRC_IPV6/DST_IPV6; host
// bits are cleared (SONiC's own samples write 5.5.5.5/16).
func parseACLAddrs(key string, f Fields, r *ACLRule) error {
	t := TableACLRule
	for _, a := range []struct {
		name string
		v6   bool
		dst  *netip.Prefix
	}{{FieldACLSrcIP, false, &r.Src}, {FieldACLDstIP, false, &r.Dst}, {FieldACLSrcIPv6, true, &r.Src}, {FieldACLDstIPv6, true, &r.Dst}} {
		v, ok := f[a.name]
		if !ok {
			continue
		}
		want := "an IPv4 prefix such as 10.0.0.0/8 or an address (IPv6 goes in " + a.name + "V6)"
		if a.v6 {
			want = "an IPv6 prefix such as 2001:db8::/32 or an address (IPv4 goes in " + strings.TrimSuffix(a.name, "V6") + ")"
		}
		p, ok := aclPrefix(v)
		if !ok || p.Addr().Is4() == a.v6 {
			return valueError(t, key, a.name, v, want)
		}
		if a.dst.IsValid() {
			return fieldError(t, key, a.name, v, "IPv4 and IPv6 addresses in one rule: a rule matches one family", "")
		}
		*a.dst = p
	}
	fam := 0
	for _, p := range []netip.Prefix{r.Src, r.Dst} {
		if p.IsValid() {
			if p.Addr().Is4() {
				fam = 4
			} else {
				fam = 6
			}
		}
	}
	if r.Src.IsValid() && r.Dst.IsValid() && r.Src.Addr().Is4() != r.Dst.Addr().Is4() {
		name := FieldACLDstIP
		if r.Dst.Addr().Is6() {
			name = FieldACLDstIPv6
		}
		return fieldError(t, key, name, f[name], "IPv4 and IPv6 addresses in one rule: a rule matches one family", "")
	}
	if fam != 0 && r.IPType != "" {
		ok := map[string]bool{"ANY": true, "IP": true}
		if fam == 4 {
			ok["IPV4"], ok["IPV4ANY"] = true, true
		} else {
			ok["IPV6"], ok["IPV6ANY"] = true, true
		}
		if !ok[r.IPType] {
			return fieldError(t, key, FieldIPType, f[FieldIPType], fmt.Sprintf("IP_TYPE %s contradicts the rule's IPv%d addresses", r.IPType, fam), "")
		}
	}
	return nil
}

// aclPrefix accepts "addr/len" (host bits cleared) or a bare address.
func aclPrefix(s string) (netip.Prefix, bool) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			return netip.Prefix{}, false
		}
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.Is4In6() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, a.BitLen()), true
}

// aclUpperFields returns f with its field names in upper case, as SONiC's
// orchagent reads ACL_RULE (its own mock config writes "priority"); a
// name already in upper case wins over another spelling of it.
func aclUpperFields(f Fields) Fields {
	out := make(Fields, len(f))
	for k, v := range f {
		u := strings.ToUpper(k)
		if _, exact := f[u]; exact && u != k {
			continue
		}
		out[u] = v
	}
	return out
}
