package swctl

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// hashes is one table read from Redis: key (without "TABLE|") → fields.
type hashes = map[string]map[string]string

// showOpts are the flags every show command shares.
type showOpts struct {
	JSON     bool
	Counters bool
	Errors   bool
	Watch    bool
	Interval time.Duration
}

// showLeaf builds a show command whose view is made by build.
func showLeaf(name, summary, long string, examples []string, counters, errorsFlag bool,
	build func(ctx context.Context, db *DB, o showOpts) (*View, error)) *Command {
	c := &Command{Name: name, Summary: summary, Long: long, Examples: examples}
	c.Setup = func(fs *flag.FlagSet) Runner {
		var o showOpts
		fs.BoolVar(&o.JSON, "json", false, "print a JSON array of objects instead of a table")
		if counters {
			fs.BoolVar(&o.Counters, "counters", false, "show the counters (COUNTERS_DB) instead")
		}
		if errorsFlag {
			fs.BoolVar(&o.Errors, "errors", false, "only entries that are not ok")
		}
		fs.BoolVar(&o.Watch, "watch", false, "redraw the table every --interval until Ctrl-C (with --counters: per-second rates)")
		fs.DurationVar(&o.Interval, "interval", time.Second, "how often --watch redraws")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 0, 0); err != nil {
				return err
			}
			if o.Watch && o.JSON {
				return usagef(c, "--watch draws a table: it does not combine with --json")
			}
			if o.Interval < 100*time.Millisecond {
				return usagef(c, "--interval %v: want at least 100ms", o.Interval)
			}
			db, err := e.DB()
			if err != nil {
				return err
			}
			if o.Watch {
				title := strings.TrimPrefix(c.Path(), "swctl ")
				if o.Counters {
					title += " --counters"
				}
				return watchView(ctx, e.Stdout, "swctl "+title, o.Interval, o.Counters,
					func(ctx context.Context) (*View, error) { return build(ctx, db, o) })
			}
			v, err := build(ctx, db, o)
			if err != nil {
				return err
			}
			return v.Write(e.Stdout, o.JSON)
		}
	}
	return c
}

