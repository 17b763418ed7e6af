package swctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestACLConfigAndShow: config acl verbs write SONiC's forms (validated by
// the schema first), show acl lists rules like aclshow with impaird's
// counters and results, table del removes the table's rules too.
func TestACLConfigAndShow(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "acl", "table", "add", "DATAACL", "--type", "L3", "--ports", "Ethernet0,Ethernet4")
	h.wantHash("ACL_TABLE|DATAACL", map[string]string{"type": "L3", "stage": "ingress", "ports@": "Ethernet0,Ethernet4", "policy_desc": "DATAACL"})
	h.ok("config", "acl", "rule", "add", "DATAACL", "SYN_DROP", "--priority", "20", "--action", "DROP",
		"--ip-protocol", "6", "--tcp-flags", "0x02/0x12")
	h.ok("config", "acl", "rule", "add", "DATAACL", "WEB", "--priority", "30", "--action", "FORWARD",
		"--ip-protocol", "6", "--l4-dst-port", "80")
	h.wantHash("ACL_RULE|DATAACL|WEB", map[string]string{"PRIORITY": "30", "PACKET_ACTION": "FORWARD", "IP_PROTOCOL": "6", "L4_DST_PORT": "80"})
	if out := h.fails(1, "config", "acl", "rule", "add", "DATAACL", "BAD", "--priority", "1", "--tcp-flags", "SYN"); !strings.Contains(out, `field "TCP_FLAGS"`) {
		t.Errorf("bad TCP_FLAGS: %q", out)
	}
	h.setState("ACL_RULE_TABLE|DATAACL|WEB", "state", "ok")
	h.setState("ACL_RULE_TABLE|DATAACL|SYN_DROP", "state", "ok")
	h.ctr.HSet(t.Context(), "COUNTERS:DATAACL:SYN_DROP", "Packets", "7", "Bytes", "420")

	out := h.ok("show", "acl")
	want := []string{"DATAACL WEB 30 FORWARD N/A N/A ok -", "DATAACL SYN_DROP 20 DROP 7 420 ok -"}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[2]), " ") != want[0] || strings.Join(strings.Fields(lines[3]), " ") != want[1] {
		t.Errorf("show acl:\n%s\nwant rows %q", out, want)
	}
	var rows []map[string]string
	if err := json.Unmarshal([]byte(h.ok("show", "acl", "--json")), &rows); err != nil || len(rows) != 2 || rows[1]["packets"] != "7" {
		t.Errorf("show acl --json: %v %v", rows, err)
	}
	h.setState("ACL_TABLE_TABLE|DATAACL", "state", "pending", "reason", "waiting for netdev Ethernet4 (applied on Ethernet0)")
	out = h.ok("show", "acl", "table")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "DATAACL L3 ingress Ethernet0,Ethernet4 DATAACL pending waiting for netdev Ethernet4") {
		t.Errorf("show acl table:\n%s", out)
	}
	if got := h.ok("show", "interfaces", "--counters"); strings.Contains(got, "DATAACL") {
		t.Errorf("ACL counters listed as interfaces:\n%s", got)
	}
	h.ok("config", "acl", "rule", "del", "DATAACL", "WEB")
	h.ok("config", "acl", "table", "del", "DATAACL")
	if d := h.dump(); len(d) != 0 {
		t.Errorf("after table del CONFIG_DB holds %v", d)
	}
}
