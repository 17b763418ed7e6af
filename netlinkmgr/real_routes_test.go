package netlinkmgr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Integration tests of route writes: the real Kernel in a fresh
// namespace, judged by iproute2's JSON output (real_test.go has the rest).
// routedNS gives a namespace with two up veths holding 10.0.{1,2}.1/24 and
// 2001:db8:{1,2}::1/64, so routes have gateways to go through.
func routedNS(t *testing.T) (*routeEnv, Kernel) {
	ns, k := openReal(t)
	for i, n := range []string{"Ethernet1", "Ethernet2"} {
		peer := "peer" + n[len(n)-1:]
		must(t, k.Links().Add(LinkInfo{Name: n, Kind: "veth", Veth: &VethOptions{PeerName: peer}, AdminUp: ptr(true)}))
		must(t, k.Links().Set(LinkInfo{Name: peer, AdminUp: ptr(true)}))
		d := string(rune('1' + i))
		must(t, k.Addrs().Add(AddrInfo{Link: n, Prefix: pfx("10.0." + d + ".1/24")}))
		// nodad: a gateway must not wait for duplicate address detection.
		ns.IP("addr", "add", "2001:db8:"+d+"::1/64", "dev", n, "nodad")
	}
	return &routeEnv{ns}, k
}

type routeEnv struct {
	ns interface{ JSON(any, ...string) }
}

func (e *routeEnv) routes(t *testing.T, args ...string) map[string]ipRoute {
	t.Helper()
	var rs []ipRoute
	e.ns.JSON(&rs, args...)
	out := map[string]ipRoute{}
	for _, r := range rs {
		out[r.Dst] = r
	}
	return out
}

func TestRealRoutes(t *testing.T) {
	env, k := routedNS(t)
	R := k.Routes()
	ecmp4 := RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{
		{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}, {Gateway: ip("10.0.2.2"), Link: "Ethernet2", Weight: 3}}}
	ecmp6 := RouteInfo{Dst: pfx("2001:db8:100::/48"), Protocol: ProtoSwitchyard, NextHops: []NextHop{
		{Gateway: ip("2001:db8:1::2"), Link: "Ethernet1"}, {Gateway: ip("2001:db8:2::2"), Link: "Ethernet2"}}}
	bh := RouteInfo{Dst: pfx("10.3.0.0/16"), Protocol: ProtoSwitchyard, Blackhole: true, Metric: 20}
	single := RouteInfo{Dst: pfx("10.4.0.0/16"), Protocol: ProtoSwitchyard, Metric: 100, NextHops: []NextHop{{Gateway: ip("10.0.1.2")}}}
	for _, r := range []RouteInfo{ecmp4, ecmp6, bh, single, ecmp4} {
		must(t, R.Replace(r))
	}
	v4 := env.routes(t, "route", "show", "proto", "201")
	if r := v4["10.2.0.0/16"]; len(r.Nexthops) != 2 || r.Nexthops[0].Gateway != "10.0.1.2" || r.Nexthops[1].Dev != "Ethernet2" || r.Nexthops[1].Weight != 3 {
		t.Fatalf("ECMP v4 per ip: %+v", r)
	}
	if r := v4["10.3.0.0/16"]; r.Type != "blackhole" || r.Metric != 20 {
		t.Fatalf("blackhole per ip: %+v", r)
	}
	if r := v4["10.4.0.0/16"]; r.Gateway != "10.0.1.2" || r.Dev != "Ethernet1" || r.Metric != 100 {
		t.Fatalf("single-path per ip: %+v", r)
	}
	v6 := env.routes(t, "-6", "route", "show", "proto", "201")
	if r := v6["2001:db8:100::/48"]; len(r.Nexthops) != 2 || r.Metric != 1024 {
		t.Fatalf("ECMP v6 per ip: %+v", r)
	}

	list, err := R.List(RouteFilter{Protocol: ProtoSwitchyard})
	must(t, err)
	byDst := map[string]RouteInfo{}
	for _, r := range list {
		byDst[r.Dst.String()] = r
	}
	if len(byDst) != 4 || len(byDst["10.2.0.0/16"].NextHops) != 2 || byDst["10.2.0.0/16"].NextHops[1].Weight != 3 ||
		!byDst["10.3.0.0/16"].Blackhole || byDst["10.4.0.0/16"].NextHops[0].Link != "Ethernet1" ||
		byDst["2001:db8:100::/48"].Metric != 1024 || byDst["10.2.0.0/16"].Table != MainTable {
		t.Fatalf("List: %+v", list)
	}
	only6, err := R.List(RouteFilter{Protocol: ProtoSwitchyard, Family: unix.AF_INET6})
	must(t, err)
	if len(only6) != 1 {
		t.Fatalf("List v6: %+v", only6)
	}

	// Replace swaps the next hops of the same dst/metric.
	must(t, R.Replace(RouteInfo{Dst: pfx("10.2.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.2.2"), Link: "Ethernet2"}}}))
	if r := env.routes(t, "route", "show", "proto", "201")["10.2.0.0/16"]; r.Gateway != "10.0.2.2" || len(r.Nexthops) != 0 {
		t.Fatalf("after replace per ip: %+v", r)
	}

	must(t, R.Del(RouteInfo{Dst: pfx("10.3.0.0/16"), Protocol: ProtoSwitchyard, Metric: 20}))
	must(t, R.Del(RouteInfo{Dst: pfx("2001:db8:100::/48"), Protocol: ProtoSwitchyard}))
	mustNotFound(t, "del absent route", R.Del(RouteInfo{Dst: pfx("10.3.0.0/16"), Protocol: ProtoSwitchyard}))
	mustNotFound(t, "del with other metric", R.Del(RouteInfo{Dst: pfx("10.4.0.0/16"), Metric: 7}))
	mustNotFound(t, "del with other protocol", R.Del(RouteInfo{Dst: pfx("10.4.0.0/16"), Protocol: 202}))
	if rs := env.routes(t, "route", "show", "proto", "201"); len(rs) != 2 {
		t.Fatalf("after del per ip: %+v", rs)
	}
	if err := R.Replace(RouteInfo{Dst: pfx("10.5.0.0/16"), NextHops: []NextHop{{Gateway: ip("192.0.2.1")}}}); err == nil {
		t.Fatal("route via an unreachable gateway was accepted")
	}
	if err := R.Replace(RouteInfo{Dst: pfx("10.5.0.1/16"), Blackhole: true}); err == nil || !strings.Contains(err.Error(), "10.5.0.0/16") {
		t.Fatalf("host bits set: %v, want an error naming 10.5.0.0/16", err)
	}
}

