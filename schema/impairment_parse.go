package schema

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func init() {
	RegisterTable(TableImpairment, func(k string, f Fields) (Record, error) { return wrap(ParseImpairment(k, f)) })
	RegisterTable(TableImpairmentFlow, func(k string, f Fields) (Record, error) { return wrap(ParseImpairmentFlow(k, f)) })
}

// ParseImpairment parses and validates an IMPAIRMENT entry.
func ParseImpairment(key string, f Fields) (Impairment, error) {
	var zero Impairment
	t := TableImpairment
	if p := impPortProblem(key); p != "" {
		return zero, keyError(t, key, p, "a port name such as Ethernet0")
	}
	r := Impairment{Port: key}
	used := map[string]bool{}
	var err error
	if r.Schedule, err = parseScheduleRef(t, key, f, used); err != nil {
		return zero, err
	}
	if err := parseProfile(t, key, f, used, &r.ImpairmentProfile); err != nil {
		return zero, err
	}
	if err := parseDirection(t, key, f, used, &r.ImpairmentProfile, false); err != nil {
		return zero, err
	}
	if err := unknownFields(t, key, f, used); err != nil {
		return zero, err
	}
	return r, nil
}

// ParseImpairmentFlow parses and validates an IMPAIRMENT_FLOW entry
// "port|name".
func ParseImpairmentFlow(key string, f Fields) (ImpairmentFlow, error) {
	var zero ImpairmentFlow
	t := TableImpairmentFlow
	parts := strings.Split(key, ConfigSep)
	const allowed = "port|name, e.g. Ethernet0|video"
	if len(parts) != 2 {
		return zero, keyError(t, key, "key needs exactly two parts", allowed)
	}
	if p := impPortProblem(parts[0]); p != "" {
		return zero, keyError(t, key, p, allowed)
	}
	if p := flowNameProblem(parts[1]); p != "" {
		return zero, keyError(t, key, p, allowed)
	}
	r := ImpairmentFlow{Port: parts[0], Name: parts[1], Proto: -1, DSCP: -1, Scope: ScopeRule}
	used := map[string]bool{}
	get := func(name string) (string, bool) {
		v, ok := f[name]
		used[name] = true
		return v, ok
	}
	if v, ok := get(FieldSrc); ok {
		p, reason := parseMatchPrefix(v)
		if reason != "" {
			return zero, fieldError(t, key, FieldSrc, v, reason, matchPrefixAllowed)
		}
		r.Src = p
	}
	if v, ok := get(FieldDst); ok {
		p, reason := parseMatchPrefix(v)
		if reason != "" {
			return zero, fieldError(t, key, FieldDst, v, reason, matchPrefixAllowed)
		}
		r.Dst = p
	}
	if r.Src.IsValid() && r.Dst.IsValid() && r.Src.Addr().Is4() != r.Dst.Addr().Is4() {
		return zero, fieldError(t, key, FieldDst, f[FieldDst], "src and dst are of different address families", "")
	}
	if v, ok := get(FieldProto); ok {
		p, ok := parseProto(v)
		if !ok {
			return zero, valueError(t, key, FieldProto, v, "tcp, udp, icmp, icmpv6 or a protocol number 0-255")
		}
		r.Proto = p
		fam := r.Family()
		if (p == 1 && fam == 6) || (p == 58 && fam == 4) {
			return zero, fieldError(t, key, FieldProto, v, "protocol does not match the address family of src/dst", "")
		}
	}
	for _, pf := range []struct {
		name string
		dst  *PortRange
	}{{FieldSport, &r.Sport}, {FieldDport, &r.Dport}} {
		v, ok := get(pf.name)
		if !ok {
			continue
		}
		pr, ok := parsePortRange(v)
		if !ok {
			return zero, valueError(t, key, pf.name, v, "a port N or a range N-M with 0 <= N <= M <= 65535")
		}
		if r.Proto != 6 && r.Proto != 17 {
			return zero, fieldError(t, key, pf.name, v, "ports need proto tcp or udp", "")
		}
		*pf.dst = pr
	}
	if v, ok := get(FieldDSCP); ok {
		n, ok := impDigits(v)
		if !ok || n > 63 {
			return zero, valueError(t, key, FieldDSCP, v, "an integer 0-63")
		}
		r.DSCP = n
	}
	if v, ok := get(FieldFlowVLAN); ok {
		n, ok := impDigits(v)
		if !ok || n < MinVlanID || n > MaxVlanID {
			return zero, valueError(t, key, FieldFlowVLAN, v, "a VLAN ID 1-4094")
		}
		r.VLAN = n
	}
	if v, ok := get(FieldPriority); ok {
		n, ok := impDigits(v)
		if !ok || n > MaxFlowPriority {
			return zero, valueError(t, key, FieldPriority, v, "an integer 0-65535 (higher wins)")
		}
		r.Priority = n
	}
	if v, ok := get(FieldScope); ok {
		switch FlowScope(v) {
		case ScopeRule, ScopeFlow:
			r.Scope = FlowScope(v)
		default:
			return zero, valueError(t, key, FieldScope, v, "rule or flow")
		}
	}
	var err error
	if r.Schedule, err = parseScheduleRef(t, key, f, used); err != nil {
		return zero, err
	}
	if err := parseProfile(t, key, f, used, &r.ImpairmentProfile); err != nil {
		return zero, err
	}
	if err := parseDirection(t, key, f, used, &r.ImpairmentProfile, true); err != nil {
		return zero, err
	}
	if err := unknownFields(t, key, f, used); err != nil {
		return zero, err
	}
	return r, nil
}

