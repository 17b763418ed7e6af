package impaird

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// Boundary lateness: how long after its due time a step is in the maps.
// Not timing assertions: the tests log the figures (docs/impaird.md,
// "Schedules"); they assert only that the steps were applied in order.
//
//	go test -count=1 ./impaird/ -run 'TestScheduleLateness' -v

// steps returns n steps of every, alternating the field between a and b,
// and the end step.
func latenessSteps(n int, every time.Duration, field, a, b string) string {
	var parts []string
	for i := 0; i < n; i++ {
		v := a
		if i%2 == 1 {
			v = b
		}
		parts = append(parts, fmt.Sprintf("%dus %s %s", (time.Duration(i)*every).Microseconds(), field, v))
	}
	parts = append(parts, fmt.Sprintf("%dus end", (time.Duration(n)*every).Microseconds()))
	return strings.Join(parts, "; ")
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("n=%d p50 %v p99 %v max %v", len(s), s[len(s)/2], s[len(s)*99/100], s[len(s)-1])
}

// TestScheduleLatenessRule: 200 steps of 10 ms on an IMPAIRMENT_FLOW
// rule. A rule's profile lives in the match hash maps: a step is one
// hash update per match entry, visible and returned within microseconds,
// so Landed (the reconcile's return) is when the maps held the step.
func TestScheduleLatenessRule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2 s of steps")
	}
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	t.Cleanup(k.d.stopSchedules)
	const n = 200
	log := watchSteps(k, "Ethernet0")
	k.set(schema.TableImpairmentFlow, "Ethernet0|r", "proto", "udp", "schedule", "bench")
	k.reconcile("Ethernet0")
	if err := k.setSchedule("bench", "steps", latenessSteps(n, 10*time.Millisecond, "loss", "0", "1")); err != nil {
		t.Fatal(err)
	}
	var late []time.Duration
	prev, applied := -1, 0
	for {
		ev := log.wait(t)
		if ev.Step == stepOver {
			late = append(late, ev.Landed-ev.Due)
			break
		}
		if ev.Step <= prev {
			t.Fatalf("step %d after step %d: out of order", ev.Step, prev)
		}
		if prev >= 0 {
			late = append(late, ev.Landed-ev.Due)
		}
		prev = ev.Step
		applied++
	}
	// A step is skipped only when the runner was stalled past its whole
	// length (the host is shared): counted, and in STATE_DB as skipped.
	t.Logf("rule schedule, %d steps of 10ms: %d applied, %d skipped; lateness (maps updated, Apply returned): %s",
		n, applied, n-applied, percentiles(late))
}

// TestScheduleLatenessPort: 200 steps of 10 ms on a port profile. A
// port following a schedule has its profile compiled into a catch-all
// rule (schedPortRule), so a step is a hash update too. For comparison,
// the same steps written as the port slot's profile (a new inner array
// in the cfg array-of-maps, whose update waits for an RCU grace period)
// are timed as plain updates, without a schedule.
func TestScheduleLatenessPort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2 s of steps")
	}
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	t.Cleanup(k.d.stopSchedules)
	const n = 200
	log := watchSteps(k, "Ethernet0")
	k.set(schema.TableImpairment, "Ethernet0", "schedule", "bench", "corrupt", "1")
	k.reconcile("Ethernet0")
	if err := k.setSchedule("bench", "steps", latenessSteps(n, 10*time.Millisecond, "loss", "0", "1")); err != nil {
		t.Fatal(err)
	}
	var late []time.Duration
	prev, applied := -1, 0
	for received := 0; ; received++ {
		ev := log.wait(t)
		if ev.Step == stepOver {
			late = append(late, ev.Landed-ev.Due)
			break
		}
		if ev.Step <= prev {
			t.Fatalf("step %d after step %d: out of order", ev.Step, prev)
		}
		log.mu.Lock()
		loss := log.losses[received]
		log.mu.Unlock()
		if hasLoss := loss != 0; hasLoss != (ev.Step%2 == 1) {
			t.Errorf("after step %d the port's loss threshold is %d", ev.Step, loss)
		}
		if prev >= 0 {
			late = append(late, ev.Landed-ev.Due)
		}
		prev = ev.Step
		applied++
	}
	t.Logf("port schedule, %d steps of 10ms: %d applied, %d skipped; lateness (maps updated, Apply returned): %s",
		n, applied, n-applied, percentiles(late))

	// The port slot's profile, for comparison: each change publishes a
	// new inner array in cfg.
	k.d.stopSchedules()
	var publish []time.Duration
	clk := monoClock{}
	for i := 0; i < 40; i++ {
		k.set(schema.TableImpairment, "Ethernet0", "loss", fmt.Sprint(i%2))
		k.d.applyPlan = func(p *bpf.Port, plan *bpf.Plan) error {
			s := clk.now()
			err := p.Apply(plan)
			publish = append(publish, clk.now()-s)
			return err
		}
		k.reconcile("Ethernet0")
	}
	t.Logf("port slot profile (no schedule), 40 changes: Apply (array-of-maps publish, RCU grace period): %s", percentiles(publish))
}
