package netlinkmgr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/testns"
	"golang.org/x/sys/unix"
)

// Ownership marks and the reads that prove them, on the real kernel.

func TestRealAddrProtocol(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, err := k.Watch(ctx, WatchOptions{})
	must(t, err)

	ours := AddrInfo{Link: "Ethernet1", Prefix: pfx("10.0.9.1/24"), Protocol: ProtoSwitchyard, Create: true}
	must(t, k.Addrs().Add(ours))
	must(t, k.Addrs().Add(AddrInfo{Link: "Ethernet1", Prefix: pfx("2001:db8:9::1/64"), Protocol: ProtoSwitchyard}))
	ns.IP("addr", "add", "10.0.8.1/24", "dev", "Ethernet1")
	got := map[string]int{}
	as, err := k.Addrs().List("Ethernet1")
	must(t, err)
	for _, a := range as {
		got[a.Prefix.String()] = a.Protocol
	}
	if got["10.0.9.1/24"] != ProtoSwitchyard || got["2001:db8:9::1/64"] != ProtoSwitchyard || got["10.0.8.1/24"] != 0 {
		t.Fatalf("protocols per List: %v", got)
	}
	if j := judgeAddrs(t, env.ns.(*testns.NS), "Ethernet1"); !j["10.0.9.1/24"] {
		t.Fatalf("ip does not show our address: %v", j)
	}
	// Create refuses an address that exists, whoever made it.
	for _, p := range []string{"10.0.9.1/24", "10.0.8.1/24"} {
		err := k.Addrs().Add(AddrInfo{Link: "Ethernet1", Prefix: pfx(p), Protocol: ProtoSwitchyard, Create: true})
		if !errors.Is(err, unix.EEXIST) {
			t.Fatalf("create of existing %s: %v", p, err)
		}
	}
	as, _ = k.Addrs().List("Ethernet1")
	for _, a := range as {
		if a.Prefix.String() == "10.0.8.1/24" && a.Protocol != 0 {
			t.Fatalf("a refused create re-marked the hand-made address: %+v", a)
		}
	}
	// Events carry the protocol.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-evs:
			if ev.Kind == EventAddr && ev.Addr.Prefix.String() == "10.0.9.1/24" {
				if ev.Addr.Protocol != ProtoSwitchyard || ev.Addr.Link != "Ethernet1" {
					t.Fatalf("event %+v", ev.Addr)
				}
				// Delete: confirmed gone; again: not found.
				must(t, k.Addrs().Del(ours))
				mustNotFound(t, "del absent address", k.Addrs().Del(ours))
				return
			}
		case <-deadline:
			t.Fatal("no address event")
		}
	}
}

// Issue 11: an IPv4 route naming only a device (scope link) is deleted;
// the library sent scope universe, the kernel answered ESRCH and that
// passed for "already gone".
func TestRealDeviceRouteDel(t *testing.T) {
	env, k := routedNS(t)
	r := RouteInfo{Dst: pfx("1.2.3.7/32"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Link: "Ethernet1"}}}
	must(t, k.Routes().Replace(r))
	if rs := env.routes(t, "route", "show", "proto", "201"); len(rs) != 1 {
		t.Fatalf("device route per ip: %+v", rs)
	}
	must(t, k.Routes().Del(r))
	if rs := env.routes(t, "route", "show", "proto", "201"); len(rs) != 0 {
		t.Fatalf("device route left after Del: %+v", rs)
	}
	mustNotFound(t, "del absent device route", k.Routes().Del(r))
}

