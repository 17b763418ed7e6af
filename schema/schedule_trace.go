package schema

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// ParseTraceCSV turns a recorded trace into a schedule named name:
//
//	time,delay,loss,rate
//	0,30,0,10mbit
//	0.5,32.5,0.1,9mbit
//	1.0,,,          <- a row with only a time: the end of the trace
//
// The header names the columns: time (seconds, decimal; required) and any
// IMPAIRMENT profile field (delay, loss, rate, jitter, shape, …), in any
// order. Cells are IMPAIRMENT values, parsed by the same parser, except
// that a bare number in delay or jitter is milliseconds (traces are
// usually so). An empty cell leaves the field to the base profile for
// that row. Times count from the first row's (which becomes 0s) and must
// increase by at least MinScheduleStep. A last row with a time and no
// values is the end step; end > 0 sets or overrides it. A row equal to the
// one before is merged into it. Errors name the line and the column.
func ParseTraceCSV(r io.Reader, name string, loop bool, end time.Duration) (ImpairmentSchedule, error) {
	var zero ImpairmentSchedule
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return zero, fmt.Errorf("trace: empty file: want a header such as time,delay,loss,rate")
	}
	if err != nil {
		return zero, fmt.Errorf("trace: %w", err)
	}
	timeCol := -1
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		header[i] = h
		switch {
		case h == "time":
			timeCol = i
		case !slices.Contains(profileFields(), h):
			return zero, fmt.Errorf("trace: line 1: column %d %q: want time or an IMPAIRMENT field (%s)", i+1, Clip(h), strings.Join(profileFields(), ", "))
		case slices.Index(header[:i], h) >= 0:
			return zero, fmt.Errorf("trace: line 1: column %q given twice", h)
		}
	}
	if timeCol < 0 {
		return zero, fmt.Errorf("trace: line 1: no time column: want a header such as time,delay,loss,rate")
	}
	s := ImpairmentSchedule{Name: name, Loop: loop}
	var first, prev float64
	rows := 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return zero, fmt.Errorf("trace: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return zero, fmt.Errorf("trace: line %d: %d cells, the header has %d", line, len(rec), len(header))
		}
		if s.End > 0 {
			return zero, fmt.Errorf("trace: line %d: a row after the end row (a row with only a time ends the trace)", line)
		}
		tv := strings.TrimSpace(rec[timeCol])
		secs, ok := parseUnsignedDecimal(tv)
		if !ok {
			return zero, fmt.Errorf("trace: line %d: time %q: want seconds as a decimal such as 12.5", line, Clip(tv))
		}
		if rows == 0 {
			first = secs
		}
		at := time.Duration(math.Round((secs - first) * 1e9))
		if rows > 0 && at < time.Duration(math.Round((prev-first)*1e9))+MinScheduleStep {
			return zero, fmt.Errorf("trace: line %d: time %s: at least %s after the previous row's (%s)", line, tv, MinScheduleStep, formatSecs(prev))
		}
		if at > MaxScheduleOffset {
			return zero, fmt.Errorf("trace: line %d: time %s: at most %s after the first row", line, tv, MaxScheduleOffset)
		}
		prev = secs
		rows++
		st := ScheduleStep{At: at, Fields: Fields{}}
		for i, v := range rec {
			v = strings.TrimSpace(v)
			if i == timeCol || v == "" {
				continue
			}
			if (header[i] == FieldDelay || header[i] == FieldJitter) && isBareDecimal(v) {
				v += "ms"
			}
			st.Fields[header[i]] = v
		}
		if len(st.Fields) == 0 && rows > 1 {
			s.End = at
			continue
		}
		var p ImpairmentProfile
		if err := parseProfile(TableImpairment, name, st.Fields, map[string]bool{}, &p); err != nil {
			fe := err.(*FieldError)
			col := fe.Field
			msg := fe.Reason
			if msg == "" {
				msg = fmt.Sprintf("%q is not valid", Clip(fe.Value))
			}
			if fe.Allowed != "" {
				msg += ": want " + fe.Allowed
			}
			return zero, fmt.Errorf("trace: line %d: column %s: %s", line, col, msg)
		}
		if n := len(s.Steps); n > 0 && maps.Equal(s.Steps[n-1].Fields, st.Fields) {
			continue
		}
		if len(s.Steps) >= MaxScheduleSteps {
			return zero, fmt.Errorf("trace: line %d: more than %d distinct steps", line, MaxScheduleSteps)
		}
		s.Steps = append(s.Steps, st)
	}
	if len(s.Steps) == 0 {
		return zero, fmt.Errorf("trace: no rows after the header")
	}
	if end > 0 {
		if last := s.Steps[len(s.Steps)-1].At; end < last+MinScheduleStep {
			return zero, fmt.Errorf("trace: end %s: at least %s after the last row (%s)", end, MinScheduleStep, formatEDTDuration(last))
		}
		s.End = end
	}
	if loop && s.End == 0 {
		return zero, fmt.Errorf("trace: loop needs an end: add a last row with only a time, or give the end")
	}
	// The result must be what CONFIG_DB accepts.
	if _, err := ParseImpairmentSchedule(name, s.Fields()); err != nil {
		return zero, err
	}
	return s, nil
}

func isBareDecimal(s string) bool { _, ok := parseUnsignedDecimal(s); return ok }

func formatSecs(x float64) string { return fmt.Sprintf("%gs", x) }
