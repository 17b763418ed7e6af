// Package orchagente2e runs the built bin/orchagent against a private
// redis-server and a fresh network namespace per test (an e2eutil.Switch),
// writes intent with Redis commands, waits for STATE_DB and judges the
// kernel with iproute2 JSON and real traffic between namespaces. Only what
// this suite alone needs stays in it: the hosts and the "ip monitor"
// watcher (here), the benchmarks' bulk writers (bench*_test.go).
package orchagente2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

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

// delAll deletes the CONFIG_DB keys, one DEL each, and waits until none
// has a result any more.
func delAll(e *e2eutil.Switch, keys ...string) {
	e.T.Helper()
	for _, k := range keys {
		e.Del(k)
	}
	for _, k := range keys {
		e.WaitGone(k)
	}
}

// clearResults deletes every result from STATE_DB: a restarted orchagent
// writes them again from scratch, so their return says it has reconciled
// every key.
func clearResults(e *e2eutil.Switch) {
	ctx := context.Background()
	if keys, _ := e.State.Keys(ctx, "*_TABLE|*").Result(); len(keys) > 0 {
		e.State.Del(ctx, keys...)
	}
}

// restartChangesNothing kills orchagent (kill -9) and starts it again over
// a kernel that is already right: by the time cfgKeys are ok again and the
// marker PORT|Ethernet99 (a key that writes nothing) is pending, "ip
// monitor" must have seen no netlink change at all.
func restartChangesNothing(t testing.TB, e *e2eutil.Switch, cfgKeys ...string) {
	t.Helper()
	e.Procs["orchagent"].Kill()
	settled(t, e.NS)
	mon := startMonitor(t, e.NS)
	mon.ready(t, e.NS)
	clearResults(e)
	e.Start("orchagent", "--log-level", "debug")
	e.WaitOK(cfgKeys...)
	e.HSet("PORT|Ethernet99", "mtu", "1400")
	e.WaitState("PORT|Ethernet99", "pending", "waiting for netdev")
	if lines := mon.seen(); len(lines) != 0 {
		t.Fatalf("restart over a right kernel made netlink changes:\n%s", strings.Join(lines, "\n"))
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
	e2eutil.Eventually(t, e2eutil.Wait, "IPv6 DAD finished in "+ns.Name, func() (bool, string) {
		out, err := ns.TryIP("-6", "addr", "show", "tentative")
		return err == nil && strings.TrimSpace(out) == "", out
	})
}

// ready makes a throwaway change and waits until the monitor reports it,
// so nothing after this call can be missed; then it forgets all lines.
// It waits for the probe's two deletions (the address and its local
// route), the last of its lines: waiting for any two probe lines let the
// deletions arrive after the reset and count as changes (seen in 2 of ~10
// Scale100k restarts, with every build).
func (m *monitor) ready(t testing.TB, ns *testns.NS) {
	t.Helper()
	ns.IP("addr", "add", "127.0.0.99/32", "dev", "lo")
	ns.IP("addr", "del", "127.0.0.99/32", "dev", "lo")
	e2eutil.Eventually(t, e2eutil.Wait, "ip monitor sees a probe change", func() (bool, string) {
		n := 0
		for _, l := range m.seen() {
			if strings.HasPrefix(l, "Deleted") && strings.Contains(l, "127.0.0.99") {
				n++
			}
		}
		return n >= 2, fmt.Sprintf("%d probe deletions", n)
	})
	m.mu.Lock()
	m.lines = nil
	m.mu.Unlock()
}
