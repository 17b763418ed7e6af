package impaird

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/schema"
)

// ACL_TABLE and ACL_RULE (docs/acl-config.md). A table's keys (the table
// and its rules) are one work item, aclItem(table); its reconcile
// re-reconciles every port the table is bound to now or was bound to
// before (a ports@ edit moves the table), and each port's reconcile
// merges the rules of all tables bound to it into one rule set per stage
// beside its impairment (reconcile.go). Results of a table and its rules
// are computed from the per-port outcomes (aclPortOut).

// aclItemPrefix starts the work item of an ACL table: the item is the
// table's own CONFIG_DB key, so the engine removes its result after a
// delete. No port is named like it ('|' is not allowed in port names).
const aclItemPrefix = schema.TableACLTable + schema.ConfigSep

// aclItem is the work item of ACL table name.
func aclItem(table string) string { return aclItemPrefix + table }

// aclRuleTable indexes ACL_RULE keys by table.
func aclRuleTable(key string) string {
	t, _, _ := strings.Cut(key, schema.ConfigSep)
	return t
}

// aclState is impaird's ACL view (d.mu held, except parsed).
type aclState struct {
	mu sync.Mutex // guards parsed: the link watch asks aclBound without d.mu
	// parsed caches each key's parse by generation ("T|k" -> entry).
	parsed map[string]aclParsed
	// bound: the ports each table was bound to at its last reconcile.
	bound map[string][]string
	// out: per port, what its last reconcile did with its ACL.
	out map[string]*aclPortOut
	// applied: per port, the stages holding a rule set (false: known
	// empty; absent: unknown, e.g. after a restart).
	applied map[string]map[bpf.ACLStage]bool
	// egress: ports whose tc egress program impaird attached (false:
	// known detached; absent: unknown).
	egress map[string]bool
	// results: unit tests without an engine collect results here.
	results map[string]schema.Result
	// countersLoaded: the ACL counter keys of a previous run were read
	// (acl_counters.go); cleared when COUNTERS_DB was emptied.
	countersLoaded atomic.Bool
	// inTable is the table whose reconcile is running: it writes that
	// table's results once at its end, not after each port.
	inTable string
}

type aclParsed struct {
	gen   string
	table *schema.ACLTable
	rule  *schema.ACLRule
	err   error
}

// aclPortOut is the outcome of one port's ACL.
type aclPortOut struct {
	pending  string                    // "waiting for netdev X": nothing applied
	err      string                    // port-level failure (foreign program, attach)
	stageErr map[bpf.ACLStage]string   // a stage's rule set not applied
	ruleErr  map[string]string         // data-plane name -> reason (CompileACL)
	stages   map[bpf.ACLStage]bool     // stages applied
	tables   map[bpf.ACLStage][]string // tables merged into each stage
	// gens: the generation of each table and rule merged ("T|k" config
	// key -> generation): a result is ok only for the version applied,
	// never for a newer one the cache got meanwhile.
	gens map[string]string
}

func newACLState() *aclState {
	return &aclState{parsed: map[string]aclParsed{}, bound: map[string][]string{},
		out: map[string]*aclPortOut{}, applied: map[string]map[bpf.ACLStage]bool{}, egress: map[string]bool{}}
}

// aclTable returns table name's parse (nil, nil when not configured).
func (d *daemon) aclTable(name string) (*schema.ACLTable, error) {
	if d.h == nil {
		return nil, nil
	}
	e, ok := d.h.Cache.Get(schema.TableACLTable, name)
	ck := schema.ConfigKey(schema.TableACLTable, name)
	d.acl.mu.Lock()
	defer d.acl.mu.Unlock()
	if !ok {
		delete(d.acl.parsed, ck)
		return nil, nil
	}
	if p, ok := d.acl.parsed[ck]; ok && p.gen == e.Gen {
		return p.table, p.err
	}
	r, err := schema.ParseACLTable(name, e.Fields)
	p := aclParsed{gen: e.Gen, err: err}
	if err == nil {
		p.table = &r
	}
	d.acl.parsed[ck] = p
	return p.table, p.err
}

// aclRule returns rule key's parse (ok false when not configured).
func (d *daemon) aclRule(key string) (*schema.ACLRule, error, bool) {
	e, ok := d.h.Cache.Get(schema.TableACLRule, key)
	ck := schema.ConfigKey(schema.TableACLRule, key)
	d.acl.mu.Lock()
	defer d.acl.mu.Unlock()
	if !ok {
		delete(d.acl.parsed, ck)
		return nil, nil, false
	}
	if p, ok := d.acl.parsed[ck]; ok && p.gen == e.Gen {
		return p.rule, p.err, true
	}
	r, err := schema.ParseACLRule(key, e.Fields)
	p := aclParsed{gen: e.Gen, err: err}
	if err == nil {
		p.rule = &r
	}
	d.acl.parsed[ck] = p
	return p.rule, p.err, true
}

