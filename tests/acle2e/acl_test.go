package acle2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// seedRules is seed 003's firewall as SONiC ACL rules on table DATAACL:
// web (80, 443) allowed, any other SYN without ACK dropped, a blocked
// source, a higher-priority exception for it, and a counted UDP port.
func (e *env) seedRules() {
	e.HSet("ACL_TABLE|DATAACL", "type", "L3", "stage", "ingress", "ports@", "Ethernet0", "policy_desc", "seed 003")
	e.rule("DATAACL", "ALLOW_80", "PRIORITY", "30", "PACKET_ACTION", "FORWARD", "IP_PROTOCOL", "6", "L4_DST_PORT", "80")
	e.rule("DATAACL", "ALLOW_443", "PRIORITY", "30", "PACKET_ACTION", "FORWARD", "IP_PROTOCOL", "6", "L4_DST_PORT", "443")
	e.rule("DATAACL", "SYN_DROP", "PRIORITY", "20", "PACKET_ACTION", "DROP", "IP_PROTOCOL", "6", "TCP_FLAGS", "0x02/0x12")
	e.rule("DATAACL", "BLOCK_SRC", "PRIORITY", "40", "PACKET_ACTION", "DROP", "SRC_IP", blockedAddr+"/32")
	e.rule("DATAACL", "EXCEPT_7000", "PRIORITY", "50", "PACKET_ACTION", "FORWARD", "SRC_IP", blockedAddr+"/32", "IP_PROTOCOL", "17", "L4_DST_PORT", "7000")
	e.rule("DATAACL", "COUNT_9000", "PRIORITY", "10", "PACKET_ACTION", "FORWARD", "IP_PROTOCOL", "17", "L4_DST_PORT", "9000")
	e.WaitOK("ACL_TABLE|DATAACL", "ACL_RULE|DATAACL|ALLOW_80", "ACL_RULE|DATAACL|ALLOW_443", "ACL_RULE|DATAACL|SYN_DROP",
		"ACL_RULE|DATAACL|BLOCK_SRC", "ACL_RULE|DATAACL|EXCEPT_7000", "ACL_RULE|DATAACL|COUNT_9000")
}

