package syncde2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// convergeSize is the route burst of BenchmarkConverge100kRoutes.
const convergeSize = 100000

// lines100k are ip -batch lines adding (or deleting) n /24 routes via h1.
func lines100k(n int, del bool) []string {
	verb := "add"
	if del {
		verb = "del"
	}
	lines := make([]string, n)
	for i := range n {
		lines[i] = fmt.Sprintf("route %s %d.%d.%d.0/24 via 10.0.0.1 proto static", verb, 30+i/65536, i/256%256, i%256)
	}
	return lines
}

// BenchmarkConverge100kRoutes: a burst of 100,000 routes written by one
// ip -batch into syncd's namespace, mirrored exactly (every key of
// "ip -j route show" in STATE_DB, no other), against the time the kernel
// alone takes the same batch ("ref": ip -batch into a namespace of the
// same shape that nobody watches). sy-routes/s is 100,000 over syncd's
// converge time, from starting ip -batch (the first route enters the
// kernel within a millisecond) until STATE_DB holds the last route;
// ref-routes/s is 100,000 over the reference ip -batch's run; sy/ref is
// their ratio — the goal "converge within 2x the kernel's time"
// is sy/ref >= 0.5. Also reported: the ip -batch time in syncd's own
// namespace (the kernel then also feeds syncd's netlink socket, and the
// two share the CPUs), syncd's CPU seconds per burst and its relists.
//
//	go test -run '^$' -bench Converge100k -benchtime 1x -count 3 ./tests/syncde2e
func BenchmarkConverge100kRoutes(b *testing.B) {
	const n = convergeSize
	e := newEnv(b)
	e.configurePorts("Ethernet0", "Ethernet4")
	add, del := writeBatch(b, lines100k(n, false)), writeBatch(b, lines100k(n, true))
	// The same batch in syncd's namespace before syncd runs: what the
	// namespace's shape costs the kernel, apart from syncd.
	t := time.Now()
	e.NS.IP("-batch", add)
	alone := time.Since(t)
	e.NS.IP("-batch", del)
	prof := os.Getenv("SWITCHYARD_BENCH_CPUPROFILE")
	if prof != "" {
		e.start("--counters-interval", "1h", "--metrics-addr", pprofAddr)
	} else {
		e.start("--counters-interval", "1h")
	}
	e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")
	ref := refNamespace(b)
	ctx := context.Background()
	routeKeys := func() int { return len(e2eutil.Keys(e.State, "ROUTE_TABLE|3[01].*")) }
	pid := e.syncd.Cmd.Process.Pid
	var kernel, converge, inNS time.Duration
	var cpu, redisCPU float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		t := time.Now()
		ref.IP("-batch", add)
		kernel += time.Since(t)
		ref.IP("-batch", del)
		b.StartTimer()

		cpu0, redis0 := e2eutil.ProcCPU(b, pid).Seconds(), e2eutil.RedisCPU(b, e.Config).Seconds()
		var profDone chan struct{}
		if prof != "" {
			profDone = e2eutil.CPUProfile(b, pprofAddr, prof)
		}
		done := make(chan error, 1)
		t0 := time.Now()
		var ipTook time.Duration
		go func() {
			out, err := exec.Command("ip", "-n", e.NS.Name, "-batch", add).CombinedOutput()
			ipTook = time.Since(t0)
			if err != nil {
				err = fmt.Errorf("ip -batch: %v: %s", err, out)
			}
			done <- err
		}()
		// DBSIZE is cheap at any size: poll it, then count the routes.
		base := e.State.DBSize(ctx).Val()
		deadline := t0.Add(5 * time.Minute)
		for e.State.DBSize(ctx).Val() < base+n {
			if time.Now().After(deadline) {
				b.Fatalf("STATE_DB: %d keys 5 minutes after the burst, want %d", e.State.DBSize(ctx).Val(), base+n)
			}
			time.Sleep(2 * time.Millisecond)
		}
		converge += time.Since(t0)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		inNS += ipTook
		cpu += e2eutil.ProcCPU(b, pid).Seconds() - cpu0
		redisCPU += e2eutil.RedisCPU(b, e.Config).Seconds() - redis0
		if profDone != nil {
			<-profDone
			prof = "" // the first burst only
		}
		b.StopTimer()
		exactRoutes(b, e, n)
		e.NS.IP("-batch", del)
		waitRoutes(b, routeKeys, 0)
		b.StartTimer()
	}
	N := float64(b.N)
	b.ReportMetric(n*N/converge.Seconds(), "sy-routes/s")
	b.ReportMetric(n*N/kernel.Seconds(), "ref-routes/s")
	b.ReportMetric(kernel.Seconds()/converge.Seconds(), "sy/ref")
	b.ReportMetric(converge.Seconds()/N, "converge-s")
	b.ReportMetric(kernel.Seconds()/N, "kernel-s")
	b.ReportMetric(inNS.Seconds()/N, "ip-in-syncd-ns-s")
	b.ReportMetric(max(0, converge-inNS).Seconds()/N, "lag-s") // after ip -batch exited: syncd's own tail
	b.ReportMetric(alone.Seconds(), "ip-in-syncd-ns-alone-s")
	b.ReportMetric(cpu/N, "syncd-cpu-s")
	b.ReportMetric(redisCPU/N, "redis-cpu-s")
	b.ReportMetric(float64(strings.Count(e.syncd.Output(), "overflowed")), "relists")
}

