package trafficde2e

import (
	"math"
	"strconv"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// env is a switch whose port Ethernet0 is cabled to host namespace h1
// (the receiver, eth0), IPv6 off on both so the receiver counts only the
// generator's frames; trafficd runs on the switch.
type env struct {
	*e2eutil.Switch
	h1       *testns.NS
	trafficd *e2eutil.Proc
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Switch: e2eutil.NewSwitch(t)}
	e2eutil.DisableIPv6(t, e.NS)
	e.h1 = e.Host("Ethernet0", "eth0")
	e.trafficd = e.Start("trafficd", "--log-level", "debug")
	return e
}

func (e *env) rx() uint64 { return e2eutil.RxPackets(e.T, e.h1, "eth0") }

// counters reads TRAFFIC_GEN_COUNTERS:key as numbers.
func (e *env) counters(key string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range e2eutil.HGetAll(e.Counters, schema.CountersKey(schema.TrafficGenCountersTable, key)) {
		out[k], _ = strconv.ParseFloat(v, 64)
	}
	return out
}

// waitDone waits for the stream's status done and returns its counters
// once they show the final count.
func (e *env) waitDone(key string) map[string]float64 {
	e.T.Helper()
	e.WaitHash(e.State, e2eutil.ResultKey(schema.TableTrafficGen+"|"+key), map[string]string{"state": "ok", "status": "done"})
	var c map[string]float64
	e.Eventually("final counters of "+key, func() (bool, string) {
		c = e.counters(key)
		return c["pps"] == 0 && c["packets"] > 0, strconv.Quote(e2eutil.HGetAll(e.Counters, "TRAFFIC_GEN_COUNTERS:"+key)["packets"])
	})
	return c
}

// within reports |got-want| <= tol*want.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestRateAccuracy: at 1 kpps and 10 kpps for 3 s, on each path, the
// receiver counts exactly the frames the generator reports, and the
// generator's achieved rate is within 1% of the target.
func TestRateAccuracy(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		rate float64
		path string
	}{{1000, "packet"}, {10000, "packet"}, {1000, "xdp"}, {10000, "xdp"}} {
		name := "r" + strconv.Itoa(int(c.rate)) + c.path
		key := "Ethernet0|" + name
		before := e.rx()
		e.HSet("TRAFFIC_GEN|"+key, "rate", strconv.Itoa(int(c.rate))+"pps", "duration", "3s", "path", c.path)
		res := e.WaitHash(e.State, e2eutil.ResultKey("TRAFFIC_GEN|"+key), map[string]string{"state": "ok", "path": c.path})
		_ = res
		ctr := e.waitDone(key)
		got := float64(e.rx() - before)
		t.Logf("%s: generator %v packets in %vs (avg %v pps, late %v), receiver %v", name, ctr["packets"], ctr["elapsed"], ctr["avg_pps"], ctr["late"], got)
		if got != ctr["packets"] {
			t.Errorf("%s: receiver counted %v frames, the generator reports %v", name, got, ctr["packets"])
		}
		if !within(ctr["packets"], 3*c.rate, 0.01) {
			t.Errorf("%s: %v packets in 3s, want %v ±1%%", name, ctr["packets"], 3*c.rate)
		}
		if !within(ctr["avg_pps"], c.rate, 0.01) {
			t.Errorf("%s: achieved %v pps, want %v ±1%%", name, ctr["avg_pps"], c.rate)
		}
		if ctr["bytes"] != 64*ctr["packets"] {
			t.Errorf("%s: %v bytes for %v frames of 64 bytes", name, ctr["bytes"], ctr["packets"])
		}
	}
}

// TestCountStopsAndDeleteStops: count stops by itself at exactly count
// frames; a stream without a limit stops when its key is deleted, and its
// result and counters go.
func TestCountStopsAndDeleteStops(t *testing.T) {
	e := newEnv(t)
	before := e.rx()
	e.HSet("TRAFFIC_GEN|Ethernet0|c", "rate", "20kpps", "count", "5000", "size", "imix")
	c := e.waitDone("Ethernet0|c")
	if got := e.rx() - before; c["packets"] != 5000 || got != 5000 {
		t.Errorf("count 5000: generator %v, receiver %d", c["packets"], got)
	}
	if want := float64(5000/12) * (7*64 + 4*576 + 1500); c["bytes"] < want {
		t.Errorf("imix bytes %v, want at least %v", c["bytes"], want)
	}

	e.HSet("TRAFFIC_GEN|Ethernet0|u", "rate", "2kpps", "proto", "tcp", "dport", "80", "vlan", "10", "dscp", "46")
	e.WaitHash(e.State, e2eutil.ResultKey("TRAFFIC_GEN|Ethernet0|u"), map[string]string{"state": "ok", "status": "running"})
	e.Eventually("frames arrive", func() (bool, string) {
		return e.counters("Ethernet0|u")["packets"] > 2000, ""
	})
	// A bad update is an error and changes nothing: the stream of the
	// last good fields keeps sending.
	e.HSet("TRAFFIC_GEN|Ethernet0|u", "dscp", "64")
	e.WaitState("TRAFFIC_GEN|Ethernet0|u", "error", `field "dscp": "64" is not valid: want an integer 0-63 (the stream of the previous fields keeps running)`)
	was := e.counters("Ethernet0|u")["packets"]
	e.Eventually("the old stream keeps sending", func() (bool, string) {
		return e.counters("Ethernet0|u")["packets"] > was+2000, ""
	})
	e.Del("TRAFFIC_GEN|Ethernet0|u")
	e.WaitGone("TRAFFIC_GEN|Ethernet0|u")
	e.WaitHash(e.Counters, "TRAFFIC_GEN_COUNTERS:Ethernet0|u", map[string]string{"packets": ""})
	stopped := e.rx()
	e.trafficd.WaitLog("the next reconcile after the delete", "stream", "Ethernet0|u")
	// Another stream runs to completion after the delete: the deleted
	// one sent nothing in the meantime.
	e.HSet("TRAFFIC_GEN|Ethernet0|c2", "rate", "10kpps", "count", "10000")
	e.waitDone("Ethernet0|c2")
	if got := e.rx() - stopped; got != 10000 {
		t.Errorf("after the delete the receiver counted %d frames, want only c2's 10000", got)
	}
}