// TestACLSeed003: real TCP and UDP through an XDP ACL built from
// CONFIG_DB: established TCP to 80 passes, a SYN to 8080 is dropped, a
// blocked source is dropped except where a higher priority allows it,
// counters are exact (both aclshow forms), a bad rule is an error naming
// its field and changes nothing else, deletes clean up.
func TestACLSeed003(t *testing.T) {
	e := newEnv(t)
	e.impaird()
	e.seedRules()
	id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
	if id == 0 {
		t.Fatal("no XDP program on Ethernet0 after the ACL is ok")
	}

	web, other := e.tcpServer(80), e.tcpServer(8080)
	if err := e.tcpEcho(80, 10*time.Second); err != nil {
		t.Fatalf("established TCP to port 80: %v", err)
	}
	if err := e.tcpEcho(8080, 2*time.Second); err == nil || other.accepted.Load() != 0 {
		t.Fatalf("TCP connect to 8080 got through (err %v, accepted %d)", err, other.accepted.Load())
	}
	if web.accepted.Load() != 1 {
		t.Errorf("port 80 accepted %d connections, want 1", web.accepted.Load())
	}
	e.Eventually("SYN_DROP counted the SYNs to 8080", func() (bool, string) {
		p, _, _ := e.aclCounter("DATAACL", "SYN_DROP")
		a, _, _ := e.aclCounter("DATAACL", "ALLOW_80")
		return p >= 1 && a >= 4, fmt.Sprintf("SYN_DROP %d ALLOW_80 %d", p, a)
	})

	r9000, r7000 := e.listen(9000), e.listen(7000)
	if got := e.through(r9000, blockedAddr, 9000, 200); got != 0 {
		t.Errorf("blocked source: %d of 200 datagrams arrived", got)
	}
	e.waitCounter("DATAACL", "BLOCK_SRC", 200)
	if got := e.through(r7000, blockedAddr, 7000, 100); got != 100 {
		t.Errorf("priority 50 FORWARD over priority 40 DROP: %d of 100 arrived", got)
	}
	e.waitCounter("DATAACL", "EXCEPT_7000", 100)
	if got := e.through(r9000, h1Addr, 9000, 500); got != 500 {
		t.Errorf("port 9000: %d of 500 arrived", got)
	}
	e.waitCounter("DATAACL", "COUNT_9000", 500)
	if _, b, _ := e.aclCounter("DATAACL", "COUNT_9000"); b != 500*frameBytes {
		t.Errorf("COUNT_9000 Bytes %d, want %d", b, 500*frameBytes)
	}
	// aclshow today: ACL_COUNTER_RULE_MAP -> COUNTERS:oid with SAI names.
	oid := e2eutil.HGetAll(e.Counters, "ACL_COUNTER_RULE_MAP")["DATAACL:COUNT_9000"]
	if sai := e2eutil.HGetAll(e.Counters, "COUNTERS:"+oid); oid == "" || sai["SAI_ACL_COUNTER_ATTR_PACKETS"] != "500" ||
		sai["SAI_ACL_COUNTER_ATTR_BYTES"] != strconv.Itoa(500*frameBytes) {
		t.Errorf("ACL_COUNTER_RULE_MAP DATAACL:COUNT_9000 = %q, COUNTERS:%s = %v", oid, oid, sai)
	}

	// Bad rules: an error naming the field; the rest stays as it was.
	e.rule("DATAACL", "BAD_PORT", "PRIORITY", "60", "PACKET_ACTION", "DROP", "L4_DST_PORT", "99999")
	e.WaitState("ACL_RULE|DATAACL|BAD_PORT", "error", `field "L4_DST_PORT": "99999" is not valid`)
	e.rule("DATAACL", "BAD_IN", "PRIORITY", "60", "PACKET_ACTION", "DROP", "IN_PORTS", "Ethernet0")
	e.WaitState("ACL_RULE|DATAACL|BAD_IN", "error", `field "IN_PORTS"`)
	e.WaitOK("ACL_TABLE|DATAACL", "ACL_RULE|DATAACL|BLOCK_SRC", "ACL_RULE|DATAACL|ALLOW_80")
	if id2, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); id2 != id {
		t.Errorf("XDP program %d after bad rules, want %d", id2, id)
	}
	if got := e.through(r9000, blockedAddr, 9000, 50); got != 0 {
		t.Errorf("after bad rules the blocked source got %d datagrams through", got)
	}
	e.waitCounter("DATAACL", "BLOCK_SRC", 250)
	if got := e.through(r9000, h1Addr, 9000, 50); got != 50 {
		t.Errorf("after bad rules port 9000 got %d of 50", got)
	}

	// acl-loader's default deny of an L3V4V6 table (IP_TYPE IP): IP not
	// allowed by a rule is dropped, ARP is not (h1 resolves the switch again).
	e.rule("DATAACL", "DEFAULT_RULE", "PRIORITY", "1", "PACKET_ACTION", "DROP", "IP_TYPE", "IP")
	e.WaitOK("ACL_RULE|DATAACL|DEFAULT_RULE")
	e.h1.IP("neigh", "flush", "dev", "eth0")
	if got := e.through(r9000, h1Addr, 9000, 50); got != 50 {
		t.Errorf("with DEFAULT_RULE IP_TYPE IP, after a neighbor flush: %d of 50 arrived (ARP dropped?)", got)
	}
	r9500 := e.listen(9500)
	if got := e.through(r9500, h1Addr, 9500, 50); got != 0 {
		t.Errorf("DEFAULT_RULE: %d of 50 datagrams to an unlisted port arrived", got)
	}
	e.waitCounter("DATAACL", "DEFAULT_RULE", 50)

	// A deleted rule's counters go; deleting the table detaches the
	// program of this ACL-only port and removes its pins.
	e.Del("ACL_RULE|DATAACL|COUNT_9000")
	e.WaitGone("ACL_RULE|DATAACL|COUNT_9000")
	e.Eventually("counters of a deleted rule removed", func() (bool, string) {
		_, _, ok := e.aclCounter("DATAACL", "COUNT_9000")
		_, inMap := e2eutil.HGetAll(e.Counters, "ACL_COUNTER_RULE_MAP")["DATAACL:COUNT_9000"]
		return !ok && !inMap && len(e2eutil.HGetAll(e.Counters, "COUNTERS:"+oid)) == 0, fmt.Sprintf("present %v, in map %v", ok, inMap)
	})
	keys := e2eutil.Keys(e.Config, "ACL_*")
	e.Del(keys...)
	e.Eventually("program detached and pins gone", func() (bool, string) {
		id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
		entries, _ := os.ReadDir(e.BPFFS)
		return id == 0 && len(entries) == 0, fmt.Sprintf("prog %d, bpffs %v", id, entries)
	})
	e.WaitGone("ACL_TABLE|DATAACL")
	e.Eventually("all ACL counters removed", func() (bool, string) {
		k := append(e2eutil.Keys(e.Counters, "COUNTERS:*"), e2eutil.Keys(e.Counters, "ACL_COUNTER_RULE_MAP")...)
		return len(k) == 0, fmt.Sprint(k)
	})
}

