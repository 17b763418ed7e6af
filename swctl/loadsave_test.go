package swctl

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodConfig = `{
    "PORT": {
        "Ethernet0": {"admin_status": "up", "mtu": 9100},
        "Ethernet1": {"description": "to h1"}
    },
    "VLAN": {"Vlan100": {"vlanid": "100"}},
    "VLAN_MEMBER": {
        "Vlan100|Ethernet0": {"tagging_mode": "untagged"},
        "Vlan100|Ethernet1": {"tagging_mode": "tagged"}
    },
    "VLAN_INTERFACE": {"Vlan100|10.1.0.1/24": {}},
    "INTERFACE": {"Ethernet2|10.0.2.1/24": {"NULL": "NULL"}},
    "STATIC_ROUTE": {"10.9.0.0/16": {"nexthop": "10.0.2.2"}},
    "FDB": {"Vlan100|00:11:22:33:44:55": {"port": "Ethernet0"}},
    "IMPAIRMENT": {"Ethernet1": {"loss": 20}}
}
`

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadSaveRoundTrip: load writes every entry and CONFIG_DB_INITIALIZED;
// save drops NULL and is stable; save → load --replace → save is identical.
func TestLoadSaveRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "load", writeFile(t, "good.json", goodConfig))
	h.wantHash("PORT|Ethernet0", map[string]string{"admin_status": "up", "mtu": "9100"})
	h.wantHash("VLAN_INTERFACE|Vlan100|10.1.0.1/24", map[string]string{"NULL": "NULL"})
	h.wantHash("INTERFACE|Ethernet2|10.0.2.1/24", map[string]string{"NULL": "NULL"})
	h.wantHash("VLAN_MEMBER|Vlan100|Ethernet1", map[string]string{"tagging_mode": "tagged"})
	if v := h.cfg.Get(context.Background(), "CONFIG_DB_INITIALIZED").Val(); v != "1" {
		t.Errorf("CONFIG_DB_INITIALIZED = %q after load, want 1", v)
	}

	dir := t.TempDir()
	first := filepath.Join(dir, "first.json")
	h.ok("config", "save", first)
	saved, _ := os.ReadFile(first)
	if strings.Contains(string(saved), "NULL") {
		t.Errorf("save kept the NULL placeholder:\n%s", saved)
	}
	if !strings.Contains(string(saved), `"Vlan100|10.1.0.1/24": {}`) {
		t.Errorf("save did not write a field-less entry as {}:\n%s", saved)
	}
	if out := h.ok("config", "save"); out != string(saved) {
		t.Errorf("save to stdout differs from save to a file:\n%s\n---\n%s", out, saved)
	}

	// Drift away from the file, then restore it with --replace.
	h.ok("config", "vlan", "add", "200")
	h.ok("config", "port", "Ethernet0", "--mtu", "1500", "--description", "drift")
	h.ok("config", "impairment", "del", "Ethernet1")
	h.ok("config", "load", "--replace", first)
	second := filepath.Join(dir, "second.json")
	h.ok("config", "save", second)
	again, _ := os.ReadFile(second)
	if string(again) != string(saved) {
		t.Errorf("save → load --replace → save differs:\n%s\n---\n%s", saved, again)
	}
	if len(h.hash("VLAN|Vlan200")) != 0 {
		t.Errorf("load --replace kept VLAN|Vlan200, which the file does not name")
	}

	// Loading what is already there changes nothing.
	out := h.ok("config", "load", "--replace", second)
	if !strings.Contains(out, "0 set") || !strings.Contains(out, "0 deleted") {
		t.Errorf("reloading the same file: %q, want 0 set and 0 deleted", out)
	}

	// Without --replace, keys absent from the file stay.
	h.ok("config", "vlan", "add", "300")
	h.ok("config", "load", second)
	if len(h.hash("VLAN|Vlan300")) == 0 {
		t.Errorf("load without --replace removed VLAN|Vlan300")
	}
}

