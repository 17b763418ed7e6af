package swctl

import (
	"context"
	"flag"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// aclTableFields are the ACL_TABLE fields with a flag of their own.
var aclTableFields = []fieldFlag{
	{"type", schema.FieldACLType, "L3, L3V6 or L3V4V6 (SONiC's other types are accepted, not applied)"},
	{"stage", schema.FieldACLStage, "ingress (default) or egress"},
	{"ports", schema.FieldACLPorts, "comma-separated ports the table is bound to"},
	{"description", schema.FieldPolicyDesc, "free text (policy_desc)"},
}

// aclRuleFields are the ACL_RULE fields with a flag of their own.
var aclRuleFields = []fieldFlag{
	{"priority", schema.FieldACLPriority, "0-999999: higher wins"},
	{"action", schema.FieldPacketAction, "FORWARD or DROP"},
	{"ip-type", schema.FieldIPType, "ANY, IP, IPV4ANY, IPV6ANY or ARP"},
	{"src-ip", schema.FieldACLSrcIP, "source IPv4 prefix"},
	{"dst-ip", schema.FieldACLDstIP, "destination IPv4 prefix"},
	{"src-ipv6", schema.FieldACLSrcIPv6, "source IPv6 prefix"},
	{"dst-ipv6", schema.FieldACLDstIPv6, "destination IPv6 prefix"},
	{"ip-protocol", schema.FieldIPProtocol, "protocol number or TCP, UDP, ICMP, ICMPV6"},
	{"l4-src-port", schema.FieldL4SrcPort, "source port"},
	{"l4-dst-port", schema.FieldL4DstPort, "destination port"},
	{"l4-src-port-range", schema.FieldL4SrcPortRange, "source ports N-M"},
	{"l4-dst-port-range", schema.FieldL4DstPortRange, "destination ports N-M"},
	{"tcp-flags", schema.FieldTCPFlags, "flags/mask, e.g. 0x02/0x12 (SYN without ACK)"},
	{"ether-type", schema.FieldEtherType, "EtherType, e.g. 0x0800"},
	{"dscp", schema.FieldACLDSCP, "DSCP 0-63"},
	{"vlan-id", schema.FieldACLVlanID, "outer VLAN ID 1-4094"},
	{"icmp-type", schema.FieldICMPType, "ICMP type"},
	{"icmp-code", schema.FieldICMPCode, "ICMP code"},
	{"icmpv6-type", schema.FieldICMPv6Type, "ICMPv6 type"},
	{"icmpv6-code", schema.FieldICMPv6Code, "ICMPv6 code"},
}

func aclCommand() *Command {
	tableAdd := &Command{
		Name: "add", Args: "TABLE",
		Summary: "add or replace ACL table TABLE: ACL_TABLE|TABLE",
		Long: `Add an ACL table (CONFIG_DB ACL_TABLE|TABLE) bound to ports, as SONiC's
"config acl add table" writes it. impaird applies L3, L3V6 and L3V4V6 tables
in each bound port's XDP program (ingress) or tc egress program (egress).`,
		Examples: []string{"swctl config acl table add DATAACL --type L3 --ports Ethernet0,Ethernet4",
			"swctl config acl table add OUT --type L3V4V6 --stage egress --ports Ethernet0"},
	}
	tableAdd.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, aclTableFields, false)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(tableAdd, args, 1, 1); err != nil {
				return err
			}
			f := ff.fields()
			// As SONiC's `config acl add table`: policy_desc defaults to
			// the name, stage to ingress.
			if _, ok := f[schema.FieldPolicyDesc]; !ok {
				f[schema.FieldPolicyDesc] = args[0]
			}
			if _, ok := f[schema.FieldACLStage]; !ok {
				f[schema.FieldACLStage] = string(schema.ACLIngress)
			}
			return setEntry(ctx, e, schema.TableACLTable, args[0], f)
		}
	}
	tableDel := &Command{Name: "del", Args: "TABLE", Summary: "remove ACL table TABLE and its rules",
		Examples: []string{"swctl config acl table del DATAACL"}}
	tableDel.Setup = func(fs *flag.FlagSet) Runner {
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(tableDel, args, 1, 1); err != nil {
				return err
			}
			keys := []string{schema.ConfigKey(schema.TableACLTable, args[0])}
			for _, r := range configKeys(ctx, e, schema.TableACLRule, args[0]+schema.ConfigSep) {
				keys = append(keys, schema.ConfigKey(schema.TableACLRule, r))
			}
			return deleteEntries(ctx, e, keys...)
		}
	}
	ruleAdd := &Command{
		Name: "add", Args: "TABLE RULE",
		Summary: "add or replace rule RULE of ACL table TABLE: ACL_RULE|TABLE|RULE",
		Long: `Add a rule (CONFIG_DB ACL_RULE|TABLE|RULE) in SONiC's field names. The rule is
written exactly as given: an existing rule of that name is replaced. The
highest PRIORITY matching rule decides; no match forwards.`,
		Examples: []string{
			"swctl config acl rule add DATAACL SYN_DROP --priority 20 --action DROP --ip-protocol 6 --tcp-flags 0x02/0x12",
			"swctl config acl rule add DATAACL WEB --priority 30 --action FORWARD --ip-protocol TCP --l4-dst-port 80",
		},
	}
	ruleAdd.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, aclRuleFields, false)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(ruleAdd, args, 2, 2); err != nil {
				return err
			}
			return setEntry(ctx, e, schema.TableACLRule, args[0]+schema.ConfigSep+args[1], ff.fields())
		}
	}
	ruleDel := delCommand("del", "TABLE RULE", "remove rule RULE of ACL table TABLE",
		[]string{"swctl config acl rule del DATAACL SYN_DROP"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TableACLRule, a[0]+schema.ConfigSep+a[1])}, nil
		})
	table := &Command{Name: "table", Summary: "add or remove ACL tables", Sub: []*Command{tableAdd, tableDel},
		Examples: append(tableAdd.Examples, tableDel.Examples...)}
	rule := &Command{Name: "rule", Summary: "add or remove ACL rules", Sub: []*Command{ruleAdd, ruleDel},
		Examples: append(ruleAdd.Examples, ruleDel.Examples...)}
	return &Command{Name: "acl", Summary: "ACL tables and rules (SONiC ACL_TABLE, ACL_RULE)",
		Sub: []*Command{table, rule}, Examples: append(tableAdd.Examples[:1], ruleAdd.Examples[0])}
}