// TestRealRouteTables: route writes (sent on the wrapper's own route
// socket) in a table above 255 (RTA_TABLE), IPv6 single-path, device-only
// routes, and the kernel's errno on failure.
func TestRealRouteTables(t *testing.T) {
	env, k := routedNS(t)
	R := k.Routes()
	must(t, R.Replace(RouteInfo{Dst: pfx("10.20.0.0/16"), Table: 1000, Protocol: ProtoSwitchyard, Metric: 7,
		NextHops: []NextHop{{Gateway: ip("10.0.2.2"), Link: "Ethernet2"}}}))
	must(t, R.Replace(RouteInfo{Dst: pfx("10.21.0.0/16"), Table: 100, Protocol: ProtoSwitchyard,
		NextHops: []NextHop{{Link: "Ethernet1"}}}))
	must(t, R.Replace(RouteInfo{Dst: pfx("2001:db8:200::/48"), Protocol: ProtoSwitchyard,
		NextHops: []NextHop{{Gateway: ip("2001:db8:2::2"), Link: "Ethernet2"}}}))
	if r := env.routes(t, "route", "show", "table", "1000")["10.20.0.0/16"]; r.Gateway != "10.0.2.2" || r.Dev != "Ethernet2" || r.Metric != 7 || r.Protocol != "201" {
		t.Fatalf("table 1000 per ip: %+v", r)
	}
	if r := env.routes(t, "route", "show", "table", "100")["10.21.0.0/16"]; r.Dev != "Ethernet1" || r.Gateway != "" {
		t.Fatalf("table 100 per ip: %+v", r)
	}
	if r := env.routes(t, "-6", "route", "show", "proto", "201")["2001:db8:200::/48"]; r.Gateway != "2001:db8:2::2" || r.Dev != "Ethernet2" || r.Metric != 1024 {
		t.Fatalf("v6 single-path per ip: %+v", r)
	}
	list, err := R.List(RouteFilter{Table: 1000})
	must(t, err)
	if len(list) != 1 || list[0].Table != 1000 || list[0].Metric != 7 {
		t.Fatalf("List table 1000: %+v", list)
	}
	err = R.Replace(RouteInfo{Dst: pfx("10.22.0.0/16"), NextHops: []NextHop{{Gateway: ip("192.0.2.1"), Link: "Ethernet1"}}})
	if !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("unreachable gateway: %v, want ENETUNREACH", err)
	}
}

