package schema

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseImpairmentSchedule(t *testing.T) {
	s, err := ParseImpairmentSchedule("sat", Fields{
		FieldSteps: "0s loss 0 delay 30ms; 15s loss 2 delay 45ms;15.2s loss 0 ; 30s end", FieldLoop: "true"})
	if err != nil {
		t.Fatal(err)
	}
	want := ImpairmentSchedule{Name: "sat", Loop: true, End: 30 * time.Second, Steps: []ScheduleStep{
		{0, Fields{"loss": "0", "delay": "30ms"}},
		{15 * time.Second, Fields{"loss": "2", "delay": "45ms"}},
		{15200 * time.Millisecond, Fields{"loss": "0"}},
	}, chunks: []int{4}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if got := s.Fields()[FieldSteps]; got != "0s delay 30ms loss 0; 15s delay 45ms loss 2; 15200ms loss 0; 30s end" {
		t.Errorf("Fields: %q", got)
	}
	for _, c := range []struct {
		at          time.Duration
		step        int
		since, next time.Duration
	}{
		{0, 0, 0, 15 * time.Second},
		{15 * time.Second, 1, 15 * time.Second, 15200 * time.Millisecond},
		{29 * time.Second, 2, 15200 * time.Millisecond, 30 * time.Second},
		{30 * time.Second, 0, 30 * time.Second, 45 * time.Second},
		{61 * time.Second, 0, 60 * time.Second, 75 * time.Second},
	} {
		step, since, next := s.StepAt(c.at)
		if step != c.step || since != c.since || next != c.next {
			t.Errorf("StepAt(%v) = %d %v %v, want %d %v %v", c.at, step, since, next, c.step, c.since, c.next)
		}
	}
	s.Loop = false
	if step, _, next := s.StepAt(31 * time.Second); step != -1 || next != -1 {
		t.Errorf("past the end without loop: step %d next %v, want -1 -1", step, next)
	}
	s.End = 0
	if step, _, next := s.StepAt(time.Hour); step != 2 || next != -1 {
		t.Errorf("no end: step %d next %v, want 2 -1", step, next)
	}
}

func TestParseImpairmentScheduleErrors(t *testing.T) {
	for _, c := range []struct {
		f    Fields
		want string // substring of the error
	}{
		{Fields{}, `field "steps": a schedule needs steps`},
		{Fields{FieldSteps: "1s loss 1"}, `step 0: offset "1s": the first step is at 0s`},
		{Fields{FieldSteps: "0s loss 1; 1s loss abc"}, `field "steps": step 1: field "loss": "abc" is not valid: want a percentage`},
		{Fields{FieldSteps: "0s loss 1; 1s los 2"}, `step 1: unknown field "los"`},
		{Fields{FieldSteps: "0s loss 1; 1s schedule x"}, `step 1: unknown field "schedule"`},
		{Fields{FieldSteps: "0s loss 1; 1s loss"}, `step 1: field "loss" has no value`},
		{Fields{FieldSteps: "0s loss 1 loss 2"}, `step 0: field "loss" given twice`},
		{Fields{FieldSteps: "0s; 1s; 1.0005s"}, `step 2: offset "1.0005s": at least 1ms after the previous step (1s)`},
		{Fields{FieldSteps: "0s; 2s; 1s"}, `step 2: offset "1s": at least 1ms`},
		{Fields{FieldSteps: "0s; 2x"}, `step 1: offset "2x"`},
		{Fields{FieldSteps: "0s; 2s end; 3s"}, `step 2: a step after the end step`},
		{Fields{FieldSteps: "0s;;1s"}, `step 1: empty step`},
		{Fields{FieldSteps: "0s burst 20kb"}, `step 0: field "burst": burst needs rate`},
		{Fields{FieldSteps: "0s ge_p 1"}, `step 0: field "ge_p": ge_p needs loss_model gilbert`},
		{Fields{FieldSteps: "0s delay 20"}, `step 0: field "delay": needs a unit`},
		{Fields{FieldSteps: "0s", FieldLoop: "yes"}, `field "loop": "yes" is not valid: want true or false`},
		{Fields{FieldSteps: "0s; 1s loss 1", FieldLoop: "true"}, `loop needs an end step`},
		{Fields{FieldSteps: "0s", "steps_2": "1s"}, `field "steps_1": missing`},
		{Fields{FieldSteps: "0s loss 1", "steps_1": "1s loss 2; 2s rate x"}, `field "steps_1": step 2: field "rate"`},
	} {
		_, err := ParseImpairmentSchedule("s", c.f)
		var fe *FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want a FieldError containing %q", c.f, err, c.want)
		}
	}
	if _, err := ParseImpairmentSchedule("a b", Fields{FieldSteps: "0s"}); err == nil || !strings.Contains(err.Error(), "schedule name cannot contain") {
		t.Errorf("bad name: %v", err)
	}
}

