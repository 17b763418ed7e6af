package swctl

import (
	"context"
	"flag"

	"github.com/switchyard-net/switchyard/schema"
)

// impairmentFields are the IMPAIRMENT fields with a flag of their own. The
// schema (impaird's parser) decides what is valid; a field it does not
// know yet can still be passed with --field k=v.
var impairmentFields = []fieldFlag{
	{"loss", "loss", "drop this percent of packets, 0-100"},
	{"loss-model", "loss_model", "random, gilbert, periodic or state (netem's 4-state Markov model)"},
	{"loss-corr", "loss_corr", "netem's loss correlation, percent (loss-model random; see docs/impaird.md)"},
	{"p13", "p13", "4-state model: good → burst loss, percent per packet (required with state)"},
	{"p31", "p31", "4-state model: burst loss → good (default 100 - p13)"},
	{"p32", "p32", "4-state model: burst loss → good within burst (default 0)"},
	{"p23", "p23", "4-state model: good within burst → burst loss (default 100)"},
	{"p14", "p14", "4-state model: good → isolated loss (default 0)"},
	{"ge-p", "ge_p", "Gilbert-Elliott: good→bad transition, percent per packet"},
	{"ge-r", "ge_r", "Gilbert-Elliott: bad→good transition, percent per packet"},
	{"ge-loss-good", "ge_loss_good", "Gilbert-Elliott: loss percent in the good state"},
	{"ge-loss-bad", "ge_loss_bad", "Gilbert-Elliott: loss percent in the bad state"},
	{"period", "period", "periodic loss: drop every Nth packet"},
	{"rate", "rate", "police to this rate: 100mbit, 1gbit, 500kbit or bit/s"},
	{"burst", "burst", "policer burst: bytes, 64kb, 1mb (default max(10 ms of rate, 10 full frames))"},
	{"corrupt", "corrupt", "flip one bit in this percent of packets"},
	{"duplicate", "duplicate", "deliver this percent of packets twice (tc ingress copy)"},
	{"seed", "seed", "RNG seed (uint64): same seed, same drop pattern"},
	{"direction", "direction", "where loss, rate and corrupt act: ingress (XDP, default), egress (tc egress) or both"},
	{"delay", "delay", "added delay: 50ms, 200us"},
	{"jitter", "jitter", "delay jitter: 5ms"},
	{"jitter-distribution", "jitter_distribution", "uniform, normal, pareto or paretonormal"},
	{"shape", "shape", "shape (queue and pace) to this rate"},
	{"shape-limit", "shape_limit", "shaper queue limit"},
	{"reorder", "reorder", "true: jitter may reorder a flow"},
	{"slot", "slot", "netem slotting: MIN [MAX] between delivery slots, e.g. '800us 1ms' (VM/fq only)"},
	{"slot-packets", "slot_packets", "slotting: packets per slot"},
	{"slot-bytes", "slot_bytes", "slotting: bytes per slot (64kb)"},
	{"slot-distribution", "slot_distribution", "slotting: normal, pareto or paretonormal; slot is then 'DELAY JITTER'"},
}

// flowMatchFields are the IMPAIRMENT_FLOW match fields with a flag.
var flowMatchFields = []fieldFlag{
	{"src", "src", "source IPv4/IPv6 CIDR"},
	{"dst", "dst", "destination IPv4/IPv6 CIDR"},
	{"proto", "proto", "tcp, udp, icmp, icmpv6 or a protocol number"},
	{"sport", "sport", "source port N or N-M"},
	{"dport", "dport", "destination port N or N-M"},
	{"dscp", "dscp", "DSCP value"},
	{"vlan", "vlan", "VLAN id of the packet"},
	{"priority", "priority", "rule priority 0-65535: higher wins, ties go to the smaller name"},
	{"scope", "scope", "rule (one shared state, default) or flow (state per 5-tuple)"},
}

