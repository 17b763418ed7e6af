package impairde2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

func (e *env) setInitialized(v string) {
	e.t.Helper()
	if err := e.conf.Set(context.Background(), schema.KeyConfigDBInitialized, v, 0).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// waitLog waits for a line of impaird's output that holds every part.
func (e *env) waitLog(what string, parts ...string) {
	e.t.Helper()
	e2eutil.Eventually(e.t, wait, "impaird logs "+what, func() (bool, string) {
		for _, line := range strings.Split(e.impaird.Output(), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return true, ""
			}
		}
		return false, "no such line yet"
	})
}

// blocked sends n datagrams to port and returns how many arrived.
func (e *env) through(r *receiver, port, n int) int64 {
	e.t.Helper()
	before := r.n.Load()
	send(e.t, e.sender(port), n)
	return settle(r) - before
}

// TestImpairdRedisRestartEmpty: once CONFIG_DB_INITIALIZED has been "1",
// Redis restarting empty removes nothing (XDP program, pins and the loss
// stay); reloading part of the config and CONFIG_DB_INITIALIZED 1 gives
// ok results with the same program (nothing re-attached) and removes the
// rule that was not reloaded.
func TestImpairdRedisRestartEmpty(t *testing.T) {
	e := newEnv(t)
	if out, err := e.h1.Exec("ping", "-c", "1", "-W", "5", "10.0.0.254"); err != nil { // ARP
		t.Fatalf("ping: %v: %s", err, out)
	}
	e.start()
	e.setInitialized("1")
	load := func(extra bool) {
		e.hset("IMPAIRMENT|Ethernet0", "NULL", "NULL")
		e.hset("IMPAIRMENT_FLOW|Ethernet0|blocked", "proto", "udp", "dport", "9001", "loss", "100")
		if extra {
			e.hset("IMPAIRMENT_FLOW|Ethernet0|extra", "proto", "udp", "dport", "9002", "loss", "100")
		}
	}
	load(true)
	st := e.waitState("IMPAIRMENT_TABLE|Ethernet0", map[string]string{"state": "ok"})
	e.waitState("IMPAIRMENT_FLOW_TABLE|Ethernet0|blocked", map[string]string{"state": "ok"})
	e.waitState("IMPAIRMENT_FLOW_TABLE|Ethernet0|extra", map[string]string{"state": "ok"})
	id, _ := xdpProg(t, e.sw, "Ethernet0")
	if id == 0 || strconv.Itoa(id) != st["prog_id"] {
		t.Fatalf("STATE_DB prog_id %s, iproute2 says %d", st["prog_id"], id)
	}
	r9001, r9002 := e.listen(9001), e.listen(9002)

	e.srv.Restart()
	for _, key := range []string{"Ethernet0|blocked", "Ethernet0|extra"} {
		e.waitLog("holding "+key, "what it configured stays until it is", key)
	}
	e.waitLog("holding Ethernet0", "what it configured stays until it is", "key=Ethernet0 ")
	if got, _ := xdpProg(t, e.sw, "Ethernet0"); got != id {
		t.Fatalf("after Redis restarted empty the XDP program is %d, want %d", got, id)
	}
	if _, err := os.Stat(filepath.Join(e.bpffs, "Ethernet0", "link")); err != nil {
		t.Fatalf("pinned link gone after Redis restarted empty: %v", err)
	}
	if n := e.through(r9001, 9001, 200); n != 0 {
		t.Errorf("Redis empty: %d of 200 datagrams through the held 100%% rule", n)
	}
	if n := e.through(r9002, 9002, 200); n != 0 {
		t.Errorf("Redis empty: %d of 200 datagrams through the held 100%% rule extra", n)
	}

	// Reload without extra, then declare the config complete.
	load(false)
	e.setInitialized("1")
	st = e.waitState("IMPAIRMENT_TABLE|Ethernet0", map[string]string{"state": "ok"})
	e.waitState("IMPAIRMENT_FLOW_TABLE|Ethernet0|blocked", map[string]string{"state": "ok"})
	if st["prog_id"] != strconv.Itoa(id) {
		t.Errorf("after reload prog_id %s, want %d (not re-attached)", st["prog_id"], id)
	}
	e2eutil.Eventually(t, wait, "rule extra removed (port 9002 passes)", func() (bool, string) {
		n := e.through(r9002, 9002, 20)
		return n > 0, fmt.Sprintf("%d of 20 through", n)
	})
	if got, _ := xdpProg(t, e.sw, "Ethernet0"); got != id {
		t.Errorf("after reload the XDP program is %d, want %d (not re-attached)", got, id)
	}
	if n := e.through(r9001, 9001, 200); n != 0 {
		t.Errorf("after reload: %d of 200 datagrams through the 100%% rule", n)
	}
	e2eutil.Eventually(t, wait, "counters of extra removed", func() (bool, string) {
		c := hgetall(e.cnt, "IMPAIRMENT_COUNTERS:Ethernet0|extra")
		return len(c) == 0, fmt.Sprint(c)
	})
}

