package impaird

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// badKeysPort is the work item of the keys with an empty port part
// (IMPAIRMENT|, IMPAIRMENT_FLOW||name): one item, so the result of such a
// key is written, and removed after DEL, by the same reconcile.
const badKeysPort = "\x00"

// outcome collects the results of one port's keys.
type outcome struct {
	results map[string]schema.Fields // STATE_DB key -> owned fields
}

func (o *outcome) set(table, key string, r schema.Result, extra schema.Fields) {
	f := r.Fields()
	for k, v := range extra {
		f[k] = v
	}
	o.results[schema.ResultKey(table, key)] = f
}

// reconcile makes one port's XDP program and maps match its CONFIG_DB
// entries and reports the results. A positive retry asks to look again
// later (netdev missing, foreign program); an error is retried with backoff.
//
// The port "" and the names setConfig gives keys without a port part
// ("\x00" + key) all stand for badKeysPort, whose keys only get errors.
func (d *daemon) reconcile(ctx context.Context, port string) (time.Duration, error) {
	if port == "" || strings.HasPrefix(port, badKeysPort) {
		port = badKeysPort
	}
	d.ensureSchedules(ctx, port) // schedule.go: a step, not the base, when impaird starts
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refresh(port)
	out := &outcome{results: map[string]schema.Fields{}}
	retry, err := d.reconcileLocked(port, out)
	if d.edt != nil && port != badKeysPort {
		// Delay/jitter/shaping span ports (marked at ingress, timed at
		// every egress): the whole namespace is brought in line.
		d.waitStep(port)
		if eerr := d.syncEDT(); eerr != nil && err == nil {
			err = eerr
		}
		key := schema.ResultKey(schema.TableImpairment, port)
		if r, ok := out.results[key]; ok && r[schema.FieldState] == string(schema.StateOK) {
			if eerr := d.edt.errs[port]; eerr != nil {
				out.set(schema.TableImpairment, port, schema.Error("delay/jitter/shaping: "+eerr.Error()), nil)
			}
		}
		for key, eerr := range d.edt.flowErrs {
			rk := schema.ResultKey(schema.TableImpairmentFlow, key)
			if r, ok := out.results[rk]; ok && r[schema.FieldState] == string(schema.StateOK) {
				out.set(schema.TableImpairmentFlow, key, schema.Error("delay/jitter/shaping: "+eerr.Error()), nil)
			}
		}
	}
	d.scheduleResults(port, out)
	if werr := d.writeResults(ctx, port, out); werr != nil && err == nil {
		err = werr
	}
	d.aclPortResults(port)
	return retry, err
}

