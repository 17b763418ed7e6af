package netlinkmgr

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The seed-000 benchmark: the wrapper against raw vishvananda/netlink (the
// same requests a caller holding only names must send: resolve the name,
// then act) and against exec of ip(8), the reference we replaced. Each
// mode of each operation runs in its own fresh namespace; only the
// operation is timed.
//
//	sudo go test -run '^$' -bench . -benchtime 1000x ./netlinkmgr/
//
// Exec is allowed here only as the reference: netlinkmgr itself never
// runs ip.

type benchWorld struct {
	ns  *testns.NS
	k   Kernel
	raw *netlink.Handle
}

func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	ns := testns.New(b)
	k, err := Open(Options{NetNS: ns.Name})
	if err != nil {
		b.Fatal(err)
	}
	nsh, err := netns.GetFromName(ns.Name)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := netlink.NewHandleAt(nsh, unix.NETLINK_ROUTE)
	if err != nil {
		b.Fatal(err)
	}
	if err := raw.SetSocketTimeout(requestTimeout); err != nil { // same socket setup as Open
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close(); nsh.Close(); k.Close() })
	ns.IP("link", "add", "Ethernet0", "type", "veth", "peer", "name", "peer0")
	ns.IP("link", "set", "Ethernet0", "up")
	ns.IP("link", "set", "peer0", "up")
	return &benchWorld{ns: ns, k: k, raw: raw}
}

func (w *benchWorld) ip(b *testing.B, args ...string) {
	if out, err := exec.Command("ip", append([]string{"-n", w.ns.Name}, args...)...).CombinedOutput(); err != nil {
		b.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// hostAddr is the i-th /32 in 10.128.0.0/9.
func hostAddr(i int) string { return fmt.Sprintf("10.%d.%d.%d", 128+i>>16&127, i>>8&255, i&255) }

type benchOp struct {
	name  string
	modes map[string]func(b *testing.B, w *benchWorld, i int)
}

var benchOps = []benchOp{
	{"link create (bridge)", map[string]func(*testing.B, *benchWorld, int){
		"wrapper": func(b *testing.B, w *benchWorld, i int) {
			if err := w.k.Links().Add(LinkInfo{Name: fmt.Sprintf("b%d", i), Kind: "bridge"}); err != nil {
				b.Fatal(err)
			}
		},
		"raw": func(b *testing.B, w *benchWorld, i int) {
			attrs := netlink.NewLinkAttrs()
			attrs.Name = fmt.Sprintf("b%d", i)
			if err := w.raw.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
				b.Fatal(err)
			}
		},
		"exec": func(b *testing.B, w *benchWorld, i int) {
			w.ip(b, "link", "add", fmt.Sprintf("b%d", i), "type", "bridge")
		},
	}},
	{"admin up/down", map[string]func(*testing.B, *benchWorld, int){
		"wrapper": func(b *testing.B, w *benchWorld, i int) {
			if err := w.k.Links().Set(LinkInfo{Name: "Ethernet0", AdminUp: ptr(i%2 == 1)}); err != nil {
				b.Fatal(err)
			}
		},
		"raw": func(b *testing.B, w *benchWorld, i int) {
			l, err := w.raw.LinkByName("Ethernet0")
			if err == nil {
				if i%2 == 1 {
					err = w.raw.LinkSetUp(l)
				} else {
					err = w.raw.LinkSetDown(l)
				}
			}
			if err != nil {
				b.Fatal(err)
			}
		},
		"exec": func(b *testing.B, w *benchWorld, i int) {
			w.ip(b, "link", "set", "Ethernet0", map[bool]string{true: "up", false: "down"}[i%2 == 1])
		},
	}},
	{"address add", map[string]func(*testing.B, *benchWorld, int){
		"wrapper": func(b *testing.B, w *benchWorld, i int) {
			if err := w.k.Addrs().Add(AddrInfo{Link: "Ethernet0", Prefix: pfx(hostAddr(i) + "/32")}); err != nil {
				b.Fatal(err)
			}
		},
		"raw": func(b *testing.B, w *benchWorld, i int) {
			l, err := w.raw.LinkByName("Ethernet0")
			if err == nil {
				err = w.raw.AddrReplace(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(hostAddr(i)), Mask: net.CIDRMask(32, 32)}})
			}
			if err != nil {
				b.Fatal(err)
			}
		},
		"exec": func(b *testing.B, w *benchWorld, i int) {
			w.ip(b, "addr", "replace", hostAddr(i)+"/32", "dev", "Ethernet0")
		},
	}},
	{"route add", map[string]func(*testing.B, *benchWorld, int){
		"wrapper": func(b *testing.B, w *benchWorld, i int) {
			err := w.k.Routes().Replace(RouteInfo{Dst: pfx(hostAddr(i) + "/32"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Link: "Ethernet0"}}})
			if err != nil {
				b.Fatal(err)
			}
		},
		"raw": func(b *testing.B, w *benchWorld, i int) {
			l, err := w.raw.LinkByName("Ethernet0")
			if err == nil {
				err = w.raw.RouteReplace(&netlink.Route{LinkIndex: l.Attrs().Index, Scope: netlink.SCOPE_LINK, Protocol: ProtoSwitchyard,
					Dst: &net.IPNet{IP: net.ParseIP(hostAddr(i)).To4(), Mask: net.CIDRMask(32, 32)}})
			}
			if err != nil {
				b.Fatal(err)
			}
		},
		"exec": func(b *testing.B, w *benchWorld, i int) {
			w.ip(b, "route", "replace", hostAddr(i)+"/32", "dev", "Ethernet0", "proto", "201")
		},
	}},
}

