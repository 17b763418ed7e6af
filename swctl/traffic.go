package swctl

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// trafficFlags are the TRAFFIC_GEN fields with a flag of their own; the
// same fields may be given as FIELD VALUE pairs after PORT NAME.
var trafficFlags = []fieldFlag{
	{"rate", "rate", "packets/s (10000pps, 1kpps, 1.5mpps) or bit/s (100mbit, 1gbit)"},
	{"size", "size", "frame size with FCS: 64-9216, \"uniform 64-1500\" or imix (7:4:1 of 64/576/1500)"},
	{"src-mac", "src_mac", "source MAC (default: the port's)"},
	{"dst-mac", "dst_mac", "destination MAC (default: broadcast)"},
	{"src", "src", "source IPv4/IPv6 address (default 198.18.0.1 or 2001:2::1)"},
	{"dst", "dst", "destination IPv4/IPv6 address (default 198.19.0.1 or 2001:2::2)"},
	{"proto", "proto", "udp (default), tcp or icmp (echo requests)"},
	{"sport", "sport", "source port (default 1024)"},
	{"dport", "dport", "destination port (default 9, discard)"},
	{"vlan", "vlan", "802.1Q VLAN id of the frames (default untagged)"},
	{"dscp", "dscp", "DSCP 0-63"},
	{"pattern", "pattern", "constant (default), bursty (needs on, off) or poisson"},
	{"on", "on", "bursty: time sending at rate (e.g. 100ms)"},
	{"off", "off", "bursty: time silent between bursts"},
	{"duration", "duration", "stop after this long (default: until deleted)"},
	{"count", "count", "stop after this many frames"},
	{"seed", "seed", "RNG seed of uniform sizes and poisson gaps"},
	{"path", "path", "auto (AF_XDP, else packet socket), xdp or packet"},
}

// trafficFieldValues are completion candidates for a field's value.
var trafficFieldValues = map[string][]string{
	"size":    {"64", "128", "512", "1500", "imix", "uniform 64-1500"},
	"proto":   {"udp", "tcp", "icmp"},
	"pattern": {"constant", "bursty", "poisson"},
	"path":    {"auto", "xdp", "packet"},
	"rate":    {"1kpps", "10kpps", "100kpps", "1mpps", "10mbit", "100mbit", "1gbit"},
}

func trafficCommand() *Command {
	add := &Command{
		Name:    "add",
		Args:    "PORT STREAM [FIELD VALUE]...",
		Summary: "add or replace background traffic stream STREAM on PORT: TRAFFIC_GEN|PORT|STREAM",
		Long: `Add a background traffic stream sent out of PORT by trafficd (CONFIG_DB
TRAFFIC_GEN|PORT|STREAM). Fields come as FIELD VALUE pairs after the names or
as flags; rate is required. The stream is written exactly as given: an
existing stream of that name is replaced (and restarts its counters). It runs
until deleted, or until its duration or count is reached. A value with a
space is one argument: size "uniform 64-1500". See docs/trafficd.md.`,
		Examples: []string{
			"swctl config traffic add Ethernet0 bg1 rate 10kpps size 64",
			"swctl config traffic add Ethernet0 mix rate 200mbit size imix dst 10.0.0.2 proto udp dport 5001",
			"swctl config traffic add Ethernet0 burst rate 50kpps pattern bursty on 100ms off 900ms duration 60s",
			"swctl config traffic add Ethernet0 v6 --rate 1kpps --src 2001:db8::1 --size 128 --count 10000",
			`swctl config traffic add Ethernet1 web rate 50mbit size "uniform 64-1500" proto tcp dport 443 pattern poisson`,
		},
	}
	add.Setup = func(fs *flag.FlagSet) Runner {
		ff := newFieldFlags(fs, trafficFlags, false)
		return func(ctx context.Context, e *Env, args []string) error {
			if len(args) < 2 {
				return usagef(add, "want PORT STREAM, then FIELD VALUE pairs")
			}
			fields := ff.fields()
			pairs := args[2:]
			if len(pairs)%2 != 0 {
				return usagef(add, "field %q has no value: give FIELD VALUE pairs", pairs[len(pairs)-1])
			}
			known := schema.KnownFields(schema.TableTrafficGen)
			for i := 0; i < len(pairs); i += 2 {
				name := strings.ReplaceAll(pairs[i], "-", "_")
				if !slices.Contains(known, name) {
					return usagef(add, "unknown field %q: want one of %s", pairs[i], strings.Join(known, ", "))
				}
				if _, dup := fields[name]; dup {
					return usagef(add, "field %q given twice", name)
				}
				fields[name] = pairs[i+1]
			}
			if len(fields) == 0 {
				return usagef(add, "give at least rate, e.g. rate 10kpps")
			}
			return setEntry(ctx, e, schema.TableTrafficGen, args[0]+schema.ConfigSep+args[1], fields)
		}
	}
	del := delCommand("del", "PORT STREAM", "stop and remove stream STREAM of PORT",
		[]string{"swctl config traffic del Ethernet0 bg1"},
		func(a []string) ([]string, error) {
			return []string{schema.ConfigKey(schema.TableTrafficGen, a[0]+schema.ConfigSep+a[1])}, nil
		})
	return &Command{
		Name:     "traffic",
		Summary:  "background traffic streams sent out of ports (trafficd)",
		Examples: append(add.Examples[:2:2], del.Examples...),
		Sub:      []*Command{add, del},
	}
}