func impairmentCommand() *Command {
	set := &Command{
		Name:    "set",
		Args:    "PORT",
		Summary: "set the impairment profile of packets arriving on (or sent by) PORT (merged)",
		Long: `Set the impairment profile of a port (CONFIG_DB IMPAIRMENT|PORT): packets that
arrive on PORT are dropped, policed or corrupted by impaird's XDP program
(--direction egress: packets PORT sends, by its tc egress program; both: each
way, with independent state). The
given fields are merged into the existing profile; --unset removes one and
--clear starts from an empty profile. Fields impaird knows but swctl has no
flag for pass through with --field NAME=VALUE.`,
		Examples: []string{
			"swctl config impairment set Ethernet1 --loss 20",
			"swctl config impairment set Ethernet0 --loss 1.5 --rate 100mbit --burst 64kb --seed 42",
			"swctl config impairment set Ethernet0 --loss-model gilbert --ge-p 1 --ge-r 25",
			"swctl config impairment set Ethernet0 --loss-model state --p13 3 --p31 30 --p32 20 --p23 40 --p14 1",
			"swctl config impairment set Ethernet0 --loss 10 --loss-corr 25 --duplicate 1 --seed 7",
			"swctl config impairment set Ethernet0 --unset rate --field corrupt=0.1",
			"swctl config impairment set Ethernet0 --loss 30 --direction egress",
		},
	}
	set.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, impairmentFields, true)
		clear := fs.Bool("clear", false, "replace the whole profile instead of merging into it")
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(set, args, 1, 1); err != nil {
				return err
			}
			if *clear {
				return setEntry(ctx, e, schema.TableImpairment, args[0], ff.fields())
			}
			return mergeEntry(ctx, e, schema.TableImpairment, args[0], ff.fields(), ff.unset)
		}
	}
	del := delCommand("del", "PORT", "remove the impairment profile of PORT (its flow rules stay)",
		[]string{"swctl config impairment del Ethernet1"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TableImpairment, a[0])}, nil
		})
	return &Command{
		Name:    "impairment",
		Summary: "impair packets arriving on a port: loss, rate, corruption, per-flow rules",
		Examples: append(set.Examples,
			"swctl config impairment flow add Ethernet0 dns --dst 10.0.0.0/24 --proto udp --dport 53 --loss 5",
			"swctl config impairment del Ethernet1"),
		Sub: []*Command{set, del, flowCommand(), scheduleCommand()},
	}
}

func flowCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "PORT NAME",
		Summary: "add or replace flow rule NAME on PORT: IMPAIRMENT_FLOW|PORT|NAME",
		Long: `Add a class of traffic on PORT with its own impairment (CONFIG_DB
IMPAIRMENT_FLOW|PORT|NAME). The rule is written exactly as given: an existing
rule of that name is replaced. Packets matching no rule get the port's profile.`,
		Examples: []string{
			"swctl config impairment flow add Ethernet0 video --dst 10.0.0.0/24 --proto udp --loss 5",
			"swctl config impairment flow add Ethernet0 bulk --proto tcp --dport 5201 --rate 10mbit --scope flow",
			"swctl config impairment flow add Ethernet0 up --proto udp --loss 10 --direction both",
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		defs := append(append([]fieldFlag(nil), flowMatchFields...), impairmentFields...)
		ff := newFieldFlags(fs, defs, false)
		return func(ctx context.Context, e *Env, args []string) error {
			if err := wantArgs(add, args, 2, 2); err != nil {
				return err
			}
			return setEntry(ctx, e, schema.TableImpairmentFlow, args[0]+"|"+args[1], ff.fields())
		}
	}
	del := delCommand("del", "PORT NAME", "remove flow rule NAME of PORT",
		[]string{"swctl config impairment flow del Ethernet0 video"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TableImpairmentFlow, a[0]+"|"+a[1])}, nil
		})
	return &Command{Name: "flow", Summary: "per-flow impairment rules of a port", Sub: []*Command{add, del},
		Examples: append(add.Examples, del.Examples...)}
}
