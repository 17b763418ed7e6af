package swctl

import (
	"context"
	"flag"

	"github.com/switchyard-net/switchyard/schema"
)

var portTuningFields = []fieldFlag{
	{"rps-cpus", schema.FieldRPSCPUs, "CPUs that do RPS for every RX queue, a list as taskset -c takes it: 0-1,3"},
	{"rfs-flow-cnt", schema.FieldRFSFlowCnt, "RFS flow table size per RX queue (rps_flow_cnt), 0 or a power of two"},
	{"rps-sock-flow-entries", schema.FieldRPSSockFlowEntries, "host-wide RFS socket flow table (the largest any port asks for), 0 or a power of two"},
	{"irq-cpus", schema.FieldIRQCPUs, "CPUs for the port's IRQs (smp_affinity_list), a CPU list"},
	{"napi-defer-hard-irqs", schema.FieldNapiDeferHardIRQs, "napi_defer_hard_irqs of the port"},
	{"gro-flush-timeout", schema.FieldGROFlushTimeout, "gro_flush_timeout of the port, ns"},
}

// portTuningCommand is "swctl config port tuning PORT --rps-cpus 0-1 ...".
func portTuningCommand() *Command {
	c := &Command{
		Name:    "tuning",
		Args:    "PORT",
		Summary: "set receive-path tuning of a port (PORT_TUNING|PORT, merged with what is there)",
		Long: `Set the receive-path tuning of a port (CONFIG_DB PORT_TUNING|PORT, switchyard's
own table; docs/tuning.md). orchagent writes the values to the port's sysfs
files and IRQs and puts the previous values back when a field is unset or the
entry deleted. CPUs must exist on the host. A port without IRQs (veth) gets
irq_cpus as a warning, not an error.`,
		Examples: []string{
			"swctl config port tuning Ethernet0 --rps-cpus 0-1 --rfs-flow-cnt 2048 --rps-sock-flow-entries 32768",
			"swctl config port tuning Ethernet0 --irq-cpus 2-3 --unset rps_cpus",
			"swctl config port tuning del Ethernet0",
		},
	}
	c.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, portTuningFields, true)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(c, args, 1, 1); err != nil {
				return err
			}
			return mergeEntry(ctx, e, schema.TablePortTuning, args[0], ff.fields(), ff.unset)
		}
	}
	c.Sub = []*Command{delCommand("del", "PORT", "remove PORT_TUNING|PORT (the previous values come back)",
		[]string{"swctl config port tuning del Ethernet0"},
		func(args []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TablePortTuning, args[0])}, nil
		})}
	return c
}

// showPortTuning lists every PORT_TUNING entry: the kernel's values as
// syncd mirrors them (PORT_TUNING_TABLE), "value (want X)" where the
// configured value differs, the configured value alone where there is no
// mirror, and orchagent's result.
func showPortTuning(ctx context.Context, db *DB, _ showOpts) (*View, error) {
	hs, err := readAll(ctx, readCfg, db, schema.TablePortTuning)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.StatePortTuningTable)
	if err != nil {
		return nil, err
	}
	cfg := hs[0]
	v := &View{Columns: []Column{{"PORT", "port"}, {"RX QUEUES", "rx_queues"}, {"RPS CPUS", schema.FieldRPSCPUs},
		{"RFS FLOW CNT", schema.FieldRFSFlowCnt}, {"SOCK FLOW ENTRIES", schema.FieldRPSSockFlowEntries},
		{"IRQ CPUS", schema.FieldIRQCPUs}, {"NAPI DEFER", schema.FieldNapiDeferHardIRQs},
		{"GRO FLUSH NS", schema.FieldGROFlushTimeout}, {"STATE", "state"}, {"NOTE", "note"}}}
	for _, port := range union(cfg) {
		c, s := cfg[port], st[port]
		r := Row{"port": port, "rx_queues": s["rx_queues"], "state": s[schema.FieldState]}
		for _, f := range schema.PortTuningFields {
			want, set := c[f]
			have, mirrored := s[f]
			switch {
			case !mirrored && set:
				r[f] = want
			case set && !sameTuning(f, have, want):
				r[f] = have + " (want " + want + ")"
			default:
				r[f] = have
			}
		}
		switch {
		case s[schema.FieldReason] != "":
			r["note"] = s[schema.FieldReason]
		case s[schema.FieldWarning] != "":
			r["note"] = s[schema.FieldWarning]
		}
		if r["state"] == "" {
			r["state"] = "-"
			r["note"] = "no result yet (is orchagent running?)"
		}
		v.Rows = append(v.Rows, r)
	}
	return v, nil
}

// sameTuning compares a mirrored value with a configured one (CPU lists
// by their CPUs).
func sameTuning(field, have, want string) bool {
	if field == schema.FieldRPSCPUs || field == schema.FieldIRQCPUs {
		a, p1 := schema.ParseCPUList(have)
		b, p2 := schema.ParseCPUList(want)
		return p1 == "" && p2 == "" && schema.FormatCPUList(a) == schema.FormatCPUList(b)
	}
	return have == want
}
