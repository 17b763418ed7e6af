package impaird

import (
	"fmt"
	"maps"

	"github.com/switchyard-net/switchyard/schema"
)

// Last good configuration. A bad update must not take down what runs: for
// each key impaird remembers the last fields that parsed (d.goodImp,
// d.goodFlows) and, while the key's current fields are invalid, applies
// those instead; the key's result is then state error, its reason the
// parse error plus keptSuffix. A key that never parsed is left out (it
// changes nothing). A deleted key is forgotten, so deleting a bad key
// removes its impairment as any delete does. For a plan that does not
// compile or apply, see reconcileLocked (the maps keep the previous
// plan). All of it is in memory: a restarted impaird knows no last good
// fields and treats a key invalid at start-up as never valid.

// keptSuffix ends the reason of a key whose invalid update was not
// applied while its previous configuration stays in place.
const keptSuffix = "; the previous configuration stays applied"

// parseImp returns the IMPAIRMENT of port to apply: its current hash when
// it parses (remembered as the last good one), else the last good hash
// (prev true); nil when the port has no key or it never parsed. err is
// the current hash's parse error (d.mu held).
func (d *daemon) parseImp(port string) (imp *schema.Impairment, prev bool, err error) {
	f, ok := d.imp[port]
	if !ok {
		delete(d.goodImp, port)
		return nil, false, nil
	}
	f, step := d.stepFields(f) // a schedule's current step over the base (schedule.go)
	r, err := schema.ParseImpairment(port, f)
	if err != nil && step != "" {
		err = fmt.Errorf("%s over this key's fields: %w", step, err)
	}
	if err == nil {
		d.goodImp[port] = maps.Clone(f)
		return &r, false, nil
	}
	g, ok := d.goodImp[port]
	if !ok {
		return nil, false, err
	}
	r, gerr := schema.ParseImpairment(port, g)
	if gerr != nil { // cannot happen: it parsed before
		delete(d.goodImp, port)
		return nil, false, err
	}
	return &r, true, err
}

// parseFlow is parseImp for the IMPAIRMENT_FLOW key of port (the key is
// configured: d.flows[port][key] exists).
func (d *daemon) parseFlow(port, key string) (flow *schema.ImpairmentFlow, prev bool, err error) {
	f, step := d.stepFields(d.flows[port][key]) // a schedule's current step over the base (schedule.go)
	r, err := schema.ParseImpairmentFlow(key, f)
	if err != nil && step != "" {
		err = fmt.Errorf("%s over this key's fields: %w", step, err)
	}
	if err == nil {
		if d.goodFlows[port] == nil {
			d.goodFlows[port] = map[string]schema.Fields{}
		}
		d.goodFlows[port][key] = maps.Clone(f)
		return &r, false, nil
	}
	g, ok := d.goodFlows[port][key]
	if !ok {
		return nil, false, err
	}
	r, gerr := schema.ParseImpairmentFlow(key, g)
	if gerr != nil {
		delete(d.goodFlows[port], key)
		return nil, false, err
	}
	return &r, true, err
}

// forgetGoneFlows drops the last good fields of port's IMPAIRMENT_FLOW
// keys that are no longer configured (d.mu held).
func (d *daemon) forgetGoneFlows(port string) {
	for key := range d.goodFlows[port] {
		if _, ok := d.flows[port][key]; !ok {
			delete(d.goodFlows[port], key)
		}
	}
	if len(d.goodFlows[port]) == 0 {
		delete(d.goodFlows, port)
	}
}

// keptResult is the result of a key running on its last good fields:
// state error with the parse error, and what became of the previous
// configuration (r: the result the port's configuration got).
func keptResult(parseErr error, r schema.Result) schema.Result {
	if r.State == schema.StateOK {
		return schema.Error(parseErr.Error() + keptSuffix)
	}
	return schema.Error(parseErr.Error() + "; the previous configuration is kept, " + string(r.State) + ": " + r.Reason)
}
