package swctl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// TestWait simulates the daemons by writing STATE_DB results directly.
func TestWait(t *testing.T) {
	h := newHarness(t)

	// Nothing configured: nothing to wait for.
	if out := h.ok("wait", "--timeout", "1s"); !strings.Contains(out, "all 0 entries applied") {
		t.Errorf("wait on an empty CONFIG_DB: %q", out)
	}

	h.ok("config", "vlan", "add", "100")
	h.ok("config", "vlan", "member", "add", "100", "Ethernet0", "--untagged")
	h.ok("config", "mac", "add", "100", "00:11:22:33:44:55", "Ethernet0")
	h.ok("config", "impairment", "set", "Ethernet1", "--loss", "20")

	// No results, then one pending: timeout, exit 1, each key named with
	// what it waits for.
	h.setState("VLAN_MEMBER_TABLE|Vlan100|Ethernet0", "state", "pending", "reason", "waiting for PORT|Ethernet0")
	errs := h.fails(ExitRuntime, "wait", "--timeout", "300ms")
	for _, want := range []string{"timed out", "VLAN|Vlan100: no result yet (is orchagent running?)",
		"VLAN_MEMBER|Vlan100|Ethernet0: pending: waiting for PORT|Ethernet0",
		"IMPAIRMENT|Ethernet1: no result yet (is impaird running?)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("wait with missing results: stderr does not contain %q:\n%s", want, errs)
		}
	}

	// All ok (the FDB result uses SONiC's key form): exit 0.
	h.setState("VLAN_TABLE|Vlan100", "state", "ok", "oper_status", "up")
	h.setState("VLAN_MEMBER_TABLE|Vlan100|Ethernet0", "state", "ok")
	h.st.HDel(t.Context(), "VLAN_MEMBER_TABLE|Vlan100|Ethernet0", "reason")
	h.setState("FDB_TABLE|Vlan100:00:11:22:33:44:55", "state", "ok", "port", "Ethernet0", "type", "static")
	h.setState("IMPAIRMENT_TABLE|Ethernet1", "state", "ok", "xdp_mode", "generic")
	if out := h.ok("wait", "--timeout", "5s"); !strings.Contains(out, "all 4 entries applied") {
		t.Errorf("wait with all ok: %q", out)
	}

	// One error: exit 1 at once, the error printed with its reason.
	h.setState("IMPAIRMENT_TABLE|Ethernet1", "state", "error", "reason", "port Ethernet1 does not exist")
	errs = h.fails(ExitRuntime, "wait", "--timeout", "30s")
	if !strings.Contains(errs, "IMPAIRMENT|Ethernet1: error: port Ethernet1 does not exist") || strings.Contains(errs, "timed out") {
		t.Errorf("wait with an error: stderr %q", errs)
	}

	// A result that arrives while waiting ends the wait with success.
	h.setState("IMPAIRMENT_TABLE|Ethernet1", "state", "pending", "reason", "waiting for the port")
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(200 * time.Millisecond)
		h.st.HSet(t.Context(), "IMPAIRMENT_TABLE|Ethernet1", "state", "ok")
		h.st.HDel(t.Context(), "IMPAIRMENT_TABLE|Ethernet1", "reason")
	}()
	h.ok("wait", "--timeout", "60s")
	<-done

	// show state lists each entry's result.
	var rows []map[string]string
	if err := json.Unmarshal([]byte(h.ok("show", "state", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("show state --json: %d rows, want 4: %v", len(rows), rows)
	}
	for _, r := range rows {
		if r["state"] != "ok" {
			t.Errorf("show state: %v, want state ok", r)
		}
	}
	if out := h.ok("show", "state", "--errors"); strings.Contains(out, "Vlan100") {
		t.Errorf("show state --errors lists ok entries:\n%s", out)
	}
}

// TestWaitGeneration: a result that names the previous version of an
// entry (its generation differs from the current hash's) does not end the
// wait — changing an entry that was already ok waits for the new result.
func TestWaitGeneration(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "route", "add", "10.2.0.0/16", "--blackhole")
	old, _ := h.cfg.HGetAll(t.Context(), "STATIC_ROUTE|10.2.0.0/16").Result()
	h.setState("STATIC_ROUTE_TABLE|10.2.0.0/16", "state", "ok", "generation", schema.Generation(old))
	h.ok("wait", "--timeout", "1s")

	h.cfg.HSet(t.Context(), "STATIC_ROUTE|10.2.0.0/16", "distance", "20") // the change
	errs := h.fails(ExitRuntime, "wait", "--timeout", "300ms")
	if !strings.Contains(errs, "STATIC_ROUTE|10.2.0.0/16: result is for the previous version of the entry") {
		t.Errorf("wait after a change: stderr %q", errs)
	}
	cur, _ := h.cfg.HGetAll(t.Context(), "STATIC_ROUTE|10.2.0.0/16").Result()
	h.setState("STATIC_ROUTE_TABLE|10.2.0.0/16", "state", "ok", "generation", schema.Generation(cur))
	h.ok("wait", "--timeout", "1s")
}
