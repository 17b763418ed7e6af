// Package orchagente2e runs the built bin/orchagent against a private
// redis-server and a fresh network namespace per test, writes intent with
// Redis commands, waits for STATE_DB and judges the kernel with iproute2
// JSON and real traffic between namespaces.
package orchagente2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// wait is the generous deadline of every poll: CI machines are shared.
const wait = 20 * time.Second

// env is one switch: a namespace, a redis-server and (when started) the
// orchagent daemon.
type env struct {
	t     testing.TB
	sw    *testns.NS
	srv   *testredis.Server
	cfg   *redis.Client
	state *redis.Client
	proc  *e2eutil.Proc
}

func newEnv(t testing.TB) *env {
	t.Helper()
	testns.RequireRoot(t)
	e := &env{t: t, sw: testns.New(t)}
	e.srv = testredis.Start(t)
	e.cfg, e.state = e.srv.Client(schema.ConfigDB), e.srv.Client(schema.StateDB)
	return e
}

// start runs orchagent in the switch namespace.
func (e *env) start() { e.startLevel("debug") }

// startLevel runs orchagent with --log-level level (benchmarks use warn).
func (e *env) startLevel(level string) {
	e.t.Helper()
	e.proc = e2eutil.Start(e.t, "orchagent", "--redis", e.srv.URL(), "--netns", e.sw.Name, "--log-level", level)
}

// kill stops orchagent as kill -9 does.
func (e *env) kill() { e.proc.Kill() }

func (e *env) hset(key string, kv ...string) {
	e.t.Helper()
	if len(kv) == 0 {
		kv = []string{schema.NullField, schema.NullField}
	}
	args := make([]any, len(kv))
	for i, v := range kv {
		args[i] = v
	}
	if err := e.cfg.HSet(context.Background(), key, args...).Err(); err != nil {
		e.t.Fatalf("HSET %s: %v", key, err)
	}
}

func (e *env) del(keys ...string) {
	e.t.Helper()
	if err := e.cfg.Del(context.Background(), keys...).Err(); err != nil {
		e.t.Fatalf("DEL %v: %v", keys, err)
	}
}

func (e *env) initialized() {
	e.t.Helper()
	if err := e.cfg.Set(context.Background(), schema.KeyConfigDBInitialized, "1", 0).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// stateKey maps a CONFIG_DB key "T|k" to its STATE_DB result key.
func stateKey(cfgKey string) string {
	table, key, _ := strings.Cut(cfgKey, "|")
	return schema.ResultKey(table, key)
}

// waitState waits until the result of CONFIG_DB key cfgKey has state and a
// reason containing reason.
func (e *env) waitState(cfgKey, state, reason string) {
	e.t.Helper()
	sk := stateKey(cfgKey)
	e2eutil.Eventually(e.t, wait, "STATE_DB "+sk, func() (bool, string) {
		h, err := e.state.HGetAll(context.Background(), sk).Result()
		if err != nil {
			return false, err.Error()
		}
		return h["state"] == state && strings.Contains(h["reason"], reason),
			fmt.Sprintf("have %v, want state=%s reason~%q", h, state, reason)
	})
}

func (e *env) waitOK(cfgKeys ...string) {
	e.t.Helper()
	for _, k := range cfgKeys {
		e.waitState(k, "ok", "")
	}
}

// waitGone waits until the result of cfgKey is gone from STATE_DB.
func (e *env) waitGone(cfgKey string) {
	e.t.Helper()
	sk := stateKey(cfgKey)
	e2eutil.Eventually(e.t, wait, "STATE_DB "+sk+" removed", func() (bool, string) {
		n, err := e.state.Exists(context.Background(), sk).Result()
		return err == nil && n == 0, fmt.Sprintf("exists=%d err=%v", n, err)
	})
}

// ipLink is the part of "ip -j link show" the tests judge.
type ipLink struct {
	Index   int      `json:"ifindex"`
	Name    string   `json:"ifname"`
	Flags   []string `json:"flags"`
	MTU     int      `json:"mtu"`
	Address string   `json:"address"`
	Alias   string   `json:"ifalias"`
	Master  string   `json:"master"`
}

func (l ipLink) up() bool { return slices.Contains(l.Flags, "UP") }

// link returns the link, or ok=false when it does not exist.
func link(ns *testns.NS, name string) (ipLink, bool) {
	out, err := ns.TryIP("-j", "link", "show", "dev", name)
	if err != nil {
		return ipLink{}, false
	}
	var ls []ipLink
	if json.Unmarshal([]byte(out), &ls) != nil || len(ls) != 1 {
		return ipLink{}, false
	}
	return ls[0], true
}

// ipRoute is the part of "ip -j route show" the tests judge.
type ipRoute struct {
	Type     string `json:"type"`
	Dst      string `json:"dst"`
	Gateway  string `json:"gateway"`
	Dev      string `json:"dev"`
	Protocol any    `json:"protocol"`
	Metric   int    `json:"metric"`
	Nexthops []struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
	} `json:"nexthops"`
}

