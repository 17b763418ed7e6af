package impairde2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// Schedules (IMPAIRMENT_SCHEDULE): steps of a second, so a burst of
// datagrams falls inside one step; a burst is sent 100-700 ms into a step
// and counts only when the step reported in STATE_DB is the same before
// and after it.

// step is the schedule's current step and its start, from STATE_DB.
func (e *env) step(name string) (step, since string) {
	st := e2eutil.HGetAll(e.State, "IMPAIRMENT_SCHEDULE_TABLE|"+name)
	return st["step"], st["step_since"]
}

// observe sends bursts of n datagrams to port until each step in want has
// been seen with its expected outcome (true: all through, false: none),
// in order at least once, and returns the steps seen.
func (e *env) observe(name string, r *e2eutil.UDPCounter, s *net.UDPConn, want map[string]bool, order []string) []string {
	e.T.Helper()
	const n = 20
	var seen []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		step, since := e.step(name)
		// Steps are 1 s long: burst only well inside one (STATE_DB is
		// written a little after the kernel switched).
		if t, err := time.Parse(time.RFC3339Nano, since); err != nil || time.Since(t) < 100*time.Millisecond || time.Since(t) > 700*time.Millisecond {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		before := r.Count()
		e2eutil.SendUDP(e.T, s, n)
		got := r.Settle() - before
		if step2, since2 := e.step(name); step2 != step || since2 != since {
			continue // a boundary during the burst
		}
		through, ok := want[step]
		if !ok {
			e.T.Fatalf("schedule %s reports step %q", name, step)
		}
		if through && got < n/2 || !through && got != 0 {
			e.T.Fatalf("step %s: %d of %d datagrams through, want %v", step, got, n, map[bool]string{true: "them all", false: "none"}[through])
		}
		if len(seen) == 0 || seen[len(seen)-1] != step {
			seen = append(seen, step)
		}
		if strings.Contains(strings.Join(seen, ","), strings.Join(order, ",")) {
			return seen
		}
	}
	e.T.Fatalf("schedule %s: saw steps %v, want %v in order", name, seen, order)
	return nil
}

