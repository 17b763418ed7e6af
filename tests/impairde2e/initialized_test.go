package impairde2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// TestImpairdRedisRestartEmpty: once CONFIG_DB_INITIALIZED has been "1",
// Redis restarting empty removes nothing (XDP program, pins and the loss
// stay); reloading part of the config and CONFIG_DB_INITIALIZED 1 gives
// ok results with the same program (nothing re-attached) and removes the
// rule that was not reloaded.
func TestImpairdRedisRestartEmpty(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP
	e.start()
	e.SetInitialized()
	load := func(extra bool) {
		e.HSet("IMPAIRMENT|Ethernet0", "NULL", "NULL")
		e.HSet("IMPAIRMENT_FLOW|Ethernet0|blocked", "proto", "udp", "dport", "9001", "loss", "100")
		if extra {
			e.HSet("IMPAIRMENT_FLOW|Ethernet0|extra", "proto", "udp", "dport", "9002", "loss", "100")
		}
	}
	load(true)
	st := e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|blocked", "ok", "")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|extra", "ok", "")
	id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
	if id == 0 || strconv.Itoa(id) != st["prog_id"] {
		t.Fatalf("STATE_DB prog_id %s, iproute2 says %d", st["prog_id"], id)
	}
	r9001, r9002 := e.listen(9001), e.listen(9002)

	e.Redis.Restart()
	for _, key := range []string{"Ethernet0|blocked", "Ethernet0|extra"} {
		e.impaird.WaitLog("holding "+key, "what it configured stays until it is", key)
	}
	e.impaird.WaitLog("holding Ethernet0", "what it configured stays until it is", "key=Ethernet0 ")
	if got, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); got != id {
		t.Fatalf("after Redis restarted empty the XDP program is %d, want %d", got, id)
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet0", "link")); err != nil {
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
	e.SetInitialized()
	st = e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|blocked", "ok", "")
	if st["prog_id"] != strconv.Itoa(id) {
		t.Errorf("after reload prog_id %s, want %d (not re-attached)", st["prog_id"], id)
	}
	e.Eventually("rule extra removed (port 9002 passes)", func() (bool, string) {
		n := e.through(r9002, 9002, 20)
		return n > 0, fmt.Sprintf("%d of 20 through", n)
	})
	if got, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); got != id {
		t.Errorf("after reload the XDP program is %d, want %d (not re-attached)", got, id)
	}
	if n := e.through(r9001, 9001, 200); n != 0 {
		t.Errorf("after reload: %d of 200 datagrams through the 100%% rule", n)
	}
	e.Eventually("counters of extra removed", func() (bool, string) {
		c := e2eutil.HGetAll(e.Counters, "IMPAIRMENT_COUNTERS:Ethernet0|extra")
		return len(c) == 0, fmt.Sprint(c)
	})
}

// TestImpairdSweepWaitsForInitialized: impaird restarted with the pins of
// a port whose config was deleted meanwhile keeps them (program attached)
// while CONFIG_DB_INITIALIZED is unset, and removes them once it is "1".
func TestImpairdSweepWaitsForInitialized(t *testing.T) {
	e := newEnv(t)
	e.NS.Veth("Ethernet4", nil, "peer4")
	e.start()
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "100")
	e.HSet("IMPAIRMENT|Ethernet4", "loss", "1")
	e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	e.WaitState("IMPAIRMENT|Ethernet4", "ok", "")
	id0, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
	id4, _ := e2eutil.XDPProg(e.NS, "Ethernet4")
	if id0 == 0 || id4 == 0 {
		t.Fatalf("programs %d %d", id0, id4)
	}

	e.impaird.Kill()
	e.Del("IMPAIRMENT|Ethernet0")
	e.start()
	e.impaird.WaitLog("the deferred sweep", "CONFIG_DB_INITIALIZED is not 1: what no key configures is kept until it is")
	e.WaitState("IMPAIRMENT|Ethernet4", "ok", "")
	if got, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); got != id0 {
		t.Fatalf("CONFIG_DB_INITIALIZED unset: Ethernet0's program is %d, want %d kept", got, id0)
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet0", "link")); err != nil {
		t.Fatalf("CONFIG_DB_INITIALIZED unset: pins of Ethernet0 removed: %v", err)
	}

	e.SetInitialized()
	e.Eventually("Ethernet0 detached, unpinned, result removed", func() (bool, string) {
		id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
		_, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet0"))
		st := e.Result("IMPAIRMENT|Ethernet0")
		return id == 0 && os.IsNotExist(err) && len(st) == 0, fmt.Sprintf("prog %d, pin dir: %v, state %v", id, err, st)
	})
	if got, _ := e2eutil.XDPProg(e.NS, "Ethernet4"); got == 0 {
		t.Error("Ethernet4 lost its program in the sweep")
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet4", "link")); err != nil {
		t.Errorf("Ethernet4's pins: %v", err)
	}
}
