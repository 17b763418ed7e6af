package acle2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// setRule writes a rule's whole hash in one MULTI (DEL + HSET) and waits
// for the result of exactly this version (its generation).
func (e *env) setRule(table, name string, f schema.Fields) {
	e.T.Helper()
	key := schema.ConfigKey(schema.TableACLRule, table+schema.ConfigSep+name)
	ctx := context.Background()
	pipe := e.Config.TxPipeline()
	pipe.Del(ctx, key)
	pipe.HSet(ctx, key, f)
	if _, err := pipe.Exec(ctx); err != nil {
		e.T.Fatalf("MULTI DEL+HSET %s: %v", key, err)
	}
	gen := schema.Generation(f)
	e.Eventually("result of "+key+" generation "+gen, func() (bool, string) {
		h := e.Result(key)
		return h["state"] == "ok" && h["generation"] == gen, fmt.Sprint(h)
	})
}

// TestACLAtomicUpdate: while datagrams flow, the rule that drops them is
// rewritten 20 times between two match shapes (a prefix /24 <-> /32 and
// a port <-> a range): a rule set swapped entry by entry would let some
// through. None arrives, and the rule's counter equals what was sent.
// Then the rule is replaced by another name (added, then the old one
// deleted): still none arrives.
func TestACLAtomicUpdate(t *testing.T) {
	e := newEnv(t)
	e.impaird()
	e.HSet("ACL_TABLE|ATOMIC", "type", "L3", "ports@", "Ethernet0")
	shapes := []schema.Fields{
		{"PRIORITY": "10", "PACKET_ACTION": "DROP", "SRC_IP": "10.0.0.0/24", "IP_PROTOCOL": "17", "L4_DST_PORT": "9100"},
		{"PRIORITY": "10", "PACKET_ACTION": "DROP", "SRC_IP": h1Addr + "/32", "IP_PROTOCOL": "17", "L4_DST_PORT_RANGE": "9000-9199"},
	}
	e.setRule("ATOMIC", "D1", shapes[0])
	e.WaitOK("ACL_TABLE|ATOMIC")
	r := e.listen(9100)
	f := e.flood(9100)
	for i := 1; i <= 20; i++ {
		e.setRule("ATOMIC", "D1", shapes[i%2])
	}
	sent := f.end()
	if got := r.Settle(); got != 0 || sent < 100 {
		t.Errorf("during 20 rewrites of the dropping rule %d of %d datagrams got through", got, sent)
	}
	e.waitCounter("ATOMIC", "D1", uint64(sent))
	t.Logf("20 rewrites under %d datagrams: none through, counter exact", sent)

	f = e.flood(9100)
	e.setRule("ATOMIC", "D2", shapes[0])
	e.Del("ACL_RULE|ATOMIC|D1")
	e.WaitGone("ACL_RULE|ATOMIC|D1")
	e.setRule("ATOMIC", "D1", shapes[1])
	e.Del("ACL_RULE|ATOMIC|D2")
	e.WaitGone("ACL_RULE|ATOMIC|D2")
	sent = f.end()
	if got := r.Settle(); got != 0 {
		t.Errorf("while the rule was renamed %d of %d datagrams got through", got, sent)
	}
}