// showACL lists every ACL rule like SONiC's aclshow: table, rule,
// priority, action, the packets and bytes of COUNTERS:<table>:<rule>, and
// impaird's result; by table, then priority (highest first).
func showACL(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	cfg, err := readCfg(ctx, db, schema.TableACLRule)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.ResultTable(schema.TableACLRule))
	if err != nil {
		return nil, err
	}
	ctrs, err := readTable(ctx, db.Counters(), schema.CountersTable, schema.CountersSep)
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"TABLE", "table"}, {"RULE", "rule"}, {"PRIO", "priority"}, {"ACTION", "action"},
		{"PACKETS", "packets"}, {"BYTES", "bytes"}, {"STATE", "state"}, {"REASON", "reason"}}}
	prio := func(f map[string]string) int {
		for k, val := range f {
			if strings.EqualFold(k, schema.FieldACLPriority) {
				n, _ := strconv.Atoi(val)
				return n
			}
		}
		return -1
	}
	keys := union(cfg, st)
	sort.SliceStable(keys, func(i, j int) bool {
		ti, _ := splitKey(keys[i], schema.ConfigSep)
		tj, _ := splitKey(keys[j], schema.ConfigSep)
		if ti != tj {
			return ti < tj
		}
		return prio(cfg[keys[i]]) > prio(cfg[keys[j]])
	})
	for _, k := range keys {
		t, r := splitKey(k, schema.ConfigSep)
		c := cfg[k]
		action := ""
		for _, f := range []string{schema.FieldPacketAction, "MIRROR_ACTION", "MIRROR_INGRESS_ACTION", "MIRROR_EGRESS_ACTION"} {
			if a, ok := c[f]; ok {
				action = a
				break
			}
		}
		row := Row{"table": t, "rule": r, "action": action, "state": st[k]["state"], "reason": st[k]["reason"],
			"priority": "", "packets": "N/A", "bytes": "N/A"}
		if p := prio(c); p >= 0 {
			row["priority"] = strconv.Itoa(p)
		}
		if n, ok := ctrs[t+schema.CountersSep+r]; ok {
			row["packets"], row["bytes"] = n["Packets"], n["Bytes"]
		}
		v.Rows = append(v.Rows, row)
	}
	return v, nil
}

func showACLTableCommand() *Command {
	return showLeaf("table", "ACL tables: type, stage, bound ports and impaird's result, like SONiC's show acl table",
		`ACL tables (CONFIG_DB ACL_TABLE): type, stage, the ports they are bound to,
the description, and impaird's result (STATE_DB ACL_TABLE_TABLE): ok, pending
(a bound port missing) or error (e.g. a type switchyard does not apply, with
who applies it in SONiC).`,
		[]string{"swctl show acl table", "swctl show acl table --json"}, false, false, showACLTables)
}

func showACLTables(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	cfg, err := readCfg(ctx, db, schema.TableACLTable)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.ResultTable(schema.TableACLTable))
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"NAME", "name"}, {"TYPE", "type"}, {"STAGE", "stage"}, {"BINDING", "ports"},
		{"DESCRIPTION", "description"}, {"STATE", "state"}, {"REASON", "reason"}}}
	for _, name := range union(cfg, st) {
		c := cfg[name]
		stage := strings.ToLower(c[schema.FieldACLStage])
		if stage == "" && c != nil {
			stage = string(schema.ACLIngress)
		}
		ports := c[schema.FieldACLPorts]
		if ports == "" {
			ports = c[schema.FieldACLPortsPlain]
		}
		v.Rows = append(v.Rows, Row{"name": name, "type": c[schema.FieldACLType], "stage": stage, "ports": ports,
			"description": c[schema.FieldPolicyDesc], "state": st[name]["state"], "reason": st[name]["reason"]})
	}
	return v, nil
}
