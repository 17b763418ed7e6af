package syncde2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// wait is the generous deadline of every poll: CI machines are shared.
const wait = 60 * time.Second

// env is one switch namespace (sw) with a bridge "Bridge" and two ports,
// Ethernet0 and Ethernet4, cabled to host namespaces h1 (10.0.0.1) and h2
// (10.0.0.2); the bridge itself holds 10.0.0.254/24. IPv6 is off on the
// hosts so no background traffic relearns MACs behind the tests' backs.
type env struct {
	t                testing.TB
	sw, h1, h2       *testns.NS
	srv              *testredis.Server
	state, cnt, conf *redis.Client
	syncd            *e2eutil.Proc
	args             []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	testns.RequireRoot(t)
	e := &env{t: t, srv: testredis.Start(t)}
	e.sw, e.h1, e.h2 = testns.New(t), testns.New(t), testns.New(t)
	for _, h := range []*testns.NS{e.h1, e.h2} {
		if out, err := h.Exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
			t.Fatalf("sysctl in %s: %v: %s", h.Name, err, out)
		}
	}
	e.sw.IP("link", "add", "Bridge", "type", "bridge")
	e.sw.Veth("Ethernet0", e.h1, "eth0")
	e.sw.Veth("Ethernet4", e.h2, "eth0")
	e.sw.IP("link", "set", "Ethernet0", "master", "Bridge")
	e.sw.IP("link", "set", "Ethernet4", "master", "Bridge")
	e.sw.IP("link", "set", "Bridge", "up")
	e.sw.IP("addr", "add", "10.0.0.254/24", "dev", "Bridge")
	e.h1.IP("addr", "add", "10.0.0.1/24", "dev", "eth0")
	e.h2.IP("addr", "add", "10.0.0.2/24", "dev", "eth0")
	e.state, e.cnt, e.conf = e.srv.Client(schema.StateDB), e.srv.Client(schema.CountersDB), e.srv.Client(schema.ConfigDB)
	return e
}

