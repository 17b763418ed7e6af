package impaird

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"

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

// TestScheduleLatenessPort: steps of the port profile. The port profile
// is published by swapping the inner array of the cfg array-of-maps: the
// swap is visible to the next packet at once, but the kernel returns from
// that update only after an RCU grace period (maybe_wait_bpf_programs),
// 8-25 ms on this VM, and a port's updates are serialized. A poller reads
// the pinned cfg map (as the XDP program does) to see when each swap
// became visible; both figures are logged, with the steps skipped.
func TestScheduleLatenessPort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: several seconds of steps")
	}
	for _, every := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(every.String(), func(t *testing.T) { portLateness(t, 100, every) })
	}
}

func portLateness(t *testing.T, n int, every time.Duration) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	t.Cleanup(k.d.stopSchedules)
	k.set(schema.TableImpairment, "Ethernet0", "schedule", "bench", "corrupt", "1")
	k.reconcile("Ethernet0")
	cfg, err := ebpf.LoadPinnedMap(filepath.Join(k.d.dir("Ethernet0"), "cfg"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()

	type span struct{ start, end time.Duration }
	var mu sync.Mutex
	var applies []span
	clk := monoClock{}
	k.d.applyPlan = func(p *bpf.Port, plan *bpf.Plan) error {
		s := clk.now()
		err := p.Apply(plan)
		mu.Lock()
		applies = append(applies, span{s, clk.now()})
		mu.Unlock()
		return err
	}
	// The poller: when did the cfg map point to a new inner array?
	stop := make(chan struct{})
	var swaps []time.Duration
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		var last uint32
		for {
			select {
			case <-stop:
				return
			default:
			}
			var id uint32
			if err := cfg.Lookup(uint32(0), &id); err == nil && id != last {
				swaps = append(swaps, clk.now())
				last = id
			}
		}
	}()
	log := watchSteps(k, "Ethernet0")
	if err := k.setSchedule("bench", "steps", latenessSteps(n, every, "loss", "0", "1")); err != nil {
		t.Fatal(err)
	}
	var events []stepEvent
	for {
		ev := log.wait(t)
		events = append(events, ev)
		if ev.Step == stepOver {
			break
		}
	}
	close(stop)
	<-polled
	mu.Lock()
	defer mu.Unlock()
	var visible, started, returned []time.Duration
	prev := -1
	for i, ev := range events {
		if ev.Step != stepOver && ev.Step <= prev {
			t.Fatalf("step %d after step %d: out of order", ev.Step, prev)
		}
		prev = ev.Step
		if i == 0 || i >= len(applies) {
			continue
		}
		a := applies[i] // applies[0] is step 0's
		returned = append(returned, a.end-ev.Due)
		started = append(started, a.start-ev.Due)
		for _, s := range swaps {
			if s >= a.start && s <= a.end {
				visible = append(visible, s-ev.Due)
				break
			}
		}
	}
	t.Logf("port schedule, %d steps of %v: %d steps applied, %d skipped", n, every, len(events)-1, n-(len(events)-1))
	t.Logf("  lateness, Apply called: %s", percentiles(started))
	t.Logf("  lateness, swap seen by a poller of the pinned map: %s", percentiles(visible))
	t.Logf("  lateness, Apply returned (RCU grace period included): %s", percentiles(returned))
}
