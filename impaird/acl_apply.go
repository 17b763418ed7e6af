package impaird

import (
	"errors"
	"fmt"

	"github.com/switchyard-net/switchyard/bpf"
)

// aclNote records that port's ACL could not be applied at all: pending
// (its netdev is missing) or a port-level error (d.mu held). Nothing is
// recorded for a port without ACL tables.
func (d *daemon) aclNote(port string, tables map[bpf.ACLStage][]string, gens map[string]string, pending, err string) {
	if len(tables) == 0 {
		delete(d.acl.out, port)
		return
	}
	d.acl.out[port] = &aclPortOut{pending: pending, err: err, tables: tables, gens: gens}
}

// applyACL compiles and applies port's rule set of each stage on p (its
// program is attached to ifindex), attaching the tc egress program when
// the egress stage has rules and detaching it when nothing needs it any
// more. Rules the data plane cannot hold are left out and named in the
// outcome; the others apply (d.mu held).
func (d *daemon) applyACL(port string, p *bpf.Port, ifindex int, desired map[bpf.ACLStage][]bpf.ACLRule, tables map[bpf.ACLStage][]string, gens map[string]string) {
	out := &aclPortOut{stageErr: map[bpf.ACLStage]string{}, ruleErr: map[string]string{},
		stages: map[bpf.ACLStage]bool{}, tables: tables, gens: gens}
	applied := d.acl.applied[port]
	if applied == nil {
		applied = map[bpf.ACLStage]bool{}
		d.acl.applied[port] = applied
	}
	for _, stage := range []bpf.ACLStage{bpf.ACLIngress, bpf.ACLEgress} {
		rules := desired[stage]
		if len(rules) == 0 {
			// Unknown after a restart (absent): the pinned maps may hold a
			// rule set configured before, so it is cleared once.
			if has, known := applied[stage]; has || !known {
				if err := p.ApplyACL(stage, nil); err != nil {
					d.cfg.Log.WithError(err).WithField("port", port).Debug("remove ACL " + stage.String())
				} else {
					applied[stage] = false
				}
			}
			if attached, known := d.acl.egress[port]; stage == bpf.ACLEgress && (attached || !known) {
				if imp, _ := p.EgressActive(); imp {
					// the program stays for the egress impairment (egress.go
					// takes it off with the impairment)
					d.acl.egress[port] = false
				} else if err := d.k.do(p.DetachEgress); err != nil {
					d.cfg.Log.WithError(err).WithField("port", port).Debug("detach tc egress ACL program")
				} else {
					d.acl.egress[port] = false
				}
			}
			if len(tables[stage]) > 0 {
				out.stages[stage] = true // bound tables without rules: nothing to do
			}
			continue
		}
		plan, err := compileACL(rules, out.ruleErr)
		if err != nil {
			out.stageErr[stage] = "compile the " + stage.String() + " ACL: " + err.Error()
			continue
		}
		if stage == bpf.ACLEgress && !d.acl.egress[port] { // AttachEgress is idempotent: after a restart it adopts
			if err := d.k.do(func() error { return p.AttachEgress(ifindex) }); err != nil {
				out.stageErr[stage] = egressReason(err)
				continue
			}
			d.acl.egress[port] = true
		}
		if err := p.ApplyACL(stage, plan); err != nil {
			if stage == bpf.ACLEgress {
				out.stageErr[stage] = egressReason(err)
			} else {
				out.stageErr[stage] = "apply the ingress ACL: " + err.Error()
			}
			continue
		}
		applied[stage] = true
		out.stages[stage] = true
		d.cfg.Log.WithFields(map[string]any{"port": port, "stage": stage.String(), "rules": len(plan.Rules()),
			"prog_id": p.ProgramID()}).Debug("ACL applied")
	}
	d.acl.out[port] = out
}

// egressReason says why the egress stage is not applied.
func egressReason(err error) string {
	return "apply the egress ACL (tc clsact egress): " + err.Error()
}

// compileACL compiles rules, leaving out (and naming in bad, by ACL_RULE
// key) each rule the data plane refuses; an error that is not one rule's
// fails the whole stage.
func compileACL(rules []bpf.ACLRule, bad map[string]string) (*bpf.ACLPlan, error) {
	for len(rules) > 0 {
		plan, err := bpf.CompileACL(rules)
		var re *bpf.ACLRuleError
		if err == nil {
			return plan, nil
		}
		if !errors.As(err, &re) {
			return nil, err
		}
		n := len(rules)
		kept := rules[:0:0]
		for _, r := range rules {
			if aclRuleKey(r.Name) == aclRuleKey(re.Name) { // both halves of a split rule
				bad[aclRuleKey(r.Name)] = re.Reason
				continue
			}
			kept = append(kept, r)
		}
		if len(kept) == n {
			return nil, fmt.Errorf("data plane refused rule %q, which is not in the rule set: %w", re.Name, err)
		}
		rules = kept
	}
	return bpf.CompileACL(nil)
}

// teardownACL detaches port's egress program before its pins go.
func (d *daemon) teardownACL(port string, p *bpf.Port) {
	if d.acl.egress[port] && p != nil {
		if err := d.k.do(p.DetachEgress); err != nil {
			d.cfg.Log.WithError(err).WithField("port", port).Warn("detach tc egress ACL program")
		}
	}
	delete(d.acl.egress, port)
	delete(d.acl.applied, port)
}