// TestRealReplaceBatch: a batch larger than one netlink message, with
// failures in the middle that do not stop the routes after them.
func TestRealReplaceBatch(t *testing.T) {
	env, k := routedNS(t)
	var rs []RouteInfo
	for i := 0; i < 300; i++ {
		r := RouteInfo{Dst: pfx(fmt.Sprintf("10.%d.%d.0/24", 100+i/250, i%250)), Protocol: ProtoSwitchyard,
			NextHops: []NextHop{{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}}}
		switch i {
		case 10:
			r.NextHops[0].Gateway = ip("192.0.2.1") // unreachable
		case 70:
			r.NextHops[0].Link = "Ethernet9" // no such link
		case 200:
			r.Dst = pfx("10.100.200.1/24") // host bits
		}
		rs = append(rs, r)
	}
	errs := k.Routes().ReplaceBatch(rs)
	if len(errs) != len(rs) {
		t.Fatalf("%d errors for %d routes", len(errs), len(rs))
	}
	for i, err := range errs {
		switch i {
		case 10:
			if !errors.Is(err, unix.ENETUNREACH) {
				t.Fatalf("route %d: %v, want ENETUNREACH", i, err)
			}
		case 70:
			mustNotFound(t, "route via a missing link", err)
		case 200:
			if err == nil || !strings.Contains(err.Error(), "10.100.200.0/24") {
				t.Fatalf("route %d: %v, want the canonical prefix named", i, err)
			}
		default:
			must(t, err)
		}
	}
	got := env.routes(t, "route", "show", "proto", "201")
	if len(got) != 297 {
		t.Fatalf("ip shows %d proto 201 routes, want 297", len(got))
	}
	if r := got["10.101.49.0/24"]; r.Gateway != "10.0.1.2" || r.Dev != "Ethernet1" {
		t.Fatalf("last route per ip: %+v", r)
	}
}

// TestRealReplaceBatchAnswers: only the last request of each sendmsg asks
// for an acknowledgement (batch.go); a failed request is still answered
// and pinned to its route, wherever it is in a sendmsg of several (every
// 97th route, the last of the batch), and every other route is there.
func TestRealReplaceBatchAnswers(t *testing.T) {
	env, k := routedNS(t)
	const n = 2500 // ~3 sendmsgs of 64 KiB
	bad := func(i int) bool { return i%97 == 5 || i == n-1 }
	exists := func(i int) bool { return i%97 == 50 }
	var pre []RouteInfo
	var rs []RouteInfo
	for i := 0; i < n; i++ {
		r := RouteInfo{Dst: pfx(fmt.Sprintf("10.%d.%d.0/24", 100+i/250, i%250)), Protocol: ProtoSwitchyard,
			NextHops: []NextHop{{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}}}
		if exists(i) {
			pre = append(pre, r)
			r.Create = true // EEXIST
		}
		if bad(i) {
			r.NextHops[0].Gateway = ip("192.0.2.1") // unreachable
		}
		rs = append(rs, r)
	}
	for _, err := range k.Routes().ReplaceBatch(pre) {
		must(t, err)
	}
	errs := k.Routes().ReplaceBatch(rs)
	for i, err := range errs {
		switch {
		case bad(i):
			if !errors.Is(err, unix.ENETUNREACH) {
				t.Fatalf("route %d: %v, want ENETUNREACH", i, err)
			}
		case exists(i):
			if !errors.Is(err, unix.EEXIST) {
				t.Fatalf("route %d: %v, want EEXIST", i, err)
			}
		default:
			must(t, err)
		}
	}
	want := 0
	for i := 0; i < n; i++ {
		if !bad(i) {
			want++
		}
	}
	if got := env.routes(t, "route", "show", "proto", "201"); len(got) != want {
		t.Fatalf("ip shows %d proto 201 routes, want %d", len(got), want)
	}
	// Alone, the last request is the one asking: a lone failure and a
	// lone success both answered.
	if err := k.Routes().Replace(rs[n-1]); !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("lone bad route: %v, want ENETUNREACH", err)
	}
	must(t, k.Routes().Replace(rs[0]))
}