func showCommand() *Command {
	route := showLeaf("route", "routes in the kernel (STATE_DB ROUTE_TABLE) and static routes' results",
		`Routes the switch's kernel holds, as syncd mirrors them (STATE_DB ROUTE_TABLE),
with the result of the static route configured for the prefix, if any. A
static route that is not in the kernel (pending or error) is listed too.`,
		[]string{"swctl show ip route", "swctl show ip route --json"}, false, false, showRoutes)
	return &Command{
		Name:    "show",
		Summary: "show what the switch holds: STATE_DB, COUNTERS_DB and the daemons' results",
		Examples: []string{
			"swctl show vlan",
			"swctl show interfaces --counters",
			"swctl show impairment --counters --json",
			"swctl show state --errors",
		},
		Sub: []*Command{
			showLeaf("vlan", "VLANs: members, addresses, oper status and result",
				`VLANs configured (CONFIG_DB VLAN, VLAN_MEMBER, VLAN_INTERFACE) or present in
the kernel (STATE_DB VLAN_TABLE), with oper status and orchagent's result.
Members are marked (u) untagged, (t) tagged, (p) priority-tagged.`,
				[]string{"swctl show vlan", "swctl show vlan --json"}, false, false, showVlans),
			showLeaf("interfaces", "ports: admin/oper status, MTU, MAC, addresses, VLANs; --counters",
				`Ports configured (CONFIG_DB PORT) or mirrored by syncd (STATE_DB PORT_TABLE):
admin and oper status, MTU and MAC as the kernel has them, the configured
addresses and VLANs, and orchagent's result. --counters shows COUNTERS_DB
COUNTERS:PORT instead (every field syncd writes).`,
				[]string{"swctl show interfaces", "swctl show interfaces --counters"}, true, false, showInterfaces),
			{Name: "ip", Summary: "IP tables", Sub: []*Command{route}, Examples: route.Examples},
			{Name: "port", Summary: "per-port settings", Sub: []*Command{showLeaf("tuning",
				"receive-path tuning (PORT_TUNING) as the kernel holds it, with orchagent's result",
				`Every PORT_TUNING entry: the values the kernel holds as syncd mirrors them
(STATE_DB PORT_TUNING_TABLE; "0-1 (want 0)" where the configured value differs,
"rx-0:… rx-1:…" where queues differ), the configured value where there is no
mirror yet, and orchagent's result (reason, or the warning of a port without
IRQs).`, []string{"swctl show port tuning", "swctl show port tuning --json"}, false, false, showPortTuning)},
				Examples: []string{"swctl show port tuning"}},
			showLeaf("mac", "the FDB: MACs learned or static, per VLAN and port (STATE_DB FDB_TABLE)", "",
				[]string{"swctl show mac"}, false, false, showMACs),
			showLeaf("neighbors", "ARP/ND neighbors of the switch (STATE_DB NEIGH_TABLE)", "",
				[]string{"swctl show neighbors"}, false, false, showNeighbors),
			showLeaf("impairment", "impairment profiles and flow rules with impaird's result; --counters",
				`Impairment profiles (CONFIG_DB IMPAIRMENT) and flow rules (IMPAIRMENT_FLOW) with
impaird's result and XDP mode (STATE_DB IMPAIRMENT_TABLE, IMPAIRMENT_FLOW_TABLE).
--counters shows COUNTERS_DB IMPAIRMENT_COUNTERS:PORT[|RULE] instead, with the
measured loss percent (dropped / rx_packets).`,
				[]string{"swctl show impairment", "swctl show impairment --counters"}, true, false, showImpairment).
				with(showImpairmentScheduleCommand()),
			showLeaf("traffic", "background traffic streams with trafficd's result and counters; --counters",
				`Background traffic streams (CONFIG_DB TRAFFIC_GEN) with trafficd's result (STATE_DB
TRAFFIC_GEN_TABLE: state, status running or done, the transmit path) and the
frames sent and achieved rate (COUNTERS_DB TRAFFIC_GEN_COUNTERS). --counters shows
every counter: packets, bytes (with FCS), pps and bps over the last second,
avg_pps, elapsed seconds, dropped (refused by the device) and late (not sent:
the sender was held up for more than a second).`,
				[]string{"swctl show traffic", "swctl show traffic --counters --watch"}, true, false, showTraffic),
			showLeaf("acl", "ACL rules with their counters and impaird's result, like SONiC's aclshow",
				`ACL rules (CONFIG_DB ACL_RULE) by table and priority (highest first), with the
action, the packets and bytes they matched (COUNTERS_DB COUNTERS:TABLE:RULE,
summed over the table's ports; N/A when not applied) and impaird's result.`,
				[]string{"swctl show acl", "swctl show acl --json", "swctl show acl --watch"}, false, false, showACL).
				with(showACLTableCommand()),
			showLeaf("state", "the result of every CONFIG_DB entry (STATE_DB *_TABLE)",
				`The result of every entry of switchyard's CONFIG_DB tables: ok, pending (with
what it waits for), error (with the reason), or "-" when no daemon has written
one yet.`,
				[]string{"swctl show state", "swctl show state --errors --json"}, false, true, showState),
		},
	}
}

func readCfg(ctx context.Context, db *DB, table string) (hashes, error) {
	return readTable(ctx, db.Config(), table, schema.ConfigSep)
}

func readState(ctx context.Context, db *DB, table string) (hashes, error) {
	return readTable(ctx, db.State(), table, schema.StateSep)
}