// aclGen is the generation of the last parse of CONFIG_DB key table|key.
func (d *daemon) aclGen(table, key string) string {
	d.acl.mu.Lock()
	defer d.acl.mu.Unlock()
	return d.acl.parsed[schema.ConfigKey(table, key)].gen
}

// aclPorts are the ports table t applies to now (none when it is absent,
// invalid or of a type switchyard does not apply).
func (d *daemon) aclPorts(name string) []string {
	t, err := d.aclTable(name)
	if err != nil || t == nil || t.NotApplied() != "" {
		return nil
	}
	return t.Ports
}

// aclBound reports whether an ACL table applies to port now.
func (d *daemon) aclBound(port string) bool {
	if d.h == nil {
		return false
	}
	for _, name := range d.h.Cache.Keys(schema.TableACLTable) {
		if slices.Contains(d.aclPorts(name), port) {
			return true
		}
	}
	return false
}

// aclBoundPorts are all ports an ACL table applies to now.
func (d *daemon) aclBoundPorts() []string {
	if d.h == nil {
		return nil
	}
	var out []string
	for _, name := range d.h.Cache.Keys(schema.TableACLTable) {
		for _, p := range d.aclPorts(name) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// aclDesired is the rule set of each stage of port: the applicable rules
// of every table bound to it, translated (aclRules), and the tables.
func (d *daemon) aclDesired(port string) (map[bpf.ACLStage][]bpf.ACLRule, map[bpf.ACLStage][]string, map[string]string) {
	rules := map[bpf.ACLStage][]bpf.ACLRule{}
	tables := map[bpf.ACLStage][]string{}
	gens := map[string]string{}
	if d.h == nil {
		return rules, tables, gens
	}
	for _, name := range d.h.Cache.Keys(schema.TableACLTable) {
		if !slices.Contains(d.aclPorts(name), port) {
			continue
		}
		t, _ := d.aclTable(name)
		gens[schema.ConfigKey(schema.TableACLTable, name)] = d.aclGen(schema.TableACLTable, name)
		stage := bpfStage(t.Stage)
		tables[stage] = append(tables[stage], name)
		for _, key := range d.h.Cache.ByIndex(schema.TableACLRule, name) {
			r, err, ok := d.aclRule(key)
			if !ok || err != nil || r.Applicable() != nil || aclTypeProblem(t, r) != "" {
				continue
			}
			gens[schema.ConfigKey(schema.TableACLRule, key)] = d.aclGen(schema.TableACLRule, key)
			rules[stage] = append(rules[stage], aclRules(r)...)
		}
	}
	return rules, tables, gens
}

func bpfStage(s schema.ACLStage) bpf.ACLStage {
	if s == schema.ACLEgress {
		return bpf.ACLEgress
	}
	return bpf.ACLIngress
}

// aclTypeProblem says why rule r does not fit table t's type ("" = fits):
// an L3 table holds IPv4 (and non-IP) rules, an L3V6 table IPv6 rules.
func aclTypeProblem(t *schema.ACLTable, r *schema.ACLRule) string {
	fam := r.Family()
	switch {
	case t.Type == schema.ACLTypeL3 && fam == 6:
		return fmt.Sprintf("table %s is of type L3 (IPv4): an IPv6 rule needs an L3V6 or L3V4V6 table", t.Name)
	case t.Type == schema.ACLTypeL3V6 && fam == 4:
		return fmt.Sprintf("table %s is of type L3V6: an IPv4 rule needs an L3 or L3V4V6 table", t.Name)
	}
	return ""
}

// aclV6Suffix names the IPv6 half of a rule the data plane holds as two
// (IP_TYPE IP, see aclRules); '|' never occurs in a rule name.
const aclV6Suffix = "|v6"

// aclRuleKey maps a data-plane rule name back to its ACL_RULE key.
func aclRuleKey(name string) string { return strings.TrimSuffix(name, aclV6Suffix) }

// aclRules translates a rule into the data plane's form. Implied matches
// are made explicit: TCP_FLAGS means TCP, ICMP_* ICMP and ICMPV6_*
// ICMPv6; IP_TYPE IPV4ANY/IPV6ANY/ARP set the EtherType. A rule with no
// field matches every packet (ARP too), as IP_TYPE ANY does; IP_TYPE IP
// alone (acl-loader's DEFAULT_RULE of L3V4V6 tables) must not drop ARP, so
// it becomes two rules, EtherType IPv4 and IPv6, whose counters are summed.
func aclRules(r *schema.ACLRule) []bpf.ACLRule {
	b := bpf.ACLRule{Name: r.TableName + schema.ConfigSep + r.Name, Priority: r.Priority, Action: bpf.ACLForward}
	if r.Action == schema.ACLActionDrop {
		b.Action = bpf.ACLDrop
	}
	m := &b.Match
	m.Src, m.Dst = r.Src, r.Dst
	proto := r.Proto
	switch {
	case proto < 0 && r.TCPFlagsMask != 0:
		proto = 6
	case proto < 0 && (r.ICMPType >= 0 || r.ICMPCode >= 0):
		proto = 1
		if r.ICMPv6 {
			proto = 58
		}
	}
	if proto >= 0 {
		m.Proto, m.ProtoSet = uint8(proto), true
	}
	m.Sport, m.Dport = portRange(r.SrcPort), portRange(r.DstPort)
	if r.DSCP >= 0 {
		m.DSCP, m.DSCPSet = uint8(r.DSCP), true
	}
	m.VLAN = uint16(r.VLAN)
	et := r.EtherType
	if et < 0 {
		switch r.IPType {
		case "IPV4", "IPV4ANY":
			et = 0x0800
		case "IPV6", "IPV6ANY":
			et = 0x86dd
		case "ARP":
			et = 0x0806
		}
	}
	if et >= 0 {
		b.EtherType, b.EtherTypeSet = uint16(et), true
	}
	b.TCPFlags, b.TCPFlagsMask = r.TCPFlags, r.TCPFlagsMask
	if r.ICMPType >= 0 {
		b.ICMPType, b.ICMPTypeSet = uint8(r.ICMPType), true
	}
	if r.ICMPCode >= 0 {
		b.ICMPCode, b.ICMPCodeSet = uint8(r.ICMPCode), true
	}
	ipFields := m.Src.IsValid() || m.Dst.IsValid() || m.ProtoSet || m.Sport.Set || m.Dport.Set || m.DSCPSet ||
		b.TCPFlagsMask != 0 || b.ICMPTypeSet || b.ICMPCodeSet
	if r.IPType == "IP" && !b.EtherTypeSet && !ipFields {
		v6 := b
		b.EtherType, b.EtherTypeSet = 0x0800, true
		v6.Name += aclV6Suffix
		v6.EtherType, v6.EtherTypeSet = 0x86dd, true
		return []bpf.ACLRule{b, v6}
	}
	return []bpf.ACLRule{b}
}

// aclSetResult records one ACL result, stamped with the generation of
// the parse it reflects (the cache may hold a newer one already: its own
// reconcile is queued).
func (d *daemon) aclSetResult(table, key string, r schema.Result) {
	if d.h == nil {
		if d.acl.results == nil {
			d.acl.results = map[string]schema.Result{}
		}
		d.acl.results[schema.ResultKey(table, key)] = r
		return
	}
	e, ok := d.h.Cache.Get(table, key)
	if !ok {
		return
	}
	r = e.Stamp(r)
	if gen := d.aclGen(table, key); gen != "" {
		r.Generation = gen
	}
	d.h.SetResult(table, key, r, nil)
}

// aclResults writes the results of table name and its rules from the
// parses and the outcomes of its ports (d.mu held).
func (d *daemon) aclResults(name string) {
	if d.h == nil {
		return
	}
	ruleKeys := d.h.Cache.ByIndex(schema.TableACLRule, name)
	t, terr := d.aclTable(name)
	// What every rule gets when the table itself is not applied.
	var tableBlock schema.Result
	switch {
	case t == nil && terr == nil:
		tableBlock = schema.Pending("waiting for " + schema.ConfigKey(schema.TableACLTable, name))
	case terr != nil:
		d.aclSetResult(schema.TableACLTable, name, schema.Error(terr.Error()))
		tableBlock = schema.Error("not applied: " + schema.ConfigKey(schema.TableACLTable, name) + " is invalid")
	case t.NotApplied() != "":
		d.aclSetResult(schema.TableACLTable, name, schema.Error(t.NotApplied()))
		tableBlock = schema.Error(fmt.Sprintf("not applied: %s is of type %s, which switchyard does not apply", schema.ConfigKey(schema.TableACLTable, name), t.Type))
	}
	if tableBlock.State != "" {
		for _, key := range ruleKeys {
			if r, err, ok := d.aclRule(key); ok && err != nil {
				d.aclSetResult(schema.TableACLRule, key, schema.Error(err.Error()))
			} else if ok && r != nil {
				d.aclSetResult(schema.TableACLRule, key, tableBlock)
			}
		}
		return
	}
	stage := bpfStage(t.Stage)
	tgen := d.aclGen(schema.TableACLTable, name)
	var errs, waits, applied []string
	for _, port := range t.Ports {
		o := d.acl.out[port]
		switch {
		case o == nil || o.gens[schema.ConfigKey(schema.TableACLTable, name)] != tgen:
			waits = append(waits, "this version to be applied on "+port)
		case o.err != "":
			errs = append(errs, port+": "+o.err)
		case o.pending != "":
			waits = append(waits, o.pending)
		case o.stageErr[stage] != "":
			errs = append(errs, port+": "+o.stageErr[stage])
		default:
			applied = append(applied, port)
		}
	}
	tr := schema.OK()
	switch {
	case len(errs) > 0:
		tr = schema.Error(strings.Join(errs, "; "))
	case len(waits) > 0:
		reason := "waiting for " + strings.Join(waits, ", ")
		if len(applied) > 0 {
			reason += " (applied on " + strings.Join(applied, ", ") + ")"
		}
		tr = schema.Pending(reason)
	}
	d.aclSetResult(schema.TableACLTable, name, tr)
	for _, key := range ruleKeys {
		r, err, ok := d.aclRule(key)
		if !ok {
			continue
		}
		var res schema.Result
		switch {
		case err != nil:
			res = schema.Error(err.Error())
		case r.Applicable() != nil:
			res = schema.Error(r.Applicable().Error())
		case aclTypeProblem(t, r) != "":
			res = schema.Error(aclTypeProblem(t, r))
		default:
			res = d.aclRuleOutcome(key, stage, t, tr)
		}
		d.aclSetResult(schema.TableACLRule, key, res)
	}
}

// aclRuleOutcome is a valid rule's result: an error a port's data plane
// gave it, else its table's state.
func (d *daemon) aclRuleOutcome(key string, stage bpf.ACLStage, t *schema.ACLTable, tr schema.Result) schema.Result {
	var errs, waits []string
	gen := d.aclGen(schema.TableACLRule, key)
	for _, port := range t.Ports {
		o := d.acl.out[port]
		if o == nil {
			continue
		}
		if reason := o.ruleErr[key]; reason != "" {
			errs = append(errs, port+": "+reason)
		} else if o.pending == "" && o.err == "" && o.stageErr[stage] == "" && o.gens[schema.ConfigKey(schema.TableACLRule, key)] != gen {
			waits = append(waits, port)
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return schema.Error(strings.Join(errs, "; "))
	}
	if len(waits) > 0 {
		return schema.Pending("waiting for this version to be applied on " + strings.Join(waits, ", "))
	}
	if tr.State == schema.StateOK {
		return schema.OK()
	}
	return schema.Result{State: tr.State, Reason: "table " + t.Name + ": " + tr.Reason}
}

// reconcileACL brings ACL table name in line: every port it is bound to
// now or was bound to before is reconciled, then the table's results are
// written.
func (d *daemon) reconcileACL(ctx context.Context, name string) error {
	d.mu.Lock()
	before := d.acl.bound[name]
	now := slices.Clone(d.aclPorts(name))
	if len(now) == 0 {
		delete(d.acl.bound, name)
	} else {
		d.acl.bound[name] = now
	}
	// Parses of deleted rules go.
	prefix := schema.ConfigKey(schema.TableACLRule, name+schema.ConfigSep)
	d.acl.mu.Lock()
	for ck := range d.acl.parsed {
		if strings.HasPrefix(ck, prefix) && !d.h.Cache.Has(schema.TableACLRule, strings.TrimPrefix(ck, schema.TableACLRule+schema.ConfigSep)) {
			delete(d.acl.parsed, ck)
		}
	}
	d.acl.mu.Unlock()
	d.acl.inTable = name
	d.mu.Unlock()
	ports := slices.Clone(now)
	for _, p := range before {
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	sort.Strings(ports)
	var first error
	for _, p := range ports {
		if _, err := d.reconcile(ctx, p); err != nil && first == nil {
			first = fmt.Errorf("port %s of ACL table %s: %w", p, name, err)
		}
	}
	d.mu.Lock()
	d.acl.inTable = ""
	d.aclResults(name)
	d.mu.Unlock()
	return first
}

// aclPortResults writes the results of the tables port's ACL merged,
// after the port was reconciled by itself (a link event, its IMPAIRMENT);
// d.mu held.
func (d *daemon) aclPortResults(port string) {
	o := d.acl.out[port]
	if o == nil {
		return
	}
	var names []string
	for _, ts := range o.tables {
		names = append(names, ts...)
	}
	sort.Strings(names)
	for _, name := range slices.Compact(names) {
		if name != d.acl.inTable {
			d.aclResults(name)
		}
	}
}
