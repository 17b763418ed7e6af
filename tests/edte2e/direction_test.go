package edte2e

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/impaird/edt"
)

// TestEDTWithEgressLoss (VM: fq): the port's egress program (egress
// impairment, clsact prio 0xac) and EDT's egress filter (prio 0xed, fq
// root) on one port: loss 30 on egress drops ~30% of what A sends, every
// packet that passes is still delayed by EDT's 20 ms; removing EDT leaves
// the egress program (and its clsact) in place, detaching it then
// removes clsact.
func TestEDTWithEgressLoss(t *testing.T) {
	requireKernel(t)
	const n, pps, delay = 3000, 2000, 20 * time.Millisecond
	p := newPair(t)
	in := installer(t, p)
	if err := in.Apply("a0", edt.Profile{Delay: delay}); err != nil {
		t.Fatal(err)
	}
	port, err := bpf.Load("")
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	eg, err := port.Egress()
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(3)
	plan, err := bpf.Compile(&bpf.Spec{Loss: 30, Seed: &seed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eg.Apply(plan); err != nil {
		t.Fatal(err)
	}
	if err := p.A.Do(func() error {
		l, err := netlink.LinkByName("a0")
		if err != nil {
			return err
		}
		return port.AttachEgress(l.Attrs().Index)
	}); err != nil {
		t.Fatal(err)
	}
	e := summarize(measure(t, p, n, pps, 2*time.Second))
	loss := 100 * (1 - float64(e.n)/n)
	t.Logf("egress loss 30 + EDT 20ms: %.2f%% lost; %v", loss, e)
	if math.Abs(loss-30) > 5 {
		t.Errorf("%.2f%% lost, want 30 +- 5", loss)
	}
	if e.n > 0 && e.min < delay {
		t.Errorf("a packet arrived after %v: every passed packet must still be delayed >= %v", e.min, delay)
	}
	c, err := eg.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if pc := c[""]; pc.RxPackets < n || pc.RxPackets != pc.Passed+pc.DroppedLoss {
		t.Errorf("egress counters %+v: want all %d sent packets, passed + dropped", pc, n)
	}
	if err := in.Remove("a0"); err != nil {
		t.Fatal(err)
	}
	filters := p.A.Run("tc", "-n", p.A.Name, "filter", "show", "dev", "a0", "egress")
	if !strings.Contains(filters, bpf.ACLFilterName) {
		t.Fatalf("EDT removed: egress filters %q, want the egress program to stay", filters)
	}
	if err := p.A.Do(port.DetachEgress); err != nil {
		t.Fatal(err)
	}
	if q := p.A.Run("tc", "-n", p.A.Name, "qdisc", "show", "dev", "a0"); strings.Contains(q, "clsact") {
		t.Fatalf("both gone: qdiscs %q, want no clsact", q)
	}
}