// readAll reads several tables; on the first error it stops.
func readAll(ctx context.Context, read func(context.Context, *DB, string) (hashes, error), db *DB, tables ...string) ([]hashes, error) {
	out := make([]hashes, len(tables))
	for i, t := range tables {
		h, err := read(ctx, db, t)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// union returns the keys of all maps, naturally sorted.
func union(ms ...hashes) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sortNatural(out)
	return out
}

// splitKey cuts "a|b" into "a", "b" ("a", "" for a bare key).
func splitKey(k, sep string) (string, string) {
	a, b, _ := strings.Cut(k, sep)
	return a, b
}

func showVlans(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	cfg, err := readAll(ctx, readCfg, db, schema.TableVlan, schema.TableVlanMember, schema.TableVlanInterface)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.StateVlanTable)
	if err != nil {
		return nil, err
	}
	members := map[string][]string{}
	for _, k := range union(cfg[1]) {
		vlan, port := splitKey(k, schema.ConfigSep)
		mark := map[string]string{"untagged": "u", "tagged": "t", "priority_tagged": "p"}[cfg[1][k]["tagging_mode"]]
		if mark == "" {
			mark = "?"
		}
		members[vlan] = append(members[vlan], port+"("+mark+")")
	}
	addrs := map[string][]string{}
	for _, k := range union(cfg[2]) {
		if vlan, a := splitKey(k, schema.ConfigSep); a != "" {
			addrs[vlan] = append(addrs[vlan], a)
		}
	}
	v := &View{Columns: []Column{{"VLAN", "vlan"}, {"VID", "vid"}, {"MEMBERS", "members"},
		{"ADDRESSES", "addresses"}, {"OPER", "oper_status"}, {"STATE", "state"}, {"REASON", "reason"}}}
	for _, name := range union(cfg[0], st) {
		vid := cfg[0][name]["vlanid"]
		if vid == "" {
			vid = strings.TrimPrefix(name, "Vlan")
		}
		s := st[name]
		v.Rows = append(v.Rows, Row{"vlan": name, "vid": vid, "members": members[name],
			"addresses": addrs[name], "oper_status": s["oper_status"], "state": s["state"], "reason": s["reason"]})
	}
	return v, nil
}

var counterOrder = []string{"rx_packets", "rx_bytes", "rx_errors", "rx_dropped",
	"tx_packets", "tx_bytes", "tx_errors", "tx_dropped"}

func showInterfaces(ctx context.Context, db *DB, o showOpts) (*View, error) {
	if o.Counters {
		ctrs, err := readTable(ctx, db.Counters(), schema.CountersTable, schema.CountersSep)
		if err != nil {
			return nil, err
		}
		for k := range ctrs { // COUNTERS:oid:0x… are SAI-named copies for SONiC's tools (docs/syncd.md); COUNTERS:T:R are ACL rules
			if strings.Contains(k, schema.CountersSep) {
				delete(ctrs, k)
			}
		}
		return genericView(Column{"INTERFACE", "interface"}, ctrs, counterOrder), nil
	}
	cfg, err := readAll(ctx, readCfg, db, schema.TablePort, schema.TableInterface, schema.TableVlanMember)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.StatePortTable)
	if err != nil {
		return nil, err
	}
	addrs := map[string][]string{}
	ipOnly := hashes{} // ports named only by INTERFACE or VLAN_MEMBER keys
	for _, k := range union(cfg[1]) {
		port, a := splitKey(k, schema.ConfigSep)
		ipOnly[port] = nil
		if a != "" {
			addrs[port] = append(addrs[port], a)
		}
	}
	vlans := map[string][]string{}
	for _, k := range union(cfg[2]) {
		vlan, port := splitKey(k, schema.ConfigSep)
		vlans[port] = append(vlans[port], vlan)
		ipOnly[port] = nil
	}
	v := &View{Columns: []Column{{"INTERFACE", "interface"}, {"ADMIN", "admin_status"}, {"OPER", "oper_status"},
		{"MTU", "mtu"}, {"MAC", "mac"}, {"ADDRESSES", "addresses"}, {"VLANS", "vlans"},
		{"DESCRIPTION", "description"}, {"STATE", "state"}, {"REASON", "reason"}}}
	for _, name := range union(cfg[0], st, ipOnly) {
		s, c := st[name], cfg[0][name]
		admin := s["admin_status"]
		if admin == "" {
			admin = c["admin_status"]
		}
		v.Rows = append(v.Rows, Row{"interface": name, "admin_status": admin, "oper_status": s["oper_status"],
			"mtu": s["mtu"], "mac": s["mac"], "addresses": addrs[name], "vlans": vlans[name],
			"description": c["description"], "state": s["state"], "reason": s["reason"]})
	}
	return v, nil
}

