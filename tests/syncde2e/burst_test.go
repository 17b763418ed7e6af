package syncde2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// burstSize is the size of the FDB and route bursts.
const burstSize = 10000

// fdbLines are bridge -batch lines adding (or deleting) n static entries
// spread over both ports.
func fdbLines(n int, del bool) []string {
	lines := make([]string, n)
	for i := range n {
		port := []string{"Ethernet0", "Ethernet4"}[i%2]
		mac := fmt.Sprintf("02:01:00:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff)
		if del {
			lines[i] = "fdb del " + mac + " dev " + port + " master"
		} else {
			lines[i] = "fdb add " + mac + " dev " + port + " master static"
		}
	}
	return lines
}

// routeLines are ip -batch lines adding (or deleting) n /24 routes.
func routeLines(n int, del bool) []string {
	lines := make([]string, n)
	for i := range n {
		dst := fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256)
		if del {
			lines[i] = "route del " + dst + " via 10.0.0.1 proto static"
		} else {
			lines[i] = "route add " + dst + " via 10.0.0.1 proto static"
		}
	}
	return lines
}

// TestBurst10k creates 10,000 FDB entries and 10,000 routes at once, with
// a deliberately small netlink receive buffer so the kernel overflows
// syncd's sockets (the relist path), and checks that the mirror converges
// with nothing missing; then removes them all and checks nothing is left.
func TestBurst10k(t *testing.T) {
	if testing.Short() {
		t.Skip("10k burst skipped in -short mode")
	}
	e := newEnv(t)
	e.configurePorts("Ethernet0", "Ethernet4")
	e.start("--netlink-rcvbuf", "32768")
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")

	fdb, routes := writeBatch(t, fdbLines(burstSize, false)), writeBatch(t, routeLines(burstSize, false))
	e.NS.Run("bridge", "-n", e.NS.Name, "-batch", fdb)
	e.NS.IP("-batch", routes)
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes)
	if n := len(e2eutil.Keys(e.State, "FDB_TABLE|Vlan1:02:01:*")); n != burstSize {
		t.Fatalf("%d burst FDB keys, want %d", n, burstSize)
	}
	if n := len(e2eutil.Keys(e.State, "ROUTE_TABLE|172.*")); n != burstSize {
		t.Fatalf("%d burst ROUTE keys, want %d", n, burstSize)
	}
	e.WaitField(e.State, "ROUTE_TABLE|172.55.15.0/24", "protocol", "static")
	e.WaitField(e.State, "FDB_TABLE|Vlan1:02:01:00:00:27:0f", "port", "Ethernet4")

	e.NS.Run("bridge", "-n", e.NS.Name, "-batch", writeBatch(t, fdbLines(burstSize, true)))
	e.NS.IP("-batch", writeBatch(t, routeLines(burstSize, true)))
	e.sameKeys("FDB_TABLE|*", e.judgeFdb)
	e.sameKeys("ROUTE_TABLE|*", e.judgeRoutes)
	if n := len(e2eutil.Keys(e.State, "ROUTE_TABLE|172.*")) + len(e2eutil.Keys(e.State, "FDB_TABLE|Vlan1:02:01:*")); n != 0 {
		t.Fatalf("%d burst keys left after deleting them", n)
	}
	t.Logf("netlink overflows survived: %d", strings.Count(e.syncd.Output(), "overflowed"))
}
