package syncd

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// harness runs a Daemon on a Fake kernel and a real redis-server.
type harness struct {
	t      *testing.T
	k      *netlinkmgr.Fake
	srv    *testredis.Server
	state  *redis.Client
	cnt    *redis.Client
	config *redis.Client
	d      *Daemon
}

func newHarness(t *testing.T, seed func(h *harness)) *harness {
	t.Helper()
	h := &harness{t: t, k: netlinkmgr.NewFake().HostKernel(), srv: testredis.Start(t)}
	h.state, h.cnt, h.config = h.srv.Client(schema.StateDB), h.srv.Client(schema.CountersDB), h.srv.Client(schema.ConfigDB)
	if seed != nil {
		seed(h)
	}
	h.d = New(Config{Kernel: h.k, State: h.state, Counters: h.cnt, Config: h.config,
		CountersInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-h.d.Ready():
	case err := <-done:
		t.Fatalf("Run returned before the mirror was ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("mirror not ready after 20s")
	}
	return h
}

// eventually polls cond for up to 20 s.
func (h *harness) eventually(msg string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: %s", msg, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hashIs waits until key (in c) holds exactly want (nil = absent).
func (h *harness) hashIs(c *redis.Client, key string, want map[string]string) {
	h.t.Helper()
	h.eventually(key, func() (bool, string) {
		got := c.HGetAll(context.Background(), key).Val()
		if len(want) == 0 {
			return len(got) == 0, fmt.Sprintf("still holds %v", got)
		}
		return reflect.DeepEqual(got, want), fmt.Sprintf("holds %v, want %v", got, want)
	})
}

func (h *harness) keys(pattern string) []string {
	ks := h.state.Keys(context.Background(), pattern).Val()
	sort.Strings(ks)
	return ks
}

func TestDaemonMirrorsAndOwnsFields(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(h *harness) {
		h.k.AddPort("Ethernet0", "Ethernet4")
		h.k.Links().Add(netlinkmgr.LinkInfo{Name: "Bridge", Kind: "bridge"})
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(true), Master: ptr("Bridge")})
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Bridge", AdminUp: ptr(true)})
		h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
		h.state.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok")            // orchagent's
		h.state.HSet(ctx, "ROUTE_TABLE|192.0.2.0/24", "protocol", "static") // stale, ours
		h.state.HSet(ctx, "FDB_TABLE|Vlan1:02:00:00:00:00:99", "port", "Ethernet4", "type", "dynamic")
	})
	l, _ := h.k.Links().Get("Ethernet0")
	h.hashIs(h.state, "PORT_TABLE|Ethernet0", map[string]string{"state": "ok", "oper_status": "up",
		"netdev_oper_status": "up", "admin_status": "up", "mtu": "1500", "mac": l.MAC.String()})
	if got := h.keys("PORT_TABLE|*"); !reflect.DeepEqual(got, []string{"PORT_TABLE|Ethernet0"}) {
		t.Errorf("PORT_TABLE keys = %v, want only the configured port", got)
	}
	h.hashIs(h.state, "ROUTE_TABLE|192.0.2.0/24", nil)
	h.hashIs(h.state, "FDB_TABLE|Vlan1:02:00:00:00:00:99", nil)

	// Carrier loss: oper_status follows.
	h.k.SetCarrier("Ethernet0", false)
	h.eventually("oper_status down", func() (bool, string) {
		v := h.state.HGet(ctx, "PORT_TABLE|Ethernet0", "oper_status").Val()
		return v == "down", "oper_status " + v
	})

	// FDB learned on the bridge without VLAN: the untagged context Vlan1.
	e := netlinkmgr.FdbInfo{MAC: mac("02:00:00:00:00:aa"), Link: "Ethernet0"}
	if err := h.k.LearnFdb(e); err != nil {
		t.Fatal(err)
	}
	h.hashIs(h.state, "FDB_TABLE|Vlan1:02:00:00:00:00:aa", map[string]string{"port": "Ethernet0", "type": "dynamic"})
	h.k.ForgetFdb(e)
	h.hashIs(h.state, "FDB_TABLE|Vlan1:02:00:00:00:00:aa", nil)

	// Neighbour and route.
	h.k.AddNeigh(netlinkmgr.NeighInfo{Link: "Ethernet4", IP: netip.MustParseAddr("10.0.0.2"),
		MAC: mac("02:00:00:00:00:02"), State: "reachable"})
	h.hashIs(h.state, "NEIGH_TABLE|Ethernet4|10.0.0.2", map[string]string{"neigh": "02:00:00:00:00:02", "family": "IPv4", "state": "reachable"})

	// Configure a second port; unconfigure the first: orchagent's field stays.
	h.config.HSet(ctx, "PORT|Ethernet4", "mtu", "1500")
	h.eventually("PORT_TABLE|Ethernet4", func() (bool, string) {
		return h.state.Exists(ctx, "PORT_TABLE|Ethernet4").Val() == 1, "absent"
	})
	h.config.Del(ctx, "PORT|Ethernet0")
	h.hashIs(h.state, "PORT_TABLE|Ethernet0", map[string]string{"state": "ok"})

	// Counters of configured ports only.
	h.k.SetStats("Ethernet4", netlinkmgr.LinkStats{RxPackets: 7, TxBytes: 99})
	h.eventually("COUNTERS:Ethernet4", func() (bool, string) {
		got := h.cnt.HGetAll(ctx, "COUNTERS:Ethernet4").Val()
		return got["rx_packets"] == "7" && got["tx_bytes"] == "99", fmt.Sprint(got)
	})
	h.eventually("COUNTERS:Ethernet0 removed", func() (bool, string) {
		return h.cnt.Exists(ctx, "COUNTERS:Ethernet0").Val() == 0, "still there"
	})
}

