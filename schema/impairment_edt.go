package schema

// The EDT part of an impairment (delay, jitter, shaping, reordering):
// parsed here, next to the other impairment fields, and applied by
// impaird/edt (whose Profile, ParseFields and FieldError are aliases of
// these, so there is one parser).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Field names of the EDT impairment (IMPAIRMENT and IMPAIRMENT_FLOW).
const (
	FieldDelay              = "delay"
	FieldJitter             = "jitter"
	FieldJitterDistribution = "jitter_distribution"
	FieldShape              = "shape"
	FieldShapeLimit         = "shape_limit"
	FieldReorder            = "reorder"
	FieldSlot               = "slot"
	FieldSlotPackets        = "slot_packets"
	FieldSlotBytes          = "slot_bytes"
	FieldSlotDistribution   = "slot_distribution"
)

// EDTFields lists every field ParseEDTFields reads, in a stable order.
var EDTFields = []string{FieldDelay, FieldJitter, FieldJitterDistribution, FieldShape, FieldShapeLimit, FieldReorder,
	FieldSlot, FieldSlotPackets, FieldSlotBytes, FieldSlotDistribution}

// Limits of the accepted values.
const (
	// MaxEDTDelay bounds delay and jitter each: the fq horizon and the
	// packets held in the qdisc grow with it.
	MaxEDTDelay = 10 * time.Second
	// MaxShapeLimitTime bounds shape_limit given as a time.
	MaxShapeLimitTime = 10 * time.Second
	// DefaultShapeLimit is the shaping queue when shape_limit is absent:
	// 100 ms worth of the shaped rate (as a router's bufferbloat-free
	// default; tbf's "latency 100ms").
	DefaultShapeLimit = 100 * time.Millisecond
)

// JitterDistribution is a jitter distribution, named as netem names them.
type JitterDistribution uint8

// The jitter distributions. Uniform is the default (as netem without a
// distribution table): delay ± jitter, every value equally likely.
const (
	JitterUniform JitterDistribution = iota
	JitterNormal
	JitterPareto
	JitterParetoNormal
)

var jitterDistNames = []string{"uniform", "normal", "pareto", "paretonormal"}

// String returns netem's name of the distribution.
func (d JitterDistribution) String() string {
	if int(d) < len(jitterDistNames) {
		return jitterDistNames[d]
	}
	return "distribution(" + strconv.Itoa(int(d)) + ")"
}

// EDTProfile is the EDT part of a port's or class's impairment. The zero
// value delays and shapes nothing.
type EDTProfile struct {
	// Delay is added to every packet's departure time.
	Delay time.Duration
	// Jitter is the spread around Delay: uniform in [Delay-Jitter,
	// Delay+Jitter), or Jitter is the standard deviation's scale of the
	// netem table (normal, pareto, paretonormal). A negative sample
	// departs now.
	Jitter       time.Duration
	Distribution JitterDistribution
	// Shape is the shaping rate in bit/s (0 = no shaping): packets queue
	// and are paced out at this rate instead of being dropped.
	Shape uint64
	// ShapeLimitBytes, or else ShapeLimitTime, bounds the shaping queue;
	// a packet that would wait longer is tail-dropped. Both zero with
	// Shape set means DefaultShapeLimit.
	ShapeLimitBytes uint64
	ShapeLimitTime  time.Duration
	// Reorder lets jitter reorder packets of one flow (as netem does when
	// the jitter exceeds the packet gap). Off by default: a packet never
	// departs before the previous packet of its flow.
	Reorder bool
	// SlotMin and SlotMax are netem's slotting ("slot MIN [MAX]"):
	// packets leave only at slot times, the next slot opening a uniform
	// random time in [SlotMin, SlotMax] after the last one closed.
	// SlotMax == SlotMin without a MAX. Both zero: no slotting.
	SlotMin, SlotMax time.Duration
	// SlotDist, when not JitterUniform, is netem's distribution form
	// ("slot distribution normal DELAY JITTER"): the gap is DELAY +
	// table[rnd] x JITTER / 8192 (at least 0), with SlotDelay and
	// SlotJitter from slot; SlotMin and SlotMax are then 0.
	SlotDist              JitterDistribution
	SlotDelay, SlotJitter time.Duration
	// SlotPackets and SlotBytes cap what one slot releases (netem's
	// "packets N", "bytes N"); 0 = no cap.
	SlotPackets, SlotBytes uint64
	// Loss is channel loss in percent (0-100) applied after shaping, as
	// seed 004 §3.4 orders it. ParseEDTFields never sets it: the loss field
	// belongs to the schema, and impaird copies it here for a port whose
	// random loss must follow its shaping (see docs/edt.md).
	Loss float64
}

