package swctl

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"
)

// TestVerbsWriteHashes checks that every config verb writes exactly the
// hash SONiC's config would.
func TestVerbsWriteHashes(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		args []string
		key  string
		want map[string]string
	}{
		{[]string{"config", "port", "Ethernet0", "--mtu", "9100", "--admin", "up"},
			"PORT|Ethernet0", map[string]string{"mtu": "9100", "admin_status": "up"}},
		// Merged: mtu stays, description is added.
		{[]string{"config", "port", "Ethernet0", "--description", "to h0"},
			"PORT|Ethernet0", map[string]string{"mtu": "9100", "admin_status": "up", "description": "to h0"}},
		{[]string{"config", "port", "Ethernet0", "--unset", "mtu"},
			"PORT|Ethernet0", map[string]string{"admin_status": "up", "description": "to h0"}},
		{[]string{"config", "vlan", "add", "100"}, "VLAN|Vlan100", map[string]string{"vlanid": "100"}},
		{[]string{"config", "vlan", "add", "Vlan100", "--mtu", "9000"},
			"VLAN|Vlan100", map[string]string{"vlanid": "100", "mtu": "9000"}},
		{[]string{"config", "vlan", "member", "add", "100", "Ethernet0", "--untagged"},
			"VLAN_MEMBER|Vlan100|Ethernet0", map[string]string{"tagging_mode": "untagged"}},
		{[]string{"config", "vlan", "member", "add", "100", "Ethernet1"},
			"VLAN_MEMBER|Vlan100|Ethernet1", map[string]string{"tagging_mode": "tagged"}},
		{[]string{"config", "vlan", "member", "add", "--priority-tagged", "100", "Ethernet2"},
			"VLAN_MEMBER|Vlan100|Ethernet2", map[string]string{"tagging_mode": "priority_tagged"}},
		{[]string{"config", "interface", "ip", "add", "Ethernet3", "10.0.0.1/24"},
			"INTERFACE|Ethernet3|10.0.0.1/24", map[string]string{"NULL": "NULL"}},
		{[]string{"config", "interface", "ip", "add", "Vlan100", "10.1.0.1/24"},
			"VLAN_INTERFACE|Vlan100|10.1.0.1/24", map[string]string{"NULL": "NULL"}},
		{[]string{"config", "route", "add", "10.2.0.0/16", "--nexthop", "10.0.0.2"},
			"STATIC_ROUTE|10.2.0.0/16", map[string]string{"nexthop": "10.0.0.2"}},
		{[]string{"config", "route", "add", "192.0.2.0/24", "--blackhole"},
			"STATIC_ROUTE|192.0.2.0/24", map[string]string{"blackhole": "true"}},
		{[]string{"config", "mac", "add", "100", "00:AA:bb:cc:dd:ee", "Ethernet0"},
			"FDB|Vlan100|00:aa:bb:cc:dd:ee", map[string]string{"port": "Ethernet0"}},
		{[]string{"config", "impairment", "set", "Ethernet1", "--loss", "20"},
			"IMPAIRMENT|Ethernet1", map[string]string{"loss": "20"}},
		{[]string{"config", "impairment", "set", "Ethernet1", "--rate", "100mbit", "--field", "seed=42"},
			"IMPAIRMENT|Ethernet1", map[string]string{"loss": "20", "rate": "100mbit", "seed": "42"}},
		{[]string{"config", "impairment", "set", "Ethernet1", "--clear", "--loss", "5"},
			"IMPAIRMENT|Ethernet1", map[string]string{"loss": "5"}},
		{[]string{"config", "impairment", "flow", "add", "Ethernet0", "dns", "--dst", "10.0.0.0/24",
			"--proto", "udp", "--dport", "53", "--loss", "5"},
			"IMPAIRMENT_FLOW|Ethernet0|dns", map[string]string{"dst": "10.0.0.0/24", "proto": "udp", "dport": "53", "loss": "5"}},
	}
	for _, c := range cases {
		out := h.ok(c.args...)
		if !strings.Contains(out, c.key) {
			t.Errorf("swctl %s: output %q does not name %s", strings.Join(c.args, " "), out, c.key)
		}
		got := h.hash(c.key)
		// The schema renders canonical values; compare what we asked for.
		for f, v := range c.want {
			if got[f] != v && !(f == "rate" || f == "seed") {
				t.Errorf("swctl %s: %s field %s = %q, want %q (hash %v)", strings.Join(c.args, " "), c.key, f, got[f], v, got)
			}
		}
		for f := range got {
			if _, ok := c.want[f]; !ok {
				t.Errorf("swctl %s: %s has unexpected field %s (hash %v)", strings.Join(c.args, " "), c.key, f, got)
			}
		}
	}

	// Deletes.
	h.ok("config", "impairment", "flow", "del", "Ethernet0", "dns")
	h.ok("config", "impairment", "del", "Ethernet1")
	h.ok("config", "mac", "del", "Vlan100", "00:AA:BB:CC:DD:EE")
	h.ok("config", "route", "del", "10.2.0.0/16")
	h.ok("config", "route", "del", "192.0.2.0/24")
	h.ok("config", "interface", "ip", "del", "Ethernet3", "10.0.0.1/24")
	for _, k := range []string{"IMPAIRMENT_FLOW|Ethernet0|dns", "IMPAIRMENT|Ethernet1", "FDB|Vlan100|00:aa:bb:cc:dd:ee",
		"STATIC_ROUTE|10.2.0.0/16", "INTERFACE|Ethernet3|10.0.0.1/24"} {
		if got := h.hash(k); len(got) != 0 {
			t.Errorf("%s still holds %v after del", k, got)
		}
	}
	// A VLAN in use is not deleted; it names what uses it.
	errs := h.fails(ExitRuntime, "config", "vlan", "del", "100")
	if !strings.Contains(errs, "VLAN_MEMBER|Vlan100|Ethernet0") || !strings.Contains(errs, "VLAN_INTERFACE|Vlan100|10.1.0.1/24") {
		t.Errorf("vlan del of a VLAN in use: stderr %q does not list its members and addresses", errs)
	}
	for _, p := range []string{"Ethernet0", "Ethernet1", "Ethernet2"} {
		h.ok("config", "vlan", "member", "del", "100", p)
	}
	h.ok("config", "interface", "ip", "del", "Vlan100", "10.1.0.1/24")
	h.ok("config", "vlan", "del", "100")
	h.ok("config", "port", "del", "Ethernet0")
	if d := h.dump(); len(d) != 0 {
		t.Errorf("CONFIG_DB not empty after deleting everything: %v", d)
	}
	// Deleting what is not there is an error that says so.
	if errs := h.fails(ExitRuntime, "config", "vlan", "member", "del", "100", "Ethernet0"); !strings.Contains(errs, "not configured") {
		t.Errorf("del of a missing key: stderr %q does not say it is not configured", errs)
	}
}