// Family is 4 or 6 when src, dst or proto pin the address family, else 0.
func (r ImpairmentFlow) Family() int {
	for _, p := range []netip.Prefix{r.Src, r.Dst} {
		if p.IsValid() {
			if p.Addr().Is4() {
				return 4
			}
			return 6
		}
	}
	switch r.Proto {
	case 1:
		return 4
	case 58:
		return 6
	}
	return 0
}

// parseProfile reads the impairment fields of f into p, marking them used.
func parseProfile(t, key string, f Fields, used map[string]bool, p *ImpairmentProfile) error {
	// Delay, jitter, shaping and reordering: one parser for both tables
	// (per port on IMPAIRMENT, per class on IMPAIRMENT_FLOW).
	e, _, err := ParseEDTFields(f)
	if err != nil {
		fe := err.(*EDTFieldError)
		return fieldError(t, key, fe.Field, fe.Value, fe.Reason, "")
	}
	for _, name := range EDTFields {
		used[name] = true
	}
	p.EDT = e
	get := func(name string) (string, bool) {
		v, ok := f[name]
		used[name] = true
		return v, ok
	}
	pctField := func(name string, dst *float64) error {
		v, ok := get(name)
		if !ok {
			return nil
		}
		x, ok := parsePercent(v)
		if !ok {
			return valueError(t, key, name, v, "a percentage 0-100, decimals allowed (e.g. 0.5)")
		}
		*dst = x
		return nil
	}
	p.LossModel = LossRandom
	if v, ok := get(FieldLossModel); ok {
		switch LossModel(v) {
		case LossRandom, LossGilbert, LossPeriodic, LossState:
			p.LossModel = LossModel(v)
		default:
			return valueError(t, key, FieldLossModel, v, "random, gilbert, periodic or state")
		}
	}
	p.GELossBad = 100
	for _, pf := range []struct {
		name string
		dst  *float64
	}{{FieldLoss, &p.Loss}, {FieldGEP, &p.GEP}, {FieldGER, &p.GER},
		{FieldGELossGood, &p.GELossGood}, {FieldGELossBad, &p.GELossBad}, {FieldCorrupt, &p.Corrupt}} {
		if err := pctField(pf.name, pf.dst); err != nil {
			return err
		}
	}
	// Fields of one loss model given with another are mistakes worth naming.
	wrongModel := func(name string, want LossModel) error {
		if _, ok := f[name]; ok && p.LossModel != want {
			return fieldError(t, key, name, f[name], fmt.Sprintf("%s needs loss_model %s (loss_model is %s)", name, want, p.LossModel), "")
		}
		return nil
	}
	for _, n := range []string{FieldGEP, FieldGER, FieldGELossGood, FieldGELossBad} {
		if err := wrongModel(n, LossGilbert); err != nil {
			return err
		}
	}
	if err := wrongModel(FieldPeriod, LossPeriodic); err != nil {
		return err
	}
	if err := wrongModel(FieldLoss, LossRandom); err != nil {
		return err
	}
	if p.LossModel != LossGilbert {
		p.GELossBad = 0
	}
	switch p.LossModel {
	case LossGilbert:
		for _, n := range []string{FieldGEP, FieldGER} {
			if _, ok := f[n]; !ok {
				return fieldError(t, key, n, "", "loss_model gilbert needs ge_p and ge_r", "a percentage 0-100")
			}
		}
	case LossPeriodic:
		v, ok := get(FieldPeriod)
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil || n < 1 || strings.HasPrefix(v, "+") {
			return valueError(t, key, FieldPeriod, v, "an integer N >= 1 (drop every Nth packet)")
		}
		p.Period = n
	}
	if err := parseModels(t, key, f, used, p); err != nil {
		return err
	}
	if v, ok := get(FieldRate); ok {
		r, ok := ParseRate(v)
		if !ok {
			return valueError(t, key, FieldRate, v, "a rate such as 100mbit, 1.5gbit, 800kbit or 1000000 (bit/s); kbps/mbps/gbps are bytes/s as in tc")
		}
		p.Rate = r
	}
	if v, ok := get(FieldBurst); ok {
		if p.Rate == 0 {
			return fieldError(t, key, FieldBurst, v, "burst needs rate", "")
		}
		b, ok := ParseSize(v)
		if !ok {
			return valueError(t, key, FieldBurst, v, "a size in bytes such as 32kb, 1mb or 15000 (kb = 1024 bytes as in tc)")
		}
		if b < MinBurst {
			return fieldError(t, key, FieldBurst, v, fmt.Sprintf("burst is smaller than one full-size frame (%d bytes)", MinBurst), "")
		}
		p.Burst = b
	}
	if v, ok := get(FieldSeed); ok {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil || strings.HasPrefix(v, "+") {
			return valueError(t, key, FieldSeed, v, "an unsigned 64-bit integer")
		}
		p.Seed = &s
	}
	return nil
}

// unknownFields rejects fields of the table that the parse did not read.
// A name the table does not define at all (a typo such as "los") is not an
// error: as in every table it is ignored, and UnknownFields names it for
// the result's warning.
func unknownFields(t, key string, f Fields, used map[string]bool) error {
	var unknown []string
	known := knownFields(t)
	for name := range f {
		if !used[name] && name != NullField && slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fieldError(t, key, unknown[0], f[unknown[0]], "unknown field", "one of "+strings.Join(knownFields(t), ", "))
}

func knownFields(t string) []string {
	names := []string{FieldLoss, FieldLossModel, FieldGEP, FieldGER, FieldGELossGood, FieldGELossBad,
		FieldPeriod, FieldRate, FieldBurst, FieldCorrupt, FieldSeed, FieldDirection}
	names = append(names, modelFields...)
	names = append(names, EDTFields...)
	names = append(names, FieldSchedule) // not a step field (schedule.go)
	if t == TableImpairmentFlow {
		names = append([]string{FieldSrc, FieldDst, FieldProto, FieldSport, FieldDport, FieldDSCP,
			FieldFlowVLAN, FieldPriority, FieldScope}, names...)
	}
	return names
}