// Active reports whether the profile needs the EDT data path at all.
func (p EDTProfile) Active() bool {
	return p.Delay > 0 || p.Jitter > 0 || p.Shape > 0 || p.Slotted()
}

// Slotted reports whether the profile has netem's slotting.
func (p EDTProfile) Slotted() bool { return p.SlotMax > 0 || p.SlotDist != JitterUniform }

// QueueLimit is the longest a packet may wait in the shaping queue
// (ShapeLimitBytes converted at the Shape rate); 0 without shaping.
func (p EDTProfile) QueueLimit() time.Duration {
	switch {
	case p.Shape == 0:
		return 0
	case p.ShapeLimitBytes > 0:
		ns := float64(p.ShapeLimitBytes) * 8 * 1e9 / float64(p.Shape)
		return time.Duration(math.Min(ns, float64(math.MaxInt64/2)))
	case p.ShapeLimitTime > 0:
		return p.ShapeLimitTime
	}
	return DefaultShapeLimit
}

// EDTFieldError is an invalid EDT field: which field, its value and what an
// accepted value looks like. Its message suits a STATE_DB reason.
type EDTFieldError struct {
	Field, Value, Reason string
}

func (e *EDTFieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("field %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("field %s=%q: %s", e.Field, e.Value, e.Reason)
}

// ParseEDTFields reads the EDT fields out of an IMPAIRMENT or
// IMPAIRMENT_FLOW hash; other fields are ignored (they belong to the
// schema's parser). found reports whether any EDT field is present, so a
// caller knows whether the port needs fq and the tc program. Errors are
// *EDTFieldError; when several fields are wrong the first in EDTFields order
// is reported.
func ParseEDTFields(fields map[string]string) (p EDTProfile, found bool, err error) {
	for _, f := range EDTFields {
		if _, ok := fields[f]; ok {
			found = true
		}
	}
	if !found {
		return EDTProfile{}, false, nil
	}
	if v, ok := fields[FieldDelay]; ok {
		if p.Delay, err = parseEDTDuration(FieldDelay, v, MaxEDTDelay); err != nil {
			return EDTProfile{}, true, err
		}
	}
	if v, ok := fields[FieldJitter]; ok {
		if p.Jitter, err = parseEDTDuration(FieldJitter, v, MaxEDTDelay); err != nil {
			return EDTProfile{}, true, err
		}
	}
	if v, ok := fields[FieldJitterDistribution]; ok {
		d, ok := parseJitterDistribution(v)
		if !ok {
			return EDTProfile{}, true, &EDTFieldError{FieldJitterDistribution, v, "want one of " + strings.Join(jitterDistNames, ", ") + " (netem's names)"}
		}
		if _, has := fields[FieldJitter]; !has || p.Jitter == 0 {
			return EDTProfile{}, true, &EDTFieldError{FieldJitterDistribution, v, "needs a non-zero jitter (the distribution shapes the jitter)"}
		}
		p.Distribution = d
	}
	if v, ok := fields[FieldShape]; ok {
		r, ok := ParseRate(v)
		if !ok {
			return EDTProfile{}, true, &EDTFieldError{FieldShape, v, "want a rate such as 100mbit, 1.5gbit, 800kbit or 1000000 (bit/s); kbps/mbps/gbps are bytes/s as in tc"}
		}
		p.Shape = r
	}
	if v, ok := fields[FieldShapeLimit]; ok {
		if p.Shape == 0 {
			return EDTProfile{}, true, &EDTFieldError{FieldShapeLimit, v, "needs shape (the limit bounds the shaping queue)"}
		}
		if p.ShapeLimitBytes, p.ShapeLimitTime, err = parseShapeLimit(v); err != nil {
			return EDTProfile{}, true, err
		}
	}
	if err := parseSlot(fields, &p); err != nil {
		return EDTProfile{}, true, err
	}
	if v, ok := fields[FieldReorder]; ok {
		switch strings.ToLower(v) {
		case "true":
			p.Reorder = true
		case "false":
			p.Reorder = false
		default:
			return EDTProfile{}, true, &EDTFieldError{FieldReorder, v, "want true or false"}
		}
	}
	return p, true, nil
}

// Format renders p as the fields ParseEDTFields accepts (zero values
// omitted), so ParseEDTFields(p.Format()) == p.
func (p EDTProfile) Format() map[string]string {
	f := map[string]string{}
	if p.Delay > 0 {
		f[FieldDelay] = formatEDTDuration(p.Delay)
	}
	if p.Jitter > 0 {
		f[FieldJitter] = formatEDTDuration(p.Jitter)
		if p.Distribution != JitterUniform {
			f[FieldJitterDistribution] = p.Distribution.String()
		}
	}
	if p.Shape > 0 {
		f[FieldShape] = FormatRate(p.Shape)
		switch {
		case p.ShapeLimitBytes > 0:
			f[FieldShapeLimit] = strconv.FormatUint(p.ShapeLimitBytes, 10)
		case p.ShapeLimitTime > 0:
			f[FieldShapeLimit] = formatEDTDuration(p.ShapeLimitTime)
		}
	}
	if p.Reorder {
		f[FieldReorder] = "true"
	}
	if p.Slotted() {
		switch {
		case p.SlotDist != JitterUniform:
			f[FieldSlotDistribution] = p.SlotDist.String()
			f[FieldSlot] = formatEDTDuration(p.SlotDelay) + " " + formatEDTDuration(p.SlotJitter)
		case p.SlotMax != p.SlotMin:
			f[FieldSlot] = formatEDTDuration(p.SlotMin) + " " + formatEDTDuration(p.SlotMax)
		default:
			f[FieldSlot] = formatEDTDuration(p.SlotMin)
		}
		if p.SlotPackets > 0 {
			f[FieldSlotPackets] = strconv.FormatUint(p.SlotPackets, 10)
		}
		if p.SlotBytes > 0 {
			f[FieldSlotBytes] = strconv.FormatUint(p.SlotBytes, 10)
		}
	}
	return f
}

// MaxSlotPackets is the largest slot_packets (netem's is an int).
const MaxSlotPackets = 1<<31 - 1

// parseSlot reads slot ("MIN [MAX]", tc's units), slot_packets and
// slot_bytes.
func parseSlot(fields map[string]string, p *EDTProfile) error {
	v, ok := fields[FieldSlot]
	if !ok {
		for _, n := range []string{FieldSlotPackets, FieldSlotBytes, FieldSlotDistribution} {
			if x, has := fields[n]; has {
				return &EDTFieldError{n, x, "needs slot (it caps what one slot releases)"}
			}
		}
		return nil
	}
	parts := strings.Fields(v)
	var err error
	if d, has := fields[FieldSlotDistribution]; has {
		dist, ok := parseJitterDistribution(d)
		if !ok || dist == JitterUniform {
			return &EDTFieldError{FieldSlotDistribution, d, "want normal, pareto or paretonormal (netem's tables; without it slot is MIN [MAX], uniform)"}
		}
		if len(parts) != 2 {
			return &EDTFieldError{FieldSlot, v, "with slot_distribution, want DELAY JITTER such as 2ms 500us (as tc netem slot distribution)"}
		}
		if p.SlotDelay, err = parseEDTDuration(FieldSlot, parts[0], MaxEDTDelay); err != nil {
			return err
		}
		if p.SlotJitter, err = parseEDTDuration(FieldSlot, parts[1], MaxEDTDelay); err != nil {
			return err
		}
		if p.SlotJitter == 0 {
			return &EDTFieldError{FieldSlot, v, "with slot_distribution the JITTER must be more than 0"}
		}
		p.SlotDist = dist
		return parseSlotCaps(fields, p)
	}
	if len(parts) < 1 || len(parts) > 2 {
		return &EDTFieldError{FieldSlot, v, "want MIN_DELAY [MAX_DELAY] such as 800us or 800us 1ms (as tc netem slot)"}
	}
	if p.SlotMin, err = parseEDTDuration(FieldSlot, parts[0], MaxEDTDelay); err != nil {
		return err
	}
	p.SlotMax = p.SlotMin
	if len(parts) == 2 {
		if p.SlotMax, err = parseEDTDuration(FieldSlot, parts[1], MaxEDTDelay); err != nil {
			return err
		}
	}
	if p.SlotMax < p.SlotMin {
		return &EDTFieldError{FieldSlot, v, "MAX_DELAY is below MIN_DELAY"}
	}
	if p.SlotMax == 0 {
		return &EDTFieldError{FieldSlot, v, "a slot delay must be more than 0"}
	}
	return parseSlotCaps(fields, p)
}

// parseSlotCaps reads slot_packets and slot_bytes.
func parseSlotCaps(fields map[string]string, p *EDTProfile) error {
	if x, has := fields[FieldSlotPackets]; has {
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil || n < 1 || n > MaxSlotPackets || strings.HasPrefix(x, "+") {
			return &EDTFieldError{FieldSlotPackets, x, fmt.Sprintf("want packets per slot, 1 to %d", MaxSlotPackets)}
		}
		p.SlotPackets = n
	}
	if x, has := fields[FieldSlotBytes]; has {
		b, ok := ParseSize(x)
		if !ok || b > MaxSlotPackets {
			return &EDTFieldError{FieldSlotBytes, x, fmt.Sprintf("want bytes per slot (15000, 64kb, 1mb; 1 to %d)", MaxSlotPackets)}
		}
		p.SlotBytes = b
	}
	return nil
}

// edtDurationUnits are tc's time units (longest suffix first).
var edtDurationUnits = []struct {
	suffix string
	ns     float64
}{
	{"usecs", 1e3}, {"msecs", 1e6}, {"secs", 1e9}, {"usec", 1e3}, {"msec", 1e6}, {"sec", 1e9},
	{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9},
}

const edtDurationHint = "want a duration with a unit such as 50ms, 200us, 1.5ms or 1s (units ns, us, ms, s)"

// parseEDTDuration accepts a non-negative decimal with a tc time unit and
// returns it rounded to the nanosecond, at most max.
func parseEDTDuration(field, s string, max time.Duration) (time.Duration, error) {
	num, mult := strings.ToLower(strings.TrimSpace(s)), 0.0
	for _, u := range edtDurationUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.ns
			break
		}
	}
	if mult == 0 {
		if _, ok := parseUnsignedDecimal(num); ok {
			return 0, &EDTFieldError{field, s, "needs a unit: " + edtDurationHint}
		}
		return 0, &EDTFieldError{field, s, edtDurationHint}
	}
	x, ok := parseUnsignedDecimal(num)
	if !ok {
		return 0, &EDTFieldError{field, s, edtDurationHint}
	}
	ns := math.Round(x * mult)
	if ns > float64(max) {
		return 0, &EDTFieldError{field, s, "at most " + formatEDTDuration(max)}
	}
	if x > 0 && ns < 1 {
		return 0, &EDTFieldError{field, s, "below the 1ns resolution"}
	}
	return time.Duration(ns), nil
}