// pprofAddr is where syncd serves pprof when the benchmark profiles it.
const pprofAddr = "127.0.0.1:16071"

// refNamespace is a namespace shaped like env's for the routes of
// lines100k: a link holding 10.0.0.254/24 cabled to a host at 10.0.0.1.
func refNamespace(b *testing.B) *testns.NS {
	ref, host := testns.New(b), testns.New(b)
	ref.Veth("Ethernet0", host, "eth0")
	ref.IP("link", "set", "Ethernet0", "up")
	ref.IP("addr", "add", "10.0.0.254/24", "dev", "Ethernet0")
	host.IP("link", "set", "eth0", "up")
	host.IP("addr", "add", "10.0.0.1/24", "dev", "eth0")
	return ref
}

// exactRoutes checks that STATE_DB's ROUTE_TABLE keys are exactly the
// kernel's (ip -j route show) and that the burst's n routes show its next
// hop.
func exactRoutes(b *testing.B, e *env, n int) {
	b.Helper()
	got := e2eutil.Keys(e.State, "ROUTE_TABLE|*")
	slices.Sort(got)
	want := e.judgeRoutes()
	if !slices.Equal(got, want) {
		b.Fatalf("ROUTE_TABLE: %d keys, the kernel has %d routes (first differences: %v)", len(got), len(want), firstDiff(got, want))
	}
	ctx := context.Background()
	p := e.State.Pipeline()
	for _, k := range got {
		if strings.HasPrefix(k, "ROUTE_TABLE|3") {
			p.HGet(ctx, k, "nexthop")
		}
	}
	cmds, _ := p.Exec(ctx)
	bad := 0
	for _, c := range cmds {
		if v, _ := c.(interface{ Val() string }); v == nil || v.Val() != "10.0.0.1" {
			bad++
		}
	}
	if len(cmds) != n || bad > 0 {
		b.Fatalf("%d burst routes in STATE_DB, want %d; %d with another next hop", len(cmds), n, bad)
	}
}

// firstDiff is a few keys in one list and not the other.
func firstDiff(got, want []string) []string {
	var out []string
	for _, k := range got {
		if _, ok := slices.BinarySearch(want, k); !ok && len(out) < 5 {
			out = append(out, "extra "+k)
		}
	}
	for _, k := range want {
		if _, ok := slices.BinarySearch(got, k); !ok && len(out) < 10 {
			out = append(out, "missing "+k)
		}
	}
	return out
}

// waitRoutes waits until count() == want.
func waitRoutes(b *testing.B, count func() int, want int) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		got := count()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d burst routes in STATE_DB after 5 minutes, want %d", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