// TestBadFields: precise errors naming the field; a missing port is
// pending until it appears.
func TestBadFields(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ key, field, value, reason string }{
		{"Ethernet0|a", "rate", "fast", `field "rate": "fast" is not valid`},
		{"Ethernet0|b", "size", "9000", `more than the MTU 1500 of Ethernet0`},
		{"Ethernet0|c", "pattern", "bursty", `field "on": pattern bursty needs on and off`},
		{"Ethernet0|d", "size", "5000", ""},
	} {
		fields := []string{"rate", "1kpps", c.field, c.value}
		if c.field == "rate" {
			fields = fields[2:]
		}
		if c.key == "Ethernet0|d" {
			fields = append(fields, "path", "xdp")
			c.reason = "AF_XDP sends frames of at most 4092 bytes"
			e.NS.IP("link", "set", "Ethernet0", "mtu", "9000")
		}
		e.HSet("TRAFFIC_GEN|"+c.key, fields...)
		e.WaitState("TRAFFIC_GEN|"+c.key, "error", c.reason)
	}
	e.HSet("TRAFFIC_GEN|Ethernet9|p", "rate", "1kpps")
	e.WaitState("TRAFFIC_GEN|Ethernet9|p", "pending", "port Ethernet9 does not exist")
	h2 := testns.New(t)
	e.NS.Veth("Ethernet9", h2, "eth0")
	e.WaitHash(e.State, e2eutil.ResultKey("TRAFFIC_GEN|Ethernet9|p"), map[string]string{"state": "ok", "status": "running"})
}

// TestRestartResumes: a stream with a count survives a restart of
// trafficd: it resumes from its counters and ends at exactly count
// frames, as the receiver counts them; a done stream stays done; one
// deleted while trafficd is down loses result and counters at the sweep.
func TestRestartResumes(t *testing.T) {
	e := newEnv(t)
	before := e.rx()
	e.HSet("TRAFFIC_GEN|Ethernet0|r", "rate", "5kpps", "count", "30000")
	e.Eventually("half sent", func() (bool, string) {
		return e.counters("Ethernet0|r")["packets"] > 5000, ""
	})
	e.trafficd.Stop()
	mid := e.counters("Ethernet0|r")["packets"]
	if mid >= 30000 {
		t.Fatalf("stream finished before the restart (%v)", mid)
	}
	e.trafficd = e.Start("trafficd", "--log-level", "debug")
	c := e.waitDone("Ethernet0|r")
	if got := e.rx() - before; c["packets"] != 30000 || got != 30000 {
		t.Errorf("after a restart at %v: generator %v, receiver %d, want 30000", mid, c["packets"], got)
	}
	// A stream that is done stays done across a restart: nothing more.
	e.trafficd.Stop()
	e.State.Del(t.Context(), e2eutil.ResultKey("TRAFFIC_GEN|Ethernet0|r"))
	e.trafficd = e.Start("trafficd", "--log-level", "debug")
	c = e.waitDone("Ethernet0|r")
	if got := e.rx() - before; c["packets"] != 30000 || got != 30000 {
		t.Errorf("a done stream after a restart: generator %v, receiver %d, want 30000", c["packets"], got)
	}
	// Deleted while trafficd is down: the sweep (CONFIG_DB_INITIALIZED)
	// removes its counters, the engine its result.
	e.trafficd.Stop()
	e.Del("TRAFFIC_GEN|Ethernet0|r")
	e.SetInitialized()
	e.trafficd = e.Start("trafficd", "--log-level", "debug")
	e.WaitGone("TRAFFIC_GEN|Ethernet0|r")
	e.WaitHash(e.Counters, "TRAFFIC_GEN_COUNTERS:Ethernet0|r", map[string]string{"packets": ""})
}