func (r ipRoute) proto() string { return fmt.Sprint(r.Protocol) }

// routes returns the routes to dst ("ip -j [-6] route show DST exact").
func routes(ns *testns.NS, dst string) []ipRoute {
	fam := "-4"
	if strings.Contains(dst, ":") {
		fam = "-6"
	}
	var rs []ipRoute
	ns.JSON(&rs, fam, "route", "show", "exact", dst)
	return rs
}

// addrs returns the "addr/len" strings on dev.
func addrs(ns *testns.NS, dev string) []string {
	var ls []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	ns.JSON(&ls, "addr", "show", "dev", dev)
	var out []string
	for _, l := range ls {
		for _, a := range l.AddrInfo {
			out = append(out, fmt.Sprintf("%s/%d", a.Local, a.PrefixLen))
		}
	}
	return out
}

// ping sends one echo request from ns to dst; true when answered.
func ping(ns *testns.NS, dst string) (bool, string) {
	out, err := ns.Exec("ping", "-c1", "-W1", dst)
	return err == nil, out
}

func (e *env) waitPing(from *testns.NS, dst string) {
	e.t.Helper()
	e2eutil.Eventually(e.t, wait, "ping "+dst+" from "+from.Name, func() (bool, string) { return ping(from, dst) })
}

// host is a namespace wired to a switch port with an address and a
// default route through the switch.
func host(t *testing.T, sw *testns.NS, port string, addr4, gw4, addr6, gw6 string) *testns.NS {
	t.Helper()
	h := testns.New(t)
	sw.Veth(port, h, "eth1")
	h.IP("addr", "add", addr4, "dev", "eth1")
	h.IP("route", "add", "default", "via", gw4)
	if addr6 != "" {
		h.IP("-6", "addr", "add", addr6, "dev", "eth1", "nodad")
		h.IP("-6", "route", "add", "default", "via", gw6)
	}
	return h
}

// forwarding turns on IPv4/IPv6 forwarding in ns (the system's job on a
// switch, not orchagent's).
func forwarding(t testing.TB, ns *testns.NS) {
	t.Helper()
	for _, s := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"} {
		if out, err := ns.Exec("sysctl", "-qw", s); err != nil {
			t.Fatalf("sysctl %s in %s: %v %s", s, ns.Name, err, out)
		}
	}
}

// monitor records "ip monitor" lines of a namespace: every netlink change
// anyone makes there.
type monitor struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func startMonitor(t testing.TB, ns *testns.NS) *monitor {
	t.Helper()
	m := &monitor{done: make(chan struct{})}
	m.cmd = exec.Command("ip", "-n", ns.Name, "monitor", "link", "address", "route")
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("ip monitor: %v", err)
	}
	go func() {
		defer close(m.done)
		s := bufio.NewScanner(out)
		for s.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, s.Text())
			m.mu.Unlock()
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *monitor) stop() {
	if m.cmd.Process != nil {
		m.cmd.Process.Kill()
	}
	<-m.done
	m.cmd.Wait()
}

func (m *monitor) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...)
}

// settled waits until no IPv6 address in ns is still tentative: finishing
// duplicate address detection is a kernel-made change "ip monitor" would
// report.
func settled(t testing.TB, ns *testns.NS) {
	t.Helper()
	e2eutil.Eventually(t, wait, "IPv6 DAD finished in "+ns.Name, func() (bool, string) {
		out, err := ns.TryIP("-6", "addr", "show", "tentative")
		return err == nil && strings.TrimSpace(out) == "", out
	})
}

// ready makes a throwaway change and waits until the monitor reports it,
// so nothing after this call can be missed; then it forgets all lines.
func (m *monitor) ready(t testing.TB, ns *testns.NS) {
	t.Helper()
	ns.IP("addr", "add", "127.0.0.99/32", "dev", "lo")
	ns.IP("addr", "del", "127.0.0.99/32", "dev", "lo")
	e2eutil.Eventually(t, wait, "ip monitor sees a probe change", func() (bool, string) {
		n := 0
		for _, l := range m.seen() {
			if strings.Contains(l, "127.0.0.99") {
				n++
			}
		}
		return n >= 2, fmt.Sprintf("%d probe lines", n)
	})
	m.mu.Lock()
	m.lines = nil
	m.mu.Unlock()
}
