package swctle2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// TestBinaryExitCodes checks the exit codes of the built binary: 0 for
// help and success, 2 for a wrong command line, 1 for a failure.
func TestBinaryExitCodes(t *testing.T) {
	srv := testredis.Start(t)
	for _, c := range []struct {
		args []string
		code int
		in   string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, 0, "Usage: swctl"},
		{[]string{"config", "load", "--help"}, 0, "Examples:"},
		{[]string{"show"}, 2, "missing command"},
		{[]string{"config", "vlan", "add"}, 2, "missing argument"},
		{[]string{"show", "vlan", "--bogus"}, 2, "bogus"},
		{[]string{"config", "vlan", "add", "100"}, 0, "set VLAN|Vlan100"},
		{[]string{"config", "port", "Ethernet0", "--mtu", "1"}, 1, `PORT|Ethernet0: field "mtu"`},
		{[]string{"--redis", "unix:///nonexistent/redis.sock", "show", "vlan"}, 1, "cannot reach Redis"},
		{[]string{"show", "vlan"}, 0, "Vlan100"},
	} {
		out, errs, code := swctl(t, srv, c.args...)
		where := out
		if code != 0 {
			where = errs
		}
		if code != c.code || !strings.Contains(where, c.in) {
			t.Errorf("swctl %s: exit %d (want %d), want %q in\nstdout:\n%s\nstderr:\n%s",
				strings.Join(c.args, " "), code, c.code, c.in, out, errs)
		}
	}
}

// TestBinaryLoadSave runs the README's backup/restore story with the
// binary: a bad file writes nothing; save → load --replace → save is
// byte-identical; wait reports results written by a "daemon".
func TestBinaryLoadSave(t *testing.T) {
	srv := testredis.Start(t)
	ctx := context.Background()
	cfg := srv.Client(schema.ConfigDB)
	root := e2eutil.RepoRoot(t)
	sample := filepath.Join(root, "demo", "routed.json")
	if _, err := os.Stat(sample); err != nil {
		t.Skipf("demo/routed.json not present: %v", err)
	}
	mustSwctl(t, srv, "config", "load", sample)
	dir := t.TempDir()
	first := filepath.Join(dir, "a.json")
	mustSwctl(t, srv, "config", "save", first)

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"VLAN": {"Vlan7": {"vlanid": "8"}}, "PORT": {"Ethernet0": {"mtu": "x"}}}`), 0o644)
	before, _ := cfg.Keys(ctx, "*").Result()
	_, errs, code := swctl(t, srv, "config", "load", "--replace", bad)
	after, _ := cfg.Keys(ctx, "*").Result()
	if code != 1 || !strings.Contains(errs, "VLAN|Vlan7") || !strings.Contains(errs, "PORT|Ethernet0") || len(before) != len(after) {
		t.Errorf("load of a bad file: exit %d, %d keys before, %d after, stderr:\n%s", code, len(before), len(after), errs)
	}

	mustSwctl(t, srv, "config", "vlan", "add", "999")
	mustSwctl(t, srv, "config", "load", "--replace", first)
	second := filepath.Join(dir, "b.json")
	mustSwctl(t, srv, "config", "save", second)
	a, _ := os.ReadFile(first)
	b, _ := os.ReadFile(second)
	if string(a) != string(b) {
		t.Errorf("save → load --replace → save differs:\n%s\n---\n%s", a, b)
	}
	if v := cfg.Get(ctx, schema.KeyConfigDBInitialized).Val(); v != "1" {
		t.Errorf("%s = %q after load, want 1", schema.KeyConfigDBInitialized, v)
	}

	// wait: no results → timeout exit 1; all ok → exit 0.
	if _, errs, code := swctl(t, srv, "wait", "--timeout", "200ms"); code != 1 || !strings.Contains(errs, "timed out") {
		t.Errorf("wait without daemons: exit %d, stderr %q", code, errs)
	}
	st := srv.Client(schema.StateDB)
	for _, table := range schema.ConfigTables {
		keys, _ := cfg.Keys(ctx, table+"|*").Result()
		for _, k := range keys {
			st.HSet(ctx, schema.ResultKey(table, strings.TrimPrefix(k, table+"|")), "state", "ok")
		}
	}
	mustSwctl(t, srv, "wait", "--timeout", "10s")
}

// TestDemoConfigsAreCanonical: the sample configs load, and saving them
// back gives the files byte for byte (they are written in save's form, so
// they double as examples of it).
func TestDemoConfigsAreCanonical(t *testing.T) {
	srv := testredis.Start(t)
	for _, name := range []string{"routed.json", "vlan.json"} {
		file := filepath.Join(e2eutil.RepoRoot(t), "demo", name)
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		mustSwctl(t, srv, "config", "load", "--replace", file)
		if got := mustSwctl(t, srv, "config", "save"); got != string(want) {
			t.Errorf("demo/%s is not in canonical saved form; swctl config save gives:\n%s", name, got)
		}
	}
}
