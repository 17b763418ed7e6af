package schema

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// ACL cases join okCases and errCases, so TestParseAccepts, TestParseErrors
// and the fuzz seeds cover them.
func init() {
	for _, c := range aclOK {
		okCases = append(okCases, okCase{c.table, c.key, c.f, c.key, c.f})
	}
	errCases = append(errCases, aclErr...)
}

// aclOK are accepted as given: Fields renders the known fields exactly
// as written (SONiC's spellings round-trip), so the want is the input.
var aclOK = []struct {
	table, key string
	f          Fields
}{
	// `config acl add table DATAACL L3 -p Ethernet0,Ethernet4 -s ingress`
	{TableACLTable, "DATAACL", Fields{"type": "L3", "stage": "ingress", "ports@": "Ethernet0,Ethernet4", "policy_desc": "DATAACL"}},
	// stage defaults to INGRESS (YANG), upper case accepted, duplicates dropped.
	{TableACLTable, "V6", Fields{"type": "l3v6", "ports@": "eth0,eth1,eth0"}},
	{TableACLTable, "OUT", Fields{"type": "L3V4V6", "stage": "EGRESS", "ports": "eth0, eth1"}},
	// an empty ports list, as ConfigDBConnector writes []
	{TableACLTable, "EMPTY", Fields{"type": "L3", "ports@": ""}},
	// a control-plane table: accepted, not applied
	{TableACLTable, "SSH_ONLY", Fields{"type": "CTRLPLANE", "services@": "SSH", "policy_desc": "SSH_ONLY", "stage": "ingress"}},
	// acl-loader: ETHER_TYPE decimal, TCP_FLAGS 0x../0x.., IP_PROTOCOL number
	{TableACLRule, "DATAACL|RULE_1", Fields{"PRIORITY": "9999", "PACKET_ACTION": "DROP", "ETHER_TYPE": "2048", "SRC_IP": "10.0.0.2/32", "IP_PROTOCOL": "6", "TCP_FLAGS": "0x02/0x12", "L4_DST_PORT_RANGE": "1024-65535"}},
	// host bits cleared (sonic-mgmt writes 5.5.5.5/16), protocol by name, single ports
	{TableACLRule, "T|r2", Fields{"PRIORITY": "2000", "PACKET_ACTION": "forward", "SRC_IP": "5.5.5.5/16", "DST_IP": "9.9.9.9", "IP_PROTOCOL": "udp", "L4_SRC_PORT": "43", "L4_DST_PORT": "53", "DSCP": "46", "VLAN_ID": "100"}},
	// IPv6, ICMPv6, IP_TYPE as acl-loader writes it for L3V6 tables
	{TableACLRule, "V6|RULE_3", Fields{"PRIORITY": "9997", "PACKET_ACTION": "FORWARD", "IP_TYPE": "IPv6ANY", "SRC_IPV6": "2001:db8::1/64", "ICMPV6_TYPE": "128", "ICMPV6_CODE": "0", "IP_PROTOCOL": "58"}},
	// default deny of acl-loader, TCP_FLAGS without a mask (SONiC: mask 0x3f)
	{TableACLRule, "DATAACL|DEFAULT_RULE", Fields{"PRIORITY": "1", "PACKET_ACTION": "DROP", "IP_TYPE": "IP", "TCP_FLAGS": "0x4"}},
	// accepted SONiC fields switchyard cannot apply: kept, named by Applicable
	{TableACLRule, "EVERFLOW|RULE_1", Fields{"PRIORITY": "10", "MIRROR_ACTION": "everflow0", "SRC_IP": "10.0.0.0/8"}},
	{TableACLRule, "T|redirect", Fields{"PRIORITY": "10", "PACKET_ACTION": "redirect:Ethernet4"}},
	{TableACLRule, "T|icmp", Fields{"PRIORITY": "0", "PACKET_ACTION": "DROP", "ICMP_TYPE": "8", "ETHER_TYPE": "0x800"}},
}

