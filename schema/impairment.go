package schema

import (
	"net/netip"
	"strconv"
)

// LossModel is IMPAIRMENT's loss_model.
type LossModel string

// Loss models (seed 004): independent random loss, the Gilbert-Elliott
// two-state burst model, and "drop every Nth packet"; LossState (netem's
// 4-state model) is in impairment_models.go.
const (
	LossRandom   LossModel = "random"
	LossGilbert  LossModel = "gilbert"
	LossPeriodic LossModel = "periodic"
)

// FlowScope is IMPAIRMENT_FLOW's scope: one shared state for the whole
// class (rule) or an own Gilbert state and policer per 5-tuple (flow).
type FlowScope string

// Flow scopes.
const (
	ScopeRule FlowScope = "rule"
	ScopeFlow FlowScope = "flow"
)

// Limits and defaults of the impairment fields.
const (
	// MinBurst is the smallest policer burst: one full-size Ethernet frame
	// (a smaller bucket could never pass such a frame).
	MinBurst = 1514
	// DefaultBurstFrames is the floor of the default burst, in full-size
	// frames: the default burst is max(10 ms of rate, 10 x 1514 bytes).
	DefaultBurstFrames = 10
	// MaxFlowPriority is the highest IMPAIRMENT_FLOW priority.
	MaxFlowPriority = 65535
	// MaxFlowNameLen is the longest IMPAIRMENT_FLOW name.
	MaxFlowNameLen = 64
)

// Impairment field names (shared by IMPAIRMENT and IMPAIRMENT_FLOW).
const (
	FieldLoss       = "loss"
	FieldLossModel  = "loss_model"
	FieldGEP        = "ge_p"
	FieldGER        = "ge_r"
	FieldGELossGood = "ge_loss_good"
	FieldGELossBad  = "ge_loss_bad"
	FieldPeriod     = "period"
	FieldRate       = "rate"
	FieldBurst      = "burst"
	FieldCorrupt    = "corrupt"
	FieldSeed       = "seed"
)

// IMPAIRMENT_FLOW match and ordering field names.
const (
	FieldSrc      = "src"
	FieldDst      = "dst"
	FieldProto    = "proto"
	FieldSport    = "sport"
	FieldDport    = "dport"
	FieldDSCP     = "dscp"
	FieldFlowVLAN = "vlan"
	FieldPriority = "priority"
	FieldScope    = "scope"
)

// ImpairmentProfile is what happens to the packets of a port or a class.
// Probabilities are percentages 0-100. The zero value impairs nothing.
type ImpairmentProfile struct {
	Loss      float64   // random loss, percent
	LossModel LossModel // random (default), gilbert or periodic
	// Gilbert-Elliott: per-packet transition probabilities good->bad (P)
	// and bad->good (R), and the loss in each state, all percent.
	GEP, GER, GELossGood, GELossBad float64
	Period                          uint64  // periodic: drop every Nth packet
	Rate                            uint64  // policer rate in bit/s; 0 = no policer
	Burst                           uint64  // policer bucket in bytes; 0 = DefaultBurst(Rate)
	Corrupt                         float64 // percent of packets with one bit flipped in the L4 payload
	Seed                            *uint64 // nil = seeded from the kernel's RNG
	// LossCorr is netem's loss correlation (percent, loss_model random):
	// each packet's random number leans on the previous one (see
	// docs/impaird.md for what that does to the loss rate).
	LossCorr float64
	// P13, P31, P32, P23, P14 are the transition probabilities (percent)
	// of loss_model state, netem's 4-state Markov model.
	P13, P31, P32, P23, P14 float64
	// Duplicate is the percent of passed packets delivered twice.
	Duplicate float64
	// Direction is where loss, policing and corruption act: "" (ingress,
	// the default), egress or both (impairment_direction.go).
	Direction Direction
	// EDT is delay, jitter, shaping and reordering (per port on
	// IMPAIRMENT, per class on IMPAIRMENT_FLOW), applied by tc on egress
	// (impaird/edt); the zero value is none.
	EDT EDTProfile
}

// Impairment is an IMPAIRMENT entry: the profile of packets arriving on Port.
type Impairment struct {
	Port string
	// Schedule names the IMPAIRMENT_SCHEDULE whose current step overrides
	// the profile's fields ("" = none; schedule.go).
	Schedule string
	ImpairmentProfile
}

// PortRange is an inclusive L4 port range; the zero value (0-0 with Set
// false) matches any port.
type PortRange struct {
	Set    bool
	Lo, Hi uint16
}

// ImpairmentFlow is an IMPAIRMENT_FLOW entry "port|name": a class of
// traffic arriving on Port with its own profile.
type ImpairmentFlow struct {
	Port, Name string
	Src, Dst   netip.Prefix // invalid = any
	Proto      int          // IP protocol number; -1 = any
	Sport      PortRange
	Dport      PortRange
	DSCP       int // 0-63; -1 = any
	VLAN       int // outer 802.1Q VID 1-4094; 0 = any
	Priority   int // higher wins; ties go to the smaller name
	Scope      FlowScope
	Schedule   string // IMPAIRMENT_SCHEDULE name, "" = none (schedule.go)
	ImpairmentProfile
}

