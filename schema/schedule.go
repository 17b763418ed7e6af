package schema

// IMPAIRMENT_SCHEDULE: impairment profiles that change over time. The
// grammar of the steps field (docs/impaird.md, "Schedules"):
//
//	steps  = step *( ";" step ) [ ";" ]
//	step   = offset *( SP name SP value )     ; a profile step
//	       / offset SP "end"                  ; last only: where the cycle ends
//	offset = decimal unit                     ; ns, us, ms, s: "0s", "15.2s", "250ms"
//
// Offsets count from the start of the cycle: the first step is at 0s, each
// later one at least MinScheduleStep after the previous one. name/value
// are IMPAIRMENT's profile fields, parsed by IMPAIRMENT's parser. A long
// schedule continues in the fields steps_1, steps_2, … (each value at most
// MaxScheduleChunk bytes, the engine's 64 KiB value limit); the steps are
// the concatenation steps;steps_1;steps_2;…

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TableImpairmentSchedule is the CONFIG_DB table of schedules.
const TableImpairmentSchedule = "IMPAIRMENT_SCHEDULE"

// IMPAIRMENT_SCHEDULE fields, and IMPAIRMENT's / IMPAIRMENT_FLOW's field
// naming the schedule a key follows.
const (
	FieldSteps    = "steps"
	FieldLoop     = "loop"
	FieldSchedule = "schedule"
)

// Limits of a schedule.
const (
	// MaxScheduleSteps bounds the steps of one schedule (a recorded trace
	// of an hour at 50 ms per row fits).
	MaxScheduleSteps = 100000
	// MaxScheduleChunks is how many steps fields (steps, steps_1, …) a
	// schedule may have: the engine accepts 1,024 fields per key.
	MaxScheduleChunks = 1000
	// MaxScheduleChunk is the largest value Format writes into one steps
	// field (the engine refuses values above 64 KiB).
	MaxScheduleChunk = 60000
	// MinScheduleStep is the shortest step: a boundary is applied within
	// about 100 µs, so shorter steps would be mostly error.
	MinScheduleStep = time.Millisecond
	// MaxScheduleOffset bounds offsets (a week).
	MaxScheduleOffset = 7 * 24 * time.Hour
)

// ScheduleStep is one step: from At (since the cycle's start) the
// profile's fields are overridden by Fields, until the next step.
type ScheduleStep struct {
	At     time.Duration
	Fields Fields // IMPAIRMENT profile fields, as given
}

// ImpairmentSchedule is an IMPAIRMENT_SCHEDULE entry.
type ImpairmentSchedule struct {
	Name  string
	Steps []ScheduleStep
	// End is where the cycle ends (the "end" step); 0 = no end: the last
	// step lasts for ever.
	End time.Duration
	// Loop restarts at step 0 at End.
	Loop bool
	// chunks is how many steps (the end step included) each steps field
	// held when parsed, so Fields renders the same fields; nil = split at
	// MaxScheduleChunk.
	chunks []int
}

// scheduleGroups are fields that go together: a step naming any field of
// a group replaces the base profile's whole group (so a step "loss 2" over
// a gilbert base is random loss 2 %, and "rate 1mbit" drops the base's
// burst). (A new field that depends on another belongs in its group.)
var scheduleGroups = [][]string{
	{FieldLoss, FieldLossModel, FieldGEP, FieldGER, FieldGELossGood, FieldGELossBad, FieldPeriod,
		FieldLossCorr, FieldP13, FieldP31, FieldP32, FieldP23, FieldP14},
	{FieldRate, FieldBurst},
	{FieldShape, FieldShapeLimit},
	{FieldJitter, FieldJitterDistribution},
	{FieldSlot, FieldSlotPackets, FieldSlotBytes, FieldSlotDistribution},
}

// ApplyStep returns base with step's fields laid over it: a step field
// replaces the base's field and every base field of its group
// (scheduleGroups); the schedule field itself stays.
func ApplyStep(base, step Fields) Fields {
	out := make(Fields, len(base)+len(step))
	for k, v := range base {
		out[k] = v
	}
	for name := range step {
		for _, g := range scheduleGroups {
			if slices.Contains(g, name) {
				for _, n := range g {
					delete(out, n)
				}
			}
		}
	}
	for k, v := range step {
		out[k] = v
	}
	return out
}

// Table implements Record.
func (s ImpairmentSchedule) Table() string { return TableImpairmentSchedule }

// Key implements Record.
func (s ImpairmentSchedule) Key() string { return s.Name }