// configurePorts writes CONFIG_DB PORT entries for the two ports.
func (e *env) configurePorts(names ...string) {
	for _, n := range names {
		if err := e.conf.HSet(context.Background(), "PORT|"+n, "admin_status", "up").Err(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// start runs bin/syncd on the env's namespace and Redis.
func (e *env) start(extra ...string) {
	e.t.Helper()
	e.args = append([]string{"--redis", e.srv.URL(), "--netns", e.sw.Name, "--counters-interval", "200ms"}, extra...)
	e.syncd = e2eutil.Start(e.t, "syncd", e.args...)
}

// ping sends count pings from h to ip (retrying once: the first ARP may race).
func ping(t testing.TB, h *testns.NS, ip string, count int) {
	t.Helper()
	args := []string{"-c", strconv.Itoa(count), "-i", "0.2", "-W", "2", ip}
	out, err := h.Exec("ping", args...)
	if err != nil {
		out, err = h.Exec("ping", args...)
	}
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", ip, h.Name, err, out)
	}
}

func (e *env) eventually(msg string, cond func() (bool, string)) {
	e.t.Helper()
	e2eutil.Eventually(e.t, wait, msg, cond)
}

// field waits until STATE_DB key's field is want ("" = absent).
func (e *env) field(c *redis.Client, key, field, want string) {
	e.t.Helper()
	e.eventually(key+" "+field+"="+want, func() (bool, string) {
		got, err := c.HGet(context.Background(), key, field).Result()
		if err == redis.Nil {
			got = ""
		}
		return got == want, fmt.Sprintf("%s is %q", field, got)
	})
}

// keys returns the keys matching pattern in c, sorted.
func keys(c *redis.Client, pattern string) []string {
	var out []string
	var cursor uint64
	for {
		ks, next, err := c.Scan(context.Background(), cursor, pattern, 5000).Result()
		if err != nil {
			return out
		}
		out = append(out, ks...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(out)
	return dedupe(out)
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, k := range s {
		if i == 0 || k != s[i-1] {
			out = append(out, k)
		}
	}
	return out
}

// --- iproute2 as the judge: the STATE_DB keys the kernel's state implies ---

// judgeFdb lists FDB_TABLE keys from "bridge -j fdb show br Bridge":
// entries whose master is Bridge, except permanent (local) ones; entries
// without a VLAN belong to Vlan1 (the bridge's default_pvid).
func (e *env) judgeFdb() []string {
	var entries []struct {
		MAC    string `json:"mac"`
		Master string `json:"master"`
		Vlan   int    `json:"vlan"`
		State  string `json:"state"`
	}
	e.sw.JSON(&entries, "bridge", "fdb", "show", "br", "Bridge")
	var out []string
	for _, f := range entries {
		if f.Master != "Bridge" || f.State == "permanent" {
			continue
		}
		vid := f.Vlan
		if vid == 0 {
			vid = 1
		}
		out = append(out, fmt.Sprintf("FDB_TABLE|Vlan%d:%s", vid, strings.ToLower(f.MAC)))
	}
	sort.Strings(out)
	return dedupe(out)
}

// judgeRoutes lists ROUTE_TABLE keys from "ip -j route show table main"
// for IPv4 and IPv6.
func (e *env) judgeRoutes() []string {
	var out []string
	for _, fam := range []string{"-4", "-6"} {
		var rs []struct {
			Dst  string `json:"dst"`
			Type string `json:"type"`
		}
		e.sw.JSON(&rs, fam, "route", "show", "table", "main")
		for _, r := range rs {
			out = append(out, "ROUTE_TABLE|"+canonPrefix(r.Dst, fam == "-6"))
		}
	}
	sort.Strings(out)
	return dedupe(out)
}

// canonPrefix turns ip's "default" / "10.0.0.5" / "10.0.0.0/24" into a prefix.
func canonPrefix(dst string, v6 bool) string {
	if dst == "default" {
		if v6 {
			return "::/0"
		}
		return "0.0.0.0/0"
	}
	if !strings.Contains(dst, "/") {
		a := netip.MustParseAddr(dst)
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	return netip.MustParsePrefix(dst).Masked().String()
}

// judgeNeigh lists NEIGH_TABLE keys from "ip -j neigh show": entries with
// a MAC that are not incomplete, failed or noarp.
func (e *env) judgeNeigh() []string {
	var ns []struct {
		Dst    string   `json:"dst"`
		Dev    string   `json:"dev"`
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	e.sw.JSON(&ns, "neigh", "show")
	var out []string
	for _, n := range ns {
		st := strings.ToLower(strings.Join(n.State, ","))
		if n.LLAddr == "" || strings.Contains(st, "incomplete") || strings.Contains(st, "failed") || strings.Contains(st, "noarp") {
			continue
		}
		out = append(out, "NEIGH_TABLE|"+n.Dev+"|"+n.Dst)
	}
	sort.Strings(out)
	return out
}

// sameKeys waits until the keys of pattern equal what judge says.
func (e *env) sameKeys(pattern string, judge func() []string) {
	e.t.Helper()
	e.eventually("mirror of "+pattern, func() (bool, string) {
		want, got := judge(), keys(e.state, pattern)
		return equal(want, got), diff(want, got)
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// diff describes how got differs from want (a few keys of each side).
func diff(want, got []string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, k := range want {
		w[k] = true
	}
	for _, k := range got {
		g[k] = true
	}
	var missing, extra []string
	for _, k := range want {
		if !g[k] && len(missing) < 5 {
			missing = append(missing, k)
		}
	}
	for _, k := range got {
		if !w[k] && len(extra) < 5 {
			extra = append(extra, k)
		}
	}
	return fmt.Sprintf("kernel implies %d keys, Redis has %d; missing e.g. %v; stale e.g. %v", len(want), len(got), missing, extra)
}

// writeBatch writes lines to a temp file for ip/bridge -batch.
func writeBatch(t testing.TB, lines []string) string {
	f, err := os.CreateTemp(t.TempDir(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(strings.Join(lines, "\n") + "\n")
	return f.Name()
}