func TestDaemonOverflowAndRedisRestart(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(h *harness) {
		h.k.AddPort("Ethernet0")
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)})
		h.k.Addrs().Add(netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")})
		h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
	})
	for i := 0; i < 200; i++ {
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 100, byte(i), 0}), 24)
		if err := h.k.Routes().Replace(netlinkmgr.RouteInfo{Dst: dst, Protocol: netlinkmgr.ProtoSwitchyard,
			NextHops: []netlinkmgr.NextHop{{Gateway: netip.MustParseAddr("10.0.0.2"), Link: "Ethernet0"}}}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(n int) {
		h.eventually(fmt.Sprintf("%d routes", n), func() (bool, string) {
			got := len(h.keys("ROUTE_TABLE|*"))
			return got == n, fmt.Sprintf("%d ROUTE_TABLE keys", got)
		})
	}
	count(200)
	h.hashIs(h.state, "ROUTE_TABLE|10.100.7.0/24", map[string]string{"nexthop": "10.0.0.2", "ifname": "Ethernet0", "protocol": "switchyard"})

	// A stale key planted while syncd runs survives until a relist; the
	// overflow relist must not lose anything.
	h.k.Overflow()
	count(200)

	// Redis restarts empty: the mirror comes back complete. CONFIG_DB is
	// empty too, until the operator's config is loaded again.
	h.srv.Restart()
	count(200)
	if n := len(h.keys("PORT_TABLE|*")); n != 0 {
		t.Errorf("%d PORT_TABLE keys while CONFIG_DB PORT is empty", n)
	}
	h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
	h.eventually("PORT_TABLE after restart", func() (bool, string) {
		v := h.state.HGet(ctx, "PORT_TABLE|Ethernet0", "oper_status").Val()
		return v == "up", "oper_status " + v
	})
	h.eventually("keyspace events re-enabled", func() (bool, string) {
		v := h.config.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
		return len(v) > 0, "notify-keyspace-events " + v
	})
	// Routes of a link that goes admin down vanish (IPv4 flush sends no
	// RTM_DELROUTE on the real kernel; syncd relists).
	h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(false)})
	h.eventually("routes gone after admin down", func() (bool, string) {
		got := len(h.keys("ROUTE_TABLE|10.100.*"))
		return got == 0, fmt.Sprintf("%d routes left", got)
	})
	if s := h.d.Stats(); s.Resyncs < 2 {
		t.Errorf("Resyncs = %d, want start + Redis restart", s.Resyncs)
	}
}

// writeCalls is how many HSET and HDEL commands the server has executed.
func writeCalls(t *testing.T, c *redis.Client) (n int) {
	info := c.Info(context.Background(), "commandstats").Val()
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_hset:", "cmdstat_hdel:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls="); ok {
				v, err := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
				if err != nil {
					t.Fatalf("commandstats %q: %v", line, err)
				}
				n += v
			}
		}
	}
	return n
}

// settledWriteCalls is writeCalls once the count has stopped moving for
// a few counter intervals: on a loaded machine the first daemon's last
// writes (a mirror written after the counters the harness waited for)
// can still be on their way, and they are not the second daemon's.
func settledWriteCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	n := writeCalls(t, c)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		m := writeCalls(t, c)
		if m == n {
			return n
		}
		n = m
	}
	t.Fatalf("HSET/HDEL calls still moving after 10 s (%d): the first daemon never settled", n)
	return n
}

