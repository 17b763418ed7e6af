package impairde2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// kept ends the reason of an invalid update whose previous configuration
// stays applied (docs/impaird.md).
const kept = "; the previous configuration stays applied"

// TestImpairdBadUpdateKeepsLastGood (issue 12): loss 100 applied, then
// the typo loss 101 → state error naming the field and saying the
// previous configuration stays; the same XDP program keeps dropping
// everything. The same for a rule (an exemption of UDP 9002 from the
// port's loss) updated with a bad dport. Deleting the bad keys removes
// their impairment.
func TestImpairdBadUpdateKeepsLastGood(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP before measuring
	e.start()
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "100")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|pass9002", "proto", "udp", "dport", "9002", "priority", "5")
	st := e.WaitState("IMPAIRMENT|Ethernet0", "ok", "")
	e.WaitState("IMPAIRMENT_FLOW|Ethernet0|pass9002", "ok", "")
	id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
	if id == 0 || strconv.Itoa(id) != st["prog_id"] {
		t.Fatalf("STATE_DB says prog_id %s; iproute2 says %d", st["prog_id"], id)
	}

	e.HSet("IMPAIRMENT|Ethernet0", "loss", "101")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|pass9002", "dport", "99999")
	for _, key := range []string{"IMPAIRMENT_TABLE|Ethernet0", "IMPAIRMENT_FLOW_TABLE|Ethernet0|pass9002"} {
		field := map[bool]string{true: `field "loss": "101"`, false: `field "dport": "99999"`}[strings.HasPrefix(key, "IMPAIRMENT_TABLE")]
		e.Eventually(key+" error, previous kept", func() (bool, string) {
			st := e2eutil.HGetAll(e.State, key)
			return st["state"] == "error" && strings.Contains(st["reason"], field) && strings.HasSuffix(st["reason"], kept), fmt.Sprint(st)
		})
	}
	if now, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); now != id {
		t.Fatalf("after the invalid updates the XDP program is %d, want %d", now, id)
	}
	if st := e.Result("IMPAIRMENT|Ethernet0"); st["prog_id"] != strconv.Itoa(id) {
		t.Errorf("kept result %v: want prog_id %d (the program that runs on)", st, id)
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "Ethernet0", "link")); err != nil {
		t.Fatalf("pinned link after the invalid updates: %v", err)
	}
	// loss 100 still drops UDP 9000; the rule still exempts UDP 9002.
	r9000, r9002 := e.listen(9000), e.listen(9002)
	const n = 200
	e2eutil.SendUDP(t, e.sender(9000), n)
	e2eutil.SendUDP(t, e.sender(9002), n)
	if got := r9000.Settle(); got != 0 {
		t.Errorf("loss 100 kept: %d of %d datagrams got through", got, n)
	}
	if got := r9002.Settle(); got < n/2 {
		t.Errorf("rule kept: %d of %d datagrams to UDP 9002 got through, want them all (a few may be lost in the socket)", got, n)
	}
	e.Eventually("port counters", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["dropped_loss"] >= n && consistent(c), fmt.Sprint(c)
	})

	// Deleting the bad IMPAIRMENT removes the port's loss (the rule keeps
	// the program attached); deleting the rule detaches it.
	e.Del("IMPAIRMENT|Ethernet0")
	e.WaitGone("IMPAIRMENT|Ethernet0")
	r9000.Reset()
	e2eutil.SendUDP(t, e.sender(9000), n)
	if got := r9000.Settle(); got < n/2 {
		t.Errorf("after deleting IMPAIRMENT: %d of %d datagrams got through, want them all", got, n)
	}
	e.Del("IMPAIRMENT_FLOW|Ethernet0|pass9002")
	e.Eventually("program detached, results gone", func() (bool, string) {
		id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
		st := e.Result("IMPAIRMENT_FLOW|Ethernet0|pass9002")
		return id == 0 && len(st) == 0, fmt.Sprintf("prog %d, result %v", id, st)
	})
}

// TestImpairdPortNameWithDot (issue 12): a VLAN subinterface name
// (eth1.100; here a veth so named) is impaired, its pins under the
// encoded name eth1:2e100 (bpffs refuses dots); a restarted impaird
// adopts them; DEL removes program, pins and result.
func TestImpairdPortNameWithDot(t *testing.T) {
	e := newEnv(t)
	e.NS.Veth("eth1.100", nil, "peer100")
	e.start()
	e.HSet("IMPAIRMENT|eth1.100", "loss", "5")
	st := e.WaitState("IMPAIRMENT|eth1.100", "ok", "")
	id, _ := e2eutil.XDPProg(e.NS, "eth1.100")
	if id == 0 || strconv.Itoa(id) != st["prog_id"] {
		t.Fatalf("STATE_DB says prog_id %s; iproute2 says %d", st["prog_id"], id)
	}
	if _, err := os.Stat(filepath.Join(e.BPFFS, "eth1:2e100", "link")); err != nil {
		t.Fatalf("pinned link: %v", err)
	}

	// Adopted: the new process takes over the pinned link and, the program
	// being the same release's, the running program too (same id), with no
	// second pin directory.
	e.impaird.Kill()
	e.start()
	e.Eventually("restarted impaird adopts eth1.100's pins", func() (bool, string) {
		st := e.Result("IMPAIRMENT|eth1.100")
		now, _ := e2eutil.XDPProg(e.NS, "eth1.100")
		entries, _ := os.ReadDir(e.BPFFS)
		adopted := e.impaird.HasLine("pinned XDP link and its program adopted")
		return adopted && now == id && st["state"] == "ok" && strconv.Itoa(now) == st["prog_id"] && len(entries) == 1,
			fmt.Sprintf("adopted %v, prog %d (was %d), result %v, bpffs %v", adopted, now, id, st, entries)
	})
	// The result above may still be the killed process's: wait for the new
	// one's first pass, or the DEL below lands during it and the old result
	// is a key gone while the daemon was down (removed only once
	// CONFIG_DB_INITIALIZED is 1, docs/engine.md).
	e.impaird.WaitLog("the restarted impaird's first pass", "msg=reconciled", "IMPAIRMENT ok=1")

	e.Del("IMPAIRMENT|eth1.100")
	e.Eventually("program, pins and result removed", func() (bool, string) {
		id, _ := e2eutil.XDPProg(e.NS, "eth1.100")
		entries, _ := os.ReadDir(e.BPFFS)
		st := e.Result("IMPAIRMENT|eth1.100")
		return id == 0 && len(entries) == 0 && len(st) == 0, fmt.Sprintf("prog %d, bpffs %v, result %v", id, entries, st)
	})
}

// TestImpairdKeyWithoutPort (issue 12): IMPAIRMENT_FLOW||r3 gets its
// error result, and loses it after DEL.
func TestImpairdKeyWithoutPort(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.HSet("IMPAIRMENT_FLOW||r3", "loss", "1")
	st := e.WaitState("IMPAIRMENT_FLOW||r3", "error", "")
	if !strings.Contains(st["reason"], "port name is empty") {
		t.Errorf("reason %q", st["reason"])
	}
	e.Del("IMPAIRMENT_FLOW||r3")
	e.WaitGone("IMPAIRMENT_FLOW||r3")
}
