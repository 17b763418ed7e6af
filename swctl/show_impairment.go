package swctl

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/schema"
)

// impairmentCounterOrder is the order of impaird's counters in the table.
var impairmentCounterOrder = []string{"rx_packets", "rx_bytes", "passed", "dropped_loss", "dropped_rate", "corrupted", "duplicated"}

func showImpairment(ctx context.Context, db *DB, o showOpts) (*View, error) {
	if o.Counters {
		return impairmentCounters(ctx, db)
	}
	cfg, err := readAll(ctx, readCfg, db, schema.TableImpairment, schema.TableImpairmentFlow)
	if err != nil {
		return nil, err
	}
	st, err := readAll(ctx, readState, db, schema.ResultTable(schema.TableImpairment),
		schema.ResultTable(schema.TableImpairmentFlow))
	if err != nil {
		return nil, err
	}
	// Rows: each port's profile, then its flow rules, ports in natural order.
	byPort := map[string][]string{}
	for _, k := range union(cfg[1], st[1]) {
		port, name := splitKey(k, schema.ConfigSep)
		byPort[port] = append(byPort[port], name)
	}
	ports := hashes{}
	for p := range byPort {
		ports[p] = nil
	}
	v := &View{Columns: []Column{{"PORT", "port"}, {"RULE", "rule"}, {"PROFILE", "profile"},
		{"STATE", "state"}, {"XDP", "xdp_mode"}, {"REASON", "reason"}}}
	for _, port := range union(cfg[0], st[0], ports) {
		if c, s := cfg[0][port], st[0][port]; c != nil || s != nil {
			v.Rows = append(v.Rows, Row{"port": port, "rule": "", "profile": profile(c),
				"state": s["state"], "xdp_mode": s["xdp_mode"], "reason": s["reason"]})
		}
		for _, name := range byPort[port] {
			k := port + schema.ConfigSep + name
			c, s := cfg[1][k], st[1][k]
			xdp := s["xdp_mode"]
			if xdp == "" {
				xdp = st[0][port]["xdp_mode"]
			}
			v.Rows = append(v.Rows, Row{"port": port, "rule": name, "profile": profile(c),
				"state": s["state"], "xdp_mode": xdp, "reason": s["reason"]})
		}
	}
	return v, nil
}

// profile renders fields as "k=v k=v", sorted; nil for none.
func profile(f map[string]string) []string {
	if len(f) == 0 {
		return nil
	}
	out := make([]string, 0, len(f))
	for k, v := range f {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return []string{strings.Join(out, " ")}
}

// impairmentCounters lists IMPAIRMENT_COUNTERS, one row per key; a key
// with egress counters (impaird's tx_ fields, direction egress or both)
// gets a second row for them under the same columns, and the table a DIR
// column (ingress / egress).
func impairmentCounters(ctx context.Context, db *DB) (*View, error) {
	ctrs, err := readTable(ctx, db.Counters(), schema.ImpairmentCountersTable, schema.CountersSep)
	if err != nil {
		return nil, err
	}
	in, eg := map[string]map[string]string{}, map[string]map[string]string{}
	for k, h := range ctrs {
		for f, val := range h {
			if name, ok := strings.CutPrefix(f, egressCounterPrefix); ok {
				if eg[k] == nil {
					eg[k] = map[string]string{}
				}
				eg[k][egressCounterName(name)] = val
				continue
			}
			if in[k] == nil {
				in[k] = map[string]string{}
			}
			in[k][f] = val
		}
	}
	both := map[string]map[string]string{}
	for k, h := range in {
		both[k] = h
	}
	for k, h := range eg {
		both[k+"\x00egress"] = h
	}
	v := &View{Columns: []Column{{"PORT", "port"}, {"RULE", "rule"}}}
	if len(eg) > 0 {
		v.Columns = append(v.Columns, Column{"DIR", "direction"})
	}
	for _, f := range genericColumns(both, impairmentCounterOrder) {
		v.Columns = append(v.Columns, Column{header(f), f})
	}
	v.Columns = append(v.Columns, Column{"LOSS%", "loss_percent"})
	for _, k := range union(ctrs) {
		port, name := splitKey(k, schema.ConfigSep)
		for _, d := range []struct {
			dir string
			h   map[string]string
		}{{"ingress", in[k]}, {"egress", eg[k]}} {
			if d.h == nil {
				continue
			}
			r := Row{"port": port, "rule": name}
			if len(eg) > 0 {
				r["direction"] = d.dir
			}
			for f, val := range d.h {
				r[f] = val
			}
			r["loss_percent"] = lossPercent(d.h)
			v.Rows = append(v.Rows, r)
		}
	}
	return v, nil
}

// egressCounterPrefix marks impaird's egress counters (tx_packets,
// tx_dropped_loss...); egressCounterName maps one, prefix cut, to the
// column of its ingress counterpart.
const egressCounterPrefix = "tx_"

func egressCounterName(name string) string {
	switch name {
	case "packets":
		return "rx_packets"
	case "bytes":
		return "rx_bytes"
	}
	return name
}

// lossPercent is (dropped_loss + dropped_rate) / rx_packets in percent,
// two decimals; "" when there were no packets.
func lossPercent(h map[string]string) string {
	num := func(f string) float64 { x, _ := strconv.ParseFloat(h[f], 64); return x }
	rx := num("rx_packets")
	if rx <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", 100*(num("dropped_loss")+num("dropped_rate"))/rx)
}