// reconcileLocked applies port's keys (d.mu held). Keys with invalid
// fields run on their last good fields (lastgood.go). A plan that does not
// compile leaves the maps as they are; one that fails to apply is
// replaced by the last plan applied (d.plans): either way the previous
// configuration stays, and the results say so.
func (d *daemon) reconcileLocked(port string, out *outcome) (time.Duration, error) {
	cfgPort := port
	if port == badKeysPort {
		cfgPort = "" // IMPAIRMENT_FLOW keys without a port part
	}
	flowKeys := make([]string, 0, len(d.flows[cfgPort]))
	for k := range d.flows[cfgPort] {
		flowKeys = append(flowKeys, k)
	}
	sort.Strings(flowKeys)
	d.forgetGoneFlows(cfgPort)

	// Parse: an invalid key runs on its last good fields (kept: its parse
	// error, by result key) or, when it never parsed, is left out.
	kept := map[string]error{}
	imp, prev, err := d.parseImp(cfgPort)
	if err != nil {
		if prev {
			kept[schema.ResultKey(schema.TableImpairment, cfgPort)] = err
		} else {
			out.set(schema.TableImpairment, cfgPort, schema.Error(err.Error()), nil)
		}
	}
	var flows []schema.ImpairmentFlow
	var flowOK []string // keys of flows
	for _, key := range flowKeys {
		r, prev, err := d.parseFlow(cfgPort, key)
		if err != nil {
			if !prev {
				out.set(schema.TableImpairmentFlow, key, schema.Error(err.Error()), nil)
				continue
			}
			kept[schema.ResultKey(schema.TableImpairmentFlow, key)] = err
		}
		flows = append(flows, *r)
		flowOK = append(flowOK, key)
	}
	// Rules with delay/jitter/shaping: their class id goes into XDP (see
	// edt.go); random loss of a shaping rule follows the shaping.
	var classes map[string]uint32
	for i := range flows {
		if p := flowSplit(&flows[i]); p.Active() && d.edt != nil {
			if classes == nil {
				classes = map[string]uint32{}
			}
			classes[flows[i].Name] = d.edt.flowClass(flowOK[i])
		}
	}
	if port == badKeysPort {
		return 0, nil // malformed flow keys: their errors are all there is
	}
	// ACL tables bound to the port (acl.go) share its program: ACL first,
	// then the impairment stage. Either one keeps the program attached.
	aclRules, aclTables, aclGens := d.aclDesired(port)
	hasACL := len(aclTables) > 0
	if imp == nil && len(flows) == 0 && !hasACL {
		delete(d.acl.out, port)
		return 0, d.teardown(port)
	}
	set := func(table, key string, r schema.Result, extra schema.Fields) {
		if perr, ok := kept[schema.ResultKey(table, key)]; ok {
			// extra (prog_id, xdp_mode) names the program that runs on.
			out.set(table, key, keptResult(perr, r), extra)
			return
		}
		out.set(table, key, r, extra)
	}
	setAll := func(r schema.Result, portExtra schema.Fields) {
		if imp != nil {
			set(schema.TableImpairment, port, r, portExtra)
		}
		for _, key := range flowOK {
			set(schema.TableImpairmentFlow, key, r, nil)
		}
	}
	// Random loss of a shaping port follows the shaping (egress program).
	_, xdpImp := edtSplit(imp)
	if imp != nil && len(flowKeys) == 0 && imp.EDT.Active() && !xdpImp.Impairs() && imp.Schedule == "" && !hasACL {
		// Delay/jitter/shaping only: nothing for XDP to do, so no XDP
		// program (syncEDT does the rest); one attached before goes.
		if err := d.teardown(port); err != nil {
			return 0, err
		}
		if _, err := d.k.xdp(port); errors.Is(err, errNoLink) {
			setAll(schema.Pending("waiting for netdev "+port), nil)
			return 0, nil // a link event re-queues the port
		} else if err != nil {
			return 0, err
		}
		setAll(schema.OK(), nil)
		return 0, nil
	}
	dir := d.dir(port)
	if dir == "" { // cannot happen: the schema refuses such port names
		reason := fmt.Sprintf("port name %q cannot name a pin directory", port)
		setAll(schema.Error(reason), nil)
		d.aclNote(port, aclTables, aclGens, "", reason)
		return 0, nil
	}
	p := d.ports[port]
	ours := bpf.PinnedProgramID(dir)
	if p != nil {
		ours = p.ProgramID()
	}
	// An ACL-only port gets the empty impairment plan (which also clears
	// an impairment deleted while its ACL stays).
	plan, egPlan, err := compilePlans(xdpImp, flows, classes)
	if err != nil {
		// Nothing is changed: a program in place keeps its maps (the ACL
		// goes on being applied).
		reason := err.Error()
		if ours != 0 {
			reason += keptSuffix
		}
		setAll(schema.Error(reason), nil)
		if !hasACL {
			return 0, nil
		}
		plan = nil
	}
	impOK := err == nil

	// setAll for the impairment keys, which keep a compile error.
	setImp := func(r schema.Result, extra schema.Fields) {
		if impOK {
			setAll(r, extra)
		}
	}
	st, err := d.k.xdp(port)
	if errors.Is(err, errNoLink) {
		setImp(schema.Pending("waiting for netdev "+port), nil)
		d.aclNote(port, aclTables, aclGens, "netdev "+port, "")
		return 0, nil // a link event re-queues the port
	}
	if err != nil {
		return 0, err
	}
	if st.progID != 0 && st.progID != ours {
		setImp(schema.Error(foreignReason(port, st.progID)), nil)
		d.aclNote(port, aclTables, aclGens, "", foreignReason(port, st.progID))
		return 0, nil // its detach is a link event: then the port is ours
	}
	if p == nil {
		p, err = bpf.Load(dir)
		if err != nil {
			setImp(schema.Error(err.Error()), nil)
			d.aclNote(port, aclTables, aclGens, "", err.Error())
			return 0, err
		}
		d.ports[port] = p
	}
	if st.progID == 0 || st.progID != p.ProgramID() {
		if err := d.k.do(func() error { return p.Attach(st.ifindex, d.cfg.Mode) }); err != nil {
			setImp(schema.Error(err.Error()), nil)
			d.aclNote(port, aclTables, aclGens, "", "attach XDP: "+err.Error())
			return 0, fmt.Errorf("attach XDP to %s: %w", port, err)
		}
		msg := "XDP program attached"
		switch {
		case p.Adopted && p.ProgramID() == st.progID:
			msg = "pinned XDP link and its program adopted (same program id)"
		case p.Adopted:
			msg = "pinned XDP link adopted, switched to this process's program"
		}
		d.cfg.Log.WithFields(map[string]any{"port": port, "prog_id": p.ProgramID()}).Info(msg)
	}
	d.applyACL(port, p, st.ifindex, aclRules, aclTables, aclGens)
	if !hasACL {
		delete(d.acl.out, port)
	}
	if plan == nil {
		return 0, nil // impairment compile error: results set above
	}
	// A schedule's step prepared ahead is written at its due time: Apply
	// reads the maps first, then waits (Plan.BeforeWrite), then writes.
	plan.BeforeWrite = func() { d.waitStep(port) }
	if err := d.apply(p, plan); err != nil {
		// Put the last plan applied back (Apply changes the maps step by
		// step; a failure may leave some steps done).
		reason := err.Error()
		if last := d.plans[port]; last != nil {
			if rerr := d.apply(p, last); rerr != nil {
				reason += "; restoring the previous configuration failed too: " + rerr.Error()
			} else {
				reason += keptSuffix
			}
		}
		setAll(schema.Error(reason), nil)
		return 0, err
	}
	d.plans[port] = plan
	if err := d.k.do(func() error { return syncDuplicate(p, st.ifindex, plan.Duplicates()) }); err != nil {
		setAll(schema.Error(err.Error()), nil)
		return 0, err
	}
	if err := d.syncEgress(port, p, st.ifindex, egPlan); err != nil {
		setAll(schema.Error(err.Error()), nil)
		return 0, err
	}
	if st, err = d.k.xdp(port); err != nil {
		return 0, err
	}
	setAll(schema.OK(), schema.Fields{FieldXDPMode: st.mode, FieldProgID: strconv.FormatUint(uint64(p.ProgramID()), 10)})
	return 0, nil
}

