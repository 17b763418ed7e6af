package syncde2e

import (
	"context"
	"testing"
)

// mirrorComplete waits until every STATE_DB table syncd writes matches
// what iproute2 reports and PORT_TABLE holds exactly the configured ports.
func (e *env) mirrorComplete(ports ...string) {
	e.t.Helper()
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
		e.field(e.state, "PORT_TABLE|"+p, "oper_status", "up")
	}
}

func TestRedisRestartAndSyncdKill(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()
	ping(t, e.h1, "10.0.0.2", 2)
	ping(t, e.sw, "10.0.0.2", 2)
	e.sw.IP("route", "add", "10.50.0.0/16", "via", "10.0.0.1", "proto", "static")
	e.sw.Bridge("fdb", "add", "02:00:00:00:00:77", "dev", "Ethernet4", "master", "static")
	e.mirrorComplete("Ethernet0", "Ethernet4")

	t.Log("mirror complete; restarting redis")
	// Redis restarts empty (CONFIG_DB too, until config is loaded again).
	e.srv.Restart()
	e.configurePorts("Ethernet0", "Ethernet4")
	e.mirrorComplete("Ethernet0", "Ethernet4")
	e.field(e.cnt, "COUNTERS:Ethernet0", "rx_errors", "0")

	t.Log("mirror complete after redis restart; killing syncd")
	// syncd dies hard; the kernel and Redis change while it is away.
	e.syncd.Kill()
	e.sw.IP("route", "del", "10.50.0.0/16")
	e.sw.IP("route", "add", "10.80.0.0/16", "via", "10.0.0.2", "proto", "static")
	e.sw.Bridge("fdb", "del", "02:00:00:00:00:77", "dev", "Ethernet4", "master")
	e.sw.Bridge("fdb", "add", "02:00:00:00:00:78", "dev", "Ethernet0", "master", "static")
	e.conf.Del(ctx, "PORT|Ethernet4")
	e.state.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // orchagent's
	e.state.HSet(ctx, "ROUTE_TABLE|203.0.113.0/24", "protocol", "static", "nexthop", "10.0.0.9", "ifname", "Bridge")
	e.state.HSet(ctx, "FDB_TABLE|Vlan1:02:de:ad:00:00:01", "port", "Ethernet0", "type", "dynamic")
	e.state.HSet(ctx, "NEIGH_TABLE|Bridge|10.0.0.99", "neigh", "02:de:ad:00:00:02", "family", "IPv4", "state", "stale")
	e.cnt.HSet(ctx, "COUNTERS:Ethernet8", "rx_packets", "1")

	e.start()
	e.mirrorComplete("Ethernet0")
	e.field(e.state, "ROUTE_TABLE|10.80.0.0/16", "nexthop", "10.0.0.2")
	e.field(e.state, "FDB_TABLE|Vlan1:02:00:00:00:00:78", "type", "static")
	e.field(e.state, "PORT_TABLE|Ethernet0", "state", "ok")
	e.eventually("stale counters removed", func() (bool, string) {
		return e.cnt.Exists(ctx, "COUNTERS:Ethernet8").Val() == 0, "COUNTERS:Ethernet8 still there"
	})
	for _, k := range []string{"ROUTE_TABLE|203.0.113.0/24", "FDB_TABLE|Vlan1:02:de:ad:00:00:01", "NEIGH_TABLE|Bridge|10.0.0.99", "PORT_TABLE|Ethernet4"} {
		if e.state.Exists(ctx, k).Val() != 0 {
			t.Errorf("stale %s survived the restart", k)
		}
	}
}
