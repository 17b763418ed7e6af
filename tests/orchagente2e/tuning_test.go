package orchagente2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// tuningView is what PORT_TUNING sets on a port, read inside its
// namespace: each RX queue's rps_cpus (as CPUs) and rps_flow_cnt, and
// the device's napi_defer_hard_irqs and gro_flush_timeout.
type tuningView struct {
	rps  []string // per queue, canonical CPU list ("" = no RPS)
	flow []string
	napi string
	gro  string
}

func readTuning(t *testing.T, ns *testns.NS, port string, queues int) tuningView {
	t.Helper()
	var v tuningView
	for q := 0; q < queues; q++ {
		dir := "/sys/class/net/" + port + "/queues/rx-" + strconv.Itoa(q)
		cpus, err := schema.ParseCPUMask(e2eutil.SysFile(t, ns, dir+"/rps_cpus"))
		if err != nil {
			t.Fatal(err)
		}
		v.rps = append(v.rps, schema.FormatCPUList(cpus))
		v.flow = append(v.flow, e2eutil.SysFile(t, ns, dir+"/rps_flow_cnt"))
	}
	v.napi = e2eutil.SysFile(t, ns, "/sys/class/net/"+port+"/napi_defer_hard_irqs")
	v.gro = e2eutil.SysFile(t, ns, "/sys/class/net/"+port+"/gro_flush_timeout")
	return v
}

func (v tuningView) String() string {
	return fmt.Sprintf("rps_cpus %q rps_flow_cnt %q napi_defer_hard_irqs %s gro_flush_timeout %s", v.rps, v.flow, v.napi, v.gro)
}

func same(a, b tuningView) bool { return a.String() == b.String() }

// multiQueueVeth makes port (4 RX queues) in ns, its peer in peer.
func multiQueueVeth(t *testing.T, ns *testns.NS, port string, peer *testns.NS, peerDev string) {
	t.Helper()
	ns.IP("link", "add", "name", port, "numrxqueues", "4", "numtxqueues", "4", "type", "veth",
		"peer", "name", peerDev, "numrxqueues", "4", "numtxqueues", "4")
	ns.IP("link", "set", peerDev, "netns", peer.Name)
	ns.IP("link", "set", port, "up")
}

const sockFlow = "/proc/sys/net/core/rps_sock_flow_entries"

func hostSockFlow(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(sockFlow)
	if err != nil {
		t.Skipf("no %s: %v", sockFlow, err)
	}
	return strings.TrimSpace(string(b))
}

