package e2eutil

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/testns"
)

// Ping sends count echo requests from ns to dst and fails the test unless
// they are answered. It tries twice: the first ARP exchange may race.
// Equivalent to: ip netns exec NS ping -c COUNT -i 0.2 -W 5 DST
func Ping(t testing.TB, ns *testns.NS, dst string, count int) {
	t.Helper()
	args := []string{"-c", strconv.Itoa(count), "-i", "0.2", "-W", "5", dst}
	out, err := ns.Exec("ping", args...)
	if err != nil {
		out, err = ns.Exec("ping", args...)
	}
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", dst, ns.Name, err, out)
	}
}

// Reachable sends one echo request from ns to dst and reports whether it
// was answered, with ping's output (ping -c1 -W1 DST).
func Reachable(ns *testns.NS, dst string) (bool, string) {
	out, err := ns.Exec("ping", "-c1", "-W1", dst)
	return err == nil, out
}

// WaitReachable waits until dst answers a ping from ns.
func WaitReachable(t testing.TB, ns *testns.NS, dst string) {
	t.Helper()
	Eventually(t, Wait, "ping "+dst+" from "+ns.Name, func() (bool, string) { return Reachable(ns, dst) })
}

// UDPCounter counts the UDP datagrams arriving on one address and port
// inside a namespace.
type UDPCounter struct {
	conn *net.UDPConn
	n    atomic.Int64
}

// ListenUDP binds ip:port (IPv4) inside ns and counts what arrives until
// the test's cleanup. The 8 MiB receive buffer keeps a loaded machine
// from dropping datagrams in the socket.
func ListenUDP(t testing.TB, ns *testns.NS, ip string, port int) *UDPCounter {
	t.Helper()
	r := &UDPCounter{}
	err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip), Port: port})
		r.conn = c
		return err
	})
	if err != nil {
		t.Fatalf("listen on udp %s:%d in %s: %v", ip, port, ns.Name, err)
	}
	r.conn.SetReadBuffer(8 << 20)
	t.Cleanup(func() { r.conn.Close() })
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

// Count is how many datagrams arrived so far.
func (r *UDPCounter) Count() int64 { return r.n.Load() }

// Reset starts the count again from 0.
func (r *UDPCounter) Reset() { r.n.Store(0) }

// Settle waits until no new datagram has arrived for 300 ms and returns
// the count.
func (r *UDPCounter) Settle() int64 {
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

// DialUDP is a UDP socket inside ns connected to ip:port (IPv4), closed at
// the test's cleanup.
func DialUDP(t testing.TB, ns *testns.NS, ip string, port int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.Do(func() error {
		var err error
		c, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(ip), Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("dial udp %s:%d from %s: %v", ip, port, ns.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// SendUDP sends n datagrams of 100 bytes on c, pausing a millisecond
// every 50 so that neither a veth nor the receiving socket drops any on a
// loaded machine.
func SendUDP(t testing.TB, c *net.UDPConn, n int) {
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
