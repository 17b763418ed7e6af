package syncde2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

func TestPortsFollowLinkFlapAndKeepOthersFields(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.State.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // orchagent's result
	e.configurePorts("Ethernet0", "Ethernet4")
	e.NS.IP("link", "add", "Vlan10", "type", "bridge") // a VlanN device (no 802.1Q on the host kernel)
	e.start()

	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "admin_status", "up")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "mtu", "1500")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "mac", e2eutil.MAC(t, e.NS, "Ethernet0"))
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "state", "ok")
	e.WaitField(e.State, "VLAN_TABLE|Vlan10", "admin_status", "down")
	if ks := e2eutil.Keys(e.State, "PORT_TABLE|*"); len(ks) != 2 {
		t.Errorf("PORT_TABLE keys = %v, want the two configured ports only", ks)
	}

	// A downstream consumer (docs/syncd.md): keyspace events are on
	// because syncd turned them on (testredis starts with them off).
	sub := e.State.PSubscribe(ctx, "__keyspace@6__:PORT_TABLE|*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the psubscribe confirmation
		t.Fatal(err)
	}

	// The far end goes down: the port loses carrier.
	e.h1.IP("link", "set", "eth0", "down")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "down")
	deadline := time.After(e2eutil.Wait)
	for seen := false; !seen; {
		select {
		case m := <-sub.Channel():
			seen = m.Channel == "__keyspace@6__:PORT_TABLE|Ethernet0" && m.Payload == "hset"
		case <-deadline:
			t.Fatal("no keyspace event (hset) for PORT_TABLE|Ethernet0 after the flap")
		}
	}
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "admin_status", "up")
	e.h1.IP("link", "set", "eth0", "up")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")

	// Local admin state and MTU.
	e.NS.IP("link", "set", "Ethernet4", "down")
	e.WaitField(e.State, "PORT_TABLE|Ethernet4", "admin_status", "down")
	e.WaitField(e.State, "PORT_TABLE|Ethernet4", "oper_status", "down")
	e.NS.IP("link", "set", "Ethernet4", "mtu", "9000", "up")
	e.WaitField(e.State, "PORT_TABLE|Ethernet4", "mtu", "9000")
	e.WaitField(e.State, "PORT_TABLE|Ethernet4", "oper_status", "up")
	e.NS.IP("link", "set", "Vlan10", "up")
	e.WaitField(e.State, "VLAN_TABLE|Vlan10", "admin_status", "up")

	// Unconfigured ports leave the mirror; orchagent's field stays.
	e.Config.Del(ctx, "PORT|Ethernet4", "PORT|Ethernet0")
	e.WaitField(e.State, "PORT_TABLE|Ethernet4", "oper_status", "")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "")
	e.Eventually("counters of unconfigured ports removed", func() (bool, string) {
		ks := e2eutil.Keys(e.Counters, "COUNTERS:*")
		return len(ks) == 0, fmt.Sprint(ks)
	})
	if got := e.State.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val(); len(got) != 1 || got["state"] != "ok" {
		t.Errorf("PORT_TABLE|Ethernet0 = %v, want only orchagent's state=ok", got)
	}
	e.NS.IP("link", "del", "Vlan10")
	e.WaitField(e.State, "VLAN_TABLE|Vlan10", "oper_status", "")
}

func TestFdbLearnedThroughBridgeAndFlushed(t *testing.T) {
	e := newEnv(t)
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()
	e2eutil.Ping(t, e.h1, "10.0.0.2", 3)
	m1, m2 := e2eutil.MAC(t, e.h1, "eth0"), e2eutil.MAC(t, e.h2, "eth0")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m1, "port", "Ethernet0")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m1, "type", "dynamic")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m2, "port", "Ethernet4")
	e.NS.Bridge("fdb", "add", "02:00:00:00:00:77", "dev", "Ethernet4", "master", "static")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:00:00:00:00:77", "type", "static")
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)

	e.NS.Bridge("fdb", "flush", "dev", "Bridge")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m1, "port", "")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m2, "port", "")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:00:00:00:00:77", "port", "")
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)

	// Ageing: relearn, then let the entries age out (2 s; the hosts are
	// silent without pings).
	e2eutil.Ping(t, e.h1, "10.0.0.2", 2)
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m1, "port", "Ethernet0")
	e.NS.IP("link", "set", "Bridge", "type", "bridge", "ageing_time", "200")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m1, "port", "")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:"+m2, "port", "")
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
}

