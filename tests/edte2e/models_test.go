package edte2e

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/impaird/edt"
	"github.com/vishvananda/netlink"
)

// netem's remaining models side by side with netem on the same packets
// (VM: netem, fq): the same paced sequence of numbered datagrams A -> B
// goes once through netem on a0's egress and once through switchyard's
// implementation (XDP on b0's ingress for loss_corr, loss_model state and
// duplicate; the EDT program with fq on a0's egress for slot). The rates
// are logged for docs/impaird.md and docs/edt.md and checked loosely:
// 10,000 packets cannot resolve much finer, and the exact statistics are
// bpf's and bpf/edt's host tests.

// seqStats is what arrived of n numbered packets: loss rate (percent),
// mean length of runs of lost sequence numbers, and the copies (percent
// of sent) beyond one per sequence number.
type seqStats struct {
	received          int
	loss, burst, dups float64
}

func (s seqStats) String() string {
	return fmt.Sprintf("received %d, loss %.2f%%, mean loss burst %.3f, duplicates %.2f%%", s.received, s.loss, s.burst, s.dups)
}

func seqSummary(ss []sample, n int) seqStats {
	seen := make([]int, n)
	for _, s := range ss {
		if s.seq < uint64(n) {
			seen[s.seq]++
		}
	}
	st := seqStats{received: len(ss)}
	lost, bursts, extra := 0, 0, 0
	for i, c := range seen {
		if c == 0 {
			lost++
			if i == 0 || seen[i-1] != 0 {
				bursts++
			}
		} else {
			extra += c - 1
		}
	}
	st.loss = 100 * float64(lost) / float64(n)
	if bursts > 0 {
		st.burst = float64(lost) / float64(bursts)
	}
	st.dups = 100 * float64(extra) / float64(n)
	return st
}

