package enginee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// write is one hostile write: a hash (fields) or another Redis type.
type write struct {
	key    string
	fields []string // HSET key fields...
	typ    string   // "", "string", "list", "set", "zset"
}

// hostile returns n distinct bad CONFIG_DB writes across every table:
// each must end with a result that is not ok.
func hostile(n int) []write {
	huge := strings.Repeat("x", 1<<20)
	edges := []string{"67", "9217", "-5", "100000000000000000000", "0x100", "", "\xff\xfe", "1e3", " 1500", huge}
	gens := []func(i int) write{
		func(i int) write {
			return write{key: fmt.Sprintf("PORT|bad/port%d", i), fields: []string{"mtu", "1500"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("PORT|p%d", i), fields: []string{"mtu", edges[i%len(edges)]}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("PORT|q%d", i), fields: []string{"admin_status", "UP!"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("VLAN|Vlan%d", 4095+i), fields: []string{"vlanid", fmt.Sprint(4095 + i)}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("VLAN|Vlan%d", 1+i%4000), fields: []string{"vlanid", fmt.Sprint(2 + i%4000)}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("VLAN_MEMBER|Vlan%d|Ethernet0", 1+i%4000), fields: []string{"tagging_mode", "sideways"}}
		},
		func(i int) write { return write{key: fmt.Sprintf("INTERFACE|Ethernet0|10.%d.0.1/33", i%256)} },
		func(i int) write {
			return write{key: fmt.Sprintf("INTERFACE|Ethernet0|300.1.%d.%d/24", i/256%256, i%256)}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("VLAN_INTERFACE|Vlan0|10.9.%d.%d/24", i/256%256, i%256)}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("STATIC_ROUTE|10.%d.%d.1/16", 64+i/256%64, i%256), fields: []string{"blackhole", "true"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("STATIC_ROUTE|10.60.%d.%d:24", i/256%256, i%256), fields: []string{"blackhole", "true"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("STATIC_ROUTE|10.61.%d.%d/32", i/256%256, i%256), fields: []string{"nexthop", "not-an-ip\xff"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("FDB|Vlan6:02:00:00:00:%02x:%02x", i/256%256, i%256), fields: []string{"port", "Ethernet0"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("FDB|Vlan6|ZZ:00:00:00:%02x:%02x", i/256%256, i%256), fields: []string{"port", "Ethernet0"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("STATIC_ROUTE|10.62.%d.%d/32", i/256%256, i%256), typ: "string"}
		},
		func(i int) write { return write{key: fmt.Sprintf("PORT|r%d", i), typ: "list"} },
		func(i int) write { return write{key: fmt.Sprintf("VLAN|Vlan%d", 1+i%4000), typ: "set"} },
		func(i int) write {
			return write{key: fmt.Sprintf("FDB|Vlan7|02:00:00:00:%02x:%02x", i/256%256, i%256), typ: "zset"}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("PORT|\xff\xfe%d", i), fields: []string{"mtu", "1500"}}
		},
	}
	seen := map[string]bool{}
	var out []write
	for i := 0; len(out) < n; i++ {
		w := gens[i%len(gens)](i / len(gens))
		if seen[w.key] {
			continue
		}
		seen[w.key] = true
		out = append(out, w)
	}
	// A few huge values and keys.
	for i := 0; i < 10; i++ {
		out = append(out, write{key: fmt.Sprintf("PORT|huge%d", i), fields: []string{"description", huge}},
			write{key: "STATIC_ROUTE|" + strings.Repeat("1", 2000+i), fields: []string{"blackhole", "true"}})
	}
	return out
}

func (w write) do(ctx context.Context, p redis.Pipeliner) {
	p.Del(ctx, w.key)
	switch w.typ {
	case "string":
		p.Set(ctx, w.key, "x", 0)
	case "list":
		p.RPush(ctx, w.key, "mtu", "1500")
	case "set":
		p.SAdd(ctx, w.key, "vlanid")
	case "zset":
		p.ZAdd(ctx, w.key, redis.Z{Score: 1, Member: "port"})
	default:
		f := w.fields
		if len(f) == 0 {
			f = []string{schema.NullField, schema.NullField}
		}
		p.HSet(ctx, w.key, f)
	}
}

// kernelSnapshot is what the kernel holds, as iproute2 JSON prints it,
// without counters and without switchyard's routes.
func kernelSnapshot(t *testing.T, ns *testns.NS) string {
	var links, addrs, routes []map[string]any
	ns.JSON(&links, "link", "show")
	// IPv4 only: IPv6 link-local addresses finish DAD on their own.
	ns.JSON(&addrs, "-4", "addr", "show")
	ns.JSON(&routes, "-4", "route", "show", "table", "all")
	var kept []map[string]any
	for _, r := range routes {
		if r["protocol"] != "201" {
			kept = append(kept, r)
		}
	}
	b, _ := json.Marshal([]any{links, addrs, kept})
	return string(b)
}

func ourRoutes(ns *testns.NS) []string {
	var routes []map[string]any
	ns.JSON(&routes, "route", "show", "proto", "201")
	var out []string
	for _, r := range routes {
		out = append(out, fmt.Sprint(r["dst"]))
	}
	sort.Strings(out)
	return out
}

func TestHostileBarrage(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	s.NS.Veth("Ethernet0", peer, "eth0")
	s.NS.Veth("Ethernet1", peer, "eth1")
	s.NS.IP("link", "set", "Ethernet0", "up")
	s.NS.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
	ctx := context.Background()
	s.SetInitialized()
	orch := s.Start("orchagent", "--log-level", "info")
	syncd := s.Start("syncd", "--log-level", "info")
	// The good keys exist before the barrage (the memory baseline includes
	// them); the barrage updates them and adds a few more in between.
	var good []string
	for i := 0; i < 200; i++ {
		good = append(good, fmt.Sprintf("STATIC_ROUTE|10.100.%d.%d/32", i/256, i%256))
	}
	pipe := s.Config.Pipeline()
	for _, k := range good {
		pipe.HSet(ctx, k, "blackhole", "true")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s.WaitOK(good...)
	// Warm-up: a small barrage, written and deleted, so the baseline is a
	// daemon that has run its error paths and its runtime has sized its
	// structures (GC metadata, code pages) for such input; what is
	// measured below is what the big barrage leaves behind.
	warm := hostile(100)
	pipe = s.Config.Pipeline()
	for _, w := range warm {
		w.do(ctx, pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitResults(t, s, warm)
	pipe = s.Config.Pipeline()
	for _, w := range warm {
		pipe.Del(ctx, w.key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoResults(t, s, warm)
	time.Sleep(6 * time.Second) // one ReturnMemory interval
	before := kernelSnapshot(t, s.NS)
	base := map[string]int{"orchagent": orch.RSS(), "syncd": syncd.RSS()}
	baseAnon := map[string]int{"orchagent": orch.AnonRSS(), "syncd": syncd.AnonRSS()}
	t.Logf("anon at start %v", baseAnon)

	bad := hostile(5000)
	pipe = s.Config.Pipeline()
	for i, w := range bad {
		w.do(ctx, pipe)
		if i%25 == 0 { // a good update of one of 20 keys: blackhole <-> via the peer
			k := good[(i/25)%20]
			pipe.Del(ctx, k)
			if (i/25/20)%2 == 0 {
				pipe.HSet(ctx, k, "nexthop", "10.0.0.2")
			} else {
				pipe.HSet(ctx, k, "blackhole", "true")
			}
		}
		if i%250 == 0 { // a new good key
			k := fmt.Sprintf("STATIC_ROUTE|10.101.%d.%d/32", i/256, i%256)
			pipe.HSet(ctx, k, "blackhole", "true")
			good = append(good, k)
		}
		if i%200 == 199 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d hostile writes, %d good keys", len(bad), len(good))
	s.WaitOK(good...)
	e2eutil.Eventually(t, e2eutil.Wait, "good keys' results name their current version", func() (bool, string) {
		for _, k := range good {
			h, _ := s.Config.HGetAll(ctx, k).Result()
			if r := s.Result(k); r["generation"] != schema.Generation(h) || r["state"] != "ok" {
				return false, fmt.Sprintf("%s: %v for %v", k, r, h)
			}
		}
		return true, ""
	})
	waitResults(t, s, bad)
	for name, p := range s.Procs {
		if p.Exited() {
			t.Fatalf("%s died:\n%s", name, p.Output())
		}
		// One line per bad key at most, each quoting little of its input.
		if n := len(p.Output()); n > 4<<20 {
			t.Errorf("%s logged %d bytes for the barrage", name, n)
		} else {
			t.Logf("%s logged %d KiB for the barrage", name, n>>10)
		}
	}
	if got := ourRoutes(s.NS); len(got) != len(good) {
		t.Fatalf("kernel has %d switchyard routes, want the %d good ones", len(got), len(good))
	}
	if after := kernelSnapshot(t, s.NS); after != before {
		t.Fatalf("hostile input changed the kernel:\nbefore %s\nafter  %s", before, after)
	}

	// Delete the hostile keys: every result goes, memory comes back.
	pipe = s.Config.Pipeline()
	for _, w := range bad {
		pipe.Del(ctx, w.key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoResults(t, s, bad)
	e2eutil.Eventually(t, 2*e2eutil.Wait, "RSS back within 20% of the start", func() (bool, string) {
		var msg []string
		ok := true
		for name, kb := range base {
			now := s.Procs[name].RSS()
			msg = append(msg, fmt.Sprintf("%s %d -> %d KiB", name, kb, now))
			if float64(now) > 1.2*float64(kb) {
				ok = false
			}
		}
		return ok, strings.Join(msg, ", ")
	})
	for name, kb := range base {
		p := s.Procs[name]
		t.Logf("%s RSS %d KiB at start, %d KiB after the barrage was deleted (anonymous %d -> %d KiB)",
			name, kb, p.RSS(), baseAnon[name], p.AnonRSS())
	}
}

// waitResults waits until every bad key has a result that is not ok.
func waitResults(t *testing.T, s *e2eutil.Switch, bad []write) {
	t.Helper()
	ctx := context.Background()
	e2eutil.Eventually(t, 2*e2eutil.Wait, "every hostile key has a result that is not ok", func() (bool, string) {
		p := s.State.Pipeline()
		cmds := make([]*redis.StringCmd, len(bad))
		for i, w := range bad {
			cmds[i] = p.HGet(ctx, e2eutil.ResultKey(w.key), "state")
		}
		p.Exec(ctx)
		for i, c := range cmds {
			st, _ := c.Result()
			if st == "" || st == "ok" {
				return false, fmt.Sprintf("%q: state %q", schema.Clip(bad[i].key), st)
			}
		}
		return true, ""
	})
}

// waitNoResults waits until no bad key has a result.
func waitNoResults(t *testing.T, s *e2eutil.Switch, bad []write) {
	t.Helper()
	ctx := context.Background()
	e2eutil.Eventually(t, 2*e2eutil.Wait, "hostile results removed", func() (bool, string) {
		p := s.State.Pipeline()
		cmds := make([]*redis.IntCmd, len(bad))
		for i, w := range bad {
			cmds[i] = p.Exists(ctx, e2eutil.ResultKey(w.key))
		}
		p.Exec(ctx)
		for i, c := range cmds {
			if c.Val() != 0 {
				return false, schema.Clip(bad[i].key)
			}
		}
		return true, ""
	})
}
