package impaird

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// TestEDTSplit: random loss of a shaping port moves to the EDT profile
// (after shaping); without shape, or with another loss model, it stays in
// XDP.
func TestEDTSplit(t *testing.T) {
	parse := func(f schema.Fields) *schema.Impairment {
		r, err := schema.ParseImpairment("Ethernet0", f)
		if err != nil {
			t.Fatal(err)
		}
		return &r
	}
	imp := parse(schema.Fields{"shape": "10mbit", "loss": "5", "delay": "1ms"})
	p, x := edtSplit(imp)
	if p.Loss != 5 || x.Loss != 0 || imp.Loss != 5 || p.Shape != 10e6 || p.Delay != time.Millisecond {
		t.Errorf("shape+loss: edt %+v, xdp loss %v (config loss %v)", p, x.Loss, imp.Loss)
	}
	imp = parse(schema.Fields{"delay": "1ms", "loss": "5"})
	if p, x := edtSplit(imp); p.Loss != 0 || x.Loss != 5 {
		t.Errorf("delay+loss: edt loss %v, xdp loss %v; want 0, 5", p.Loss, x.Loss)
	}
	imp = parse(schema.Fields{"shape": "10mbit", "loss_model": "periodic", "period": "3"})
	if p, x := edtSplit(imp); p.Loss != 0 || x.Period != 3 {
		t.Errorf("shape+periodic: edt loss %v, xdp period %v", p.Loss, x.Period)
	}
	if p, x := edtSplit(nil); p.Active() || x != nil {
		t.Errorf("nil: %+v %v", p, x)
	}
	if !imp.EDT.Active() || parse(schema.Fields{"delay": "0ms"}).EDT.Active() {
		t.Error("Active")
	}
}

func TestPortClass(t *testing.T) {
	for _, idx := range []int{1, 2, 4095, 1<<23 - 1} {
		id := portClass(idx)
		if id&portClassBase == 0 || id > 0xffffff || int(id&^portClassBase) != idx {
			t.Errorf("portClass(%d) = %#x", idx, id)
		}
	}
}

// TestFlowClass: a rule's class id is stable per key, below the per-port
// ids, distinct from the other rules' (collisions probe on), and the
// split moves random loss of a shaping rule to its EDT profile.
func TestFlowClass(t *testing.T) {
	s := newEDTState(nil)
	a := s.flowClass("Ethernet0|ping")
	if a == 0 || a >= portClassBase || s.flowClass("Ethernet0|ping") != a {
		t.Fatalf("class id %#x", a)
	}
	if again := newEDTState(nil).flowClass("Ethernet0|ping"); again != a {
		t.Errorf("not stable across states: %#x, %#x", a, again)
	}
	seen := map[uint32]bool{a: true}
	for i := 0; i < 2000; i++ {
		id := s.flowClass(fmt.Sprintf("Ethernet%d|r%d", i%8, i))
		if id == 0 || id >= portClassBase || seen[id] {
			t.Fatalf("rule %d: class id %#x (zero, per-port range or taken)", i, id)
		}
		seen[id] = true
	}
	// A collision probes to the next free id.
	s = newEDTState(nil)
	s.flowIDs["other"] = a
	if b := s.flowClass("Ethernet0|ping"); b == a || b == 0 || b >= portClassBase {
		t.Errorf("collision: %#x, other %#x", b, a)
	}

	r, err := schema.ParseImpairmentFlow("Ethernet0|v", schema.Fields{"shape": "10mbit", "loss": "5", "delay": "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	p := flowSplit(&r)
	if p.Loss != 5 || r.Loss != 0 || p.Shape != 10e6 || p.Delay != time.Millisecond {
		t.Errorf("shape+loss: edt %+v, xdp loss %v", p, r.Loss)
	}
	r, _ = schema.ParseImpairmentFlow("Ethernet0|v", schema.Fields{"delay": "1ms", "loss": "5"})
	if p := flowSplit(&r); p.Loss != 0 || r.Loss != 5 || !p.Active() {
		t.Errorf("delay+loss: edt %+v, xdp loss %v", p, r.Loss)
	}
}