// xdpOnB loads impair.c with spec as b0's port profile on B's ingress
// (and impair_dup when it duplicates); the returned func takes it off.
func xdpOnB(t *testing.T, p *pair, spec bpf.Spec) func() {
	t.Helper()
	port, err := bpf.Load("")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := bpf.Compile(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := port.Apply(plan); err != nil {
		t.Fatal(err)
	}
	var idx int
	err = p.B.Do(func() error {
		l, err := netlink.LinkByName("b0")
		if err != nil {
			return err
		}
		idx = l.Attrs().Index
		if err := port.Attach(idx, bpf.ModeAuto); err != nil {
			return err
		}
		if plan.Duplicates() {
			return port.AttachDuplicate(idx)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("attach impairment to b0: %v", err)
	}
	return func() {
		p.B.Do(func() error { port.DetachDuplicate(idx); return nil })
		port.Remove()
		port.Close()
	}
}

// TestNetemModelsVsXDP: loss_corr, loss_model state and duplicate, each
// on 10,000 packets through netem and through the XDP path: both within
// 3 points of the model's rate (netem's own formulas, see bpf's tests)
// and of each other.
func TestNetemModelsVsXDP(t *testing.T) {
	requireKernel(t)
	const n, pps = 10000, 2000
	p := newPair(t)
	for _, c := range []struct {
		name  string
		netem []string
		spec  bpf.Spec
		want  float64 // model: loss or duplicate percent
		dup   bool
	}{
		{"loss 40 loss_corr 50", []string{"loss", "40%", "50%"}, bpf.Spec{Loss: 40, LossCorr: 50}, 30.11, false},
		{"loss state 3 30 20 40 1", []string{"loss", "state", "3%", "30%", "20%", "40%", "1%"},
			bpf.Spec{LossModel: bpf.LossState, P13: 3, P31: 30, P32: 20, P23: 40, P14: 1}, 9.48, false},
		{"duplicate 10", []string{"duplicate", "10%"}, bpf.Spec{Duplicate: 10}, 10, true},
	} {
		p.A.Run("tc", append([]string{"-n", p.A.Name, "qdisc", "replace", "dev", "a0", "root", "netem", "limit", "100000"}, c.netem...)...)
		ne := seqSummary(measure(t, p, n, pps, time.Second), n)
		p.A.Run("tc", "-n", p.A.Name, "qdisc", "del", "dev", "a0", "root")
		off := xdpOnB(t, p, c.spec)
		xd := seqSummary(measure(t, p, n, pps, time.Second), n)
		off()
		t.Logf("%s: netem %v", c.name, ne)
		t.Logf("%s: XDP   %v", c.name, xd)
		get := func(s seqStats) float64 {
			if c.dup {
				return s.dups
			}
			return s.loss
		}
		if math.Abs(get(xd)-c.want) > 3 || math.Abs(get(ne)-c.want) > 3 || math.Abs(get(xd)-get(ne)) > 3 {
			t.Errorf("%s: XDP %.2f%%, netem %.2f%%, model %.2f%%: want all within 3 points", c.name, get(xd), get(ne), c.want)
		}
	}
}

// slotStats groups arrivals into slots (a gap of more than 200 us starts
// a new one): packets per slot, the mean gap between slots and the span
// from the first arrival to the last.
func slotStats(ss []sample) (perSlot, gapMs float64, slots int, span time.Duration) {
	if len(ss) == 0 {
		return 0, 0, 0, 0
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].rx < ss[j].rx })
	slots = 1
	var gaps []float64
	for i := 1; i < len(ss); i++ {
		if g := ss[i].rx - ss[i-1].rx; g > 200e3 {
			slots++
			gaps = append(gaps, float64(g)/1e6)
		}
	}
	sum := 0.0
	for _, g := range gaps {
		sum += g
	}
	if len(gaps) > 0 {
		gapMs = sum / float64(len(gaps))
	}
	return float64(len(ss)) / float64(slots), gapMs, slots, time.Duration(ss[len(ss)-1].rx - ss[0].rx)
}

// TestSlotVsNetem: slot 2ms 4ms packets 4 on 4,000 packets at 4,000/s,
// more than the slots carry (4 per 3 ms on average), through netem and
// through the EDT program. The EDT program computes every slot time in
// advance, so the backlog drains in (1000 - 1) slots x 3 ms: the span of
// the arrivals is checked within 15% of that. netem opens the next slot
// from the time its timer actually fired, so under TCG its slots come
// later (logged for docs/edt.md), while a VM stall makes fq release
// several of EDT's overdue slots at once (more packets per observed slot,
// same span). The exact slot times are bpf/edt's host tests.
func TestSlotVsNetem(t *testing.T) {
	requireKernel(t)
	const n, pps = 4000, 4000
	p := newPair(t)
	p.A.Run("tc", "-n", p.A.Name, "qdisc", "replace", "dev", "a0", "root", "netem", "limit", "100000", "slot", "2ms", "4ms", "packets", "4")
	nper, ngap, nslots, nspan := slotStats(measure(t, p, n, pps, 3*time.Second))
	p.A.Run("tc", "-n", p.A.Name, "qdisc", "del", "dev", "a0", "root")
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{SlotMin: 2 * time.Millisecond, SlotMax: 4 * time.Millisecond, SlotPackets: 4}); err != nil {
		t.Fatal(err)
	}
	ss := measure(t, p, n, pps, 3*time.Second)
	eper, egap, eslots, espan := slotStats(ss)
	want := time.Duration(n/4-1) * 3 * time.Millisecond
	t.Logf("slot 2ms 4ms packets 4 (model span %v): netem %.2f packets per slot, mean gap %.2f ms, %d slots, span %v", want, nper, ngap, nslots, nspan)
	t.Logf("slot 2ms 4ms packets 4 (model span %v): EDT   %.2f packets per slot, mean gap %.2f ms, %d slots, span %v", want, eper, egap, eslots, espan)
	if len(ss) != n || math.Abs(float64(espan-want))/float64(want) > 0.15 {
		t.Errorf("EDT: %d of %d arrived over %v; want all, over %v +- 15%%", len(ss), n, espan, want)
	}
}