// parseShapeLimit accepts bytes ("15000", "64kb", "1mb"; k = 1024 as in
// tc) or a time ("100ms").
func parseShapeLimit(s string) (uint64, time.Duration, error) {
	if looksLikeEDTDuration(s) {
		d, err := parseEDTDuration(FieldShapeLimit, s, MaxShapeLimitTime)
		if err != nil {
			return 0, 0, err
		}
		if d == 0 {
			return 0, 0, &EDTFieldError{FieldShapeLimit, s, "must be more than 0"}
		}
		return 0, d, nil
	}
	b, ok := ParseSize(s)
	if !ok {
		return 0, 0, &EDTFieldError{FieldShapeLimit, s, fmt.Sprintf("want bytes (15000, 64kb, 1mb; 1 to %d) or a time (100ms)", MaxBurst)}
	}
	return b, 0, nil
}

// looksLikeEDTDuration: a decimal followed by a time unit.
func looksLikeEDTDuration(s string) bool {
	low := strings.ToLower(strings.TrimSpace(s))
	for _, u := range edtDurationUnits {
		if strings.HasSuffix(low, u.suffix) {
			_, ok := parseUnsignedDecimal(strings.TrimSuffix(low, u.suffix))
			return ok
		}
	}
	return false
}

func parseJitterDistribution(s string) (JitterDistribution, bool) {
	for i, n := range jitterDistNames {
		if strings.EqualFold(s, n) {
			return JitterDistribution(i), true
		}
	}
	return 0, false
}

// formatEDTDuration renders d exactly in the largest unit that divides it.
func formatEDTDuration(d time.Duration) string {
	for _, u := range []struct {
		suffix string
		ns     time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.ns == 0 {
			return strconv.FormatInt(int64(d/u.ns), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