func TestScheduleRef(t *testing.T) {
	r, err := ParseImpairment("Ethernet0", Fields{FieldSchedule: "sat", FieldLoss: "1"})
	if err != nil || r.Schedule != "sat" || r.Fields()[FieldSchedule] != "sat" {
		t.Fatalf("%+v %v", r, err)
	}
	fl, err := ParseImpairmentFlow("Ethernet0|v", Fields{FieldSchedule: "sat"})
	if err != nil || fl.Schedule != "sat" || fl.Fields()[FieldSchedule] != "sat" {
		t.Fatalf("%+v %v", fl, err)
	}
	if _, err := ParseImpairment("Ethernet0", Fields{FieldSchedule: "a|b"}); err == nil || !strings.Contains(err.Error(), `field "schedule"`) {
		t.Errorf("bad schedule name: %v", err)
	}
}

func TestApplyStep(t *testing.T) {
	base := Fields{FieldSchedule: "s", FieldLossModel: "gilbert", FieldGEP: "1", FieldGER: "20",
		FieldRate: "10mbit", FieldBurst: "30kb", FieldDelay: "10ms", FieldCorrupt: "1"}
	got := ApplyStep(base, Fields{FieldLoss: "2", FieldRate: "1mbit", FieldDelay: "40ms"})
	want := Fields{FieldSchedule: "s", FieldLoss: "2", FieldRate: "1mbit", FieldDelay: "40ms", FieldCorrupt: "1"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if _, err := ParseImpairment("Ethernet0", got); err != nil {
		t.Fatal(err)
	}
	state := Fields{FieldLossModel: "state", FieldP13: "5", FieldSlot: "10ms", FieldSlotPackets: "4"}
	got = ApplyStep(state, Fields{FieldLoss: "2", FieldLossCorr: "25", FieldSlot: "20ms"})
	if want := (Fields{FieldLoss: "2", FieldLossCorr: "25", FieldSlot: "20ms"}); !maps.Equal(got, want) {
		t.Fatalf("netem models: got %v want %v", got, want)
	}
	if _, err := ParseImpairment("Ethernet0", got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(ApplyStep(base, Fields{}), base) {
		t.Error("an empty step changed the base")
	}
}

func TestScheduleChunks(t *testing.T) {
	s := ImpairmentSchedule{Name: "long", Loop: true}
	for i := 0; i < 5000; i++ {
		s.Steps = append(s.Steps, ScheduleStep{At: time.Duration(i) * 10 * time.Millisecond,
			Fields: Fields{FieldDelay: "45ms", FieldLoss: "0.5", FieldRate: "10mbit"}})
	}
	s.End = 50 * time.Second
	f := s.Fields()
	if len(f) < 4 {
		t.Fatalf("5000 steps in %d fields: want the steps split over several", len(f))
	}
	for k, v := range f {
		if len(v) > MaxScheduleChunk {
			t.Errorf("field %s is %d bytes", k, len(v))
		}
	}
	back, err := ParseImpairmentSchedule("long", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Steps) != 5000 || back.End != s.End || !back.Loop || !maps.Equal(back.Fields(), f) {
		t.Fatalf("round trip: %d steps end %v", len(back.Steps), back.End)
	}
}

func TestParseTraceCSV(t *testing.T) {
	in := "# a satellite pass\ntime,delay,loss,rate\n10,30,0,10mbit\n10.5,32.5ms,0.1,\n11,32.5ms,0.1,\n11.25, 40 ,,\n12,,,\n"
	s, err := ParseTraceCSV(strings.NewReader(in), "pass", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []ScheduleStep{
		{0, Fields{"delay": "30ms", "loss": "0", "rate": "10mbit"}},
		{500 * time.Millisecond, Fields{"delay": "32.5ms", "loss": "0.1"}},
		{1250 * time.Millisecond, Fields{"delay": "40ms"}},
	}
	if !reflect.DeepEqual(s.Steps, want) || s.End != 2*time.Second || !s.Loop {
		t.Fatalf("got %+v end %v", s.Steps, s.End)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty file"},
		{"delay,loss\n", "no time column"},
		{"time,lost\n0,1\n", `column 2 "lost"`},
		{"time,loss\n0,1\n0.0001,2\n", "line 3: time 0.0001: at least 1ms"},
		{"time,loss\n0,1\nx,2\n", `line 3: time "x"`},
		{"time,loss\n0,1\n1,200\n", "line 3: column loss"},
		{"time,loss\n0,1\n1\n", "line 3: 1 cells"},
		{"time,loss\n0,1\n1,\n2,3\n", "line 4: a row after the end row"},
		{"time,loss\n", "no rows"},
		{"time,loss\n0,1\n1,2\n", ""}, // loop without end: checked below
	} {
		_, err := ParseTraceCSV(strings.NewReader(c.in), "x", false, 0)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
	if _, err := ParseTraceCSV(strings.NewReader("time,loss\n0,1\n1,2\n"), "x", true, 0); err == nil || !strings.Contains(err.Error(), "loop needs an end") {
		t.Errorf("loop without end: %v", err)
	}
	if s, err := ParseTraceCSV(strings.NewReader("time,loss\n0,1\n1,2\n"), "x", true, 5*time.Second); err != nil || s.End != 5*time.Second {
		t.Errorf("end given: %v %v", s.End, err)
	}
}

// FuzzScheduleSteps: any steps text either fails with a *FieldError
// naming the schedule, or parses to a schedule whose rendering parses
// back to the same steps.
func FuzzScheduleSteps(f *testing.F) {
	f.Add("0s loss 0 delay 30ms; 15s loss 2 delay 45ms; 15.2s loss 0; 30s end", "true", "")
	f.Add("0s rate 1mbit burst 20kb; 1ms loss_model gilbert ge_p 1 ge_r 2", "false", "5s shape 1mbit")
	f.Add("0s;1s;", "", "2s end")
	f.Fuzz(func(t *testing.T, steps, loop, more string) {
		in := Fields{FieldSteps: steps}
		if loop != "" {
			in[FieldLoop] = loop
		}
		if more != "" {
			in["steps_1"] = more
		}
		checkRoundTrip(t, TableImpairmentSchedule, "s", in)
	})
}

// FuzzTraceCSV: a trace either fails with an error or gives a schedule
// CONFIG_DB accepts.
func FuzzTraceCSV(f *testing.F) {
	f.Add("time,delay,loss,rate\n0,30,0,10mbit\n0.5,32.5ms,0.1,\n1,,,\n", true)
	f.Add("time,loss\n0,1\n1,2\n", false)
	f.Fuzz(func(t *testing.T, in string, loop bool) {
		s, err := ParseTraceCSV(strings.NewReader(in), "trace", loop, 0)
		if err != nil {
			return
		}
		if _, err := ParseImpairmentSchedule("trace", s.Fields()); err != nil {
			t.Fatalf("%q: accepted, but its fields do not parse: %v", in, err)
		}
	})
}
