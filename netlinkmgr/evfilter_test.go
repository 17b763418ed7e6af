package netlinkmgr

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRealWatchOmitKernelLocalRoutes: with OmitKernelLocalRoutes (and
// OmitOwnRouteWrites, the two in one socket filter) an address added by
// hand is heard as its address and its prefix route in main, never as
// its local and broadcast routes in table local; a route someone adds to
// table local by hand (protocol static) is heard; our own quiet route
// write is not, our heard one is. A route added last to main marks the
// end of the events.
func TestRealWatchOmitKernelLocalRoutes(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{OmitKernelLocalRoutes: true, OmitOwnRouteWrites: true})
	must(t, err)
	ns.IP("addr", "add", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("addr", "add", "2001:db8:70::1/64", "dev", "Ethernet1", "nodad")
	ns.IP("route", "add", "local", "10.71.0.1", "dev", "Ethernet1", "table", "local", "proto", "static")
	quiet := RouteInfo{Dst: pfx("10.73.0.0/24"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}}}
	heard := RouteInfo{Dst: pfx("10.74.0.0/24"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.1.2")}}}
	for _, err := range k.Routes().ReplaceBatch([]RouteInfo{quiet, heard}) {
		must(t, err)
	}
	ns.IP("addr", "del", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("route", "add", "10.72.0.0/24", "dev", "Ethernet2") // the end
	var got []string
	for !slices.Contains(got, "10.72.0.0/24 table 254 proto 3") {
		select {
		case ev := <-ch:
			if ev.Kind != EventRoute {
				continue
			}
			r := ev.Route
			s := fmt.Sprintf("%s table %d proto %d", r.Dst, r.Table, r.Protocol)
			if r.Type != "" {
				s = r.Type + " " + s
			}
			if ev.Deleted {
				s = "del " + s
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("route events %v, still waiting for 10.72.0.0/24", got)
		}
	}
	for _, want := range []string{
		"10.70.0.0/24 table 254 proto 2", "2001:db8:70::/64 table 254 proto 2",
		"local 10.71.0.1/32 table 255 proto 4", "10.74.0.0/24 table 254 proto 201",
		"del 10.70.0.0/24 table 254 proto 2",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("route events %v: %q missing", got, want)
		}
	}
	for _, s := range got {
		if strings.Contains(s, "table 255 proto 2") || strings.Contains(s, "10.73.0.0/24") {
			t.Errorf("route events %v: %q heard", got, s)
		}
	}
}

// TestRealWatchOmitKernelPrefixRoutes: with OmitKernelPrefixRoutes too,
// an IPv4 address added and removed by hand is heard as its two address
// events only (its prefix route in main, add and delete, is dropped by
// the kernel); an IPv6 address's prefix route and a link-scope route
// someone adds to main with another protocol are heard.
func TestRealWatchOmitKernelPrefixRoutes(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{OmitKernelLocalRoutes: true, OmitOwnRouteWrites: true, OmitKernelPrefixRoutes: true})
	must(t, err)
	ns.IP("addr", "add", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("addr", "add", "2001:db8:70::1/64", "dev", "Ethernet1", "nodad")
	ns.IP("route", "add", "10.75.0.0/24", "dev", "Ethernet1", "proto", "static", "scope", "link")
	ns.IP("addr", "del", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("route", "add", "10.72.0.0/24", "dev", "Ethernet2") // the end
	var got []string
	for !slices.Contains(got, "10.72.0.0/24 table 254 proto 3") {
		select {
		case ev := <-ch:
			var s string
			switch ev.Kind {
			case EventRoute:
				s = fmt.Sprintf("%s table %d proto %d", ev.Route.Dst, ev.Route.Table, ev.Route.Protocol)
			case EventAddr:
				s = "addr " + ev.Addr.Prefix.String()
			default:
				continue
			}
			if ev.Deleted {
				s = "del " + s
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("events %v, still waiting for 10.72.0.0/24", got)
		}
	}
	for _, want := range []string{
		"addr 10.70.0.1/24", "del addr 10.70.0.1/24", "2001:db8:70::/64 table 254 proto 2",
		"10.75.0.0/24 table 254 proto 4",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("events %v: %q missing", got, want)
		}
	}
	for _, s := range got {
		if strings.Contains(s, "10.70.0.0/24") || strings.Contains(s, "table 255 proto 2") {
			t.Errorf("events %v: %q heard", got, s)
		}
	}
}

// runFilter runs the classic BPF program prog on msg as the kernel's
// socket filter does for the instructions eventFilter uses (absolute
// loads, which reject the message when past its end; the length; jeq,
// jge, jset; ret) and returns what it keeps (0 = drop).
func runFilter(t *testing.T, prog []unix.SockFilter, msg []byte) uint32 {
	t.Helper()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		load := func(n int) bool {
			if int(in.K)+n > len(msg) {
				return false
			}
			a = 0
			for _, c := range msg[in.K : int(in.K)+n] {
				a = a<<8 | uint32(c)
			}
			return true
		}
		jump := func(cond bool) {
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		}
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if !load(4) {
				return 0
			}
		case unix.BPF_LD | unix.BPF_H | unix.BPF_ABS:
			if !load(2) {
				return 0
			}
		case unix.BPF_LD | unix.BPF_B | unix.BPF_ABS:
			if !load(1) {
				return 0
			}
		case unix.BPF_LD | unix.BPF_W | unix.BPF_LEN:
			a = uint32(len(msg))
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(a == in.K)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(a >= in.K)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(a&in.K != 0)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: code %#x not interpreted", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// routeMsg is a route notification: nlmsghdr (type, seq, pid) and an
// rtmsg with table and protocol (and an RTA_TABLE, as the kernel sends).
func routeMsg(typ uint16, seq, pid uint32, table, proto uint8) []byte {
	return routeMsgOf(typ, seq, pid, table, proto, unix.AF_INET, unix.RT_SCOPE_HOST, unix.RTN_LOCAL)
}

// prefixMsg is the notification of an IPv4 address's prefix route in
// table main (protocol kernel, scope link, unicast).
func prefixMsg(typ uint16) []byte {
	return routeMsgOf(typ, 0, 0, unix.RT_TABLE_MAIN, rtprotKernel, unix.AF_INET, unix.RT_SCOPE_LINK, unix.RTN_UNICAST)
}

// routeMsgOf is routeMsg with the rtmsg's family, scope and type.
func routeMsgOf(typ uint16, seq, pid uint32, table, proto, family, scope, rtype uint8) []byte {
	b := native.AppendUint32(nil, 0)
	b = native.AppendUint16(b, typ)
	b = native.AppendUint16(b, 0)
	b = native.AppendUint32(b, seq)
	b = native.AppendUint32(b, pid)
	b = append(b, family, 32, 0, 0, table, proto, scope, rtype, 0, 0, 0, 0)
	b = appendU32Attr(b, unix.RTA_TABLE, uint32(table))
	native.PutUint32(b, uint32(len(b)))
	return b
}

// TestEventFilter runs eventFilter's programs on the messages each is to
// drop or keep, the kernel's checks aside: table local's kernel routes,
// our quiet writes, and everything else (a message too short to hold an
// rtmsg is kept, not rejected by a load past its end).
func TestEventFilter(t *testing.T) {
	const pid = 4242
	if eventFilter(0, false, false) != nil {
		t.Fatal("a filter that drops nothing was built")
	}
	quiet, heard := uint32(8), uint32(8|seqHeard)
	short := routeMsg(unix.RTM_NEWROUTE, 1, 0, rtTableLocal, rtprotKernel)[:unix.SizeofNlMsghdr+4]
	native.PutUint32(short, uint32(len(short)))
	cases := []struct {
		name       string
		msg        []byte
		pid        uint32
		local      bool
		wantPassed bool
		prefix     bool // omit prefix routes too
	}{
		{"local route of an address", routeMsg(unix.RTM_NEWROUTE, 0, 0, rtTableLocal, rtprotKernel), 0, true, false, false},
		{"its delete", routeMsg(unix.RTM_DELROUTE, 0, 0, rtTableLocal, rtprotKernel), pid, true, false, false},
		{"kept without the option", routeMsg(unix.RTM_NEWROUTE, 0, 0, rtTableLocal, rtprotKernel), pid, false, true, false},
		{"table local by hand", routeMsg(unix.RTM_NEWROUTE, 0, 0, rtTableLocal, 4), pid, true, true, false},
		{"prefix route in main", routeMsg(unix.RTM_NEWROUTE, 0, 0, unix.RT_TABLE_MAIN, rtprotKernel), pid, true, true, false},
		{"a VRF's local route", routeMsg(unix.RTM_NEWROUTE, 0, 0, 10, rtprotKernel), pid, true, true, false},
		{"not a route message", routeMsg(unix.RTM_NEWADDR, 0, 0, rtTableLocal, rtprotKernel), 0, true, true, false},
		{"too short for an rtmsg", short, 0, true, true, false},
		{"our quiet write", routeMsg(unix.RTM_NEWROUTE, quiet, pid, unix.RT_TABLE_MAIN, ProtoSwitchyard), pid, true, false, false},
		{"our quiet write, echo test alone", routeMsg(unix.RTM_NEWROUTE, quiet, pid, unix.RT_TABLE_MAIN, ProtoSwitchyard), pid, false, false, false},
		{"our heard write", routeMsg(unix.RTM_NEWROUTE, heard, pid, unix.RT_TABLE_MAIN, ProtoSwitchyard), pid, true, true, false},
		{"someone else's write", routeMsg(unix.RTM_NEWROUTE, quiet, pid+1, unix.RT_TABLE_MAIN, ProtoSwitchyard), pid, true, true, false},
		{"prefix route, omitted", prefixMsg(unix.RTM_NEWROUTE), pid, true, false, true},
		{"its delete, omitted", prefixMsg(unix.RTM_DELROUTE), 0, true, false, true},
		{"prefix route, omitted without local", prefixMsg(unix.RTM_NEWROUTE), 0, false, false, true},
		{"prefix route, omitted, pid", prefixMsg(unix.RTM_NEWROUTE), pid, false, false, true},
		{"local route, prefix alone", routeMsg(unix.RTM_NEWROUTE, 0, 0, rtTableLocal, rtprotKernel), pid, false, true, true},
		{"local route, both", routeMsg(unix.RTM_NEWROUTE, 0, 0, rtTableLocal, rtprotKernel), 0, true, false, true},
		{"IPv6 prefix route", routeMsgOf(unix.RTM_NEWROUTE, 0, 0, unix.RT_TABLE_MAIN, rtprotKernel, unix.AF_INET6, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST), pid, true, true, true},
		{"main, proto kernel, scope universe", routeMsgOf(unix.RTM_NEWROUTE, 0, 0, unix.RT_TABLE_MAIN, rtprotKernel, unix.AF_INET, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST), 0, true, true, true},
		{"main, scope link, proto boot", routeMsgOf(unix.RTM_NEWROUTE, 0, 0, unix.RT_TABLE_MAIN, 3, unix.AF_INET, unix.RT_SCOPE_LINK, unix.RTN_UNICAST), pid, true, true, true},
		{"main, proto kernel, blackhole", routeMsgOf(unix.RTM_NEWROUTE, 0, 0, unix.RT_TABLE_MAIN, rtprotKernel, unix.AF_INET, unix.RT_SCOPE_LINK, unix.RTN_BLACKHOLE), 0, false, true, true},
		{"a VRF's prefix route", routeMsgOf(unix.RTM_NEWROUTE, 0, 0, 10, rtprotKernel, unix.AF_INET, unix.RT_SCOPE_LINK, unix.RTN_UNICAST), pid, true, true, true},
		{"our quiet write, prefix on", routeMsg(unix.RTM_NEWROUTE, quiet, pid, unix.RT_TABLE_MAIN, ProtoSwitchyard), pid, false, false, true},
		{"too short, prefix on", short, 0, false, true, true},
	}
	for _, c := range cases {
		prog := eventFilter(c.pid, c.local, c.prefix)
		if got := runFilter(t, prog, c.msg) != 0; got != c.wantPassed {
			t.Errorf("%s (pid %d, omit local %v, prefix %v): passed %v, want %v", c.name, c.pid, c.local, c.prefix, got, c.wantPassed)
		}
	}
}
