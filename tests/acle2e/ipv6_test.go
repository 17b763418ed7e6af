package acle2e

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// TestACLIPv6: an L3V6 table on real IPv6 traffic: a SRC_IPV6 prefix is
// dropped, an L3 table refuses an IPv6 rule with an error naming its type,
// and neighbour discovery keeps working (ICMPv6 is not caught by the rule).
func TestACLIPv6(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	h := testns.New(t)
	s.NS.Veth("Ethernet0", h, "eth0")
	s.NS.IP("-6", "addr", "add", "2001:db8::254/64", "dev", "Ethernet0", "nodad")
	h.IP("-6", "addr", "add", "2001:db8::1/64", "dev", "eth0", "nodad")
	h.IP("-6", "addr", "add", "2001:db8::9/64", "dev", "eth0", "nodad")
	s.Start("impaird", "--log-level", "debug")
	s.HSet("ACL_TABLE|V6", "type", "L3V6", "ports@", "Ethernet0")
	s.HSet("ACL_RULE|V6|BLOCK", "PRIORITY", "10", "PACKET_ACTION", "DROP", "IP_TYPE", "IPV6ANY", "SRC_IPV6", "2001:db8::9/128")
	s.HSet("ACL_TABLE|V4ONLY", "type", "L3", "ports@", "Ethernet0")
	s.HSet("ACL_RULE|V4ONLY|V6RULE", "PRIORITY", "10", "PACKET_ACTION", "DROP", "SRC_IPV6", "2001:db8::1/128")
	s.WaitOK("ACL_TABLE|V6", "ACL_RULE|V6|BLOCK", "ACL_TABLE|V4ONLY")
	s.WaitState("ACL_RULE|V4ONLY|V6RULE", "error", "type L3 (IPv4)")

	var n atomic.Int64
	var ln *net.UDPConn
	if err := s.NS.Do(func() error {
		var err error
		ln, err = net.ListenUDP("udp6", &net.UDPAddr{IP: net.ParseIP("2001:db8::254"), Port: 9600})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := ln.ReadFromUDP(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	send := func(src string, count int) int64 {
		before := n.Load()
		var c *net.UDPConn
		if err := h.Do(func() error {
			var err error
			c, err = net.DialUDP("udp6", &net.UDPAddr{IP: net.ParseIP(src)}, &net.UDPAddr{IP: net.ParseIP("2001:db8::254"), Port: 9600})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		e2eutil.SendUDP(t, c, count)
		last := int64(-1)
		for now := n.Load(); now != last; now = n.Load() { // settle
			last = now
			// also: neighbour discovery and ping from the allowed source work
			if out, err := h.Exec("ping", "-c", "1", "-W", "5", "-I", "2001:db8::1", "2001:db8::254"); err != nil {
				t.Fatalf("ping from the allowed source: %v\n%s", err, out)
			}
		}
		return n.Load() - before
	}
	if got := send("2001:db8::1", 100); got != 100 {
		t.Errorf("allowed IPv6 source: %d of 100 arrived", got)
	}
	if got := send("2001:db8::9", 100); got != 0 {
		t.Errorf("blocked IPv6 source: %d of 100 arrived", got)
	}
	s.Eventually("COUNTERS:V6:BLOCK", func() (bool, string) {
		h := e2eutil.HGetAll(s.Counters, "COUNTERS:V6:BLOCK")
		return h["Packets"] == "100", fmt.Sprint(h)
	})
}
