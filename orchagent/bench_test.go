package orchagent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// BenchmarkReconcileRouteFake is orchagent's own cost per STATIC_ROUTE key
// (parse, dependency check, view lookup, one Replace on the Fake, result),
// without Redis or the kernel: go test -bench ReconcileRoute ./orchagent
func BenchmarkReconcileRouteFake(b *testing.B) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	on := true
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: &on}); err != nil {
		b.Fatal(err)
	}
	o := New(Options{Kernel: k, Enqueue: func(string) {}})
	if err := o.Prime(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keys := make([]string, b.N)
	for i := range keys {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		o.cfg.Set("STATIC_ROUTE", p, fields("ifname", "Ethernet0"))
		keys[i] = "STATIC_ROUTE|" + p
	}
	b.ResetTimer()
	for _, key := range keys {
		if err := o.Reconcile(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

// nullRoutes accepts every route write at once: the benchmark below
// measures orchagent, not the Fake's route table.
type nullRoutes struct{ netlinkmgr.Routes }

func (nullRoutes) Replace(netlinkmgr.RouteInfo) error { return nil }
func (nullRoutes) ReplaceBatch(rs []netlinkmgr.RouteInfo) []error {
	return make([]error, len(rs))
}

type nullRouteKernel struct{ netlinkmgr.Kernel }

func (k nullRouteKernel) Routes() netlinkmgr.Routes { return nullRoutes{k.Kernel.Routes()} }

// BenchmarkReconcileRouteBatch is orchagent's own work per STATIC_ROUTE
// key as the daemon does it in a burst: ReconcileBatch over passes of
// maxBatch keys (parse, dependency index, view, batched write to a kernel
// that accepts at once, result), then the route's echo event
// (HandleEvent, as netlinkmgr delivers it). ns/op and allocs/op are per
// route: go test -run '^$' -bench ReconcileRouteBatch -benchmem ./orchagent
func BenchmarkReconcileRouteBatch(b *testing.B) {
	o := benchOrch(b, func(f *netlinkmgr.Fake) netlinkmgr.Kernel { return nullRouteKernel{f} }, nil)
	keys := make([]string, b.N)
	echoes := make([]netlinkmgr.RouteInfo, b.N)
	for i := range keys {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		o.cfg.Set("STATIC_ROUTE", p, fields("ifname", "Ethernet0"))
		keys[i] = "STATIC_ROUTE|" + p
		echoes[i] = netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix(p), Table: netlinkmgr.MainTable,
			Protocol: netlinkmgr.ProtoSwitchyard, NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0", Weight: 1}}}
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	burst(b, o, keys, func(i int) {
		r := echoes[i]
		o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &r})
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is this process's CPU time (user+sys, every thread, the
// garbage collector's too) in ns: cpu-ns/op moves far less than ns/op
// with the shared host's load.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkReconcileVrfRouteBatch is BenchmarkReconcileRouteBatch for
// routes in a VRF's table (STATIC_ROUTE|Vrf_red|P): the same burst, the
// VRF's key ok and its device in the view. ns/op and allocs/op are per
// route: go test -run '^$' -bench 'Reconcile(Vrf)?RouteBatch' -benchmem ./orchagent
func BenchmarkReconcileVrfRouteBatch(b *testing.B) {
	enqueued := 0 // keys an event re-enqueued: none, the echoes being ours
	o := benchOrch(b, func(f *netlinkmgr.Fake) netlinkmgr.Kernel { return nullRouteKernel{f} }, func(string) { enqueued++ })
	ctx := context.Background()
	o.cfg.Set("VRF", "Vrf_red", fields())
	if err := o.Reconcile(ctx, "VRF|Vrf_red"); err != nil {
		b.Fatal(err)
	}
	if err := o.Prime(); err != nil { // the view learns the vrf device (no event watch here)
		b.Fatal(err)
	}
	table, ok := o.vrfTableOf("Vrf_red")
	if !ok {
		res, _ := o.Result("VRF|Vrf_red")
		b.Fatalf("VRF|Vrf_red is not applied: %+v", res)
	}
	keys := make([]string, b.N)
	echoes := make([]netlinkmgr.RouteInfo, b.N)
	for i := range keys {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		o.cfg.Set("STATIC_ROUTE", "Vrf_red|"+p, fields("ifname", "Ethernet0"))
		keys[i] = "STATIC_ROUTE|Vrf_red|" + p
		echoes[i] = netlinkmgr.RouteInfo{Dst: netip.MustParsePrefix(p), Table: table,
			Protocol: netlinkmgr.ProtoSwitchyard, NextHops: []netlinkmgr.NextHop{{Link: "Ethernet0", Weight: 1}}}
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	enqueued = 0
	b.ResetTimer()
	burst(b, o, keys, func(i int) {
		r := echoes[i]
		o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &r})
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(enqueued)/float64(b.N), "enqueues/op")
	if res, ok := o.Result(keys[len(keys)-1]); ok && res.State != "ok" {
		b.Fatalf("%s: %+v", keys[len(keys)-1], res)
	}
}

// nullAddrs accepts every address write at once (orchagent's cost, not
// the Fake's).
type nullAddrs struct{ netlinkmgr.Addrs }

func (nullAddrs) Add(netlinkmgr.AddrInfo) error { return nil }
func (nullAddrs) AddBatch(as []netlinkmgr.AddrInfo) []error {
	return make([]error, len(as))
}

type nullAddrKernel struct{ netlinkmgr.Kernel }

func (k nullAddrKernel) Addrs() netlinkmgr.Addrs { return nullAddrs{k.Kernel.Addrs()} }

// BenchmarkReconcileAddrBatch is orchagent's own work per INTERFACE
// address key in a burst, as BenchmarkReconcileRouteBatch for routes:
// ReconcileBatch in passes of maxBatch. The daemon hears no event of its
// addresses: the kernel drops the address's own echo
// (OmitOwnAddrWrites), its local and broadcast routes in table local
// (OmitKernelLocalRoutes) and its prefix route in main
// (OmitKernelPrefixRoutes). SWITCHYARD_BENCH_PREFIX_EVENTS=1 hands the
// view each prefix route's event as before OmitKernelPrefixRoutes, to
// compare: go test -run '^$' -bench ReconcileAddrBatch -benchmem ./orchagent
func BenchmarkReconcileAddrBatch(b *testing.B) {
	o := benchOrch(b, func(f *netlinkmgr.Fake) netlinkmgr.Kernel { return nullAddrKernel{f} }, nil)
	keys := make([]string, b.N)
	heard := os.Getenv("SWITCHYARD_BENCH_PREFIX_EVENTS") == "1"
	var prefixes []netlinkmgr.RouteInfo
	if heard {
		prefixes = make([]netlinkmgr.RouteInfo, b.N)
	}
	for i := range keys {
		a := netip.MustParsePrefix(fmt.Sprintf("%d.%d.%d.1/24", 11+i/65536, i/256%256, i%256))
		k := "Ethernet0|" + a.String()
		o.cfg.Set("INTERFACE", k, fields("NULL", "NULL"))
		keys[i] = "INTERFACE|" + k
		if heard {
			nh := []netlinkmgr.NextHop{{Link: "Ethernet0", Weight: 1}}
			prefixes[i] = netlinkmgr.RouteInfo{Dst: a.Masked(), Table: netlinkmgr.MainTable, Protocol: 2, NextHops: nh}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	burst(b, o, keys, func(i int) {
		if heard {
			o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &prefixes[i]})
		}
	})
}

// nullFdbs accepts every FDB write at once (see nullRoutes).
type nullFdbs struct{ netlinkmgr.Fdbs }

func (nullFdbs) AddBatch(es []netlinkmgr.FdbInfo) []error { return make([]error, len(es)) }

type nullFdbKernel struct{ netlinkmgr.Kernel }

func (k nullFdbKernel) Fdbs() netlinkmgr.Fdbs { return nullFdbs{k.Kernel.Fdbs()} }

// BenchmarkReconcileFdbBatch is orchagent's own work per FDB key in a
// burst, as BenchmarkReconcileRouteBatch for routes: ReconcileBatch over
// passes of maxBatch static entries on one VLAN member (parse, member
// check, view, batched write to a kernel that accepts at once, result,
// dependency index), then each entry's echo event. ns/op and allocs/op
// are per entry: go test -run '^$' -bench ReconcileFdbBatch -benchmem ./orchagent
func BenchmarkReconcileFdbBatch(b *testing.B) {
	o := benchOrch(b, func(f *netlinkmgr.Fake) netlinkmgr.Kernel { return nullFdbKernel{f} }, nil)
	ctx := context.Background()
	o.cfg.Set("VLAN", "Vlan100", fields("vlanid", "100"))
	o.cfg.Set("VLAN_MEMBER", "Vlan100|Ethernet0", fields("tagging_mode", "untagged"))
	for _, key := range []string{"VLAN|Vlan100", "VLAN_MEMBER|Vlan100|Ethernet0"} {
		if err := o.Reconcile(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	if !o.resultOK("VLAN_MEMBER|Vlan100|Ethernet0") {
		b.Fatal("VLAN_MEMBER|Vlan100|Ethernet0 not ok")
	}
	keys := make([]string, b.N)
	echoes := make([]netlinkmgr.FdbInfo, b.N)
	for i := range keys {
		m := fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", i>>24&255, i>>16&255, i>>8&255, i&255)
		o.cfg.Set("FDB", "Vlan100|"+m, fields("port", "Ethernet0"))
		keys[i] = "FDB|Vlan100|" + m
		mac, _ := net.ParseMAC(m)
		echoes[i] = netlinkmgr.FdbInfo{MAC: mac, Link: "Ethernet0", Master: BridgeName, Vlan: 100, Static: true}
	}
	b.ReportAllocs()
	b.ResetTimer()
	burst(b, o, keys, func(i int) {
		e := echoes[i]
		o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Fdb: &e})
	})
	b.StopTimer()
	// An ok leaf's result is not kept (record): the view's note says
	// the entry was written; a kept result would be pending or error.
	for _, key := range []string{keys[0], keys[len(keys)-1]} {
		if r, kept := o.Result(key); kept {
			b.Fatalf("%s: %+v", key, r)
		}
	}
	if _, ok := o.view.fdb(100, echoes[len(keys)-1].MAC.String()); !ok {
		b.Fatal("the last entry is not in the view")
	}
}

// benchOrch is an Orch over a Fake with port Ethernet0 up, its kernel
// wrapped by kernel (a null writer: the benchmark measures orchagent),
// primed; enqueue counts re-enqueued keys (nil: none counted).
func benchOrch(b *testing.B, kernel func(*netlinkmgr.Fake) netlinkmgr.Kernel, enqueue func(string)) *Orch {
	b.Helper()
	f := netlinkmgr.NewFake().AddPort("Ethernet0")
	on := true
	if err := f.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: &on}); err != nil {
		b.Fatal(err)
	}
	if enqueue == nil {
		enqueue = func(string) {}
	}
	o := New(Options{Kernel: kernel(f), Enqueue: enqueue})
	if err := o.Prime(); err != nil {
		b.Fatal(err)
	}
	return o
}

// burst reconciles keys as the daemon does in a burst: ReconcileBatch in
// passes of maxBatch, then echo(i) for each key of the pass (the events
// netlinkmgr would deliver).
func burst(b *testing.B, o *Orch, keys []string, echo func(i int)) {
	b.Helper()
	ctx := context.Background()
	for start := 0; start < len(keys); start += maxBatch {
		end := min(start+maxBatch, len(keys))
		for _, err := range o.ReconcileBatch(ctx, keys[start:end]) {
			if err != nil {
				b.Fatal(err)
			}
		}
		for i := start; i < end; i++ {
			echo(i)
		}
	}
}