func TestNeighboursRoutesAndCounters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start()

	// Neighbours after ping.
	e2eutil.Ping(t, e.NS, "10.0.0.1", 2)
	m1 := e2eutil.MAC(t, e.h1, "eth0")
	e.WaitField(e.State, "NEIGH_TABLE|Bridge|10.0.0.1", "neigh", m1)
	e.WaitField(e.State, "NEIGH_TABLE|Bridge|10.0.0.1", "family", "IPv4")
	if st := e.State.HGet(ctx, "NEIGH_TABLE|Bridge|10.0.0.1", "state").Val(); st == "" || st == "failed" || st == "incomplete" {
		t.Errorf("neighbour state %q", st)
	}
	e.sameKeys("NEIGH_TABLE|*", e.judgeNeigh)

	// Routes added by hand, with their protocol.
	e.NS.IP("route", "add", "10.50.0.0/16", "via", "10.0.0.1", "proto", "static")
	e.NS.IP("route", "add", "10.60.0.0/16", "via", "10.0.0.2")
	e.NS.IP("route", "add", "10.70.0.0/16", "via", "10.0.0.1", "proto", "201")
	e.NS.IP("route", "add", "blackhole", "192.0.2.0/24")
	e.WaitField(e.State, "ROUTE_TABLE|10.50.0.0/16", "protocol", "static")
	e.WaitField(e.State, "ROUTE_TABLE|10.50.0.0/16", "nexthop", "10.0.0.1")
	e.WaitField(e.State, "ROUTE_TABLE|10.50.0.0/16", "ifname", "Bridge")
	e.WaitField(e.State, "ROUTE_TABLE|10.60.0.0/16", "protocol", "boot")
	e.WaitField(e.State, "ROUTE_TABLE|10.70.0.0/16", "protocol", "switchyard")
	e.WaitField(e.State, "ROUTE_TABLE|10.0.0.0/24", "protocol", "kernel")
	e.WaitField(e.State, "ROUTE_TABLE|10.0.0.0/24", "nexthop", "0.0.0.0")
	e.WaitField(e.State, "ROUTE_TABLE|192.0.2.0/24", "blackhole", "true")
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes)
	e.NS.IP("route", "del", "10.60.0.0/16")
	e.WaitField(e.State, "ROUTE_TABLE|10.60.0.0/16", "protocol", "")

	// Counters grow with traffic.
	rx := func() uint64 {
		v, _ := strconv.ParseUint(e.Counters.HGet(ctx, "COUNTERS:Ethernet0", "rx_packets").Val(), 10, 64)
		return v
	}
	e.WaitField(e.Counters, "COUNTERS:Ethernet0", "rx_errors", "0")
	before := rx()
	e2eutil.Ping(t, e.h1, "10.0.0.2", 5)
	e.Eventually("COUNTERS:Ethernet0 rx_packets grows", func() (bool, string) {
		now := rx()
		return now >= before+5, fmt.Sprintf("rx_packets %d, was %d", now, before)
	})
	for _, f := range []string{"tx_packets", "rx_bytes", "tx_bytes", "tx_errors", "rx_dropped", "tx_dropped"} {
		if e.Counters.HExists(ctx, "COUNTERS:Ethernet4", f).Val() == false {
			t.Errorf("COUNTERS:Ethernet4 lacks %s", f)
		}
	}

	// The bridge goes admin down: the kernel flushes its IPv4 routes
	// without RTM_DELROUTE; the mirror still follows.
	e.NS.IP("link", "set", "Bridge", "down")
	e.WaitField(e.State, "ROUTE_TABLE|10.50.0.0/16", "protocol", "")
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes)
	e.sameKeys("NEIGH_TABLE|*", e.judgeNeigh)
}

func TestRenamedPortCarriesItsEntries(t *testing.T) {
	e := newEnv(t)
	e.configurePorts("Ethernet0", "Ethernet8")
	e.start()
	e.NS.Bridge("fdb", "add", "02:00:00:00:00:77", "dev", "Ethernet4", "master", "static")
	e.NS.IP("route", "add", "10.90.0.0/16", "dev", "Ethernet4")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:00:00:00:00:77", "port", "Ethernet4")
	e.WaitField(e.State, "ROUTE_TABLE|10.90.0.0/16", "ifname", "Ethernet4")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")
	if ks := e2eutil.Keys(e.State, "PORT_TABLE|*"); len(ks) != 1 {
		t.Errorf("PORT_TABLE keys = %v before the rename, want Ethernet0 only", ks)
	}

	e.NS.IP("link", "set", "Ethernet4", "down")
	e.NS.IP("link", "set", "Ethernet4", "name", "Ethernet8")
	e.NS.IP("link", "set", "Ethernet8", "up")
	e.WaitField(e.State, "PORT_TABLE|Ethernet8", "oper_status", "up")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:00:00:00:00:77", "port", "Ethernet8")
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes) // the device route went with admin down
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
}