// DefaultBurst is the policer burst used when burst is absent: 10 ms worth
// of rate, but at least DefaultBurstFrames full-size frames.
func DefaultBurst(rate uint64) uint64 {
	b := rate / 800 // bit/s x 10 ms / 8 bits per byte
	if min := uint64(DefaultBurstFrames * MinBurst); b < min {
		b = min
	}
	return b
}

// EffectiveBurst is Burst, or DefaultBurst(Rate) when Burst is 0.
func (p *ImpairmentProfile) EffectiveBurst() uint64 {
	if p.Burst != 0 {
		return p.Burst
	}
	return DefaultBurst(p.Rate)
}

// Table implements Record.
func (r Impairment) Table() string { return TableImpairment }

// Key implements Record.
func (r Impairment) Key() string { return r.Port }

// Fields implements Record.
func (r Impairment) Fields() Fields {
	f := Fields{}
	if r.Schedule != "" {
		f[FieldSchedule] = r.Schedule
	}
	return withNull(r.ImpairmentProfile.fields(f))
}

// Table implements Record.
func (r ImpairmentFlow) Table() string { return TableImpairmentFlow }

// Key implements Record.
func (r ImpairmentFlow) Key() string { return r.Port + ConfigSep + r.Name }

// Fields implements Record.
func (r ImpairmentFlow) Fields() Fields {
	f := Fields{}
	if r.Src.IsValid() {
		f[FieldSrc] = r.Src.String()
	}
	if r.Dst.IsValid() {
		f[FieldDst] = r.Dst.String()
	}
	if r.Proto >= 0 {
		f[FieldProto] = protoName(r.Proto)
	}
	if r.Sport.Set {
		f[FieldSport] = r.Sport.String()
	}
	if r.Dport.Set {
		f[FieldDport] = r.Dport.String()
	}
	if r.DSCP >= 0 {
		f[FieldDSCP] = strconv.Itoa(r.DSCP)
	}
	if r.VLAN != 0 {
		f[FieldFlowVLAN] = strconv.Itoa(r.VLAN)
	}
	if r.Priority != 0 {
		f[FieldPriority] = strconv.Itoa(r.Priority)
	}
	if r.Scope == ScopeFlow {
		f[FieldScope] = string(ScopeFlow)
	}
	if r.Schedule != "" {
		f[FieldSchedule] = r.Schedule
	}
	return withNull(r.ImpairmentProfile.fields(f))
}

// String renders the range as "N" or "N-M".
func (p PortRange) String() string {
	if p.Lo == p.Hi {
		return strconv.Itoa(int(p.Lo))
	}
	return strconv.Itoa(int(p.Lo)) + "-" + strconv.Itoa(int(p.Hi))
}

// Contains reports whether port is in the range (any port when not Set).
func (p PortRange) Contains(port uint16) bool { return !p.Set || (port >= p.Lo && port <= p.Hi) }

// Impairs reports whether the profile changes any packet at all.
func (p *ImpairmentProfile) Impairs() bool {
	switch p.LossModel {
	case LossGilbert:
		if p.GELossBad > 0 || p.GELossGood > 0 {
			return true
		}
	case LossPeriodic:
		return true
	case LossState:
		if p.P13 > 0 || p.P14 > 0 {
			return true
		}
	default:
		if p.Loss > 0 {
			return true
		}
	}
	return p.Rate > 0 || p.Corrupt > 0 || p.Duplicate > 0
}

func withNull(f Fields) Fields {
	if len(f) == 0 {
		f[NullField] = NullField
	}
	return f
}

func (p *ImpairmentProfile) fields(f Fields) Fields {
	pct := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch p.LossModel {
	case LossGilbert:
		f[FieldLossModel] = string(LossGilbert)
		f[FieldGEP] = pct(p.GEP)
		f[FieldGER] = pct(p.GER)
		f[FieldGELossGood] = pct(p.GELossGood)
		f[FieldGELossBad] = pct(p.GELossBad)
	case LossPeriodic:
		f[FieldLossModel] = string(LossPeriodic)
		f[FieldPeriod] = strconv.FormatUint(p.Period, 10)
	default:
		if p.Loss != 0 {
			f[FieldLoss] = pct(p.Loss)
		}
	}
	if p.Rate != 0 {
		f[FieldRate] = FormatRate(p.Rate)
		if p.Burst != 0 {
			f[FieldBurst] = strconv.FormatUint(p.Burst, 10)
		}
	}
	if p.Corrupt != 0 {
		f[FieldCorrupt] = pct(p.Corrupt)
	}
	if p.Seed != nil {
		f[FieldSeed] = strconv.FormatUint(*p.Seed, 10)
	}
	p.modelsFields(f)
	if p.Direction == DirEgress || p.Direction == DirBoth {
		f[FieldDirection] = string(p.Direction)
	}
	for k, v := range p.EDT.Format() {
		f[k] = v
	}
	return f
}
