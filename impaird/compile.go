package impaird

import (
	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// The data plane (bpf/) has its own input types and does not know the
// schema: impaird translates parsed CONFIG_DB records into them here.

// compilePlan turns a port's parsed IMPAIRMENT (nil when it has none, or
// when what it has is not XDP's, see edtSplit) and IMPAIRMENT_FLOW rules
// into the port's plan. classes holds the EDT class id of each rule with
// delay/jitter/shaping (rule name -> 1..bpf.MaxEDTClass); a rule without
// EDT fields, or without an id, carries none.
func compilePlan(imp *schema.Impairment, flows []schema.ImpairmentFlow, classes map[string]uint32) (*bpf.Plan, error) {
	var port *bpf.Spec
	rules := make([]bpf.RuleSpec, 0, len(flows)+1)
	if imp != nil {
		s := xdpSpec(&imp.ImpairmentProfile)
		if imp.Schedule != "" {
			rules = append(rules, schedPortRuleSpec(s)) // schedule.go: steps without an RCU wait
		} else {
			port = &s
		}
	}
	for i := range flows {
		rules = append(rules, ruleSpec(&flows[i], classes[flows[i].Name]))
	}
	return bpf.Compile(port, rules)
}

// xdpSpec is the XDP part of a profile (loss, policer, corruption, seed)
// in bpf's form; the policer's burst default (schema.DefaultBurst) is
// resolved here. The EDT fields are not XDP's (see edt.go).
func xdpSpec(p *schema.ImpairmentProfile) bpf.Spec {
	s := bpf.Spec{
		Loss: p.Loss, GEP: p.GEP, GER: p.GER, GELossGood: p.GELossGood, GELossBad: p.GELossBad,
		Period: p.Period, Rate: p.Rate, Corrupt: p.Corrupt,
		LossCorr: p.LossCorr, P13: p.P13, P31: p.P31, P32: p.P32, P23: p.P23, P14: p.P14,
		Duplicate: p.Duplicate,
	}
	switch p.LossModel {
	case schema.LossState:
		s.LossModel = bpf.LossState
	case schema.LossGilbert:
		s.LossModel = bpf.LossGilbert
	case schema.LossPeriodic:
		s.LossModel = bpf.LossPeriodic
	default:
		s.LossModel = bpf.LossRandom
	}
	if p.Rate > 0 {
		s.Burst = p.EffectiveBurst()
	}
	if p.Seed != nil {
		seed := *p.Seed
		s.Seed = &seed
	}
	return s
}

// ruleSpec is an IMPAIRMENT_FLOW rule in bpf's form; edtClass is set only
// when the rule has an active delay/jitter/shape profile.
func ruleSpec(f *schema.ImpairmentFlow, edtClass uint32) bpf.RuleSpec {
	m := bpf.Match{
		Src: f.Src, Dst: f.Dst,
		Sport: portRange(f.Sport), Dport: portRange(f.Dport),
		VLAN: uint16(f.VLAN),
	}
	if f.Proto >= 0 {
		m.Proto, m.ProtoSet = uint8(f.Proto), true
	}
	if f.DSCP >= 0 {
		m.DSCP, m.DSCPSet = uint8(f.DSCP), true
	}
	r := bpf.RuleSpec{
		Name: f.Name, Priority: f.Priority, Match: m,
		Spec: xdpSpec(&f.ImpairmentProfile), ScopeFlow: f.Scope == schema.ScopeFlow,
	}
	if f.EDT.Active() {
		r.EDTClass = edtClass
	}
	return r
}

func portRange(r schema.PortRange) bpf.PortRange {
	return bpf.PortRange{Set: r.Set, Lo: r.Lo, Hi: r.Hi}
}
