package schema

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParseNetemModels: the fields of netem's remaining models at once
// (loss_corr, loss_model state p13..p14, duplicate, slot): an error is a
// *FieldError naming a given field (or p13, which state requires); an
// accepted profile round-trips and keeps the models' invariants
// (probabilities out of a state sum to at most 100, slot MIN <= MAX).
func FuzzParseNetemModels(f *testing.F) {
	f.Add("state", "", "", "3", "30", "20", "40", "1", "", "800us 1ms", "4", "", "")
	f.Add("random", "10", "25", "", "", "", "", "", "5", "", "", "", "")
	f.Add("state", "", "", "60", "", "", "", "50", "", "1ms 800us", "0", "1mb", "")
	f.Add("", "", "", "", "", "", "", "", "", "2ms 500us", "", "", "pareto")
	f.Fuzz(func(t *testing.T, model, loss, corr, p13, p31, p32, p23, p14, dup, slot, slotPkts, slotBytes, slotDist string) {
		in := Fields{}
		for k, v := range map[string]string{"loss_model": model, "loss": loss, "loss_corr": corr, "p13": p13, "p31": p31,
			"p32": p32, "p23": p23, "p14": p14, "duplicate": dup, "slot": slot, "slot_packets": slotPkts, "slot_bytes": slotBytes, "slot_distribution": slotDist} {
			if v != "" {
				in[k] = v
			}
		}
		r, err := ParseImpairment("Ethernet0", in)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("%v: error is not a *FieldError: %v", in, err)
			}
			if _, given := in[fe.Field]; !given && fe.Field != FieldP13 && fe.Field != FieldPeriod && fe.Field != FieldGEP && fe.Field != FieldGER {
				t.Fatalf("%v: error names field %q, not given: %v", in, fe.Field, err)
			}
			return
		}
		p := r.ImpairmentProfile
		if p.LossModel == LossState && (p.P13+p.P14 > 100 || p.P31+p.P32 > 100) {
			t.Fatalf("%v: accepted transition probabilities over 100: %+v", in, p)
		}
		if p.EDT.SlotMin > p.EDT.SlotMax || (p.EDT.SlotPackets > 0 && !p.EDT.Slotted()) ||
			(p.EDT.SlotDist != JitterUniform && (p.EDT.SlotJitter == 0 || p.EDT.SlotMax != 0)) {
			t.Fatalf("%v: accepted slot %+v", in, p.EDT)
		}
		again, err := ParseImpairment(r.Key(), r.Fields())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%v: round trip via %v: %+v, %v", in, r.Fields(), again, err)
		}
	})
}