// trafficCounterOrder is the order of trafficd's counters in the tables.
var trafficCounterOrder = []string{"packets", "bytes", "pps", "bps", "avg_pps", "elapsed", "dropped", "late"}

// showTraffic lists the streams with trafficd's result and the main
// counters; --counters shows every counter.
func showTraffic(ctx context.Context, db *DB, o showOpts) (*View, error) {
	ctrs, err := readTable(ctx, db.Counters(), schema.TrafficGenCountersTable, schema.CountersSep)
	if err != nil {
		return nil, err
	}
	if o.Counters {
		v := &View{Columns: []Column{{"PORT", "port"}, {"STREAM", "stream"}}}
		for _, f := range genericColumns(ctrs, trafficCounterOrder, "generation") {
			v.Columns = append(v.Columns, Column{header(f), f})
		}
		for _, k := range union(ctrs) {
			port, name := splitKey(k, schema.ConfigSep)
			r := Row{"port": port, "stream": name}
			for f, val := range ctrs[k] {
				r[f] = val
			}
			v.Rows = append(v.Rows, r)
		}
		return v, nil
	}
	cfg, err := readCfg(ctx, db, schema.TableTrafficGen)
	if err != nil {
		return nil, err
	}
	st, err := readState(ctx, db, schema.ResultTable(schema.TableTrafficGen))
	if err != nil {
		return nil, err
	}
	v := &View{Columns: []Column{{"PORT", "port"}, {"STREAM", "stream"}, {"FIELDS", "fields"},
		{"STATE", "state"}, {"STATUS", "status"}, {"PATH", "path"}, {"PACKETS", "packets"}, {"PPS", "pps"},
		{"REASON", "reason"}}}
	for _, k := range union(cfg, st) {
		port, name := splitKey(k, schema.ConfigSep)
		c, s := cfg[k], st[k]
		v.Rows = append(v.Rows, Row{"port": port, "stream": name, "fields": profile(c), "state": s["state"],
			"status": s["status"], "path": s["path"], "packets": ctrs[k]["packets"], "pps": ctrs[k]["pps"],
			"reason": s["reason"]})
	}
	return v, nil
}

// trafficAddValues completes the FIELD VALUE pairs of config traffic add
// (pos holds PORT, STREAM and the pairs typed so far).
func trafficAddValues(pos []string) []string {
	if (len(pos)-2)%2 == 0 {
		return schema.KnownFields(schema.TableTrafficGen)
	}
	return trafficFieldValues[pos[len(pos)-1]]
}

// trafficStreams are the configured streams of port (completion).
func trafficStreams(ctx context.Context, env *Env, port string) []string {
	return liveKeys(ctx, env, schema.TableTrafficGen, port)
}