// TestInvalidWritesNothing checks that every kind of invalid input is
// refused before Redis is touched, with the table, key and field named.
func TestInvalidWritesNothing(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "port", "Ethernet0", "--mtu", "1500")
	before := h.dump()
	cases := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"config", "port", "Ethernet0", "--mtu", "50"}, ExitRuntime, `PORT|Ethernet0: field "mtu"`},
		{[]string{"config", "port", "Ethernet0", "--admin", "sideways"}, ExitRuntime, `field "admin_status"`},
		{[]string{"config", "vlan", "add", "5000"}, ExitUsage, "1-4094"},
		{[]string{"config", "vlan", "member", "add", "100", "Ethernet0", "--untagged", "--priority-tagged"}, ExitUsage, "exclude"},
		{[]string{"config", "interface", "ip", "add", "Ethernet0", "10.0.0.300/24"}, ExitRuntime, "INTERFACE|Ethernet0|10.0.0.300/24"},
		{[]string{"config", "route", "add", "10.2.0.1/16", "--nexthop", "10.0.0.2"}, ExitRuntime, "10.2.0.0/16"},
		{[]string{"config", "mac", "add", "100", "not-a-mac", "Ethernet0"}, ExitRuntime, "FDB|Vlan100|not-a-mac"},
		{[]string{"config", "impairment", "set", "Ethernet1", "--loss", "101"}, ExitRuntime, `IMPAIRMENT|Ethernet1: field "loss"`},
		{[]string{"config", "impairment", "flow", "add", "Ethernet1", "x", "--proto", "banana"}, ExitRuntime, `field "proto"`},
		{[]string{"config", "vlan", "add"}, ExitUsage, "missing argument"},
		{[]string{"config", "vlan", "add", "100", "extra"}, ExitUsage, "unexpected argument"},
		{[]string{"config", "vlan", "frobnicate"}, ExitUsage, "unknown command"},
		{[]string{"config", "port", "Ethernet0", "--no-such-flag"}, ExitUsage, "no-such-flag"},
		{[]string{"config", "impairment", "set", "Ethernet1", "--field", "novalue"}, ExitUsage, "field=value"},
	}
	for _, c := range cases {
		errs := h.fails(c.code, c.args...)
		if !strings.Contains(errs, c.want) {
			t.Errorf("swctl %s: stderr %q does not contain %q", strings.Join(c.args, " "), errs, c.want)
		}
		if after := h.dump(); !maps.Equal(before, after) {
			t.Fatalf("swctl %s changed CONFIG_DB:\nbefore %v\nafter  %v", strings.Join(c.args, " "), before, after)
		}
	}
}