func TestDaemonRestartWritesNothingWhenRight(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(h *harness) {
		h.k.AddPort("Ethernet0")
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)})
		h.k.SetStats("Ethernet0", netlinkmgr.LinkStats{RxPackets: 3})
		h.k.AddNeigh(netlinkmgr.NeighInfo{Link: "Ethernet0", IP: netip.MustParseAddr("10.0.0.2"),
			MAC: mac("02:00:00:00:00:02"), State: "reachable"})
		h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
	})
	h.hashIs(h.cnt, "COUNTERS:Ethernet0", map[string]string{"rx_packets": "3", "tx_packets": "0",
		"rx_bytes": "0", "tx_bytes": "0", "rx_errors": "0", "tx_errors": "0", "rx_dropped": "0", "tx_dropped": "0"})
	before := settledWriteCalls(t, h.state)
	held := allHashes(t, h.state)

	// A second syncd on the same kernel and Redis (as after a restart)
	// adopts what is there and writes nothing but its sentinels.
	d := New(Config{Kernel: h.k, State: h.state, Counters: h.cnt, Config: h.config, CountersInterval: 50 * time.Millisecond, Name: "syncd2"})
	ctx2, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx2) }()
	defer func() { cancel(); <-done }()
	select {
	case <-d.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("second daemon not ready")
	}
	h.eventually("second daemon's sentinels", func() (bool, string) {
		n := h.state.Exists(ctx, "SWITCHYARD_DAEMON|syncd2").Val() + h.cnt.Exists(ctx, "SWITCHYARD_DAEMON:syncd2").Val()
		return n == 2, fmt.Sprintf("%d of 2 sentinel keys", n)
	})
	time.Sleep(200 * time.Millisecond) // a few counter intervals of both daemons
	if after := writeCalls(t, h.state); after != before+2 {
		// Name what changed (besides the sentinel); an empty list means a
		// write of what was already there.
		var changed []string
		now := allHashes(t, h.state)
		for k, v := range now {
			if k != "SWITCHYARD_DAEMON|syncd2" && fmt.Sprint(v) != fmt.Sprint(held[k]) {
				changed = append(changed, fmt.Sprintf("%s: %v -> %v", k, held[k], v))
			}
		}
		for k, v := range held {
			if _, ok := now[k]; !ok {
				changed = append(changed, fmt.Sprintf("%s: %v -> gone", k, v))
			}
		}
		t.Errorf("%d HSET/HDEL calls with nothing to change but 2 sentinel keys; STATE_DB changes: %v", after-before, changed)
	}
}

// allHashes returns every key of c with its fields.
func allHashes(t *testing.T, c *redis.Client) map[string]map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]map[string]string{}
	for _, k := range c.Keys(ctx, "*").Val() {
		out[k] = c.HGetAll(ctx, k).Val()
	}
	return out
}

// TestDaemonRepairsEmptiedDB: FLUSHDB of STATE_DB or COUNTERS_DB (an
// operator, a replica resync) sends no keyspace event; syncd's sentinels
// notice and everything it mirrors is back within 2 s (the bound).
func TestDaemonRepairsEmptiedDB(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(h *harness) {
		h.k.AddPort("Ethernet0")
		h.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)})
		h.k.SetStats("Ethernet0", netlinkmgr.LinkStats{RxPackets: 3})
		h.k.AddNeigh(netlinkmgr.NeighInfo{Link: "Ethernet0", IP: netip.MustParseAddr("10.0.0.2"),
			MAC: mac("02:00:00:00:00:02"), State: "reachable"})
		h.config.HSet(ctx, "PORT|Ethernet0", "admin_status", "up")
	})
	h.hashIs(h.cnt, "COUNTERS:Ethernet0", map[string]string{"rx_packets": "3", "tx_packets": "0",
		"rx_bytes": "0", "tx_bytes": "0", "rx_errors": "0", "tx_errors": "0", "rx_dropped": "0", "tx_dropped": "0"})
	for _, c := range []*redis.Client{h.state, h.cnt} {
		want := allHashes(t, c)
		if len(want) < 2 {
			t.Fatalf("DB %d holds only %v", c.Options().DB, want)
		}
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(2 * time.Second)
		for {
			got := allHashes(t, c)
			if reflect.DeepEqual(got, want) {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("DB %d 2 s after FLUSHDB holds %v, want %v", c.Options().DB, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
