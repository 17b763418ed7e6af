package impairde2e

import (
	"net"
	"strconv"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// swAddr is the switch's address on Ethernet0, where the tests' datagrams
// go.
const swAddr = "10.0.0.254"

// env is a switch (namespace, redis-server, private bpffs) whose port
// Ethernet0 is cabled to host namespace h1 (h1 10.0.0.1 -> sw 10.0.0.254),
// IPv6 off on both so the counters see only the test's packets; impaird
// runs on it once started.
type env struct {
	*e2eutil.Switch
	h1      *testns.NS
	impaird *e2eutil.Proc
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{Switch: e2eutil.NewSwitch(t)}
	e2eutil.DisableIPv6(t, e.NS)
	e.h1 = e.Host("Ethernet0", "eth0")
	e.NS.IP("addr", "add", swAddr+"/24", "dev", "Ethernet0")
	e.h1.IP("addr", "add", "10.0.0.1/24", "dev", "eth0")
	e.MountBPFFS()
	return e
}

// start runs impaird on the switch, logging at debug level.
func (e *env) start() {
	e.T.Helper()
	e.impaird = e.Start("impaird", "--log-level", "debug")
}

// counters reads IMPAIRMENT_COUNTERS:key as numbers.
func (e *env) counters(key string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range e2eutil.HGetAll(e.Counters, schema.CountersKey(schema.ImpairmentCountersTable, key)) {
		n, _ := strconv.ParseUint(v, 10, 64)
		out[k] = n
	}
	return out
}

func consistent(c map[string]uint64) bool {
	return c["rx_packets"] == c["passed"]+c["dropped_loss"]+c["dropped_rate"]
}

// listen counts the UDP datagrams arriving in the switch on port.
func (e *env) listen(port int) *e2eutil.UDPCounter {
	e.T.Helper()
	return e2eutil.ListenUDP(e.T, e.NS, swAddr, port)
}

// sender is a UDP socket in h1 sending to the switch's port.
func (e *env) sender(port int) *net.UDPConn {
	e.T.Helper()
	return e2eutil.DialUDP(e.T, e.h1, swAddr, port)
}

// through sends n datagrams to port and returns how many of them arrived.
func (e *env) through(r *e2eutil.UDPCounter, port, n int) int64 {
	e.T.Helper()
	before := r.Count()
	e2eutil.SendUDP(e.T, e.sender(port), n)
	return r.Settle() - before
}
