package netlinkmgr

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkAddBatchAddrs is the kernel's share of a burst of interface
// addresses, with no engine, no Redis and no orchagent: N addresses
// "A/24 brd + dev Ethernet0 proto 201" (each its own /24, as
// BenchmarkBulkInterfaces10k in tests/orchagente2e) created by
// Addrs().AddBatch in passes of 1,024 (as orchagent's worker sends them),
// against ip -batch of "address add A/24 brd + dev Ethernet0" into
// another fresh namespace, in the same round. Reported per address as
// BenchmarkReplaceBatchRoutes does: the wall time of each side, the
// writing thread's user and system CPU, the whole process's CPU, ip's
// user and system CPU. With
// SWITCHYARD_BENCH_WATCH=1 a netlink watch listens with orchagent's
// options (OmitOwnAddrWrites, OmitOwnRouteWrites, OmitKernelLocalRoutes);
// with SWITCHYARD_BENCH_WATCH=local, without OmitKernelLocalRoutes (it
// hears each address's local and broadcast routes). The whole process's
// CPU then includes the watch's reader.
//
//	go test -run '^$' -bench AddBatchAddrs -benchtime 3x ./netlinkmgr
//	SWITCHYARD_BENCH_ADDRS=1000 ... for 1k addresses
func BenchmarkAddBatchAddrs(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (network namespaces, netlink writes)")
	}
	n := 10000
	if s := os.Getenv("SWITCHYARD_BENCH_ADDRS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > 39000 {
			b.Fatalf("SWITCHYARD_BENCH_ADDRS=%q: want a number from 1 to 39000", s)
		}
		n = v
	}
	var watch *WatchOptions
	if w := os.Getenv("SWITCHYARD_BENCH_WATCH"); w != "" {
		watch = &WatchOptions{RecvBuffer: 32 << 20, OmitOwnRouteWrites: true, OmitOwnAddrWrites: true,
			OmitKernelLocalRoutes: w != "local"}
	}
	as := make([]AddrInfo, n)
	lines := make([]string, n)
	for i := range as {
		p := fmt.Sprintf("10.%d.%d.1/24", 100+i/250, i%250)
		as[i] = AddrInfo{Link: "Ethernet0", Prefix: pfx(p), Protocol: ProtoSwitchyard, Create: true}
		lines[i] = "address add " + p + " brd + dev Ethernet0"
	}
	c := batchRounds(b, lines, watch, func(k Kernel) {
		for start := 0; start < n; start += 1024 {
			for i, err := range k.Addrs().AddBatch(as[start:min(start+1024, n)]) {
				if err != nil {
					b.Fatalf("address %d: %v", start+i, err)
				}
			}
		}
	})
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n*b.N) / 1000 }
	b.ReportMetric(per(c.wall), "wall-us/addr")
	b.ReportMetric(per(c.ipWall), "ip-wall-us/addr")
	b.ReportMetric(per(c.user), "user-us/addr")
	b.ReportMetric(per(c.sys), "sys-us/addr")
	b.ReportMetric(per(c.proc), "proc-us/addr")
	b.ReportMetric(per(c.ipUser), "ip-user-us/addr")
	b.ReportMetric(per(c.ipSys), "ip-sys-us/addr")
}