// TestUnknownFieldWarns: a field nobody defines is written (SONiC's other
// tools may read it) with a warning naming it and the likely intent, as the
// daemons do; a SONiC field switchyard does not act on is written silently.
func TestUnknownFieldWarns(t *testing.T) {
	h := newHarness(t)
	_, errs, code := h.run("config", "port", "Ethernet0", "--mtu", "1500", "--field", "admin_stauts=up")
	if code != 0 || !strings.Contains(errs, `warning: PORT|Ethernet0: unknown field "admin_stauts" ignored (did you mean "admin_status"?)`) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	h.wantHash("PORT|Ethernet0", map[string]string{"mtu": "1500", "admin_stauts": "up"})
	_, errs, code = h.run("config", "port", "Ethernet0", "--field", "lanes=0,1,2,3", "--unset", "admin_stauts")
	if code != 0 || errs != "" {
		t.Errorf("lanes: exit %d, stderr %q", code, errs)
	}
	h.wantHash("PORT|Ethernet0", map[string]string{"mtu": "1500", "lanes": "0,1,2,3"})
}

// TestHelpNeedsNoRedis checks --help of every command: exit 0, usage and
// examples on stdout, no Redis contacted (the URL points nowhere).
func TestHelpNeedsNoRedis(t *testing.T) {
	var walk func(c *Command, path []string)
	walk = func(c *Command, path []string) {
		var out, errb bytes.Buffer
		args := append(append([]string{"--redis", "unix:///nonexistent/redis.sock"}, path...), "--help")
		if code := Run(context.Background(), args, &out, &errb); code != ExitOK {
			t.Errorf("swctl %s --help: exit %d, stderr %q", strings.Join(path, " "), code, errb.String())
		}
		if !strings.HasPrefix(out.String(), "Usage: swctl") {
			t.Errorf("swctl %s --help: no usage line: %q", strings.Join(path, " "), out.String())
		}
		if len(c.Examples) == 0 {
			t.Errorf("swctl %s has no examples", strings.Join(path, " "))
		} else if !strings.Contains(out.String(), "Examples:") {
			t.Errorf("swctl %s --help shows no examples", strings.Join(path, " "))
		}
		for _, s := range c.Sub {
			walk(s, append(append([]string(nil), path...), s.Name))
		}
	}
	walk(Root(), nil)

	var out, errb bytes.Buffer
	for _, args := range [][]string{{"config"}, {"-"}, {"config", "-"}, {"--", "-"}, {"frob"}} {
		if code := Run(context.Background(), args, &out, &errb); code != ExitUsage {
			t.Errorf("swctl %q: exit %d, want %d", args, code, ExitUsage)
		}
	}
	if code := Run(context.Background(), []string{"--redis", "unix:///nonexistent/redis.sock", "show", "vlan"}, &out, &errb); code != ExitRuntime {
		t.Errorf("swctl show vlan without Redis: exit %d, want %d", code, ExitRuntime)
	}
	if !strings.Contains(errb.String(), "cannot reach Redis") {
		t.Errorf("swctl show vlan without Redis: stderr %q does not say Redis is unreachable", errb.String())
	}
}

func TestNaturalLess(t *testing.T) {
	in := []string{"Ethernet10", "Ethernet2", "Vlan100", "Ethernet1", "Vlan20", "Ethernet1|b", "Ethernet1|a"}
	sortNatural(in)
	want := "Ethernet1 Ethernet1|a Ethernet1|b Ethernet2 Ethernet10 Vlan20 Vlan100"
	if got := strings.Join(in, " "); got != want {
		t.Errorf("natural sort: %s, want %s", got, want)
	}
}
