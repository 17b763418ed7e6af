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

	// Syntax errors name the line; --dry-run validates without writing;
	// --strict refuses fields nobody defines.
	errs := h.fails(ExitRuntime, "config", "load", writeFile(t, "syntax.json", "{\n  \"VLAN\": {,}\n}"))
	if !strings.Contains(errs, "line 2") {
		t.Errorf("syntax error: stderr %q does not name line 2", errs)
	}
	h.fails(ExitRuntime, "config", "load", writeFile(t, "list.json", `["VLAN"]`))
	h.fails(ExitRuntime, "config", "load", writeFile(t, "null.json", `{"VLAN": {"Vlan5": null}}`))
	h.fails(ExitRuntime, "config", "load", writeFile(t, "nulltable.json", `{"DEVICE_METADATA": null}`))
	h.fails(ExitRuntime, "config", "load", writeFile(t, "bartable.json", `{"A|B": {"x": {}}}`))
	h.fails(ExitRuntime, "config", "load", "/nonexistent/config.json")
	typo := writeFile(t, "typo.json", `{"PORT": {"Ethernet1": {"mtu": "1500", "bogus": "1"}}}`)
	errs = h.fails(ExitRuntime, "config", "load", "--strict", typo)
	if !strings.Contains(errs, `PORT|Ethernet1: field "bogus": unknown field "bogus" not allowed with --strict`) {
		t.Errorf("load --strict: stderr %q", errs)
	}
	dry := writeFile(t, "dry.json", `{"VLAN": {"Vlan5": {"vlanid": "5"}}, "DEVICE_METADATA": {"localhost": {}}}`)
	out, stderr, code := h.run("config", "load", "--dry-run", dry)
	if code != 0 || !strings.Contains(out, "2 entries valid") || stderr != "" {
		t.Errorf("load --dry-run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	out, stderr, code = h.run("config", "load", "--dry-run", "--skip-unknown", dry)
	if code != 0 || !strings.Contains(out, "1 entries valid") || !strings.Contains(stderr, "DEVICE_METADATA: not one of switchyard's tables; skipped") {
		t.Errorf("load --dry-run --skip-unknown: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if after := h.dump(); !maps.Equal(before, after) {
		t.Fatalf("a failed or dry-run load changed CONFIG_DB:\nbefore %v\nafter  %v", before, after)
	}
	_, stderr, _ = h.run("config", "load", typo)
	if !strings.Contains(stderr, `warning: PORT|Ethernet1: unknown field "bogus" ignored`) {
		t.Errorf("load of an unknown field: stderr %q", stderr)
	}
	h.wantHash("PORT|Ethernet1", map[string]string{"mtu": "1500", "bogus": "1"})
	h.ok("config", "load", "--skip-unknown", dry)
	h.wantHash("VLAN|Vlan5", map[string]string{"vlanid": "5"})
	if n := h.cfg.Exists(context.Background(), "DEVICE_METADATA|localhost").Val(); n != 0 {
		t.Errorf("--skip-unknown wrote DEVICE_METADATA")
	}
}

// TestLoadSaveEveryTable: every table of the file is written as SONiC's
// ConfigDBConnector writes it (lists as name@, {} as NULL) and saved back
// identically; --replace removes keys of any table the file does not name.
func TestLoadSaveEveryTable(t *testing.T) {
	h := newHarness(t)
	file := `{
    "DEVICE_METADATA": {
        "localhost": {
            "hostname": "sw1",
            "type": "ToRRouter"
        }
    },
    "NTP_SERVER": {
        "192.0.2.1": {}
    },
    "PORT": {
        "Ethernet0": {
            "adv_speeds": "40000,100000",
            "alias": "fortyGigE0/0",
            "lanes": "29,30,31,32",
            "mtu": "9100"
        }
    },
    "STATIC_ROUTE": {
        "default|10.20.0.0/16": {
            "blackhole": "false,false",
            "distance": "0,0",
            "ifname": ",",
            "nexthop": "10.0.0.1,10.0.0.5",
            "nexthop-vrf": "default,default"
        }
    },
    "VLAN": {
        "Vlan1000": {
            "dhcp_servers": [
                "192.0.2.1",
                "192.0.2.2"
            ],
            "vlanid": "1000"
        }
    },
    "WEIRD": {
        "k": {
            "both": "plain",
            "both@": "a,b",
            "empty": [
                ""
            ]
        }
    }
}
`
	p := writeFile(t, "every.json", file)
	_, stderr, code := h.run("config", "load", p)
	if code != 0 || stderr != "" {
		t.Fatalf("load: exit %d, stderr %q", code, stderr)
	}
	h.wantHash("DEVICE_METADATA|localhost", map[string]string{"hostname": "sw1", "type": "ToRRouter"})
	h.wantHash("NTP_SERVER|192.0.2.1", map[string]string{"NULL": "NULL"})
	h.wantHash("VLAN|Vlan1000", map[string]string{"vlanid": "1000", "dhcp_servers@": "192.0.2.1,192.0.2.2"})
	h.wantHash("STATIC_ROUTE|default|10.20.0.0/16", map[string]string{"blackhole": "false,false", "distance": "0,0",
		"ifname": ",", "nexthop": "10.0.0.1,10.0.0.5", "nexthop-vrf": "default,default"})
	h.wantHash("WEIRD|k", map[string]string{"both": "plain", "both@": "a,b", "empty@": ""})
	if out := h.ok("config", "save"); out != file {
		t.Errorf("save differs from the file loaded:\n%s\n--- want\n%s", out, file)
	}

	h.ok("config", "vlan", "add", "7")
	h.cfg.HSet(context.Background(), "BGP_NEIGHBOR|10.0.0.1", "asn", "65000")
	h.ok("config", "load", "--replace", p)
	if out := h.ok("config", "save"); out != file {
		t.Errorf("load --replace did not restore the file:\n%s", out)
	}
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
