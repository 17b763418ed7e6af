package swctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortTuningVerbs: the config verb writes PORT_TUNING (merged, with
// --unset), refuses a bad CPU list writing nothing, deletes; show port
// tuning joins the mirror, the configured values and the result; save and
// load carry the table.
func TestPortTuningVerbs(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "port", "tuning", "Ethernet0", "--rps-cpus", "1,0", "--rfs-flow-cnt", "2048", "--gro-flush-timeout", "20000")
	h.wantHash("PORT_TUNING|Ethernet0", map[string]string{"rps_cpus": "0-1", "rfs_flow_cnt": "2048", "gro_flush_timeout": "20000"})
	h.ok("config", "port", "tuning", "Ethernet0", "--irq-cpus", "0", "--unset", "gro_flush_timeout")
	h.wantHash("PORT_TUNING|Ethernet0", map[string]string{"rps_cpus": "0-1", "rfs_flow_cnt": "2048", "irq_cpus": "0"})
	before := h.dump()
	errs := h.fails(1, "config", "port", "tuning", "Ethernet0", "--rps-cpus", "3-1")
	if !strings.Contains(errs, `range "3-1" ends before it starts`) {
		t.Errorf("bad CPU list: stderr %q", errs)
	}
	if after := h.dump(); len(after) != len(before) || after["PORT_TUNING|Ethernet0"] != before["PORT_TUNING|Ethernet0"] {
		t.Errorf("a refused entry changed CONFIG_DB: %v -> %v", before, after)
	}

	h.setState("PORT_TUNING_TABLE|Ethernet0", "state", "ok", "warning", "irq_cpus not applied: Ethernet0 is a virtual device",
		"rx_queues", "4", "rps_cpus", "0", "rfs_flow_cnt", "2048", "irq_cpus", "")
	out := h.ok("show", "port", "tuning", "--json")
	var rows []map[string]string
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("show port tuning --json: %v\n%s", err, out)
	}
	r := rows[0]
	if r["port"] != "Ethernet0" || r["rps_cpus"] != "0 (want 0-1)" || r["rfs_flow_cnt"] != "2048" || r["rx_queues"] != "4" ||
		r["state"] != "ok" || !strings.Contains(r["note"], "virtual device") {
		t.Errorf("show port tuning row = %v", r)
	}

	file := filepath.Join(t.TempDir(), "config.json")
	h.ok("config", "save", file)
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), `"PORT_TUNING"`) || !strings.Contains(string(b), `"rps_cpus": "0-1"`) {
		t.Fatalf("config save lacks PORT_TUNING:\n%s", b)
	}
	h.ok("config", "port", "tuning", "del", "Ethernet0")
	if got := h.hash("PORT_TUNING|Ethernet0"); len(got) != 0 {
		t.Fatalf("after del: %v", got)
	}
	h.ok("config", "load", file)
	h.wantHash("PORT_TUNING|Ethernet0", map[string]string{"rps_cpus": "0-1", "rfs_flow_cnt": "2048", "irq_cpus": "0"})
}
