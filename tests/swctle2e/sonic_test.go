package swctle2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/kernelcap"
	"github.com/switchyard-net/switchyard/tests/sonic"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// configHashes returns every CONFIG_DB hash whose key has a "|" (every
// table entry), by full key.
func configHashes(t *testing.T, srv *testredis.Server) map[string]map[string]string {
	t.Helper()
	ctx := context.Background()
	c := srv.Client(schema.ConfigDB)
	keys, err := c.Keys(ctx, "*|*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, k := range keys {
		out[k] = c.HGetAll(ctx, k).Val()
	}
	return out
}

func sameHashes(a, b map[string]map[string]string) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v in\n%s", err, data)
	}
	return v
}

// TestSONiCConfigDBLoadSave loads a whole sonic-cfggen-style config_db.json
// (tests/sonic/config_db.json: PORT with lanes/alias/speed/index/fec,
// STATIC_ROUTE as `config route add` writes it, VLAN dhcp_servers as a
// list, DEVICE_METADATA, BGP_NEIGHBOR, ACL_TABLE with a list, empty
// entries) in one `swctl config load` with no flag: CONFIG_DB then holds
// exactly what SONiC's ConfigDBConnector would write (computed
// independently by tests/sonic); `config save` gives back the input
// tables exactly; load → save → load → save is lossless and byte-stable.
func TestSONiCConfigDBLoadSave(t *testing.T) {
	srv := testredis.Start(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "config_db.json")
	if err := os.WriteFile(in, sonic.ConfigDBJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := swctl(t, srv, "config", "load", "--strict", "--dry-run", in); code != 0 {
		t.Fatalf("load --strict --dry-run: exit %d: %s", code, errs)
	}
	out, errs, code := swctl(t, srv, "config", "load", in)
	if code != 0 || errs != "" {
		t.Fatalf("load of a sonic-cfggen config_db.json: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	want, err := sonic.RedisHashes(sonic.ConfigDBJSON)
	if err != nil {
		t.Fatal(err)
	}
	got := configHashes(t, srv)
	if !sameHashes(got, want) {
		for k := range want {
			if !maps.Equal(got[k], want[k]) {
				t.Errorf("%s: CONFIG_DB holds %q, ConfigDBConnector writes %q", k, got[k], want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: in CONFIG_DB, not in the file", k)
			}
		}
	}

	saved := mustSwctl(t, srv, "config", "save")
	if a, b := decodeJSON(t, sonic.ConfigDBJSON), decodeJSON(t, []byte(saved)); !reflect.DeepEqual(a, b) {
		t.Errorf("config save does not reproduce the input tables:\n%s", saved)
	}
	again := filepath.Join(dir, "saved.json")
	os.WriteFile(again, []byte(saved), 0o644)
	mustSwctl(t, srv, "config", "load", "--replace", again)
	if after := configHashes(t, srv); !sameHashes(after, want) {
		t.Errorf("load of the saved file changed CONFIG_DB")
	}
	if second := mustSwctl(t, srv, "config", "save"); second != saved {
		t.Errorf("save → load → save is not byte-stable:\n%s\n---\n%s", saved, second)
	}
}

// TestSONiCCorpusSaveLoad writes every corpus entry into CONFIG_DB as
// SONiC's CLI does (HSET of the hash), then checks `config save` and
// `config load --replace` of the result leave CONFIG_DB unchanged, that
// --strict refuses exactly the corpus entries with unknown fields, and that
// the plain load names them in a warning.
func TestSONiCCorpusSaveLoad(t *testing.T) {
	srv := testredis.Start(t)
	ctx := context.Background()
	c := srv.Client(schema.ConfigDB)
	corpus, err := sonic.Load()
	if err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, k := range corpus.Cases {
		args := []any{}
		for f, v := range k.Fields {
			args = append(args, f, v)
		}
		if len(args) == 0 {
			args = append(args, schema.NullField, schema.NullField)
		}
		c.HSet(ctx, schema.ConfigKey(k.Table, k.Key), args...)
		if len(k.Unknown) > 0 {
			unknown = append(unknown, schema.ConfigKey(k.Table, k.Key))
		}
	}
	before := configHashes(t, srv)
	file := filepath.Join(t.TempDir(), "corpus.json")
	mustSwctl(t, srv, "config", "save", file)
	_, errs, code := swctl(t, srv, "config", "load", "--replace", "--strict", file)
	if code != 1 {
		t.Fatalf("load --strict of the corpus: exit %d, want 1", code)
	}
	for _, k := range unknown {
		if !strings.Contains(errs, k+": field ") {
			t.Errorf("load --strict: %s not named in\n%s", k, errs)
		}
	}
	if n := strings.Count(errs, "not allowed with --strict"); n != len(unknown) {
		t.Errorf("load --strict: %d problems, want %d:\n%s", n, len(unknown), errs)
	}
	_, errs, code = swctl(t, srv, "config", "load", "--replace", file)
	if code != 0 || strings.Count(errs, "warning:") != len(unknown) {
		t.Errorf("load: exit %d, want 0 and %d warnings:\n%s", code, len(unknown), errs)
	}
	if after := configHashes(t, srv); !sameHashes(before, after) {
		t.Errorf("save → load --replace changed CONFIG_DB")
	}
}

// TestSONiCConfigDBWithDaemons loads the routed part of the sonic-cfggen
// file (the host kernel has no 802.1Q: VLAN tables are the VM suite's) into
// a running orchagent: every result ok, and iproute2 shows the ports' mtu
// and admin state, the addresses, the ECMP route of `config route add` and
// its blackhole route.
func TestSONiCConfigDBWithDaemons(t *testing.T) {
	testns.RequireRoot(t)
	daemon(t, "orchagent")
	var file map[string]json.RawMessage
	if err := json.Unmarshal(sonic.ConfigDBJSON, &file); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{schema.TableVlan, schema.TableVlanMember, schema.TableVlanInterface} {
		delete(file, table)
	}
	// ACL tables are impaird's (tests/acle2e runs them on real traffic).
	delete(file, schema.TableACLTable)
	delete(file, schema.TableACLRule)
	if ok, _ := kernelcap.Has(kernelcap.Dummy); !ok {
		// Loopbacks are dummy devices (tests/orchagente2e TestLoopback*
		// checks the error this kernel gives and runs them in the VM).
		delete(file, schema.TableLoopback)
	}
	var ports map[string]map[string]string
	json.Unmarshal(file[schema.TablePort], &ports)
	s := e2eutil.NewSwitch(t)
	names := slices.Sorted(maps.Keys(ports))
	for i, p := range names {
		s.NS.Veth(p, nil, "peer"+string(rune('a'+i)))
	}
	data, _ := json.Marshal(file)
	in := filepath.Join(t.TempDir(), "routed.json")
	os.WriteFile(in, data, 0o644)
	s.Start("orchagent")
	mustSwctl(t, s.Redis, "config", "load", in)
	if out, errs, code := swctl(t, s.Redis, "wait", "--timeout", e2eutil.Wait.String()); code != 0 {
		t.Fatalf("swctl wait: exit %d\n%s%s", code, out, errs)
	}

	for _, p := range names {
		l, ok := e2eutil.Link(s.NS, p)
		if !ok || l.MTU != 9100 || l.Up() != (ports[p]["admin_status"] == "up") {
			t.Errorf("%s: mtu %d up %v (exists: %v), want mtu 9100, admin_status %s", p, l.MTU, l.Up(), ok, ports[p]["admin_status"])
		}
	}
	if addrs := e2eutil.Addrs(s.NS, "Ethernet8"); !slices.Contains(addrs, "10.0.0.4/31") {
		t.Errorf("Ethernet8 lacks 10.0.0.4/31 (INTERFACE with family and scope): %v", addrs)
	}
	if routes := e2eutil.Routes(s.NS, "10.20.0.0/16"); len(routes) != 1 || len(routes[0].Nexthops) != 2 {
		t.Errorf("route 10.20.0.0/16: %+v, want ECMP via 10.0.0.1 and 10.0.0.5", routes)
	}
	if routes := e2eutil.Routes(s.NS, "10.30.0.0/16"); len(routes) != 1 || routes[0].Type != "blackhole" {
		t.Errorf("route 10.30.0.0/16: %+v, want a blackhole", routes)
	}
}