// genericView shows every field of every hash: first the key column, then
// the preferred fields, then the rest alphabetically.
func genericView(key Column, hs hashes, preferred []string, skip ...string) *View {
	v := &View{Columns: []Column{key}}
	for _, f := range genericColumns(hs, preferred, skip...) {
		v.Columns = append(v.Columns, Column{header(f), f})
	}
	for _, k := range union(hs) {
		r := Row{key.Key: k}
		for f, val := range hs[k] {
			r[f] = val
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}

func showRoutes(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	kernel, err := readState(ctx, db, schema.StateRouteTable)
	if err != nil {
		return nil, err
	}
	static, err := readCfg(ctx, db, schema.TableStaticRoute)
	if err != nil {
		return nil, err
	}
	results, err := readState(ctx, db, schema.ResultTable(schema.TableStaticRoute))
	if err != nil {
		return nil, err
	}
	rows := hashes{}
	for k, h := range kernel {
		rows[k] = h
	}
	staticOf := map[string]string{} // route key → static route result
	for k := range static {
		r := results[k]
		state := r["state"]
		if state == "" {
			state = "none"
		}
		if r["reason"] != "" {
			state += ": " + r["reason"]
		}
		rk := strings.TrimPrefix(k, "default"+schema.ConfigSep)
		if _, ok := rows[rk]; !ok {
			if _, ok := rows[k]; ok {
				rk = k
			} else {
				rows[rk] = map[string]string{}
			}
		}
		staticOf[rk] = state
	}
	v := genericView(Column{"PREFIX", "prefix"}, rows, []string{"nexthop", "ifname", "protocol"})
	v.Columns = append(v.Columns, Column{"STATIC", "static"})
	for _, r := range v.Rows {
		r["static"] = staticOf[r["prefix"].(string)]
	}
	return v, nil
}

func showMACs(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	fdb, err := readState(ctx, db, schema.StateFDBTable)
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"VLAN", "vlan"}, {"MAC", "mac"}, {"PORT", "port"}, {"TYPE", "type"},
		{"STATE", "state"}, {"REASON", "reason"}}}
	for _, k := range union(fdb) {
		vlan, mac := splitKey(k, ":")
		h := fdb[k]
		v.Rows = append(v.Rows, Row{"vlan": vlan, "mac": mac, "port": h["port"], "type": h["type"],
			"state": h["state"], "reason": h["reason"]})
	}
	return v, nil
}

func showNeighbors(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	nb, err := readState(ctx, db, schema.StateNeighTable)
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"INTERFACE", "interface"}, {"ADDRESS", "address"}, {"MAC", "neigh"},
		{"FAMILY", "family"}, {"STATE", "state"}}}
	for _, k := range union(nb) {
		ifname, addr := splitKey(k, schema.StateSep)
		h := nb[k]
		v.Rows = append(v.Rows, Row{"interface": ifname, "address": addr, "neigh": h["neigh"],
			"family": h["family"], "state": h["state"]})
	}
	return v, nil
}

func showState(ctx context.Context, db *DB, o showOpts) (*View, error) {
	sts, err := statuses(ctx, db)
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"TABLE", "table"}, {"KEY", "key"}, {"STATE", "state"}, {"REASON", "reason"}}}
	for _, s := range sts {
		if o.Errors && s.State == string(schema.StateOK) {
			continue
		}
		reason := s.Reason
		if s.State == "" {
			reason = "no result yet (is " + daemonFor(s.Table) + " running?)"
		}
		v.Rows = append(v.Rows, Row{"table": s.Table, "key": s.Key, "state": s.State, "reason": reason})
	}
	return v, nil
}
