package impaird

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// TestACLRules: CONFIG_DB rules in the data plane's form, implied matches
// explicit, IP_TYPE IP alone split into an IPv4 and an IPv6 half.
func TestACLRules(t *testing.T) {
	parse := func(key string, kv ...string) *schema.ACLRule {
		f := schema.Fields{}
		for i := 0; i+1 < len(kv); i += 2 {
			f[kv[i]] = kv[i+1]
		}
		r, err := schema.ParseACLRule(key, f)
		if err != nil {
			t.Fatal(err)
		}
		return &r
	}
	got := aclRules(parse("DATAACL|SYN", "PRIORITY", "20", "PACKET_ACTION", "DROP", "TCP_FLAGS", "0x02/0x12", "L4_DST_PORT_RANGE", "1024-65535", "SRC_IP", "10.0.0.9/32"))
	want := bpf.ACLRule{Name: "DATAACL|SYN", Priority: 20, Action: bpf.ACLDrop, TCPFlags: 0x02, TCPFlagsMask: 0x12,
		Match: bpf.Match{Src: netip.MustParsePrefix("10.0.0.9/32"), Proto: 6, ProtoSet: true, Dport: bpf.PortRange{Set: true, Lo: 1024, Hi: 65535}}}
	if len(got) != 1 || got[0] != want {
		t.Errorf("SYN rule: %+v, want %+v", got, want)
	}
	got = aclRules(parse("V6|ND", "PRIORITY", "5", "PACKET_ACTION", "FORWARD", "IP_TYPE", "IPV6ANY", "ICMPV6_TYPE", "135"))
	if len(got) != 1 || got[0].EtherType != 0x86dd || !got[0].EtherTypeSet || got[0].Match.Proto != 58 || got[0].ICMPType != 135 || got[0].Action != bpf.ACLForward {
		t.Errorf("ICMPv6 rule: %+v", got)
	}
	got = aclRules(parse("T|DEFAULT_RULE", "PRIORITY", "1", "PACKET_ACTION", "DROP", "IP_TYPE", "IP"))
	if len(got) != 2 || got[0].Name != "T|DEFAULT_RULE" || got[0].EtherType != 0x0800 || got[1].Name != "T|DEFAULT_RULE|v6" ||
		got[1].EtherType != 0x86dd || aclRuleKey(got[1].Name) != "T|DEFAULT_RULE" {
		t.Errorf("IP_TYPE IP: %+v", got)
	}
	if got = aclRules(parse("T|ANY", "PRIORITY", "1", "PACKET_ACTION", "DROP", "IP_TYPE", "ANY")); len(got) != 1 || got[0].EtherTypeSet {
		t.Errorf("IP_TYPE ANY: %+v", got)
	}
	if got = aclRules(parse("T|IPP", "PRIORITY", "1", "PACKET_ACTION", "DROP", "IP_TYPE", "IP", "IP_PROTOCOL", "17")); len(got) != 1 {
		t.Errorf("IP_TYPE IP with an IP field needs no split: %+v", got)
	}
}

// TestACLCompileDropsBadRules: a rule the data plane refuses is named (by
// its ACL_RULE key, both halves of a split rule) and the others compile.
func TestACLCompileDropsBadRules(t *testing.T) {
	long := "T|R_0123456789012345678901234567890123456789012345678901234567890123"
	rules := []bpf.ACLRule{
		{Name: "T|ok", Priority: 1, Action: bpf.ACLDrop, Match: bpf.Match{Proto: 17, ProtoSet: true}},
		{Name: long, Priority: 2, Action: bpf.ACLDrop},
	}
	bad := map[string]string{}
	plan, err := compileACL(rules, bad)
	if err != nil || plan == nil || len(plan.Rules()) != 1 || bad[long] == "" {
		t.Fatalf("plan %v err %v bad %v", plan, err, bad)
	}
}

// TestACLCounterKeys: the SAI-style oid is stable and of the ACL counter
// object type; impaird owns only its fields in COUNTERS_DB.
func TestACLCounterKeys(t *testing.T) {
	oid := ACLCounterOID("DATAACL:RULE_1")
	if oid != ACLCounterOID("DATAACL:RULE_1") || oid == ACLCounterOID("DATAACL:RULE_2") || len(oid) != len("oid:0x9000000000000") || oid[:7] != "oid:0x9" {
		t.Errorf("oid %q", oid)
	}
	for key, want := range map[string]string{
		"ACL_COUNTER_RULE_MAP":    "[*]",
		"COUNTERS:" + oid:         "[SAI_ACL_COUNTER_ATTR_BYTES SAI_ACL_COUNTER_ATTR_PACKETS]",
		"COUNTERS:DATAACL:RULE_1": "[Bytes Packets]",
		"COUNTERS:Ethernet0":      "[Bytes Packets]", // syncd's fields there are not ours
		"COUNTERS_PORT_NAME_MAP":  "[]",
	} {
		if got := fmt.Sprint(aclCounterOwnership(key)); got != want {
			t.Errorf("%s: owns %s, want %s", key, got, want)
		}
	}
}
