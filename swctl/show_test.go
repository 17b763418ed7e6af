package swctl

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestShow fills STATE_DB and COUNTERS_DB as syncd and impaird would and
// checks each show table, text and --json.
func TestShow(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "vlan", "add", "100")
	h.ok("config", "vlan", "member", "add", "100", "Ethernet0", "--untagged")
	h.ok("config", "vlan", "member", "add", "100", "Ethernet1")
	h.ok("config", "interface", "ip", "add", "Vlan100", "10.1.0.1/24")
	h.ok("config", "interface", "ip", "add", "Ethernet2", "10.0.2.1/24")
	h.ok("config", "port", "Ethernet2", "--mtu", "9100", "--description", "uplink")
	h.ok("config", "route", "add", "10.9.0.0/16", "--nexthop", "10.0.2.2")
	h.ok("config", "route", "add", "10.8.0.0/16", "--nexthop", "10.0.2.3")
	h.ok("config", "impairment", "set", "Ethernet1", "--loss", "20")
	h.ok("config", "impairment", "flow", "add", "Ethernet1", "dns", "--proto", "udp", "--dport", "53", "--loss", "5")

	h.setState("VLAN_TABLE|Vlan100", "state", "ok", "oper_status", "up")
	h.setState("PORT_TABLE|Ethernet2", "state", "ok", "admin_status", "up", "oper_status", "up", "mtu", "9100", "mac", "02:00:00:00:00:02")
	h.setState("PORT_TABLE|Ethernet10", "admin_status", "down", "oper_status", "down", "mtu", "1500")
	h.setState("ROUTE_TABLE|10.9.0.0/16", "nexthop", "10.0.2.2", "ifname", "Ethernet2", "protocol", "switchyard")
	h.setState("STATIC_ROUTE_TABLE|10.9.0.0/16", "state", "ok")
	h.setState("STATIC_ROUTE_TABLE|10.8.0.0/16", "state", "pending", "reason", "waiting for a route to 10.0.2.3")
	h.setState("FDB_TABLE|Vlan100:02:00:00:00:00:10", "port", "Ethernet0", "type", "dynamic")
	h.setState("NEIGH_TABLE|Ethernet2|10.0.2.2", "neigh", "02:00:00:00:01:02", "family", "IPv4", "state", "REACHABLE")
	h.setState("IMPAIRMENT_TABLE|Ethernet1", "state", "ok", "xdp_mode", "generic", "prog_id", "42")
	h.setState("IMPAIRMENT_FLOW_TABLE|Ethernet1|dns", "state", "ok")
	h.ctr.HSet(t.Context(), "COUNTERS:Ethernet2", "rx_packets", "10", "tx_packets", "12", "rx_bytes", "1000")
	h.ctr.HSet(t.Context(), "COUNTERS:oid:0x163a1249b5d5a", "SAI_PORT_STAT_IF_IN_OCTETS", "1000") // SONiC's copy: not a row
	h.ctr.HSet(t.Context(), "IMPAIRMENT_COUNTERS:Ethernet1", "rx_packets", "200", "passed", "160", "dropped_loss", "40", "dropped_rate", "0", "corrupted", "0")
	h.ctr.HSet(t.Context(), "IMPAIRMENT_COUNTERS:Ethernet1|dns", "rx_packets", "0", "passed", "0", "dropped_loss", "0")

	cases := []struct {
		args []string
		want []string // lines (whitespace-collapsed) in the text table
		rows int      // rows in --json
		json map[string]string
	}{
		{[]string{"show", "vlan"}, []string{"Vlan100 100 Ethernet0(u),Ethernet1(t) 10.1.0.1/24 up ok -"}, 1,
			map[string]string{"vlan": "Vlan100", "oper_status": "up"}},
		{[]string{"show", "interfaces"}, []string{
			"Ethernet0 - - - - - Vlan100 - - -",
			"Ethernet2 up up 9100 02:00:00:00:00:02 10.0.2.1/24 - uplink ok -",
			"Ethernet10 down down 1500 - - - - - -"}, 4, map[string]string{"interface": "Ethernet0"}},
		{[]string{"show", "interfaces", "--counters"}, []string{"INTERFACE RX_PACKETS RX_BYTES TX_PACKETS", "Ethernet2 10 1000 12"}, 1,
			map[string]string{"interface": "Ethernet2", "rx_packets": "10"}},
		{[]string{"show", "ip", "route"}, []string{
			"10.8.0.0/16 - - - pending: waiting for a route to 10.0.2.3",
			"10.9.0.0/16 10.0.2.2 Ethernet2 switchyard ok"}, 2, map[string]string{"prefix": "10.8.0.0/16"}},
		{[]string{"show", "mac"}, []string{"Vlan100 02:00:00:00:00:10 Ethernet0 dynamic - -"}, 1,
			map[string]string{"mac": "02:00:00:00:00:10", "port": "Ethernet0"}},
		{[]string{"show", "neighbors"}, []string{"Ethernet2 10.0.2.2 02:00:00:00:01:02 IPv4 REACHABLE"}, 1,
			map[string]string{"address": "10.0.2.2"}},
		{[]string{"show", "impairment"}, []string{
			"Ethernet1 - loss=20 ok generic -",
			"Ethernet1 dns dport=53 loss=5 proto=udp ok generic -"}, 2, map[string]string{"port": "Ethernet1", "rule": ""}},
		{[]string{"show", "impairment", "--counters"}, []string{
			"PORT RULE RX_PACKETS PASSED DROPPED_LOSS DROPPED_RATE CORRUPTED LOSS%",
			"Ethernet1 - 200 160 40 0 0 20.00",
			"Ethernet1 dns 0 0 0 - - -"}, 2, map[string]string{"port": "Ethernet1", "loss_percent": "20.00"}},
	}
	for _, c := range cases {
		out := h.ok(c.args...)
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
		for _, w := range c.want {
			found := false
			for _, l := range lines {
				found = found || l == w
			}
			if !found {
				t.Errorf("swctl %s: no line %q in\n%s", strings.Join(c.args, " "), w, out)
			}
		}
		var rows []map[string]any
		js := h.ok(append(c.args, "--json")...)
		if err := json.Unmarshal([]byte(js), &rows); err != nil {
			t.Fatalf("swctl %s --json: %v\n%s", strings.Join(c.args, " "), err, js)
		}
		if len(rows) != c.rows {
			t.Errorf("swctl %s --json: %d rows, want %d:\n%s", strings.Join(c.args, " "), len(rows), c.rows, js)
			continue
		}
		for k, v := range c.json {
			if rows[0][k] != v {
				t.Errorf("swctl %s --json: first row %s = %v, want %q", strings.Join(c.args, " "), k, rows[0][k], v)
			}
		}
	}
	// Empty tables print a header, and [] in JSON.
	h2 := newHarness(t)
	if js := strings.TrimSpace(h2.ok("show", "mac", "--json")); js != "[]" {
		t.Errorf("show mac --json on an empty switch: %q, want []", js)
	}
	if out := h2.ok("show", "neighbors"); !strings.HasPrefix(out, "INTERFACE") {
		t.Errorf("show neighbors on an empty switch: %q", out)
	}
}

