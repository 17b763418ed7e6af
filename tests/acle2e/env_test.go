package acle2e

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// Addresses: the switch's Ethernet0 is swAddr; host h1 behind it has
// h1Addr and the blocked source blockedAddr on one link.
const (
	swAddr      = "10.0.0.254"
	h1Addr      = "10.0.0.1"
	blockedAddr = "10.0.0.9"
	// frameBytes is the size of SendUDP's datagrams on the wire as XDP
	// and tc see them: 100 payload + 8 UDP + 20 IPv4 + 14 Ethernet.
	frameBytes = 142
)

// env is a switch (namespace, redis-server, private bpffs) whose port
// Ethernet0 is cabled to host h1; impaird (and orchagent where a test
// wants it) run on it.
type env struct {
	*e2eutil.Switch
	h1 *testns.NS
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Switch: e2eutil.NewSwitch(t)}
	e2eutil.DisableIPv6(t, e.NS)
	e.h1 = e.Host("Ethernet0", "eth0")
	e.NS.IP("addr", "add", swAddr+"/24", "dev", "Ethernet0")
	e.h1.IP("addr", "add", h1Addr+"/24", "dev", "eth0")
	e.h1.IP("addr", "add", blockedAddr+"/24", "dev", "eth0")
	e.MountBPFFS()
	e2eutil.Ping(t, e.h1, swAddr, 1) // ARP before any rule
	return e
}

// impaird starts bin/impaird on the switch.
func (e *env) impaird() *e2eutil.Proc {
	e.T.Helper()
	return e.Start("impaird", "--log-level", "debug")
}

// rule writes ACL_RULE|table|name.
func (e *env) rule(table, name string, kv ...string) {
	e.T.Helper()
	e.HSet(schema.ConfigKey(schema.TableACLRule, table+schema.ConfigSep+name), kv...)
}

// aclCounter reads COUNTERS:table:rule (Packets, Bytes); ok false when
// the key is missing.
func (e *env) aclCounter(table, rule string) (pkts, bytes uint64, ok bool) {
	h := e2eutil.HGetAll(e.Counters, schema.CountersKey(schema.CountersTable, table+schema.CountersSep+rule))
	if len(h) == 0 {
		return 0, 0, false
	}
	p, _ := strconv.ParseUint(h["Packets"], 10, 64)
	b, _ := strconv.ParseUint(h["Bytes"], 10, 64)
	return p, b, true
}

// waitCounter waits until rule's packet counter is want exactly.
func (e *env) waitCounter(table, rule string, want uint64) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("COUNTERS:%s:%s Packets = %d", table, rule, want), func() (bool, string) {
		p, b, ok := e.aclCounter(table, rule)
		return ok && p == want, fmt.Sprintf("packets %d bytes %d present %v", p, b, ok)
	})
}

// listen counts UDP datagrams to the switch's port.
func (e *env) listen(port int) *e2eutil.UDPCounter {
	e.T.Helper()
	return e2eutil.ListenUDP(e.T, e.NS, swAddr, port)
}

// sendFrom sends n datagrams from src in h1 to the switch's port.
func (e *env) sendFrom(src string, port, n int) {
	e.T.Helper()
	var c *net.UDPConn
	err := e.h1.Do(func() error {
		var err error
		c, err = net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(src)}, &net.UDPAddr{IP: net.ParseIP(swAddr), Port: port})
		return err
	})
	if err != nil {
		e.T.Fatalf("dial udp from %s: %v", src, err)
	}
	defer c.Close()
	e2eutil.SendUDP(e.T, c, n)
}

// through sends n datagrams from src to port and returns how many arrived.
func (e *env) through(r *e2eutil.UDPCounter, src string, port, n int) int64 {
	e.T.Helper()
	before := r.Count()
	e.sendFrom(src, port, n)
	return r.Settle() - before
}

// tcpServer accepts TCP connections on the switch's port and echoes what
// it reads; accepted counts the connections.
type tcpServer struct {
	ln       net.Listener
	accepted atomic.Int64
}

func (e *env) tcpServer(port int) *tcpServer {
	e.T.Helper()
	s := &tcpServer{}
	err := e.NS.Do(func() error {
		var err error
		s.ln, err = net.Listen("tcp4", net.JoinHostPort(swAddr, strconv.Itoa(port)))
		return err
	})
	if err != nil {
		e.T.Fatalf("listen tcp %d: %v", port, err)
	}
	e.T.Cleanup(func() { s.ln.Close() })
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return s
}

// tcpEcho connects from h1 to the switch's port, sends a line and reads
// it back: an established TCP exchange. It returns the connect error.
func (e *env) tcpEcho(port int, timeout time.Duration) error {
	var c net.Conn
	err := e.h1.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", net.JoinHostPort(swAddr, strconv.Itoa(port)), timeout)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := []byte("established traffic\n")
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return fmt.Errorf("read echo: %w", err)
	}
	return nil
}

// flood sends datagrams from h1Addr to port until stopped; sent counts
// them.
type flood struct {
	stop chan struct{}
	wg   sync.WaitGroup
	sent atomic.Int64
}

func (e *env) flood(port int) *flood {
	e.T.Helper()
	f := &flood{stop: make(chan struct{})}
	c := e2eutil.DialUDP(e.T, e.h1, swAddr, port)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		buf := make([]byte, 100)
		for {
			select {
			case <-f.stop:
				return
			default:
			}
			if _, err := c.Write(buf); err == nil {
				f.sent.Add(1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return f
}

// end stops the flood and returns how many datagrams it sent.
func (f *flood) end() int64 {
	close(f.stop)
	f.wg.Wait()
	return f.sent.Load()
}
