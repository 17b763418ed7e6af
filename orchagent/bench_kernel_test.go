package orchagent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// BenchmarkReconcileRouteBatchKernel is the worker's part of a burst of
// routes against the real kernel, without Redis or the engine: N route
// keys (SWITCHYARD_BENCH_ROUTES, 10,000) reconciled by ReconcileBatch in
// passes of maxBatch (the worker's) into a fresh namespace each
// round. Reported per route: the worker's wall time and the process's
// CPU (the kernel's insert is in the worker's sendmsg).
//
//	go test -run '^$' -bench ReconcileRouteBatchKernel -benchtime 5x ./orchagent
func BenchmarkReconcileRouteBatchKernel(b *testing.B) {
	n := 10000
	if s := os.Getenv("SWITCHYARD_BENCH_ROUTES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("SWITCHYARD_BENCH_ROUTES=%q: want a positive number", s)
		}
		n = v
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("STATIC_ROUTE|%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
	}
	var wall, cpu time.Duration
	for round := 0; round < b.N; round++ {
		w, c := kernelBurst(b, keys)
		wall += w
		cpu += c
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n*b.N) }
	b.ReportMetric(per(wall), "wall-ns/route")
	b.ReportMetric(per(cpu), "cpu-ns/route")
}

// kernelBurst reconciles keys (routes via 10.0.0.2 dev Ethernet0) into a
// fresh namespace and returns the wall and process CPU time it took.
func kernelBurst(b *testing.B, keys []string) (wall, cpu time.Duration) {
	b.StopTimer()
	defer b.StartTimer()
	ns := testns.New(b)
	ns.IP("link", "add", "Ethernet0", "type", "veth", "peer", "name", "peer0")
	ns.IP("link", "set", "Ethernet0", "up")
	ns.IP("link", "set", "peer0", "up")
	ns.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
	k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: ns.Name})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	o := New(Options{Kernel: k, Enqueue: func(string) {}})
	if err := o.Prime(); err != nil {
		b.Fatal(err)
	}
	for _, key := range keys {
		o.cfg.Set("STATIC_ROUTE", key[len("STATIC_ROUTE|"):], fields("nexthop", "10.0.0.2", "ifname", "Ethernet0"))
	}
	ctx := context.Background()
	b.StartTimer()
	cpu0, start := processCPU(), time.Now()
	for lo := 0; lo < len(keys); lo += maxBatch {
		for i, err := range o.ReconcileBatch(ctx, keys[lo:min(lo+maxBatch, len(keys))]) {
			if err != nil {
				b.Fatalf("%s: %v", keys[lo+i], err)
			}
		}
	}
	wall, cpu = time.Since(start), time.Duration(processCPU()-cpu0)
	b.StopTimer()
	return wall, cpu
}