// TestBesideImpaird: AF_XDP transmit on a port whose ingress impaird
// impairs with its XDP program: both work, impaird's program stays.
func TestBesideImpaird(t *testing.T) {
	e := newEnv(t)
	e.Start("impaird", "--log-level", "debug")
	e.HSet("IMPAIRMENT|Ethernet0", "loss", "50")
	e.WaitOK("IMPAIRMENT|Ethernet0")
	prog, mode := e2eutil.XDPProg(e.NS, "Ethernet0")
	if prog == 0 {
		t.Fatalf("impaird attached no XDP program to Ethernet0")
	}
	before := e.rx()
	e.HSet("TRAFFIC_GEN|Ethernet0|x", "rate", "10kpps", "count", "5000", "path", "xdp")
	c := e.waitDone("Ethernet0|x")
	if got := e.rx() - before; c["packets"] != 5000 || got != 5000 {
		t.Errorf("beside impaird: generator %v, receiver %d, want 5000", c["packets"], got)
	}
	if r := e.Result("TRAFFIC_GEN|Ethernet0|x"); r["path"] != "xdp" {
		t.Errorf("stream result %v, want path xdp", r)
	}
	if p2, m2 := e2eutil.XDPProg(e.NS, "Ethernet0"); p2 != prog || m2 != mode {
		t.Errorf("impaird's XDP program changed: %d %s, was %d %s", p2, m2, prog, mode)
	}
	e.WaitOK("IMPAIRMENT|Ethernet0")
}

// TestTwoStreamsOnePort: a veth has one TX queue and AF_XDP one socket per
// queue: the first stream takes AF_XDP, the second falls back to the packet
// socket (auto), a third with path xdp waits (pending) and starts once the
// first ends; every frame is delivered.
func TestTwoStreamsOnePort(t *testing.T) {
	e := newEnv(t)
	before := e.rx()
	e.HSet("TRAFFIC_GEN|Ethernet0|a", "rate", "5kpps", "count", "20000")
	e.WaitHash(e.State, e2eutil.ResultKey("TRAFFIC_GEN|Ethernet0|a"), map[string]string{"state": "ok", "path": "xdp"})
	e.HSet("TRAFFIC_GEN|Ethernet0|b", "rate", "5kpps", "count", "10000")
	e.WaitHash(e.State, e2eutil.ResultKey("TRAFFIC_GEN|Ethernet0|b"), map[string]string{"state": "ok", "path": "packet"})
	e.HSet("TRAFFIC_GEN|Ethernet0|c", "rate", "5kpps", "path", "xdp", "count", "5000")
	e.WaitState("TRAFFIC_GEN|Ethernet0|c", "pending", "waiting for a free AF_XDP queue on Ethernet0")
	a, b := e.waitDone("Ethernet0|a"), e.waitDone("Ethernet0|b")
	c := e.waitDone("Ethernet0|c")
	if r := e.Result("TRAFFIC_GEN|Ethernet0|c"); r["path"] != "xdp" {
		t.Errorf("stream c ran on %q, want xdp", r["path"])
	}
	if got := e.rx() - before; a["packets"] != 20000 || b["packets"] != 10000 || c["packets"] != 5000 || got != 35000 {
		t.Errorf("generator %v + %v + %v, receiver %d, want 20000 + 10000 + 5000", a["packets"], b["packets"], c["packets"], got)
	}
}

// TestPortDownAndBack: on each path a stream stops while its port is
// down or has no link (pending, nothing counted that did not leave) and
// resumes when it is back, ending at exactly its count at the receiver.
func TestPortDownAndBack(t *testing.T) {
	for _, path := range []string{"xdp", "packet"} {
		t.Run(path, func(t *testing.T) { testPortDownAndBack(t, path) })
	}
}

func testPortDownAndBack(t *testing.T, path string) {
	e := newEnv(t)
	key := "TRAFFIC_GEN|Ethernet0|d"
	before := e.rx()
	e.HSet(key, "rate", "5kpps", "count", "15000", "path", path)
	e.Eventually("frames flow", func() (bool, string) { return e.counters("Ethernet0|d")["packets"] > 3000, "" })
	e.NS.IP("link", "set", "Ethernet0", "down")
	e.WaitState(key, "pending", "port Ethernet0 is admin down")
	e.h1.IP("link", "set", "eth0", "down")
	e.NS.IP("link", "set", "Ethernet0", "up")
	e.WaitState(key, "pending", "port Ethernet0 has no link")
	e.h1.IP("link", "set", "eth0", "up")
	e.WaitHash(e.State, e2eutil.ResultKey(key), map[string]string{"state": "ok", "status": "running"})
	c := e.waitDone("Ethernet0|d")
	if got := e.rx() - before; c["packets"] != 15000 || got != 15000 {
		t.Errorf("across a port down/up: generator %v, receiver %d, want 15000", c["packets"], got)
	}
}
