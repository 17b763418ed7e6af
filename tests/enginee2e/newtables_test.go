package enginee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// hostileNew is hostile input for this round's tables (PORT_TUNING,
// ACL_TABLE/ACL_RULE, TRAFFIC_GEN, IMPAIRMENT_SCHEDULE, IMPAIRMENT's
// direction): bad values, wrong Redis types, non-UTF-8 keys and values,
// a wrong separator and a 1 MB value, n writes in all.
func hostileNew(n int) []write {
	huge := strings.Repeat("x", 1<<20)
	gens := []func(i int) write{
		func(i int) write {
			return write{key: fmt.Sprintf("PORT_TUNING|t%d", i), fields: []string{"rps_cpus", "0-999"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("PORT_TUNING|u%d", i), fields: []string{"rfs_flow_cnt", "3\xff"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("ACL_TABLE|BAD%d", i), fields: []string{"type", "L3", "stage", "sideways", "ports@", "Ethernet0"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("ACL_RULE|GOOD|BAD%d", i), fields: []string{"PRIORITY", "10", "PACKET_ACTION", "DROP", "SRC_IP", "300.1.1.1/32"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("ACL_RULE|GOOD|T%d", i), fields: []string{"PRIORITY", "10", "PACKET_ACTION", "DROP", "TCP_FLAGS", "0x02/0x1ff"}}
		},
		func(i int) write { return write{key: fmt.Sprintf("ACL_RULE|GOOD|L%d", i), typ: "list"} },
		func(i int) write {
			return write{key: fmt.Sprintf("TRAFFIC_GEN|Ethernet1|s%d", i), fields: []string{"rate", "fast"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("TRAFFIC_GEN|Ethernet1|z%d", i), fields: []string{"rate", "1kpps", "size", "99999999"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("TRAFFIC_GEN|\xff\xfe%d|x", i), fields: []string{"rate", "1kpps"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("IMPAIRMENT_SCHEDULE|s%d", i), fields: []string{"steps", "0s loss 200; 1s end"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("IMPAIRMENT_SCHEDULE|w%d", i), fields: []string{"steps", "0s loss 1;; x"}}
		},
		func(i int) write { return write{key: fmt.Sprintf("IMPAIRMENT_SCHEDULE|z%d", i), typ: "zset"} },
		func(i int) write {
			return write{key: fmt.Sprintf("IMPAIRMENT_FLOW|Ethernet0|\xff%d", i), fields: []string{"proto", "udp", "loss", "1"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("ACL_RULE|GOOD|\xfe%d", i), fields: []string{"PRIORITY", "5", "PACKET_ACTION", "DROP", "SRC_IP", "198.51.100.0/24"}}
		},
		func(i int) write {
			return write{key: fmt.Sprintf("IMPAIRMENT|Ethernet1:%d", i), fields: []string{"loss", "1"}}
		},
	}
	var out []write
	for i := 0; i < n; i++ {
		out = append(out, gens[i%len(gens)](i))
	}
	out = append(out, write{key: "IMPAIRMENT|Ethernet1", fields: []string{"loss", "1", "direction", "up"}},
		write{key: "ACL_RULE|GOOD|HUGE", fields: []string{"PRIORITY", "1", "SRC_IP", huge}},
		write{key: "TRAFFIC_GEN|Ethernet1|huge", fields: []string{"rate", huge}})
	return out
}

// This round's tables under the same hostile input as the barrage: every
// bad key gets a result that is not ok, the good ACL, impairment and
// traffic keys stay ok at their version, no daemon dies, and the port's
// XDP program is the one the good config made.
func TestHostileNewTables(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	s.NS.Veth("Ethernet0", peer, "eth0")
	s.NS.Veth("Ethernet1", peer, "eth1")
	s.NS.IP("link", "set", "Ethernet0", "up")
	s.NS.IP("link", "set", "Ethernet1", "up")
	ctx := context.Background()
	s.SetInitialized()
	for _, d := range []string{"orchagent", "syncd", "impaird", "trafficd"} {
		s.Start(d, "--log-level", "info")
	}
	s.HSet("ACL_TABLE|GOOD", "type", "L3", "stage", "ingress", "ports@", "Ethernet0")
	s.HSet("ACL_RULE|GOOD|DROP1", "PRIORITY", "10", "PACKET_ACTION", "DROP", "SRC_IP", "203.0.113.0/24")
	s.HSet("IMPAIRMENT|Ethernet0", "loss", "1", "seed", "7")
	s.HSet("TRAFFIC_GEN|Ethernet0|bg", "rate", "1kpps", "count", "100", "path", "packet")
	good := []string{"ACL_TABLE|GOOD", "ACL_RULE|GOOD|DROP1", "IMPAIRMENT|Ethernet0", "TRAFFIC_GEN|Ethernet0|bg"}
	for _, k := range good {
		s.WaitApplied(k)
	}
	prog := s.Result("IMPAIRMENT|Ethernet0")["prog_id"]

	bad := hostileNew(400)
	pipe := s.Config.Pipeline()
	for i, w := range bad {
		w.do(ctx, pipe)
		if i%100 == 99 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	waitResults(t, s, bad)
	for _, k := range good {
		if r := s.WaitApplied(k); r["state"] != "ok" {
			t.Errorf("%s: %v after the hostile writes", k, r)
		}
	}
	if got := s.Result("IMPAIRMENT|Ethernet0")["prog_id"]; got != prog {
		t.Errorf("Ethernet0's XDP program changed: %s -> %s", prog, got)
	}
	for name, p := range s.Procs {
		if p.Exited() {
			t.Fatalf("%s died:\n%s", name, p.Output())
		}
	}
	t.Logf("%d hostile writes to this round's tables: every one has a result that is not ok", len(bad))
}