// TestPortTuning applies every field to a 4-queue veth in orchagent's
// --netns namespace, reads each back from /sys and /proc inside that
// namespace (and checks a same-named port in another namespace is
// untouched), then restores on field removal, across a kill -9 and
// restart, on DEL, and re-applies to a port that is deleted and made
// again.
func TestPortTuning(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	other := testns.New(t) // has its own Ethernet0: must not change
	multiQueueVeth(t, e.NS, "Ethernet0", peer, "eth1")
	multiQueueVeth(t, other, "Ethernet0", peer, "eth2")
	hostOrig := hostSockFlow(t)
	t.Cleanup(func() { os.WriteFile(sockFlow, []byte(hostOrig), 0) })
	storeFile := "/run/switchyard/orchagent/port_tuning-" + e.NS.Name + ".json"
	t.Cleanup(func() { os.Remove(storeFile) })

	orig := readTuning(t, e.NS, "Ethernet0", 4)
	otherOrig := readTuning(t, other, "Ethernet0", 4)
	t.Logf("originals: %s; host rps_sock_flow_entries %s", orig, hostOrig)
	cpus := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	if runtime.NumCPU() == 1 {
		cpus = "0"
	}
	sockWant := "65536"
	if hostOrig == sockWant {
		sockWant = "32768"
	}

	e.Start("orchagent", "--log-level", "debug")
	e.Start("syncd")
	e.SetInitialized()
	e.HSet("PORT_TUNING|Ethernet0", "rps_cpus", cpus, "rfs_flow_cnt", "2048", "rps_sock_flow_entries", sockWant,
		"irq_cpus", "0", "napi_defer_hard_irqs", "2", "gro_flush_timeout", "200000")
	res := e.WaitApplied("PORT_TUNING|Ethernet0")
	if !strings.Contains(res["warning"], "irq_cpus not applied: Ethernet0 is a virtual device without IRQs") {
		t.Fatalf("result warning = %q, want the veth has no IRQs", res["warning"])
	}
	want := tuningView{rps: slices.Repeat([]string{cpus}, 4), flow: slices.Repeat([]string{"2048"}, 4), napi: "2", gro: "200000"}
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("applied: have %s\nwant %s", got, want)
	}
	if got := hostSockFlow(t); got != sockWant {
		t.Fatalf("rps_sock_flow_entries = %s, want %s", got, sockWant)
	}
	if got := readTuning(t, other, "Ethernet0", 4); !same(got, otherOrig) {
		t.Fatalf("Ethernet0 of another namespace changed: %s", got)
	}
	// syncd mirrors what the kernel holds beside orchagent's result.
	mirror := e.WaitHash(e.State, "PORT_TUNING_TABLE|Ethernet0", map[string]string{
		"state": "ok", "rx_queues": "4", "rps_cpus": cpus, "rfs_flow_cnt": "2048", "rps_sock_flow_entries": sockWant,
		"napi_defer_hard_irqs": "2", "gro_flush_timeout": "200000"})
	if _, ok := mirror["irq_cpus"]; ok {
		t.Fatalf("mirror shows irq_cpus for a veth: %v", mirror)
	}
	if _, err := os.Stat("/sys/class/net/Ethernet0"); err == nil {
		t.Log("note: the host namespace has an Ethernet0 too")
	}

	// A field removed: its original comes back, the others stay.
	e.Config.HDel(context.Background(), "PORT_TUNING|Ethernet0", "gro_flush_timeout", "rfs_flow_cnt")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	want.gro, want.flow = orig.gro, orig.flow
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("after removing two fields: have %s\nwant %s", got, want)
	}

	// A change, then kill -9: the originals were saved to a file before
	// the first write, so the restarted orchagent still restores them.
	e.HSet("PORT_TUNING|Ethernet0", "rps_cpus", "0", "rfs_flow_cnt", "1024")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	want.rps, want.flow = slices.Repeat([]string{"0"}, 4), slices.Repeat([]string{"1024"}, 4)
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("after a change: have %s\nwant %s", got, want)
	}
	e.Procs["orchagent"].Kill()
	if b, err := os.ReadFile(storeFile); err != nil || !strings.Contains(string(b), "rx-3/rps_cpus") {
		t.Fatalf("saved originals %s: %v\n%s", storeFile, err, b)
	}
	clearResults(e)
	e.Start("orchagent", "--log-level", "debug")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("after restart: have %s\nwant %s", got, want)
	}
	// The new process knows the originals only from the file.
	e.Config.HDel(context.Background(), "PORT_TUNING|Ethernet0", "rps_cpus")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	want.rps = orig.rps
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("rps_cpus removed after restart: have %s\nwant %s", got, want)
	}
	e.HSet("PORT_TUNING|Ethernet0", "rps_cpus", "0")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	want.rps = slices.Repeat([]string{"0"}, 4)

	// The port vanishes and comes back: pending, then tuned again.
	e.NS.IP("link", "del", "Ethernet0")
	e.WaitState("PORT_TUNING|Ethernet0", "pending", "waiting for netdev Ethernet0")
	multiQueueVeth(t, e.NS, "Ethernet0", peer, "eth1")
	e.WaitApplied("PORT_TUNING|Ethernet0")
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, want) {
		t.Fatalf("after the port came back: have %s\nwant %s", got, want)
	}

	// DEL: every original back, the host-wide value too; nothing saved.
	e.Del("PORT_TUNING|Ethernet0")
	e.WaitGone("PORT_TUNING|Ethernet0")
	if got := readTuning(t, e.NS, "Ethernet0", 4); !same(got, orig) {
		t.Fatalf("after DEL: have %s\nwant the originals %s", got, orig)
	}
	if got := hostSockFlow(t); got != hostOrig {
		t.Fatalf("rps_sock_flow_entries after DEL = %s, want the original %s", got, hostOrig)
	}
	if _, err := os.Stat(storeFile); err == nil {
		t.Fatalf("%s still exists after every key is gone", storeFile)
	}
	// syncd drops its fields too: the key is gone.
	e.Eventually("PORT_TUNING_TABLE|Ethernet0 gone", func() (bool, string) {
		h := e2eutil.HGetAll(e.State, "PORT_TUNING_TABLE|Ethernet0")
		return len(h) == 0, fmt.Sprint(h)
	})
}

