package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseDirection: direction on IMPAIRMENT and IMPAIRMENT_FLOW, its
// canonical form (ingress is the zero value) and its precise errors.
func TestParseDirection(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Direction
	}{{"", ""}, {"ingress", ""}, {"egress", DirEgress}, {"both", DirBoth}} {
		f := Fields{"loss": "30"}
		if tc.in != "" {
			f[FieldDirection] = tc.in
		}
		r, err := ParseImpairment("Ethernet0", f)
		if err != nil || r.Direction != tc.want {
			t.Fatalf("%v: %+v, %v; want direction %q", f, r.Direction, err, tc.want)
		}
		if r.Direction.Ingress() != (tc.in != "egress") || r.Direction.Egress() != (tc.in == "egress" || tc.in == "both") {
			t.Fatalf("%q: Ingress %v Egress %v", tc.in, r.Direction.Ingress(), r.Direction.Egress())
		}
		if _, has := r.Fields()[FieldDirection]; has != (tc.want != "") {
			t.Fatalf("%q: canonical fields %v", tc.in, r.Fields())
		}
		fl, err := ParseImpairmentFlow("Ethernet0|v", f)
		if err != nil || fl.Direction != tc.want {
			t.Fatalf("flow %v: %+v, %v", f, fl.Direction, err)
		}
	}
	for _, tc := range []struct {
		table string
		key   string
		in    Fields
		msg   string
	}{
		{TableImpairment, "Ethernet0", Fields{"direction": "out"}, "ingress, egress or both"},
		{TableImpairment, "Ethernet0", Fields{"direction": "Egress"}, "ingress, egress or both"},
		{TableImpairment, "Ethernet0", Fields{"direction": "egress", "duplicate": "1"}, "duplicate acts on ingress only"},
		{TableImpairmentFlow, "Ethernet0|v", Fields{"direction": "both", "delay": "10ms"}, "assigned on ingress"},
	} {
		_, err := Parse(tc.table, tc.key, tc.in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != FieldDirection || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s %v: %v; want a direction error with %q", tc.table, tc.in, err, tc.msg)
		}
	}
	// a port's delay stays where EDT puts it: direction egress is fine
	if _, err := ParseImpairment("Ethernet0", Fields{"direction": "egress", "delay": "10ms", "loss": "1"}); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseDirection: direction with the fields it interacts with: an
// error is a *FieldError naming a given field; an accepted record
// round-trips and never has duplicate (or, on a rule, delay) outside
// ingress.
func FuzzParseDirection(f *testing.F) {
	f.Add("egress", "30", "", "", "")
	f.Add("both", "", "1", "", "10ms")
	f.Add("ingress", "5", "", "2", "")
	f.Add("sideways", "", "", "", "")
	f.Fuzz(func(t *testing.T, dir, loss, dup, corrupt, delay string) {
		in := Fields{}
		for k, v := range map[string]string{"direction": dir, "loss": loss, "duplicate": dup, "corrupt": corrupt, "delay": delay} {
			if v != "" {
				in[k] = v
			}
		}
		for _, key := range []string{"Ethernet0", "Ethernet0|v"} {
			table := TableImpairment
			if strings.Contains(key, "|") {
				table = TableImpairmentFlow
			}
			rec, err := Parse(table, key, in)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("%v: error is not a *FieldError: %v", in, err)
				}
				if _, given := in[fe.Field]; !given {
					t.Fatalf("%v: error names field %q, not given: %v", in, fe.Field, err)
				}
				continue
			}
			var p ImpairmentProfile
			switch r := rec.(type) {
			case Impairment:
				p = r.ImpairmentProfile
			case ImpairmentFlow:
				p = r.ImpairmentProfile
				if p.Direction.Egress() && p.EDT.Active() {
					t.Fatalf("%v: rule with delay accepted on egress", in)
				}
			}
			if p.Direction.Egress() && p.Duplicate > 0 {
				t.Fatalf("%v: duplicate accepted on egress", in)
			}
			again, err := Parse(table, rec.Key(), rec.Fields())
			if err != nil || !reflect.DeepEqual(again, rec) {
				t.Fatalf("%v: round trip via %v: %+v, %v", in, rec.Fields(), again, err)
			}
		}
	})
}

// TestDirectionNotAStepField: a schedule step cannot change direction (it
// is the key's); a key with a direction follows a schedule on its hooks.
func TestDirectionNotAStepField(t *testing.T) {
	_, err := ParseImpairmentSchedule("s", Fields{"steps": "0s loss 1 direction egress"})
	var fe *FieldError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), `unknown field "direction"`) {
		t.Fatalf("step with direction: %v; want an unknown-field error", err)
	}
	r, err := ParseImpairment("Ethernet0", ApplyStep(Fields{"schedule": "s", "direction": "egress"}, Fields{"loss": "1"}))
	if err != nil || r.Direction != DirEgress || r.Loss != 1 {
		t.Fatalf("step over an egress key: %+v, %v", r, err)
	}
}