// TestACLWithImpairmentAndRestarts: an ACL and an impairment on one port
// (one XDP program: ACL first, then the impairment stage) while impaird
// and orchagent are killed and restarted in every order: the program id
// stays, both configurations keep acting (also while impaird is down),
// and the ACL counters keep counting from where they were.
func TestACLWithImpairmentAndRestarts(t *testing.T) {
	e := newEnv(t)
	e.Start("orchagent")
	e.impaird()
	e.HSet("PORT|Ethernet0", "admin_status", "up", "mtu", "1500")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|blk", "proto", "udp", "dport", "9001", "loss", "100", "priority", "10")
	e.HSet("ACL_TABLE|DATAACL", "type", "L3", "ports@", "Ethernet0")
	e.rule("DATAACL", "BLOCK_SRC", "PRIORITY", "40", "PACKET_ACTION", "DROP", "SRC_IP", blockedAddr+"/32")
	e.rule("DATAACL", "COUNT_9000", "PRIORITY", "10", "PACKET_ACTION", "FORWARD", "IP_PROTOCOL", "17", "L4_DST_PORT", "9000")
	e.WaitOK("PORT|Ethernet0", "IMPAIRMENT_FLOW|Ethernet0|blk", "ACL_TABLE|DATAACL", "ACL_RULE|DATAACL|BLOCK_SRC", "ACL_RULE|DATAACL|COUNT_9000")
	id, _ := e2eutil.XDPProg(e.NS, "Ethernet0")
	r9000, r9001 := e.listen(9000), e.listen(9001)
	var counted, blocked uint64
	check := func(step string) {
		t.Helper()
		if got, _ := e2eutil.XDPProg(e.NS, "Ethernet0"); got != id {
			t.Fatalf("%s: XDP program %d, want %d (the same program throughout)", step, got, id)
		}
		if got := e.through(r9000, h1Addr, 9000, 100); got != 100 {
			t.Errorf("%s: ACL FORWARD, no impairment: %d of 100 arrived", step, got)
		}
		counted += 100
		if got := e.through(r9001, h1Addr, 9001, 100); got != 0 {
			t.Errorf("%s: impairment loss 100%%: %d of 100 arrived", step, got)
		}
		if got := e.through(r9000, blockedAddr, 9000, 100); got != 0 {
			t.Errorf("%s: ACL DROP: %d of 100 arrived", step, got)
		}
		blocked += 100
	}
	settled := func(step string) {
		t.Helper()
		e.WaitOK("IMPAIRMENT_FLOW|Ethernet0|blk", "ACL_TABLE|DATAACL", "ACL_RULE|DATAACL|BLOCK_SRC")
		e.waitCounter("DATAACL", "COUNT_9000", counted)
		e.waitCounter("DATAACL", "BLOCK_SRC", blocked)
		t.Logf("%s: program %d, COUNT_9000 %d, BLOCK_SRC %d", step, id, counted, blocked)
	}
	check("start")
	settled("start")
	restart := func(names ...string) {
		for _, n := range names {
			e.Procs[n].Kill()
		}
		check("while " + fmt.Sprint(names) + " are down")
		for i := len(names) - 1; i >= 0; i-- {
			if names[i] == "impaird" {
				e.impaird()
			} else {
				e.Start(names[i])
			}
		}
		check("after restarting " + fmt.Sprint(names))
		settled("restarted " + fmt.Sprint(names))
	}
	restart("impaird")
	restart("orchagent")
	restart("impaird", "orchagent")
	restart("orchagent", "impaird")
}

// TestACL10kRules: 10,000 rules of mixed prefixes and port ranges written
// in one pipeline reach ok (every result of this version), and the rule
// set acts on traffic: the last rule written drops its flow, the rest
// pass. Logs how long the whole burst took (no assertion on it).
func TestACL10kRules(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 10,000 rules take a while")
	}
	e := newEnv(t)
	e.impaird()
	ctx := context.Background()
	start := time.Now()
	pipe := e.Config.Pipeline()
	pipe.HSet(ctx, "ACL_TABLE|BIG", "type", "L3", "ports@", "Ethernet0")
	const n = 10000
	for i := 0; i < n; i++ {
		f := []any{"PRIORITY", fmt.Sprint(100 + i), "PACKET_ACTION", "FORWARD",
			"SRC_IP", fmt.Sprintf("172.%d.%d.0/%d", 16+i%16, i/16%256, 24-i%3*4), "IP_PROTOCOL", "17",
			"L4_DST_PORT_RANGE", fmt.Sprintf("%d-%d", 1000+i%500, 1000+i%500+i%37)}
		pipe.HSet(ctx, fmt.Sprintf("ACL_RULE|BIG|R%05d", i), f...)
	}
	pipe.HSet(ctx, "ACL_RULE|BIG|DROP_9400", "PRIORITY", "50", "PACKET_ACTION", "DROP", "SRC_IP", h1Addr+"/32", "IP_PROTOCOL", "17", "L4_DST_PORT", "9400")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	e.Eventually("10,001 rules ok", func() (bool, string) {
		keys := e2eutil.Keys(e.State, "ACL_RULE_TABLE|BIG|*")
		ok := 0
		for _, k := range keys {
			if e.State.HGet(ctx, k, "state").Val() == "ok" {
				ok++
			}
		}
		return ok == n+1, fmt.Sprintf("%d of %d ok", ok, n+1)
	})
	t.Logf("10,001 rules from one pipeline to all results ok: %v", time.Since(start).Round(time.Millisecond))
	r := e.listen(9400)
	if got := e.through(r, h1Addr, 9400, 100); got != 0 {
		t.Errorf("among 10,000 other rules the drop rule let %d of 100 through", got)
	}
	e.waitCounter("BIG", "DROP_9400", 100)
	r2 := e.listen(9401)
	if got := e.through(r2, h1Addr, 9401, 100); got != 100 {
		t.Errorf("a flow no rule drops: %d of 100 arrived", got)
	}
}