// TestLoadErrorsWriteNothing: every problem of the file is reported, each
// naming TABLE|key and field, and CONFIG_DB is left exactly as it was.
func TestLoadErrorsWriteNothing(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "vlan", "add", "10")
	before := h.dump()
	bad := `{
  "VLAN": {"Vlan100": {"vlanid": "100"}, "Vlan200": {"vlanid": "300"}},
  "PORT": {"Ethernet0": {"mtu": "99999", "admin_status": "up"}, "Ethernet1": {"bogus": "1"}},
  "DEVICE_METADATA": {"localhost": {"hostname": "x"}},
  "STATIC_ROUTE": {"10.0.0.1/8": {"nexthop": "10.0.0.2"}},
  "FDB": {"Vlan100|00:11:22:33:44:55": {"port": "Ethernet0"}, "Vlan100|00:11:22:33:44:55 ": {"port": ["a", 1]}},
  "IMPAIRMENT": {"Ethernet1": {"loss": "200"}}
}`
	for _, replace := range []bool{false, true} {
		args := []string{"config", "load", writeFile(t, "bad.json", bad)}
		if replace {
			args = append(args, "--replace")
		}
		errs := h.fails(ExitRuntime, args...)
		for _, want := range []string{
			"nothing written",
			`VLAN|Vlan200: field "vlanid"`,
			`PORT|Ethernet0: field "mtu"`,
			`PORT|Ethernet1: field "bogus"`,
			"DEVICE_METADATA: unknown table",
			"STATIC_ROUTE|10.0.0.1/8: key",
			`IMPAIRMENT|Ethernet1: field "loss"`,
			`FDB|Vlan100|00:11:22:33:44:55 : field "port"`,
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("load of a bad file: stderr does not contain %q:\n%s", want, errs)
			}
		}
		if after := h.dump(); !maps.Equal(before, after) {
			t.Fatalf("load of a bad file changed CONFIG_DB:\nbefore %v\nafter  %v", before, after)
		}
	}

	// Syntax errors name the line; --skip-unknown only warns about tables
	// it does not know; --dry-run validates without writing.
	errs := h.fails(ExitRuntime, "config", "load", writeFile(t, "syntax.json", "{\n  \"VLAN\": {,}\n}"))
	if !strings.Contains(errs, "line 2") {
		t.Errorf("syntax error: stderr %q does not name line 2", errs)
	}
	h.fails(ExitRuntime, "config", "load", writeFile(t, "list.json", `["VLAN"]`))
	h.fails(ExitRuntime, "config", "load", writeFile(t, "null.json", `{"VLAN": {"Vlan5": null}}`))
	h.fails(ExitRuntime, "config", "load", "/nonexistent/config.json")
	dry := writeFile(t, "dry.json", `{"VLAN": {"Vlan5": {"vlanid": "5"}}, "DEVICE_METADATA": {"localhost": {}}}`)
	h.fails(ExitRuntime, "config", "load", "--dry-run", dry)
	out, stderr, code := h.run("config", "load", "--dry-run", "--skip-unknown", dry)
	if code != 0 || !strings.Contains(out, "1 entries valid") || !strings.Contains(stderr, "warning") {
		t.Errorf("load --dry-run --skip-unknown: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if after := h.dump(); !maps.Equal(before, after) {
		t.Fatalf("a failed or dry-run load changed CONFIG_DB:\nbefore %v\nafter  %v", before, after)
	}
	h.ok("config", "load", "--skip-unknown", dry)
	h.wantHash("VLAN|Vlan5", map[string]string{"vlanid": "5"})
}

// TestLoadDuplicateCanonicalKeys: two spellings of one entry are an error.
func TestLoadDuplicateCanonicalKeys(t *testing.T) {
	h := newHarness(t)
	f := writeFile(t, "dup.json", `{"STATIC_ROUTE": {"10.9.0.0/16": {"nexthop": "10.0.0.2"}, "default|10.9.0.0/16": {"nexthop": "10.0.0.3"}}}`)
	out, errs, code := h.run("config", "load", f)
	if code == 0 {
		// The schema keeps both spellings distinct: then both must be written.
		if len(h.hash("STATIC_ROUTE|10.9.0.0/16"))+len(h.hash("STATIC_ROUTE|default|10.9.0.0/16")) == 0 {
			t.Errorf("load exit 0 but nothing written: %s", out)
		}
		return
	}
	if !strings.Contains(errs, "same entry") {
		t.Errorf("duplicate canonical keys: stderr %q does not say they are the same entry", errs)
	}
}