// Create never replaces a route someone else owns; the kernel's reason
// rides along with the errno.
func TestRealRouteCreateAndKernelReason(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ns.IP("route", "add", "10.77.0.0/16", "via", "10.0.2.2", "proto", "bird")
	mine := RouteInfo{Dst: pfx("10.77.0.0/16"), Protocol: ProtoSwitchyard, Create: true,
		NextHops: []NextHop{{Gateway: ip("10.0.1.2")}}}
	if err := k.Routes().Replace(mine); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("create over a bird route: %v", err)
	}
	if errs := k.Routes().ReplaceBatch([]RouteInfo{mine}); !errors.Is(errs[0], unix.EEXIST) {
		t.Fatalf("batched create over a bird route: %v", errs[0])
	}
	if r := env.routes(t, "route", "show", "proto", "bird")["10.77.0.0/16"]; r.Gateway != "10.0.2.2" {
		t.Fatalf("bird route changed: %+v", r)
	}
	mine.Metric = 20
	must(t, k.Routes().Replace(mine))

	err := k.Routes().Replace(RouteInfo{Dst: pfx("10.78.0.0/16"), Protocol: ProtoSwitchyard,
		NextHops: []NextHop{{Gateway: ip("10.0.1.255")}}})
	var ke *KernelError
	if !errors.As(err, &ke) || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "Nexthop has invalid gateway") {
		t.Fatalf("gateway = subnet broadcast: %v", err)
	}
}

// "Not found" from a delete stands only when a read agrees.
func TestConfirmAbsent(t *testing.T) {
	nf := opErr("del", "route 1.2.3.7/32 table 254", notFound(unix.ESRCH))
	if err := confirmAbsent(nf, func() (bool, error) { return false, nil }); !IsNotFound(err) {
		t.Fatalf("absent: %v", err)
	}
	err := confirmAbsent(nf, func() (bool, error) { return true, nil })
	if err == nil || IsNotFound(err) || !strings.Contains(err.Error(), "still there") {
		t.Fatalf("still there: %v", err)
	}
	if err := confirmAbsent(nf, func() (bool, error) { return false, unix.EIO }); err == nil || IsNotFound(err) {
		t.Fatalf("read failed: %v", err)
	}
	if err := confirmAbsent(nil, nil); err != nil {
		t.Fatal(err)
	}
}

// The ownership scenarios join the contract suite: the Fake marks and
// refuses as the kernel does.
func init() {
	contractScenarios = append(contractScenarios, scenario{"protocol marks and create-only writes", func(t *testing.T, e env) {
		e.port("Ethernet0")
		must(t, e.k.Links().Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(true)}))
		A := e.k.Addrs()
		must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24"), Protocol: ProtoSwitchyard, Create: true}))
		must(t, A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.2/24")}))
		if err := A.Add(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.2/24"), Protocol: ProtoSwitchyard, Create: true}); !errors.Is(err, unix.EEXIST) {
			t.Fatalf("create of an existing address: %v", err)
		}
		as, err := A.List("Ethernet0")
		must(t, err)
		got := map[string]int{}
		for _, a := range globalAddrs(as) {
			got[a.Prefix.String()] = a.Protocol
		}
		if len(got) != 2 || got["10.0.0.1/24"] != ProtoSwitchyard || got["10.0.0.2/24"] != 0 {
			t.Fatalf("addresses: %v", got)
		}
		must(t, A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))
		mustNotFound(t, "del absent address", A.Del(AddrInfo{Link: "Ethernet0", Prefix: pfx("10.0.0.1/24")}))

		R := e.k.Routes()
		must(t, R.Replace(RouteInfo{Dst: pfx("10.77.0.0/16"), Protocol: 3, Blackhole: true}))
		mine := RouteInfo{Dst: pfx("10.77.0.0/16"), Protocol: ProtoSwitchyard, Blackhole: true, Create: true}
		if err := R.Replace(mine); !errors.Is(err, unix.EEXIST) {
			t.Fatalf("create over a boot route: %v", err)
		}
		mine.Metric = 20
		must(t, R.Replace(mine))
		dev := RouteInfo{Dst: pfx("1.2.3.7/32"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Link: "Ethernet0"}}}
		must(t, R.Replace(dev))
		must(t, R.Del(dev))
		mustNotFound(t, "del absent device route", R.Del(dev))
		rs, err := R.List(RouteFilter{Family: unix.AF_INET})
		must(t, err)
		n := 0
		for _, r := range rs {
			if r.Dst == pfx("10.77.0.0/16") {
				n++
			}
			if r.Dst == pfx("1.2.3.7/32") {
				t.Fatalf("device route left: %+v", r)
			}
		}
		if n != 2 {
			t.Fatalf("want the boot route and ours: %+v", rs)
		}
	}})
}
