package syncde2e

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// env is one switch (namespace sw, redis-server) with a bridge "Bridge"
// and two ports, Ethernet0 and Ethernet4, cabled to host namespaces h1
// (10.0.0.1) and h2 (10.0.0.2); the bridge itself holds 10.0.0.254/24.
// IPv6 is off on the hosts so no background traffic relearns MACs behind
// the tests' backs.
type env struct {
	*e2eutil.Switch
	h1, h2 *testns.NS
	syncd  *e2eutil.Proc
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{Switch: e2eutil.NewSwitch(t)}
	e.NS.IP("link", "add", "Bridge", "type", "bridge")
	e.h1 = e.Host("Ethernet0", "eth0")
	e.h2 = e.Host("Ethernet4", "eth0")
	e.NS.IP("link", "set", "Ethernet0", "master", "Bridge")
	e.NS.IP("link", "set", "Ethernet4", "master", "Bridge")
	e.NS.IP("link", "set", "Bridge", "up")
	e.NS.IP("addr", "add", "10.0.0.254/24", "dev", "Bridge")
	e.h1.IP("addr", "add", "10.0.0.1/24", "dev", "eth0")
	e.h2.IP("addr", "add", "10.0.0.2/24", "dev", "eth0")
	return e
}

// configurePorts writes CONFIG_DB PORT entries for the ports.
func (e *env) configurePorts(names ...string) {
	e.T.Helper()
	for _, n := range names {
		e.HSet("PORT|"+n, "admin_status", "up")
	}
}

// start runs bin/syncd on the switch (counters every 200 ms).
func (e *env) start(extra ...string) {
	e.T.Helper()
	e.syncd = e.Start("syncd", append([]string{"--counters-interval", "200ms"}, extra...)...)
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
	e.NS.JSON(&entries, "bridge", "fdb", "show", "br", "Bridge")
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
	slices.Sort(out)
	return slices.Compact(out)
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
		e.NS.JSON(&rs, fam, "route", "show", "table", "main")
		for _, r := range rs {
			out = append(out, "ROUTE_TABLE|"+canonPrefix(r.Dst, fam == "-6"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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
	e.NS.JSON(&ns, "neigh", "show")
	var out []string
	for _, n := range ns {
		st := strings.ToLower(strings.Join(n.State, ","))
		if n.LLAddr == "" || strings.Contains(st, "incomplete") || strings.Contains(st, "failed") || strings.Contains(st, "noarp") {
			continue
		}
		out = append(out, "NEIGH_TABLE|"+n.Dev+"|"+n.Dst)
	}
	slices.Sort(out)
	return out
}

// sameKeys waits until the keys of pattern equal what judge says.
func (e *env) sameKeys(pattern string, judge func() []string) {
	e.T.Helper()
	e.Eventually("mirror of "+pattern, func() (bool, string) {
		want, got := judge(), e2eutil.Keys(e.State, pattern)
		return slices.Equal(want, got), diff(want, got)
	})
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