// apply writes plan into p's maps (d.applyPlan in tests).
func (d *daemon) apply(p *bpf.Port, plan *bpf.Plan) error {
	if d.applyPlan != nil {
		if plan.BeforeWrite != nil {
			plan.BeforeWrite()
		}
		return d.applyPlan(p, plan)
	}
	return p.Apply(plan)
}

// syncDuplicate attaches impair_dup (tc ingress) to a port whose plan
// duplicates packets and takes it off one whose plan does not.
func syncDuplicate(p *bpf.Port, ifindex int, want bool) error {
	if want {
		return p.AttachDuplicate(ifindex)
	}
	return p.DetachDuplicate(ifindex)
}

// foreignReason names the program impaird refuses to replace.
func foreignReason(port string, id uint32) string {
	name := ""
	if prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
		if info, err := prog.Info(); err == nil {
			name = " (" + info.Name + ")"
		}
		prog.Close()
	}
	return fmt.Sprintf("XDP program id %d%s attached to %s was not attached by impaird: it is never replaced; detach it (ip link set dev %s xdp off) or delete this config", id, name, port, port)
}

// teardown detaches the port's program and removes its pins.
func (d *daemon) teardown(port string) error {
	if !safeDirName(port) {
		return nil // an invalid key ("..", "a/b"): never a pin directory of ours
	}
	delete(d.plans, port)
	d.teardownACL(port, d.ports[port])
	delete(d.egPlans, port)
	if st, err := d.k.xdp(port); err == nil {
		if err := d.k.do(func() error { return bpf.DetachDuplicate(st.ifindex) }); err != nil {
			return fmt.Errorf("detach duplicate program of %s: %w", port, err)
		}
		if err := d.k.do(func() error { return bpf.DetachEgressFrom(st.ifindex) }); err != nil {
			return fmt.Errorf("detach egress program of %s: %w", port, err)
		}
	}
	if p := d.ports[port]; p != nil {
		delete(d.ports, port)
		if err := p.Remove(); err != nil {
			return fmt.Errorf("detach and unpin %s: %w", port, err)
		}
		d.cfg.Log.WithField("port", port).Info("XDP program detached, pins removed")
		return nil
	}
	return bpf.RemovePins(d.dir(port))
}