// Fields implements Record: steps (and steps_1, … when longer than
// MaxScheduleChunk) and loop.
func (s ImpairmentSchedule) Fields() Fields {
	f := Fields{}
	var parts []string
	for _, st := range s.Steps {
		parts = append(parts, FormatStep(st))
	}
	if s.End > 0 {
		parts = append(parts, formatEDTDuration(s.End)+" end")
	}
	if len(s.chunks) > 0 && sum(s.chunks) == len(parts) {
		i := 0
		for c, n := range s.chunks {
			name := FieldSteps
			if c > 0 {
				name += "_" + strconv.Itoa(c)
			}
			f[name] = strings.Join(parts[i:i+n], "; ")
			i += n
		}
		if s.Loop {
			f[FieldLoop] = "true"
		}
		return f
	}
	chunk, n := "", 0
	flush := func() {
		name := FieldSteps
		if n > 0 {
			name = FieldSteps + "_" + strconv.Itoa(n)
		}
		f[name] = chunk
		chunk, n = "", n+1
	}
	for _, p := range parts {
		if chunk != "" && len(chunk)+2+len(p) > MaxScheduleChunk {
			flush()
		}
		if chunk != "" {
			chunk += "; "
		}
		chunk += p
	}
	flush()
	if s.Loop {
		f[FieldLoop] = "true"
	}
	return f
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// FormatStep renders one step as the steps grammar writes it (fields
// sorted by name).
func FormatStep(st ScheduleStep) string {
	var b strings.Builder
	b.WriteString(formatEDTDuration(st.At))
	names := make([]string, 0, len(st.Fields))
	for k := range st.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(" ")
		b.WriteString(k)
		b.WriteString(" ")
		b.WriteString(st.Fields[k])
	}
	return b.String()
}

// StepAt returns the index of the step in effect at offset t since the
// start (cycling when Loop), the offset since the start at which it began,
// and the offset of the next boundary (-1: none, the step lasts). Past the
// end of a schedule that does not loop the step is -1: the schedule is
// over and the base profile applies.
func (s *ImpairmentSchedule) StepAt(t time.Duration) (step int, since, next time.Duration) {
	var base time.Duration
	if s.End > 0 && t >= s.End {
		if !s.Loop {
			return -1, s.End, -1
		}
		base = t / s.End * s.End
		t -= base
	}
	i := sort.Search(len(s.Steps), func(i int) bool { return s.Steps[i].At > t }) - 1
	if i < 0 {
		i = 0
	}
	since = base + s.Steps[i].At
	switch {
	case i+1 < len(s.Steps):
		next = base + s.Steps[i+1].At
	case s.End > 0:
		next = base + s.End
	default:
		next = -1
	}
	return i, since, next
}

func init() {
	RegisterTable(TableImpairmentSchedule, func(k string, f Fields) (Record, error) {
		return wrap(ParseImpairmentSchedule(k, f))
	})
}

// scheduleChunkFields are the names of the steps fields in order.
func scheduleChunkFields() []string {
	names := make([]string, MaxScheduleChunks)
	names[0] = FieldSteps
	for i := 1; i < MaxScheduleChunks; i++ {
		names[i] = FieldSteps + "_" + strconv.Itoa(i)
	}
	return names
}

var scheduleFieldNames = append(scheduleChunkFields(), FieldLoop)

