package syncde2e

import (
	"context"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// mirrorComplete waits until every STATE_DB table syncd writes matches
// what iproute2 reports and PORT_TABLE holds exactly the configured ports.
func (e *env) mirrorComplete(ports ...string) {
	e.T.Helper()
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes)
	e.sameKeys("NEIGH_TABLE|*", e.judgeNeigh)
	e.sameKeys("PORT_TABLE|*", func() []string {
		var out []string
		for _, p := range ports {
			out = append(out, "PORT_TABLE|"+p)
		}
		return out
	})
	for _, p := range ports {
		e.WaitField(e.State, "PORT_TABLE|"+p, "oper_status", "up")
	}
}

// startMirrored configures both ports, starts syncd, gives the kernel
// something of every table to mirror (neighbours and learned MACs from
// pings to h2, a static route, a static FDB entry) and waits until the
// mirror is complete.
func (e *env) startMirrored() {
	e.T.Helper()
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()
	e2eutil.Ping(e.T, e.h1, "10.0.0.2", 2)
	e2eutil.Ping(e.T, e.NS, "10.0.0.2", 2)
	e.NS.IP("route", "add", "10.50.0.0/16", "via", "10.0.0.1", "proto", "static")
	e.NS.Bridge("fdb", "add", "02:00:00:00:00:77", "dev", "Ethernet4", "master", "static")
	e.mirrorComplete("Ethernet0", "Ethernet4")
}

func TestRedisRestartAndSyncdKill(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.startMirrored()

	t.Log("mirror complete; restarting redis")
	// Redis restarts empty (CONFIG_DB too, until config is loaded again).
	e.Redis.Restart()
	e.configurePorts("Ethernet0", "Ethernet4")
	e.mirrorComplete("Ethernet0", "Ethernet4")
	e.WaitField(e.Counters, "COUNTERS:Ethernet0", "rx_errors", "0")

	t.Log("mirror complete after redis restart; killing syncd")
	// syncd dies hard; the kernel and Redis change while it is away.
	e.syncd.Kill()
	e.NS.IP("route", "del", "10.50.0.0/16")
	e.NS.IP("route", "add", "10.80.0.0/16", "via", "10.0.0.2", "proto", "static")
	e.NS.Bridge("fdb", "del", "02:00:00:00:00:77", "dev", "Ethernet4", "master")
	e.NS.Bridge("fdb", "add", "02:00:00:00:00:78", "dev", "Ethernet0", "master", "static")
	e.Config.Del(ctx, "PORT|Ethernet4")
	e.State.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // orchagent's
	e.State.HSet(ctx, "ROUTE_TABLE|203.0.113.0/24", "protocol", "static", "nexthop", "10.0.0.9", "ifname", "Bridge")
	e.State.HSet(ctx, "FDB_TABLE|Vlan1:02:de:ad:00:00:01", "port", "Ethernet0", "type", "dynamic")
	e.State.HSet(ctx, "NEIGH_TABLE|Bridge|10.0.0.99", "neigh", "02:de:ad:00:00:02", "family", "IPv4", "state", "stale")
	e.Counters.HSet(ctx, "COUNTERS:Ethernet8", "rx_packets", "1")

	e.start()
	e.mirrorComplete("Ethernet0")
	e.WaitField(e.State, "ROUTE_TABLE|10.80.0.0/16", "nexthop", "10.0.0.2")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:00:00:00:00:78", "type", "static")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "state", "ok")
	e.Eventually("stale counters removed", func() (bool, string) {
		return e.Counters.Exists(ctx, "COUNTERS:Ethernet8").Val() == 0, "COUNTERS:Ethernet8 still there"
	})
	for _, k := range []string{"ROUTE_TABLE|203.0.113.0/24", "FDB_TABLE|Vlan1:02:de:ad:00:00:01", "NEIGH_TABLE|Bridge|10.0.0.99", "PORT_TABLE|Ethernet4"} {
		if e.State.Exists(ctx, k).Val() != 0 {
			t.Errorf("stale %s survived the restart", k)
		}
	}
}