// writeCounters writes every loaded port's counters: the port key sums all
// slots (everything impaired on the port), each rule has its own key.
// Keys of ports or rules that are gone are removed.
func (d *daemon) writeCounters(ctx context.Context) error {
	d.mu.Lock()
	want := map[string]schema.Fields{}
	for port, p := range d.ports {
		cs, err := p.Counters()
		if err != nil {
			d.mu.Unlock()
			return fmt.Errorf("read counters of %s: %w", port, err)
		}
		var total bpf.Counters
		for name, c := range cs {
			total.Add(c)
			if name != "" && name != schedPortRule {
				merge(want, schema.CountersKey(schema.ImpairmentCountersTable, port+schema.ConfigSep+name), counterHash(c))
			}
		}
		h := counterHash(total)
		if err := egressCounters(port, p, want); err != nil {
			d.mu.Unlock()
			return err
		}
		for k, v := range want[schema.CountersKey(schema.ImpairmentCountersTable, port)] {
			h[k] = v
		}
		if d.edt != nil {
			ef, err := d.edtStats(port)
			if err != nil {
				d.mu.Unlock()
				return fmt.Errorf("read EDT counters of %s: %w", port, err)
			}
			for k, v := range ef {
				h[k] = v
			}
		}
		want[schema.CountersKey(schema.ImpairmentCountersTable, port)] = h
	}
	// Ports with delay/jitter/shaping only (no XDP program): EDT counters.
	if d.edt != nil {
		for port := range d.edt.marked {
			if d.ports[port] != nil {
				continue
			}
			ef, err := d.edtStats(port)
			if err != nil {
				d.mu.Unlock()
				return fmt.Errorf("read EDT counters of %s: %w", port, err)
			}
			want[schema.CountersKey(schema.ImpairmentCountersTable, port)] = ef
		}
	}
	// Keys of a configured port not loaded yet (impaird just restarted)
	// stay until the port is adopted.
	keep := map[string]bool{}
	for port := range d.imp {
		keep[port] = d.ports[port] == nil
	}
	for port := range d.flows {
		keep[port] = d.ports[port] == nil
	}
	d.mu.Unlock()
	b := d.counters.Batch()
	for key, f := range want {
		b.Set(key, f)
	}
	prefix := schema.ImpairmentCountersTable + schema.CountersSep
	for _, key := range d.counters.Keys() {
		port, _, _ := strings.Cut(strings.TrimPrefix(key, prefix), schema.ConfigSep)
		if _, ok := want[key]; !ok && !keep[port] {
			b.Delete(key)
		}
	}
	return b.Flush(ctx)
}

func counterHash(c bpf.Counters) schema.Fields {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return schema.Fields{
		"rx_packets": u(c.RxPackets), "rx_bytes": u(c.RxBytes), "passed": u(c.Passed),
		"dropped_loss": u(c.DroppedLoss), "dropped_rate": u(c.DroppedRate), "corrupted": u(c.Corrupted),
		"duplicated": u(c.Duplicated),
	}
}