var aclErr = []errCase{
	{TableACLTable, "", Fields{"type": "L3"}, []string{"ACL_TABLE|: key", "table name must be 1-255 bytes"}},
	{TableACLTable, "a:b", Fields{"type": "L3"}, []string{"cannot contain ':'"}},
	{TableACLTable, "T", Fields{"stage": "ingress"}, []string{`field "type"`, "type is required"}},
	{TableACLTable, "T", Fields{"type": "L 3"}, []string{`field "type"`, "want L3, L3V6 or L3V4V6"}},
	{TableACLTable, "T", Fields{"type": "L3", "stage": "Ingress"}, []string{`field "stage"`, "want ingress or egress"}},
	{TableACLTable, "T", Fields{"type": "L3", "ports@": "Ethernet0,a/b"}, []string{`field "ports@"`, `port "a/b"`, "cannot contain '/'"}},
	{TableACLRule, "T", Fields{"PRIORITY": "1"}, []string{"key needs exactly two parts", "DATAACL|RULE_1"}},
	{TableACLRule, "T|r|x", Fields{"PRIORITY": "1"}, []string{"key needs exactly two parts"}},
	{TableACLRule, "T|r", Fields{"PACKET_ACTION": "DROP"}, []string{`field "PRIORITY"`, "PRIORITY is required"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1000000"}, []string{`field "PRIORITY"`, "0-999999"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "-1"}, []string{`field "PRIORITY"`}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "SRC_IP": "2001:db8::/32"}, []string{`field "SRC_IP"`, "IPv6 goes in SRC_IPV6"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "DST_IPV6": "10.0.0.0/8"}, []string{`field "DST_IPV6"`, "IPv4 goes in DST_IP"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "SRC_IP": "10.0.0.0/8", "DST_IPV6": "2001:db8::/32"}, []string{`field "DST_IPV6"`, "one family"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "SRC_IP": "10.0.0.0/33"}, []string{`field "SRC_IP"`}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "IP_TYPE": "IPV6ANY", "SRC_IP": "10.0.0.0/8"}, []string{`field "IP_TYPE"`, "contradicts"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "IP_TYPE": "ipv4"}, []string{`field "IP_TYPE"`}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "IP_PROTOCOL": "256"}, []string{`field "IP_PROTOCOL"`, "0-255"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "L4_DST_PORT": "65536"}, []string{`field "L4_DST_PORT"`, "0-65535"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "L4_DST_PORT_RANGE": "2000-1000"}, []string{`field "L4_DST_PORT_RANGE"`, "N <= M"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "L4_DST_PORT_RANGE": "80"}, []string{`field "L4_DST_PORT_RANGE"`}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "L4_SRC_PORT": "80", "L4_SRC_PORT_RANGE": "80-90"}, []string{`field "L4_SRC_PORT_RANGE"`, "use one of them"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "IP_PROTOCOL": "1", "L4_DST_PORT": "80"}, []string{`field "L4_DST_PORT"`, "need IP_PROTOCOL 6"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "TCP_FLAGS": "SYN"}, []string{`field "TCP_FLAGS"`, "0x02/0x12"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "TCP_FLAGS": "0x02/0x100"}, []string{`field "TCP_FLAGS"`}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "IP_PROTOCOL": "17", "TCP_FLAGS": "0x02/0x12"}, []string{`field "TCP_FLAGS"`, "need IP_PROTOCOL 6 (TCP), not 17"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ETHER_TYPE": "0x05ff"}, []string{`field "ETHER_TYPE"`, "0x0600-0xffff"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ETHER_TYPE": "0x86dd", "SRC_IP": "10.0.0.0/8"}, []string{`field "ETHER_TYPE"`, "contradicts the rule's IPv4"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "DSCP": "64"}, []string{`field "DSCP"`, "0-63"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "VLAN_ID": "0"}, []string{`field "VLAN_ID"`, "1-4094"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ICMP_TYPE": "256"}, []string{`field "ICMP_TYPE"`, "0-255"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ICMP_TYPE": "8", "IP_PROTOCOL": "6"}, []string{`field "ICMP_TYPE"`, "needs IP_PROTOCOL 1"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ICMP_TYPE": "8", "ICMPV6_TYPE": "128"}, []string{`field "ICMPV6_TYPE"`, "one family"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "ICMP_TYPE": "8", "SRC_IPV6": "2001:db8::/32"}, []string{`field "ICMP_TYPE"`, "IPv6 fields"}},
	{TableACLRule, "T|r", Fields{"PRIORITY": "1", "PACKET_ACTION": "DR OP"}, []string{`field "PACKET_ACTION"`}},
}

func TestACLRuleValues(t *testing.T) {
	r, err := ParseACLRule("DATAACL|SYN", Fields{"PRIORITY": "100", "PACKET_ACTION": "DROP", "IP_PROTOCOL": "IP_TCP",
		"TCP_FLAGS": "0x12/0x12", "L4_DST_PORT_RANGE": "1024-65535", "DST_IP": "192.0.2.7/24"})
	if err != nil {
		t.Fatal(err)
	}
	if r.TableName != "DATAACL" || r.Name != "SYN" || r.Priority != 100 || r.Proto != 6 || r.TCPFlags != 0x12 || r.TCPFlagsMask != 0x12 ||
		r.DstPort != (PortRange{Set: true, Lo: 1024, Hi: 65535}) || r.Dst != netip.MustParsePrefix("192.0.2.0/24") ||
		r.Src.IsValid() || r.EtherType != -1 || r.DSCP != -1 || r.ICMPType != -1 || r.Family() != 4 {
		t.Errorf("parsed as %+v", r)
	}
	if err := r.Applicable(); err != nil {
		t.Errorf("Applicable: %v", err)
	}
	// value bits outside the mask are dropped
	r, _ = ParseACLRule("T|r", Fields{"PRIORITY": "1", "TCP_FLAGS": "0x13/0x02"})
	if r.TCPFlags != 0x02 || r.TCPFlagsMask != 0x02 {
		t.Errorf("TCP_FLAGS 0x13/0x02 parsed as %#x/%#x", r.TCPFlags, r.TCPFlagsMask)
	}
}

// TestACLApplicable: SONiC fields and actions the data plane cannot act
// on parse (a SONiC config_db.json loads) and are named by Applicable.
func TestACLApplicable(t *testing.T) {
	for _, c := range []struct {
		f    Fields
		want []string
	}{
		{Fields{"PACKET_ACTION": "DROP", "IN_PORTS": "Ethernet0"}, []string{`field "IN_PORTS"`, "bind the table to the port"}},
		{Fields{"PACKET_ACTION": "DROP", "OUTER_VLAN_ID": "10"}, []string{`field "OUTER_VLAN_ID"`, "use VLAN_ID"}},
		{Fields{"PACKET_ACTION": "DROP", "NEXT_HEADER": "6"}, []string{`field "NEXT_HEADER"`, "use IP_PROTOCOL"}},
		{Fields{"MIRROR_INGRESS_ACTION": "s1"}, []string{`field "MIRROR_INGRESS_ACTION"`, "no port mirroring"}},
		{Fields{"PACKET_ACTION": "REDIRECT:Ethernet8"}, []string{`field "PACKET_ACTION"`, `"REDIRECT:Ethernet8" is not supported`}},
		{Fields{"PACKET_ACTION": "ACCEPT"}, []string{"CTRLPLANE", "want FORWARD or DROP"}},
		{Fields{}, []string{"PACKET_ACTION is required"}},
		{Fields{"PACKET_ACTION": "DROP", "IP_TYPE": "NON_IPv6"}, []string{`field "IP_TYPE"`, "negative"}},
	} {
		c.f["PRIORITY"] = "5"
		r, err := ParseACLRule("T|r", c.f)
		if err != nil {
			t.Fatalf("%v: %v", c.f, err)
		}
		err = r.Applicable()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Table != TableACLRule || fe.Key != "T|r" {
			t.Fatalf("%v: Applicable = %v, want a FieldError naming ACL_RULE|T|r", c.f, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.f, err, w)
			}
		}
	}
}

func TestACLTableNotApplied(t *testing.T) {
	for typ, want := range map[string]string{"L3": "", "L3V6": "", "L3V4V6": "", "CTRLPLANE": "caclmgrd",
		"MIRROR": "MIRROR_SESSION", "PFCWD": "pfcwdorch", "MY_TYPE": "custom types (ACL_TABLE_TYPE)"} {
		r, err := ParseACLTable("T", Fields{"type": typ})
		if err != nil {
			t.Fatal(err)
		}
		got := r.NotApplied()
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("type %s: NotApplied %q, want %q", typ, got, want)
		}
	}
}

func TestACLKnownFields(t *testing.T) {
	if u := UnknownFields(TableACLRule, Fields{"PRIORITY": "1", "IN_PORTS": "x", "SRC_IPX": "x", "priority": "2"}); len(u) != 1 || u[0] != "SRC_IPX" {
		t.Errorf("unknown fields %q", u)
	}
	if w := FieldsWarning(TableACLTable, Fields{"type": "L3", "stgae": "ingress"}); !strings.Contains(w, `did you mean "stage"`) {
		t.Errorf("warning %q", w)
	}
}

func FuzzParseACLTable(f *testing.F) { fuzzTable(f, TableACLTable) }
func FuzzParseACLRule(f *testing.F)  { fuzzTable(f, TableACLRule) }
