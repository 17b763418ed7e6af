package impaird

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// Both directions (docs/impaird.md): a profile's direction picks the
// plan it goes into. The ingress plan is the XDP program's (as before);
// the egress plan goes into the port's egress instance (bpf.Port.Egress),
// whose tc egress program impaird attaches while the port's egress has
// work (egress impairment or an egress ACL) and takes off when not.

// egressCounterFields are the IMPAIRMENT_COUNTERS fields of the egress
// stage: the ingress fields' meaning, tx_-prefixed, in the same keys
// (<port> sums the port's slots, <port>|<rule> one rule).
var egressCounterFields = []string{"tx_packets", "tx_bytes", "tx_passed", "tx_dropped_loss", "tx_dropped_rate", "tx_corrupted"}

// egressCounterHash renders the egress stage's counters.
func egressCounterHash(c bpf.Counters) schema.Fields {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return schema.Fields{
		"tx_packets": u(c.RxPackets), "tx_bytes": u(c.RxBytes), "tx_passed": u(c.Passed),
		"tx_dropped_loss": u(c.DroppedLoss), "tx_dropped_rate": u(c.DroppedRate), "tx_corrupted": u(c.Corrupted),
	}
}

// compilePlans splits a port's profile and rules by direction and
// compiles the ingress plan (with the rules' EDT classes) and the egress
// plan. imp is the XDP part of IMPAIRMENT (see edtSplit), nil when none.
func compilePlans(imp *schema.Impairment, flows []schema.ImpairmentFlow, classes map[string]uint32) (in, eg *bpf.Plan, err error) {
	var inImp, egImp *schema.Impairment
	if imp != nil && imp.Direction.Ingress() {
		inImp = imp
	}
	if imp != nil && imp.Direction.Egress() {
		egImp = imp
	}
	var inFlows, egFlows []schema.ImpairmentFlow
	for _, f := range flows {
		if f.Direction.Ingress() {
			inFlows = append(inFlows, f)
		}
		if f.Direction.Egress() {
			egFlows = append(egFlows, f)
		}
	}
	if in, err = compilePlan(inImp, inFlows, classes); err != nil {
		return nil, nil, err
	}
	if eg, err = compilePlan(egImp, egFlows, nil); err != nil {
		return nil, nil, fmt.Errorf("egress: %w", err)
	}
	return in, eg, nil
}

// syncEgress applies the egress plan to the port's egress instance
// (loaded when the plan has something, or already there) and attaches
// the port's egress program to ifindex when it has work, detaching it
// (and dropping an empty egress instance) when not.
func (d *daemon) syncEgress(port string, p *bpf.Port, ifindex int, plan *bpf.Plan) error {
	if !plan.Empty() || p.HasEgress() {
		eg, err := p.Egress()
		if err != nil {
			return err
		}
		if err := d.apply(eg, plan); err != nil {
			// As for ingress: the last egress plan applied goes back.
			reason := "egress: " + err.Error()
			if last := d.egPlans[port]; last != nil {
				if rerr := d.apply(eg, last); rerr != nil {
					reason += "; restoring the previous configuration failed too: " + rerr.Error()
				} else {
					reason += keptSuffix
				}
			}
			return errors.New(reason)
		}
		d.egPlans[port] = plan
	}
	need, err := p.NeedsEgress()
	if err != nil {
		return err
	}
	if need {
		if err := d.k.do(func() error { return p.AttachEgress(ifindex) }); err != nil {
			return fmt.Errorf("attach the egress program to %s: %w", port, err)
		}
		return nil
	}
	if err := d.k.do(p.DetachEgress); err != nil {
		return fmt.Errorf("detach the egress program of %s: %w", port, err)
	}
	if p.HasEgress() {
		d.cfg.Log.WithField("port", port).Info("egress impairment removed")
	}
	delete(d.egPlans, port)
	return p.DropEgress()
}

// egressCounters adds the egress stage's counters of a port (when it has
// an egress instance) to want: the port key and each rule's key.
func egressCounters(port string, p *bpf.Port, want map[string]schema.Fields) error {
	if !p.HasEgress() {
		return nil
	}
	eg, err := p.Egress()
	if err != nil {
		return err
	}
	cs, err := eg.Counters()
	if err != nil {
		return fmt.Errorf("read egress counters of %s: %w", port, err)
	}
	var total bpf.Counters
	for name, c := range cs {
		total.Add(c)
		if name != "" && name != schedPortRule {
			merge(want, schema.CountersKey(schema.ImpairmentCountersTable, port+schema.ConfigSep+name), egressCounterHash(c))
		}
	}
	merge(want, schema.CountersKey(schema.ImpairmentCountersTable, port), egressCounterHash(total))
	return nil
}

func merge(want map[string]schema.Fields, key string, f schema.Fields) {
	h := want[key]
	if h == nil {
		h = schema.Fields{}
		want[key] = h
	}
	for k, v := range f {
		h[k] = v
	}
}
