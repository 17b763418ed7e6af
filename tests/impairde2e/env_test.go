package impairde2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// wait is the generous deadline of every poll: CI machines are shared.
const wait = 60 * time.Second

// env is a switch namespace sw whose port Ethernet0 is cabled to host
// namespace h1 (h1 10.0.0.1 -> sw 10.0.0.254); impaird runs on sw with
// its own bpffs mounted on a temporary directory.
type env struct {
	t                testing.TB
	sw, h1           *testns.NS
	srv              *testredis.Server
	conf, state, cnt *redis.Client
	bpffs            string
	impaird          *e2eutil.Proc
}

func newEnv(t testing.TB) *env {
	t.Helper()
	testns.RequireRoot(t)
	e := &env{t: t, srv: testredis.Start(t)}
	e.sw, e.h1 = testns.New(t), testns.New(t)
	for _, n := range []*testns.NS{e.sw, e.h1} {
		// No IPv6 chatter (router solicitations, DAD): the counters see
		// only the test's packets.
		if out, err := n.Exec("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
			t.Fatalf("sysctl in %s: %v: %s", n.Name, err, out)
		}
	}
	e.sw.Veth("Ethernet0", e.h1, "eth0")
	e.sw.IP("addr", "add", "10.0.0.254/24", "dev", "Ethernet0")
	e.h1.IP("addr", "add", "10.0.0.1/24", "dev", "eth0")
	e.conf, e.state, e.cnt = e.srv.Client(schema.ConfigDB), e.srv.Client(schema.StateDB), e.srv.Client(schema.CountersDB)

	mnt := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a private bpffs (needed for pinning): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	e.bpffs = filepath.Join(mnt, "switchyard")
	return e
}

func (e *env) start() {
	e.t.Helper()
	e.impaird = e2eutil.Start(e.t, "impaird", "--redis", e.srv.URL(), "--netns", e.sw.Name,
		"--bpffs", e.bpffs, "--log-level", "debug")
}

func (e *env) hset(key string, kv ...string) {
	e.t.Helper()
	if err := e.conf.HSet(context.Background(), key, kv).Err(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) del(keys ...string) {
	e.t.Helper()
	if err := e.conf.Del(context.Background(), keys...).Err(); err != nil {
		e.t.Fatal(err)
	}
}

func hgetall(c *redis.Client, key string) map[string]string {
	m, _ := c.HGetAll(context.Background(), key).Result()
	return m
}

// waitState waits for STATE_DB key to hold field=value for every pair.
func (e *env) waitState(key string, want map[string]string) map[string]string {
	e.t.Helper()
	var got map[string]string
	e2eutil.Eventually(e.t, wait, "STATE_DB "+key, func() (bool, string) {
		got = hgetall(e.state, key)
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprintf("%v", got)
			}
		}
		return true, ""
	})
	return got
}

// xdpProg is iproute2's view of the XDP program on a netdev (0 = none).
func xdpProg(t testing.TB, ns *testns.NS, dev string) (id int, mode string) {
	var links []struct {
		Xdp *struct {
			Mode int `json:"mode"`
			Prog *struct {
				ID int `json:"id"`
			} `json:"prog"`
		} `json:"xdp"`
	}
	ns.JSON(&links, "-d", "link", "show", "dev", dev)
	if len(links) == 0 || links[0].Xdp == nil || links[0].Xdp.Prog == nil {
		return 0, ""
	}
	m := map[int]string{1: "native", 2: "generic", 3: "offload"}[links[0].Xdp.Mode]
	return links[0].Xdp.Prog.ID, m
}

// counters reads IMPAIRMENT_COUNTERS:key as numbers.
func (e *env) counters(key string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range hgetall(e.cnt, schema.CountersKey(schema.ImpairmentCountersTable, key)) {
		n, _ := strconv.ParseUint(v, 10, 64)
		out[k] = n
	}
	return out
}

func consistent(c map[string]uint64) bool {
	return c["rx_packets"] == c["passed"]+c["dropped_loss"]+c["dropped_rate"]
}

// receiver counts UDP datagrams arriving in sw on port.
type receiver struct {
	conn *net.UDPConn
	n    atomic.Int64
}

func (e *env) listen(port int) *receiver {
	e.t.Helper()
	r := &receiver{}
	err := e.sw.Do(func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 0, 0, 254), Port: port})
		r.conn = c
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	r.conn.SetReadBuffer(8 << 20)
	e.t.Cleanup(func() { r.conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := r.conn.ReadFromUDP(buf); err != nil {
				return
			}
			r.n.Add(1)
		}
	}()
	return r
}

// sender sends UDP datagrams from h1.
func (e *env) sender(port int) *net.UDPConn {
	e.t.Helper()
	var c *net.UDPConn
	err := e.h1.Do(func() error {
		var err error
		c, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 0, 0, 254), Port: port})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// send sends n datagrams, pausing briefly every 50 so that neither the
// veth nor the receiving socket drops any on a loaded machine.
func send(t testing.TB, c *net.UDPConn, n int) {
	t.Helper()
	buf := make([]byte, 100)
	for i := 0; i < n; i++ {
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("send: %v", err)
		}
		if i%50 == 49 {
			time.Sleep(time.Millisecond)
		}
	}
}

// settle waits until r has seen no new datagram for 300 ms.
func settle(r *receiver) int64 {
	last := r.n.Load()
	for {
		time.Sleep(300 * time.Millisecond)
		now := r.n.Load()
		if now == last {
			return now
		}
		last = now
	}
}
