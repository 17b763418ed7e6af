package netlinkmgr

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/testns"
	"golang.org/x/sys/unix"
)

// BenchmarkReplaceBatchRoutes is the kernel's share of a burst of static
// routes, with no engine, no Redis and no orchagent: N new routes
// "via 10.0.0.2 dev Ethernet0 proto 201" written by Routes().ReplaceBatch
// in passes of 1,024 (as orchagent's worker sends them), against ip -batch
// of the same routes into another fresh namespace, in the same round.
// Reported per route: the writing thread's user and system CPU
// (RUSAGE_THREAD: the system part is the kernel's insert, done in our
// sendmsg), the whole process's CPU (GC included), and ip's user and
// system CPU. With -watch (SWITCHYARD_BENCH_WATCH=1) a netlink watch
// with OmitOwnRouteWrites listens, as orchagent does: the kernel then
// builds each route's event and runs the socket filter that drops it.
//
//	go test -run '^$' -bench ReplaceBatchRoutes -benchtime 5x ./netlinkmgr
//	SWITCHYARD_BENCH_ROUTES=100000 ... for 100k routes
func BenchmarkReplaceBatchRoutes(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (network namespaces, netlink writes)")
	}
	n := 10000
	if s := os.Getenv("SWITCHYARD_BENCH_ROUTES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("SWITCHYARD_BENCH_ROUTES=%q: want a positive number", s)
		}
		n = v
	}
	var watch *WatchOptions
	if os.Getenv("SWITCHYARD_BENCH_WATCH") != "" {
		watch = &WatchOptions{RecvBuffer: 32 << 20, OmitOwnRouteWrites: true}
	}
	rs := make([]RouteInfo, n)
	lines := make([]string, n)
	for i := range rs {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		rs[i] = RouteInfo{Dst: pfx(p), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.0.2"), Link: "Ethernet0"}}}
		lines[i] = "route replace " + p + " via 10.0.0.2 dev Ethernet0 proto 201"
	}
	c := batchRounds(b, lines, watch, func(k Kernel) {
		for start := 0; start < n; start += 1024 {
			for i, err := range k.Routes().ReplaceBatch(rs[start:min(start+1024, n)]) {
				if err != nil {
					b.Fatalf("route %d: %v", start+i, err)
				}
			}
		}
	})
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n*b.N) }
	b.ReportMetric(per(c.user), "user-ns/route")
	b.ReportMetric(per(c.sys), "sys-ns/route")
	b.ReportMetric(per(c.proc), "proc-ns/route")
	b.ReportMetric(per(c.ipUser), "ip-user-ns/route")
	b.ReportMetric(per(c.ipSys), "ip-sys-ns/route")
}

// batchCost is what batchRounds measured, summed over its rounds.
type batchCost struct {
	user, sys, proc, wall time.Duration // our writing thread, the whole process, the write's wall time
	ipUser, ipSys, ipWall time.Duration // ip -batch
}

// batchRounds runs b.N rounds of the kernel's share of a burst against
// ip -batch: each round, write runs on one locked thread against a fresh
// routeBenchNS (with a netlink watch reading and dropping events when
// watch is not nil, as orchagent listens), then ip -batch of lines runs
// into another fresh one. Only those two parts are timed.
func batchRounds(b *testing.B, lines []string, watch *WatchOptions, write func(k Kernel)) batchCost {
	batch := filepath.Join(b.TempDir(), "batch")
	if err := os.WriteFile(batch, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	var c batchCost
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		b.StopTimer()
		ns := routeBenchNS(b)
		k, err := Open(Options{NetNS: ns.Name})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if watch != nil {
			evs, err := k.Watch(ctx, *watch)
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				for range evs {
				}
			}()
		}
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		u, s, p := threadCPU(b, func() { write(k) })
		c.wall += time.Since(t0)
		b.StopTimer()
		cancel()
		k.Close()
		c.user, c.sys, c.proc = c.user+u, c.sys+s, c.proc+p

		ref := routeBenchNS(b)
		cmd := exec.Command("ip", "-n", ref.Name, "-batch", batch)
		t1 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ip -batch: %v: %s", err, out)
		}
		c.ipWall += time.Since(t1)
		c.ipUser += cmd.ProcessState.UserTime()
		c.ipSys += cmd.ProcessState.SystemTime()
		b.StartTimer()
	}
	return c
}

// routeBenchNS is a fresh namespace with the e2e benchmarks' port:
// Ethernet0 (a veth, up) holding 10.0.0.1/24.
func routeBenchNS(b *testing.B) *testns.NS {
	ns := testns.New(b)
	ns.IP("link", "add", "Ethernet0", "type", "veth", "peer", "name", "peer0")
	ns.IP("link", "set", "Ethernet0", "up")
	ns.IP("link", "set", "peer0", "up")
	ns.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
	return ns
}

// threadCPU runs f on one locked OS thread and returns that thread's user
// and system CPU over it, and the whole process's CPU (GC and other
// goroutines included).
func threadCPU(b *testing.B, f func()) (user, sys, proc time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t0, t1, p0, p1 syscall.Rusage
	if err := syscall.Getrusage(unix.RUSAGE_THREAD, &t0); err != nil {
		b.Fatal(err)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &p0)
	f()
	_ = syscall.Getrusage(unix.RUSAGE_THREAD, &t1)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &p1)
	tv := func(a, b syscall.Timeval) time.Duration { return time.Duration(b.Nano() - a.Nano()) }
	return tv(t0.Utime, t1.Utime), tv(t0.Stime, t1.Stime),
		tv(p0.Utime, p1.Utime) + tv(p0.Stime, p1.Stime)
}
