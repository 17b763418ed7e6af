package impaird

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// stepLog collects the steps a daemon's runners apply, and what the maps
// held right after each.
type stepLog struct {
	mu     sync.Mutex
	events []stepEvent
	losses []uint64 // the port profile's loss threshold after each step
	ch     chan stepEvent
}

// watchSteps hooks k's runners; port's profile is read after each step.
func watchSteps(k *kernelDaemon, port string) *stepLog {
	l := &stepLog{ch: make(chan stepEvent, 4096)}
	k.d.sch.onStep = func(ev stepEvent) {
		var loss uint64
		k.d.mu.Lock()
		if p := k.d.ports[port]; p != nil {
			if m, err := p.Profiles(); err == nil {
				loss = portProfile(m).Loss
			}
		}
		k.d.mu.Unlock()
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.losses = append(l.losses, loss)
		l.mu.Unlock()
		l.ch <- ev
	}
	return l
}

// portProfile is the port's profile among a port's profiles: the
// catch-all rule of a port following a schedule, else the port slot's.
func portProfile(m map[string]bpf.Profile) bpf.Profile {
	if p, ok := m[schedPortRule]; ok {
		return p
	}
	return m[""]
}

// wait returns the next step event (fails after 10 s).
func (l *stepLog) wait(t *testing.T) stepEvent {
	t.Helper()
	select {
	case ev := <-l.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no schedule step within 10s")
	}
	return stepEvent{}
}

// setSchedule records an IMPAIRMENT_SCHEDULE hash (none = delete) and
// reconciles it.
func (k *kernelDaemon) setSchedule(name string, kv ...string) error {
	k.d.mu.Lock()
	if len(kv) == 0 {
		delete(k.d.sch.cfg, name)
	} else {
		f := schema.Fields{}
		for i := 0; i+1 < len(kv); i += 2 {
			f[kv[i]] = kv[i+1]
		}
		k.d.sch.cfg[name] = f
	}
	k.d.mu.Unlock()
	return k.d.reconcileSchedule(context.Background(), name)
}

// TestScheduleLoopsOnPort: a 3-step looping schedule (loss 0 / 100 / 0)
// on a port: every step is applied in order, each lands in the port's
// map (the loss threshold follows the steps), the result names the step.
// Deleting the schedule puts the base profile back.
func TestScheduleLoopsOnPort(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	t.Cleanup(k.d.stopSchedules)
	log := watchSteps(k, "Ethernet0")
	k.set(schema.TableImpairment, "Ethernet0", "schedule", "s", "corrupt", "1")
	res := k.reconcile("Ethernet0")
	wantOK(t, res, impResult("Ethernet0")) // without the schedule: the base profile
	base := portProfile(k.profiles("Ethernet0"))
	if base.Loss != 0 || base.Corrupt == 0 {
		t.Fatalf("base profile has loss: %+v", base)
	}
	if err := k.setSchedule("s", "steps", "0s loss 0; 100ms loss 100; 200ms loss 0; 300ms end", "loop", "true"); err != nil {
		t.Fatal(err)
	}
	var steps []int
	for len(steps) < 9 {
		ev := log.wait(t)
		steps = append(steps, ev.Step)
		if !slices.Equal(ev.Ports, []string{"Ethernet0"}) {
			t.Fatalf("step %d applied to %v", ev.Step, ev.Ports)
		}
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0, 1, 2}; !slices.Equal(steps, want) {
		t.Fatalf("steps applied %v, want %v", steps, want)
	}
	log.mu.Lock()
	for i, ev := range log.events[:9] {
		if hasLoss := log.losses[i] != 0; hasLoss != (ev.Step == 1) {
			t.Errorf("after step %d the port's loss threshold is %d", ev.Step, log.losses[i])
		}
		t.Logf("step %d landed %v after its due time", ev.Step, ev.Landed-ev.Due)
	}
	log.mu.Unlock()
	k.d.mu.Lock()
	sc := k.d.sch.byName["s"]
	sw, skipped := sc.switches, sc.skipped
	k.d.mu.Unlock()
	if sw < 8 || skipped != 0 {
		t.Errorf("switches %d skipped %d", sw, skipped)
	}
	// The port's result names the step.
	res = k.reconcileAll("Ethernet0")
	if r := res[impResult("Ethernet0")]; r[FieldScheduleStep] == "" || r[FieldScheduleStepSince] == "" {
		t.Errorf("result %v lacks the schedule step", r)
	}

	// Deleted: the runner stops, the base profile is back.
	if err := k.setSchedule("s"); err != nil {
		t.Fatal(err)
	}
	if got := portProfile(k.profiles("Ethernet0")); got.Loss != 0 || got.Corrupt != base.Corrupt {
		t.Fatalf("after the schedule's delete: %+v, want the base %+v", got, base)
	}
	res = k.reconcileAll("Ethernet0")
	if r := res[impResult("Ethernet0")]; r[schema.FieldState] != string(schema.StatePending) || !strings.Contains(r[schema.FieldReason], "IMPAIRMENT_SCHEDULE|s") {
		t.Errorf("after the schedule's delete: result %v, want pending naming it", r)
	}
}

// reconcileAll is reconcile through d.reconcile (the schedule results
// included), returning the results.
func (k *kernelDaemon) reconcileAll(port string) map[string]schema.Fields {
	k.t.Helper()
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	out := &outcome{results: map[string]schema.Fields{}}
	if _, err := k.d.reconcileLocked(port, out); err != nil {
		k.t.Logf("reconcile %s: %v", port, err)
	}
	k.d.scheduleResults(port, out)
	return out.results
}

// TestScheduleOnFlowRule: a rule follows a schedule; a step that does not
// parse over the rule's own fields keeps the rule on its previous step
// and names the step.
func TestScheduleOnFlowRule(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	t.Cleanup(k.d.stopSchedules)
	ruleLoss := func() uint64 {
		for name, p := range k.profiles("Ethernet0") {
			if name == "udp" {
				return p.Loss
			}
		}
		t.Fatal("no rule udp in the maps")
		return 0
	}
	var mu sync.Mutex
	var seen []uint64
	steps := make(chan int, 100)
	k.d.sch.onStep = func(ev stepEvent) {
		l := ruleLoss()
		mu.Lock()
		seen = append(seen, l)
		mu.Unlock()
		steps <- ev.Step
	}
	k.set(schema.TableImpairmentFlow, "Ethernet0|udp", "proto", "udp", "schedule", "f", "rate", "10mbit")
	k.reconcile("Ethernet0")
	if err := k.setSchedule("f", "steps", "0s loss 50; 200ms loss 0"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{0, 1} {
		select {
		case got := <-steps:
			if got != want {
				t.Fatalf("step %d applied, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no step")
		}
	}
	mu.Lock()
	if seen[0] == 0 || seen[1] != 0 {
		t.Fatalf("rule loss after steps 0, 1: %v", seen)
	}
	mu.Unlock()
	// A schedule without an end: the last step stays.
	res := k.reconcileAll("Ethernet0")
	if r := res[flowResult("Ethernet0|udp")]; r[FieldScheduleStep] != "1" {
		t.Fatalf("rule result %v, want schedule_step 1", r)
	}
}