// TestShowImpairmentBothDirections: a key with impaird's egress counters
// (tx_ fields) gets a second row, DIR egress, under the ingress columns.
func TestShowImpairmentBothDirections(t *testing.T) {
	h := newHarness(t)
	h.ctr.HSet(t.Context(), "IMPAIRMENT_COUNTERS:Ethernet1", "rx_packets", "200", "passed", "160", "dropped_loss", "40",
		"tx_packets", "100", "tx_passed", "70", "tx_dropped_loss", "30")
	h.ctr.HSet(t.Context(), "IMPAIRMENT_COUNTERS:Ethernet1|up", "tx_packets", "10", "tx_passed", "10", "tx_dropped_loss", "0")
	out := h.ok("show", "impairment", "--counters")
	for _, w := range []string{
		"PORT RULE DIR RX_PACKETS PASSED DROPPED_LOSS LOSS%",
		"Ethernet1 - ingress 200 160 40 20.00",
		"Ethernet1 - egress 100 70 30 30.00",
		"Ethernet1 up egress 10 10 0 0.00",
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || strings.Join(strings.Fields(l), " ") == w
		}
		if !found {
			t.Errorf("no line %q in\n%s", w, out)
		}
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(h.ok("show", "impairment", "--counters", "--json")), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("--json: %v rows, %v", len(rows), err)
	}
}