// TestImpairdSweepWaitsForInitialized: impaird restarted with the pins of
// a port whose config was deleted meanwhile keeps them (program attached)
// while CONFIG_DB_INITIALIZED is unset, and removes them once it is "1".
func TestImpairdSweepWaitsForInitialized(t *testing.T) {
	e := newEnv(t)
	e.sw.Veth("Ethernet4", nil, "peer4")
	e.start()
	e.hset("IMPAIRMENT|Ethernet0", "loss", "100")
	e.hset("IMPAIRMENT|Ethernet4", "loss", "1")
	e.waitState("IMPAIRMENT_TABLE|Ethernet0", map[string]string{"state": "ok"})
	e.waitState("IMPAIRMENT_TABLE|Ethernet4", map[string]string{"state": "ok"})
	id0, _ := xdpProg(t, e.sw, "Ethernet0")
	id4, _ := xdpProg(t, e.sw, "Ethernet4")
	if id0 == 0 || id4 == 0 {
		t.Fatalf("programs %d %d", id0, id4)
	}

	e.impaird.Kill()
	e.del("IMPAIRMENT|Ethernet0")
	e.start()
	e.waitLog("the deferred sweep", "CONFIG_DB_INITIALIZED is not 1: what no key configures is kept until it is")
	e.waitState("IMPAIRMENT_TABLE|Ethernet4", map[string]string{"state": "ok"})
	if got, _ := xdpProg(t, e.sw, "Ethernet0"); got != id0 {
		t.Fatalf("CONFIG_DB_INITIALIZED unset: Ethernet0's program is %d, want %d kept", got, id0)
	}
	if _, err := os.Stat(filepath.Join(e.bpffs, "Ethernet0", "link")); err != nil {
		t.Fatalf("CONFIG_DB_INITIALIZED unset: pins of Ethernet0 removed: %v", err)
	}

	e.setInitialized("1")
	e2eutil.Eventually(t, wait, "Ethernet0 detached, unpinned, result removed", func() (bool, string) {
		id, _ := xdpProg(t, e.sw, "Ethernet0")
		_, err := os.Stat(filepath.Join(e.bpffs, "Ethernet0"))
		st := hgetall(e.state, "IMPAIRMENT_TABLE|Ethernet0")
		return id == 0 && os.IsNotExist(err) && len(st) == 0, fmt.Sprintf("prog %d, pin dir: %v, state %v", id, err, st)
	})
	if got, _ := xdpProg(t, e.sw, "Ethernet4"); got == 0 {
		t.Error("Ethernet4 lost its program in the sweep")
	}
	if _, err := os.Stat(filepath.Join(e.bpffs, "Ethernet4", "link")); err != nil {
		t.Errorf("Ethernet4's pins: %v", err)
	}
}