// TestImpairdSchedulePort: a looping 3-step schedule (loss 0 / 100 / 0)
// on a port, seen in traffic and in the XDP counters; a bad step is an
// error naming it and changes nothing else; a restarted impaird resumes
// the cycle; deleting the schedule puts the base profile back.
func TestImpairdSchedulePort(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP before measuring
	e.start()
	const steps = "0s loss 0; 1s loss 100; 2s loss 0; 3s end"
	e.HSet("IMPAIRMENT|Ethernet0", "schedule", "blink", "corrupt", "0")
	e.WaitState("IMPAIRMENT|Ethernet0", "pending", "waiting for IMPAIRMENT_SCHEDULE|blink")
	e.HSet("IMPAIRMENT_SCHEDULE|blink", "steps", steps, "loop", "true")
	e.WaitOK("IMPAIRMENT_SCHEDULE|blink", "IMPAIRMENT|Ethernet0")

	pass := map[string]bool{"0": true, "1": false, "2": true}
	r, s := e.listen(9000), e.sender(9000)
	e.observe("blink", r, s, pass, []string{"0", "1", "2", "0"})
	if st := e.Result("IMPAIRMENT|Ethernet0"); st["schedule_step"] == "" || st["schedule_step_since"] == "" {
		t.Errorf("IMPAIRMENT result %v lacks schedule_step", st)
	}
	e.Eventually("XDP counters: losses of step 1", func() (bool, string) {
		c := e.counters("Ethernet0")
		return c["dropped_loss"] > 0 && c["passed"] > 0 && consistent(c), fmt.Sprint(c)
	})
	// The scheduled port profile runs as a catch-all rule below every
	// IMPAIRMENT_FLOW rule: a rule exempting UDP 9002 still wins, and the
	// catch-all rule has no counters row of its own.
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|pass9002", "proto", "udp", "dport", "9002")
	e.WaitOK("IMPAIRMENT_FLOW|Ethernet0|pass9002")
	e.observe("blink", e.listen(9002), e.sender(9002), map[string]bool{"0": true, "1": true, "2": true}, []string{"1"})
	if keys := e2eutil.Keys(e.Counters, "IMPAIRMENT_COUNTERS:Ethernet0|~*"); len(keys) != 0 {
		t.Errorf("counters of the internal rule: %v", keys)
	}
	e.Del("IMPAIRMENT_FLOW|Ethernet0|pass9002")
	e.WaitGone("IMPAIRMENT_FLOW|Ethernet0|pass9002")
	started := e.Result("IMPAIRMENT_SCHEDULE|blink")["started"]

	// A bad step: an error naming the step and the field; the schedule
	// runs on unchanged.
	e.HSet("IMPAIRMENT_SCHEDULE|blink", "steps", "0s loss 0; 1s loss 1000; 3s end")
	st := e.WaitState("IMPAIRMENT_SCHEDULE|blink", "error", `field "steps": step 1: field "loss": "1000" is not valid`)
	if !strings.HasSuffix(st["reason"], kept) || st["started"] != started {
		t.Errorf("bad step: result %v, want the previous version kept (started %s)", st, started)
	}
	e.observe("blink", r, s, pass, []string{"1", "2"})
	if st := e.Result("IMPAIRMENT|Ethernet0"); st["state"] != "ok" {
		t.Errorf("the port's result changed with the bad step: %v", st)
	}
	e.HSet("IMPAIRMENT_SCHEDULE|blink", "steps", steps) // back: same version, not restarted
	e.WaitOK("IMPAIRMENT_SCHEDULE|blink")
	if now := e.Result("IMPAIRMENT_SCHEDULE|blink")["started"]; now != started {
		t.Errorf("restoring the running version restarted it: started %s, was %s", now, started)
	}

	// Restart: the new impaird resumes the cycle (same start).
	e.impaird.Kill()
	e.start()
	e.Eventually("restarted impaird resumes the schedule", func() (bool, string) {
		st := e.Result("IMPAIRMENT_SCHEDULE|blink")
		return e.impaird.HasLine("schedule started") && st["state"] == "ok" && st["started"] == started, fmt.Sprint(st)
	})
	e.observe("blink", r, s, pass, []string{"1", "2", "0"})

	// Deleted: base profile (no loss), the port's result pending naming it.
	e.Del("IMPAIRMENT_SCHEDULE|blink")
	e.WaitState("IMPAIRMENT|Ethernet0", "pending", "waiting for IMPAIRMENT_SCHEDULE|blink")
	r9001 := e.listen(9001)
	e2eutil.SendUDP(t, e.sender(9001), 100)
	if got := r9001.Settle(); got < 50 {
		t.Errorf("base profile after the schedule's delete: %d of 100 through", got)
	}
}

// TestImpairdScheduleFlowRule: a schedule on an IMPAIRMENT_FLOW rule
// changes that class only; other traffic is never dropped.
func TestImpairdScheduleFlowRule(t *testing.T) {
	e := newEnv(t)
	e2eutil.Ping(t, e.h1, swAddr, 1)
	e.start()
	e.HSet("IMPAIRMENT_SCHEDULE|gate", "steps", "0s loss 100; 1s loss 0; 2s end", "loop", "true")
	e.HSet("IMPAIRMENT_FLOW|Ethernet0|u9000", "proto", "udp", "dport", "9000", "schedule", "gate")
	e.WaitOK("IMPAIRMENT_SCHEDULE|gate", "IMPAIRMENT_FLOW|Ethernet0|u9000")
	e.observe("gate", e.listen(9000), e.sender(9000), map[string]bool{"0": false, "1": true}, []string{"0", "1", "0"})
	r := e.listen(9001)
	e2eutil.SendUDP(t, e.sender(9001), 100)
	if got := r.Settle(); got < 50 {
		t.Errorf("traffic outside the rule: %d of 100 through", got)
	}
	e.Eventually("rule counters", func() (bool, string) {
		c := e.counters("Ethernet0|u9000")
		return c["dropped_loss"] > 0 && c["passed"] > 0, fmt.Sprint(c)
	})
	if st := e.Result("IMPAIRMENT_FLOW|Ethernet0|u9000"); st["schedule_step"] == "" {
		t.Errorf("rule result %v lacks schedule_step", st)
	}
}
