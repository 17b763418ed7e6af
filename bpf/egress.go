package bpf

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"
)

// Egress impairment (docs/impaird.md, "Both directions"): a port's egress
// profile and IMPAIRMENT_FLOW rules live in a second instance of the
// collection, its egress instance, pinned in Dir/egress: its own masks,
// matches, per-slot counters, policer and flow state, and its config at
// key cfgEgress of its own cfg, which the tc egress program (egress.h)
// reads after the egress ACL stage. The instance reuses the port's ACL
// maps (map replacement at load), so its egress program is the port's one
// egress program: AttachEgress attaches it for the egress ACL and the
// egress impairment alike.
const (
	// cfgEgress is the key of cfg the egress stage reads (CFG_EGRESS).
	cfgEgress uint32 = 1
	// egressDir is the egress instance's pin directory inside the port's.
	egressDir = "egress"
)

// Egress returns the port's egress instance, loading it on first use (pins
// in Dir/egress, reused across restarts; none for an unpinned port). Apply,
// Counters, Profiles and Rules on it are the egress stage's. Loading it
// does not attach anything; AttachEgress does.
func (p *Port) Egress() (*Port, error) {
	if p.egress != nil {
		return p.egress, nil
	}
	if p.cfgKey != 0 {
		return nil, fmt.Errorf("port %s: an egress instance has no egress instance", p.Dir)
	}
	dir := ""
	if p.Dir != "" {
		dir = filepath.Join(p.Dir, egressDir)
	}
	o := &p.objs
	repl := map[string]*ebpf.Map{
		"acl_hdrs": o.AclHdrs, "acl_hdr_proto": o.AclHdrProto,
		"acl_rules4": o.AclRules4, "acl_rules4_proto": o.AclRules4Proto,
		"acl_rules6": o.AclRules6, "acl_rules6_proto": o.AclRules6Proto,
		"acl_cnts": o.AclCnts, "acl_names": o.AclNames,
	}
	e, err := load(dir, repl, cfgEgress)
	if err != nil {
		return nil, fmt.Errorf("egress instance: %w", err)
	}
	p.egress = e
	return e, nil
}

// HasEgress says whether the port's egress instance is loaded (by Egress,
// or by Load finding its pins).
func (p *Port) HasEgress() bool { return p.egress != nil }

// EgressActive says whether the egress instance has a configuration (an
// egress profile or rules), i.e. whether the egress program has
// impairment work to do.
func (p *Port) EgressActive() (bool, error) {
	if p.egress == nil {
		return false, nil
	}
	_, ok, err := p.egress.readCfg()
	return ok, err
}

// DropEgress removes the egress instance and its pins (after its
// configuration was emptied and no egress program of it is attached).
func (p *Port) DropEgress() error {
	if p.egress == nil {
		return nil
	}
	err := p.egress.Remove()
	p.egress = nil
	return err
}

// Empty says the plan configures nothing (no port profile, no rules).
func (pl *Plan) Empty() bool { return pl == nil || (pl.Port == nil && len(pl.Rules) == 0) }

// NeedsEgress says whether the port's egress program has work: an egress
// ACL rule set or an egress impairment configuration. impaird attaches
// the program (AttachEgress) exactly when it does.
func (p *Port) NeedsEgress() (bool, error) {
	if _, ok, err := p.readACLHdr(ACLEgress); err != nil || ok {
		return ok, err
	}
	return p.EgressActive()
}