// TestACLResultsOfTablesAndPorts: a table type switchyard does not apply,
// a port that does not exist yet (pending, applied when it appears), a
// table moved between ports (the old port's program goes), an egress
// table on real traffic.
func TestACLResultsOfTablesAndPorts(t *testing.T) {
	e := newEnv(t)
	e.impaird()
	e.HSet("ACL_TABLE|SSH_ONLY", "type", "CTRLPLANE", "services@", "SSH", "policy_desc", "SSH_ONLY")
	e.rule("SSH_ONLY", "RULE_1", "PRIORITY", "9999", "PACKET_ACTION", "ACCEPT", "SRC_IP", "10.0.0.0/8", "IP_PROTOCOL", "6", "L4_DST_PORT", "22")
	e.WaitState("ACL_TABLE|SSH_ONLY", "error", "caclmgrd")
	e.WaitState("ACL_RULE|SSH_ONLY|RULE_1", "error", "not applied")
	e.rule("NOPE", "R", "PRIORITY", "1", "PACKET_ACTION", "DROP")
	e.WaitState("ACL_RULE|NOPE|R", "pending", "waiting for ACL_TABLE|NOPE")

	e.HSet("ACL_TABLE|T", "type", "L3", "ports@", "Ethernet0,Ethernet8")
	e.rule("T", "DROP_9200", "PRIORITY", "10", "PACKET_ACTION", "DROP", "IP_PROTOCOL", "17", "L4_DST_PORT", "9200")
	e.WaitState("ACL_TABLE|T", "pending", "waiting for netdev Ethernet8 (applied on Ethernet0)")
	// The rule's own result says it is applied where it can be.
	e.WaitState("ACL_RULE|T|DROP_9200", "pending", "table T: waiting for netdev Ethernet8 (applied on Ethernet0)")
	r := e.listen(9200)
	if got := e.through(r, h1Addr, 9200, 100); got != 0 {
		t.Errorf("applied on the existing port: %d of 100 arrived", got)
	}
	e.waitCounter("T", "DROP_9200", 100)
	e.Host("Ethernet8", "eth8")
	e.WaitOK("ACL_TABLE|T", "ACL_RULE|T|DROP_9200")
	if id, _ := e2eutil.XDPProg(e.NS, "Ethernet8"); id == 0 {
		t.Error("no XDP program on Ethernet8 once it exists")
	}
	e.HSet("ACL_TABLE|T", "ports@", "Ethernet8")
	e.Eventually("moved: Ethernet0 loses its program, Ethernet8 keeps one", func() (bool, string) {
		id0, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
		id8, _ := e2eutil.XDPProg(e.NS, "Ethernet8")
		return id0 == 0 && id8 != 0, fmt.Sprintf("Ethernet0 %d Ethernet8 %d", id0, id8)
	})
	if got := e.through(r, h1Addr, 9200, 50); got != 50 {
		t.Errorf("after the move Ethernet0 still drops: %d of 50 arrived", got)
	}

	// Egress: datagrams the switch sends out of Ethernet0.
	e.HSet("ACL_TABLE|OUT", "type", "L3", "stage", "egress", "ports@", "Ethernet0")
	e.rule("OUT", "DROP_9300", "PRIORITY", "10", "PACKET_ACTION", "DROP", "IP_PROTOCOL", "17", "L4_DST_PORT", "9300")
	e.rule("OUT", "COUNT_9301", "PRIORITY", "10", "PACKET_ACTION", "FORWARD", "IP_PROTOCOL", "17", "L4_DST_PORT", "9301")
	e.WaitOK("ACL_TABLE|OUT", "ACL_RULE|OUT|DROP_9300", "ACL_RULE|OUT|COUNT_9301")
	for port, want := range map[int]int64{9300: 0, 9301: 100} {
		rh := e2eutil.ListenUDP(t, e.h1, h1Addr, port)
		e2eutil.SendUDP(t, e2eutil.DialUDP(t, e.NS, h1Addr, port), 100)
		if got := rh.Settle(); got != want {
			t.Errorf("egress to udp %d: %d of 100 arrived, want %d", port, got, want)
		}
	}
	e.waitCounter("OUT", "DROP_9300", 100)
	e.waitCounter("OUT", "COUNT_9301", 100)
}