var benchModes = []string{"raw", "wrapper", "exec"}

// benchOrder alternates which netlink mode goes first, every second
// iteration (admin up/down alternates every iteration: each mode must do
// both up and down in both positions); exec always goes last, so raw and
// wrapper each follow the cache-cold aftermath of a fork+exec equally often.
var benchOrder = [2][]string{{"raw", "wrapper", "exec"}, {"wrapper", "raw", "exec"}}

// BenchmarkNetlink runs each operation with the three modes interleaved
// (see benchOrder), each mode in its own namespace, so load
// from other processes hits all modes alike. It reports per-mode medians
// and the ratios, and prints the table docs/netlinkmgr.md shows.
func BenchmarkNetlink(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (network namespaces, netlink writes): sudo go test -run '^$' -bench . ./netlinkmgr/")
	}
	type row struct{ raw, wrapper, exec float64 }
	rows := map[string]row{}
	for _, op := range benchOps {
		b.Run(strings.ReplaceAll(op.name, " ", "_"), func(b *testing.B) {
			worlds := map[string]*benchWorld{}
			samples := map[string][]time.Duration{}
			for _, m := range benchModes {
				worlds[m] = newBenchWorld(b)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, m := range benchOrder[i/2%2] {
					t0 := time.Now()
					op.modes[m](b, worlds[m], i)
					samples[m] = append(samples[m], time.Since(t0))
				}
			}
			b.StopTimer()
			r := row{median(samples["raw"]), median(samples["wrapper"]), median(samples["exec"])}
			b.ReportMetric(r.raw, "raw-ns/op")
			b.ReportMetric(r.wrapper, "wrapper-ns/op")
			b.ReportMetric(r.exec, "exec-ns/op")
			b.ReportMetric(r.wrapper/r.raw, "wrapper/raw")
			b.ReportMetric(r.exec/r.wrapper, "exec/wrapper")
			rows[op.name] = r
		})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Printf("\n| operation (median) | raw netlink | wrapper | exec ip | wrapper/raw | exec/wrapper |\n|---|---:|---:|---:|---:|---:|\n")
	for _, op := range benchOps {
		if r, ok := rows[op.name]; ok {
			fmt.Printf("| %s | %.1f µs | %.1f µs | %.0f µs | %.2f | %.1f× |\n", op.name, r.raw/1e3, r.wrapper/1e3, r.exec/1e3, r.wrapper/r.raw, r.exec/r.wrapper)
		}
	}
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Nanoseconds())
}