// ParseImpairmentSchedule parses and validates an IMPAIRMENT_SCHEDULE
// entry. Every error names the field, the step (numbered from 0) and the
// step's own field.
func ParseImpairmentSchedule(key string, f Fields) (ImpairmentSchedule, error) {
	var zero ImpairmentSchedule
	t := TableImpairmentSchedule
	if p := flowNameProblem(key); p != "" {
		return zero, keyError(t, key, strings.Replace(p, "flow name", "schedule name", 1), "a name such as leo-handover")
	}
	s := ImpairmentSchedule{Name: key}
	if v, ok := f[FieldLoop]; ok {
		switch v {
		case "true":
			s.Loop = true
		case "false":
		default:
			return zero, valueError(t, key, FieldLoop, v, "true or false")
		}
	}
	if _, ok := f[FieldSteps]; !ok {
		return zero, fieldError(t, key, FieldSteps, "", "a schedule needs steps", "steps such as \"0s loss 0; 15s loss 2 delay 45ms; 30s end\"")
	}
	// Continuation fields must be contiguous: steps_3 without steps_2 is
	// a loader's accident.
	chunks := 1
	for name := range f {
		rest, ok := strings.CutPrefix(name, FieldSteps+"_")
		if !ok {
			continue
		}
		n, ok := impDigits(rest)
		if !ok || n < 1 || n >= MaxScheduleChunks || strconv.Itoa(n) != rest {
			continue // not a name of the table: ignored (and warned about) as in every table
		}
		if n+1 > chunks {
			chunks = n + 1
		}
	}
	for i := 1; i < chunks; i++ {
		if _, ok := f[FieldSteps+"_"+strconv.Itoa(i)]; !ok {
			return zero, fieldError(t, key, FieldSteps+"_"+strconv.Itoa(i), "", fmt.Sprintf("missing: steps_%d exists, the steps fields must be contiguous", chunks-1), "")
		}
	}
	var prev time.Duration
	index := 0
	for c := 0; c < chunks; c++ {
		field := FieldSteps
		if c > 0 {
			field += "_" + strconv.Itoa(c)
		}
		texts := strings.Split(f[field], ";")
		if n := len(texts); n > 1 && strings.TrimSpace(texts[n-1]) == "" {
			texts = texts[:n-1] // a trailing ";"
		}
		s.chunks = append(s.chunks, len(texts))
		for _, text := range texts {
			stepErr := func(reason, allowed string) error {
				return fieldError(t, key, field, strings.TrimSpace(text), fmt.Sprintf("step %d: %s", index, reason), allowed)
			}
			if s.End > 0 {
				return zero, stepErr("a step after the end step", "end as the last step only")
			}
			if len(s.Steps) >= MaxScheduleSteps {
				return zero, stepErr(fmt.Sprintf("more than %d steps", MaxScheduleSteps), "")
			}
			words := strings.Fields(text)
			if len(words) == 0 {
				return zero, stepErr("empty step", "an offset such as 15s and then name value pairs")
			}
			at, err := parseEDTDuration("offset", words[0], MaxScheduleOffset)
			if err != nil {
				return zero, stepErr(fmt.Sprintf("offset %q: %s", words[0], err.(*EDTFieldError).Reason), "")
			}
			switch {
			case index == 0 && at != 0:
				return zero, stepErr(fmt.Sprintf("offset %q: the first step is at 0s", words[0]), "")
			case index > 0 && at < prev+MinScheduleStep:
				return zero, stepErr(fmt.Sprintf("offset %q: at least %s after the previous step (%s)", words[0], MinScheduleStep, formatEDTDuration(prev)), "")
			}
			prev = at
			if len(words) == 2 && words[1] == "end" {
				if index == 0 {
					return zero, stepErr("end cannot be the first step", "")
				}
				s.End = at
				index++
				continue
			}
			if len(words)%2 == 0 {
				return zero, stepErr(fmt.Sprintf("field %q has no value", words[len(words)-1]), "name value pairs")
			}
			st := ScheduleStep{At: at, Fields: Fields{}}
			for i := 1; i < len(words); i += 2 {
				name, v := words[i], words[i+1]
				if !slices.Contains(profileFields(), name) {
					return zero, stepErr(fmt.Sprintf("unknown field %q", name), "one of "+strings.Join(profileFields(), ", "))
				}
				if _, dup := st.Fields[name]; dup {
					return zero, stepErr(fmt.Sprintf("field %q given twice", name), "")
				}
				st.Fields[name] = v
			}
			var p ImpairmentProfile
			if err := parseProfile(TableImpairment, key, st.Fields, map[string]bool{}, &p); err != nil {
				fe := err.(*FieldError)
				reason := fe.Reason
				if reason == "" {
					reason = fmt.Sprintf("%q is not valid", Clip(fe.Value))
				}
				return zero, stepErr(fmt.Sprintf("field %q: %s", fe.Field, reason), fe.Allowed)
			}
			s.Steps = append(s.Steps, st)
			index++
		}
	}
	if s.Loop && s.End == 0 {
		return zero, fieldError(t, key, FieldLoop, "true", "loop needs an end step (e.g. \"…; 30s end\"): where the cycle restarts", "")
	}
	return s, nil
}

// profileFields are the fields a step may set: IMPAIRMENT's profile
// fields, not schedule, nor direction (it moves the profile between hooks:
// it is the key's, and a step acts on the key's hooks).
func profileFields() []string { return stepFieldNames }

var stepFieldNames = slices.DeleteFunc(knownFields(TableImpairment), func(n string) bool {
	return n == FieldSchedule || n == FieldDirection
})

// parseScheduleRef reads the schedule field of an IMPAIRMENT or
// IMPAIRMENT_FLOW key.
func parseScheduleRef(t, key string, f Fields, used map[string]bool) (string, error) {
	v, ok := f[FieldSchedule]
	used[FieldSchedule] = true
	if !ok {
		return "", nil
	}
	if p := flowNameProblem(v); p != "" {
		return "", fieldError(t, key, FieldSchedule, v, strings.Replace(p, "flow name", "schedule name", 1), "the name of an IMPAIRMENT_SCHEDULE key")
	}
	return v, nil
}