// TestPortTuningBadCPU: a CPU that does not exist is a state error naming
// it, and nothing of the entry is written (the valid fields neither).
func TestPortTuningBadCPU(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	multiQueueVeth(t, e.NS, "Ethernet4", peer, "eth1")
	hostOrig := hostSockFlow(t)
	t.Cleanup(func() { os.WriteFile(sockFlow, []byte(hostOrig), 0) })
	t.Cleanup(func() { os.Remove("/run/switchyard/orchagent/port_tuning-" + e.NS.Name + ".json") })
	orig := readTuning(t, e.NS, "Ethernet4", 4)
	bad := runtime.NumCPU() + 3
	e.Start("orchagent", "--log-level", "debug")
	e.HSet("PORT_TUNING|Ethernet4", "rfs_flow_cnt", "4096", "gro_flush_timeout", "1000", "rps_sock_flow_entries", "4096",
		"rps_cpus", fmt.Sprintf("0,%d", bad))
	res := e.WaitState("PORT_TUNING|Ethernet4", "error", fmt.Sprintf(`field "rps_cpus": CPU %d does not exist: this host's CPUs are 0`, bad))
	t.Logf("reason: %s", res["reason"])
	if got := readTuning(t, e.NS, "Ethernet4", 4); !same(got, orig) {
		t.Fatalf("a rejected entry changed the port: %s, was %s", got, orig)
	}
	if got := hostSockFlow(t); got != hostOrig {
		t.Fatalf("a rejected entry changed rps_sock_flow_entries: %s, was %s", got, hostOrig)
	}
	// A syntax error is the parser's (schema) error.
	e.HSet("PORT_TUNING|Ethernet4", "rps_cpus", "1-0")
	e.WaitState("PORT_TUNING|Ethernet4", "error", `range "1-0" ends before it starts`)
}

// TestPortTuningGlobalAndSweep: rps_sock_flow_entries is the largest
// value any key asks for and comes back when none does; a key deleted
// while orchagent is down is restored by the sweep after the restart.
func TestPortTuningGlobalAndSweep(t *testing.T) {
	e := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	multiQueueVeth(t, e.NS, "Ethernet0", peer, "eth1")
	multiQueueVeth(t, e.NS, "Ethernet4", peer, "eth2")
	hostOrig := hostSockFlow(t)
	t.Cleanup(func() { os.WriteFile(sockFlow, []byte(hostOrig), 0) })
	storeFile := "/run/switchyard/orchagent/port_tuning-" + e.NS.Name + ".json"
	t.Cleanup(func() { os.Remove(storeFile) })
	orig0 := readTuning(t, e.NS, "Ethernet0", 4)
	small, large := "4096", "8192"
	if hostOrig == small || hostOrig == large {
		small, large = "1024", "2048"
	}
	e.Start("orchagent", "--log-level", "debug")
	e.SetInitialized()
	e.HSet("PORT_TUNING|Ethernet0", "rps_sock_flow_entries", small, "rps_cpus", "0")
	e.HSet("PORT_TUNING|Ethernet4", "rps_sock_flow_entries", large)
	e.WaitApplied("PORT_TUNING|Ethernet0")
	e.WaitApplied("PORT_TUNING|Ethernet4")
	if got := hostSockFlow(t); got != large {
		t.Fatalf("rps_sock_flow_entries = %s, want the larger %s", got, large)
	}
	e.Del("PORT_TUNING|Ethernet4")
	e.WaitGone("PORT_TUNING|Ethernet4")
	if got := hostSockFlow(t); got != small {
		t.Fatalf("after the larger key went: %s, want %s", got, small)
	}

	// Deleted while orchagent is down: the sweep restores it.
	e.Procs["orchagent"].Kill()
	e.Del("PORT_TUNING|Ethernet0")
	e.Start("orchagent", "--log-level", "debug")
	e.Eventually("Ethernet0's originals and the host-wide value back", func() (bool, string) {
		got := readTuning(t, e.NS, "Ethernet0", 4)
		sf := hostSockFlow(t)
		return same(got, orig0) && sf == hostOrig, fmt.Sprintf("%s; rps_sock_flow_entries %s", got, sf)
	})
	e.Eventually("state file removed", func() (bool, string) {
		_, err := os.Stat(storeFile)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}
