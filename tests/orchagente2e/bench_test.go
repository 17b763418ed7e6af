package orchagente2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// Benchmarks of the daemon end to end (recorded in docs/performance.md):
//
//	go test -run '^$' -bench . -benchtime 1x ./tests/orchagente2e
//
// Each iteration builds its own namespace, redis-server and orchagent.

// BenchmarkSingleChangeLatency: HSET PORT|Ethernet0 mtu → the kernel's
// netlink event for the new MTU, 1,000 changes in a row; p50/p99/max.
func BenchmarkSingleChangeLatency(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := e2eutil.NewSwitch(b)
		peer := testns.New(b)
		e.NS.Veth("Ethernet0", peer, "eth1")
		k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: e.NS.Name})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		evs, err := k.Watch(ctx, netlinkmgr.WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		e.Start("orchagent", "--log-level", "warn")
		e.HSet("PORT|Ethernet0", "mtu", "1500")
		e.WaitOK("PORT|Ethernet0")
		const n = 1000
		lat := make([]time.Duration, 0, n)
		b.StartTimer()
		for j := 0; j < n; j++ {
			mtu := 1400 + (j%2)*100
			t0 := time.Now()
			if err := e.Config.HSet(ctx, "PORT|Ethernet0", "mtu", fmt.Sprint(mtu)).Err(); err != nil {
				b.Fatal(err)
			}
			deadline := time.After(e2eutil.Wait)
			for done := false; !done; {
				select {
				case ev := <-evs:
					done = ev.Kind == netlinkmgr.EventLink && ev.Link != nil && ev.Link.Name == "Ethernet0" &&
						ev.Link.MTU != nil && *ev.Link.MTU == mtu
				case <-deadline:
					b.Fatalf("change %d (mtu %d) not applied within %v", j, mtu, e2eutil.Wait)
				}
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		cancel()
		k.Close()
		sort.Slice(lat, func(x, y int) bool { return lat[x] < lat[y] })
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lat[n/2]), "p50-ms")
		b.ReportMetric(ms(lat[n*99/100]), "p99-ms")
		b.ReportMetric(ms(lat[n-1]), "max-ms")
	}
}

// cpuCost is the CPU time each party spent on a bulk run: orchagent's
// threads, redis-server's (INFO cpu) and the batch tool's (its rusage:
// the kernel's work happens in its system calls). Unlike wall time on a
// shared machine it hardly depends on the other engineers' load.
type cpuCost struct{ orch, redis, tool time.Duration }

// bulk writes keys (each with fields) in one burst (w: goPipeline, one
// go-redis pipeline, or redisCliPipe) and measures until
// every result is ok; then the same kernel objects are added by
// "ip -batch" in a fresh namespace with the same ports (Ethernet0, plus
// Ethernet1 … Ethernet{ports-1} when ports > 1: veth pairs up, made
// untimed by addPorts on both sides). Returns both
// durations and the CPU each party spent (cpuCost). With
// SWITCHYARD_BENCH_CPUPROFILE=FILE orchagent serves pprof and FILE gets
// its CPU profile of the burst (SWITCHYARD_BENCH_PROFILE_SECONDS, default
// 2, from the pipeline on). With SWITCHYARD_BENCH_TRACE=FILE FILE gets
// orchagent's Go execution trace over the same seconds, started just
// before the burst (go tool trace FILE: when the worker ran, sat in the
// kernel's add, waited for a CPU or for work; docs/performance.md).
func bulk(b *testing.B, w burstWriter, ports int, keys []string, fields []any, batch []string) (orch, ipb time.Duration, cpu cpuCost) {
	b.Helper()
	ctx := context.Background()
	e := e2eutil.NewSwitch(b)
	peer := testns.New(b)
	e.NS.Veth("Ethernet0", peer, "eth1")
	addPorts(b, e.NS, ports)
	prof := os.Getenv("SWITCHYARD_BENCH_CPUPROFILE")
	trace := os.Getenv("SWITCHYARD_BENCH_TRACE")
	level := "warn"
	if l := os.Getenv("SWITCHYARD_BENCH_LOGLEVEL"); l != "" {
		level = l // debug: one line per kernel change, with its time (-v shows the log)
	}
	args := []string{"--log-level", level}
	if prof != "" || trace != "" {
		args = append(args, "--metrics-addr", pprofAddr)
	}
	// e.g. "--heap-min-mib 16" (as the scale benchmark takes it)
	args = append(args, strings.Fields(os.Getenv("SWITCHYARD_BENCH_DAEMON_ARGS"))...)
	proc := e.Start("orchagent", args...)
	e.SetInitialized()
	e.HSet("INTERFACE|Ethernet0|10.0.0.1/24")
	e.WaitOK("INTERFACE|Ethernet0|10.0.0.1/24")

	// The judge polls STATE_DB's key count (DBSIZE, O(1)) until every
	// result can be there, then checks every state: no keyspace
	// subscription, whose 100k messages would cost redis-server and this
	// process as much CPU as the daemon (2 vCPUs for all three). The
	// check is one script over a list of the result keys loaded before
	// the clock starts (allOK): reading 10k states back through the
	// client took 5-60 ms, a cost the reference does not pay.
	loadResultKeys(b, e, keys)
	base, err := e.State.DBSize(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	send := w(b, e, keys, fields)
	var profDone chan struct{}
	if prof != "" {
		profDone = e2eutil.CPUProfile(b, pprofAddr, prof)
	}
	waitTeardown(b)
	var traceDone chan struct{}
	if trace != "" {
		traceDone = e2eutil.ExecTrace(b, pprofAddr, trace)
		time.Sleep(50 * time.Millisecond) // the trace has started (it stops the world once)
	}
	orchCPU0, redisCPU0 := e2eutil.ProcCPU(b, proc.Cmd.Process.Pid), e2eutil.RedisCPU(b, e.Config)
	e.Config.ConfigResetStat(ctx)
	t0 := time.Now()
	send()
	tExec := time.Since(t0)
	limit := 300 * time.Second
	var tFirst, tAll time.Duration
	for {
		n, err := e.State.DBSize(ctx).Result()
		if err != nil {
			b.Fatal(err)
		}
		if tFirst == 0 && n > base {
			tFirst = time.Since(t0)
		}
		if n >= base+int64(len(keys)) {
			tAll = time.Since(t0)
			// redis-server's share ends here, before the judge's
			// check (allOK: ~1.6 µs per key of Lua).
			cpu.redis = e2eutil.RedisCPU(b, e.Config) - redisCPU0
			break
		}
		if time.Since(t0) > limit {
			b.Fatalf("%d of %d results written after %v", n-base, len(keys), limit)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		ok, at := allOK(b, e, t0)
		if ok == len(keys) {
			orch = at
			break
		}
		if time.Since(t0) > limit {
			b.Fatalf("%d of %d ok after %v", ok, len(keys), limit)
		}
		time.Sleep(time.Millisecond) // as the DBSIZE polls: at most 1 ms late
	}
	b.Logf("timeline from %s: pipeline sent %v, first result %v, all results %v, all ok %v", t0.UTC().Format("15:04:05.000000"), tExec, tFirst, tAll, orch)
	cpu.orch = e2eutil.ProcCPU(b, proc.Cmd.Process.Pid) - orchCPU0
	logCommandStats(b, e, len(keys))
	if traceDone != nil {
		<-traceDone
	}
	if profDone != nil {
		<-profDone
		// The heap profile after a collection (gc=1): its alloc_space
		// counts every sampled allocation to now; /allocs would stop at
		// the last collection, before the burst's end.
		fetch(b, "/debug/pprof/heap?gc=1", prof+".allocs")
		logMetrics(b, "reconciles_total")
	}
	e.Procs["orchagent"].Stop()

	ns := testns.New(b)
	ns.Veth("Ethernet0", nil, "p0")
	addPorts(b, ns, ports)
	ns.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
	waitTeardown(b)
	t1 := time.Now()
	cmd := benchIPBatch(b, ns, batch)
	ipb = time.Since(t1)
	cpu.tool = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return orch, ipb, cpu
}

// resultKeysList is the STATE_DB list of the result keys a bulk run
// waits for (loadResultKeys; not a table: no daemon reads or sweeps it).
const resultKeysList = "switchyard-bench:result-keys"

// loadResultKeys stores the result key of every CONFIG_DB key in
// resultKeysList, before the clock starts.
func loadResultKeys(b *testing.B, e *e2eutil.Switch, keys []string) {
	ctx := context.Background()
	p := e.State.Pipeline()
	p.Del(ctx, resultKeysList)
	for i := 0; i < len(keys); i += 1000 {
		chunk := make([]any, 0, 1000)
		for _, k := range keys[i:min(i+1000, len(keys))] {
			chunk = append(chunk, e2eutil.ResultKey(k))
		}
		p.RPush(ctx, resultKeysList, chunk...)
	}
	if _, err := p.Exec(ctx); err != nil {
		b.Fatal(err)
	}
}

// okScript counts the keys of the list KEYS[1] whose state is ok, in
// one atomic step of redis-server, and returns it after redis-server's
// clock at the start of that step (TIME: seconds, microseconds): the
// states it counted are those of that instant, since nothing else runs
// while a script does.
var okScript = redis.NewScript(`
local t = redis.call('TIME')
local n = 0
for _, k in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
	if redis.call('HGET', k, 'state') == 'ok' then n = n + 1 end
end
return {tonumber(t[1]), tonumber(t[2]), n}`)

// allOK is how many of the results listed by loadResultKeys are ok, and
// the time since t0 at which they were (okScript's TIME). The script's
// own run (~1.6 µs per key: 16 ms at 10k, 160+ ms at 100k) is after that
// instant, so a judge that stops at the reply would charge switchyard for
// its reading (routes7, docs/performance.md). redis-server and this
// process read the same host (or guest) clock; a server time outside
// [just before the call, its reply] (a clock step) falls back to the
// reply's time.
func allOK(b *testing.B, e *e2eutil.Switch, t0 time.Time) (int, time.Duration) {
	sent := time.Since(t0)
	r, err := okScript.Run(context.Background(), e.State, []string{resultKeysList}).Int64Slice()
	if err != nil {
		b.Fatal(err)
	}
	got := time.Since(t0)
	at := time.Unix(r[0], r[1]*1000).Sub(t0)
	if at < sent-time.Millisecond || at > got {
		b.Logf("redis-server's clock (%v after t0) is outside the call's [%v, %v]: using the reply's time", at, sent, got)
		at = got
	}
	return int(r[2]), at
}

// waitTeardown waits until the kernel has finished deleting namespaces
// (the previous run's: 200k addresses take it seconds), so that neither
// side of the comparison pays for it (e2eutil.NetnsCleanupIdle).
func waitTeardown(b *testing.B) {
	if d := e2eutil.NetnsCleanupIdle(2 * time.Minute); d > time.Second {
		b.Logf("waited %v for the kernel to finish deleting namespaces", d.Round(time.Millisecond))
	}
}

// benchIPBatch runs "ip -n NS -batch FILE" of lines (written before it
// starts) and returns the finished command.
func benchIPBatch(b *testing.B, ns *testns.NS, lines []string) *exec.Cmd {
	b.Helper()
	f, err := os.CreateTemp(b.TempDir(), "batch")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		b.Fatal(err)
	}
	f.Close()
	cmd := exec.Command("ip", "-n", ns.Name, "-batch", f.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("ip -batch: %v: %s", err, out)
	}
	return cmd
}

// addPorts adds Ethernet1 … Ethernet{n-1} to ns, each a veth up with its
// peer pN up in ns too (the host kernel has no dummy devices), in one
// ip -batch: 1,000 pairs take under a second.
func addPorts(b *testing.B, ns *testns.NS, n int) {
	if n <= 1 {
		return
	}
	lines := make([]string, 0, 3*n)
	for i := 1; i < n; i++ {
		lines = append(lines, fmt.Sprintf("link add Ethernet%d type veth peer name p%d", i, i),
			fmt.Sprintf("link set Ethernet%d up", i), fmt.Sprintf("link set p%d up", i))
	}
	benchIPBatch(b, ns, lines)
}

// logCommandStats logs redis-server's time per command kind over the
// burst (INFO commandstats since the CONFIG RESETSTAT at its start), per
// object: where redis-server's share of the CPU goes (the bench's HSETs,
// orchagent's reads, the results, the judge's reads). Shown with -v.
func logCommandStats(b *testing.B, e *e2eutil.Switch, n int) {
	info, err := e.Config.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Logf("commandstats: %v", err)
		return
	}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls int64
		var usec float64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				fmt.Sscan(v, &calls)
			case "usec":
				fmt.Sscan(v, &usec)
			}
		}
		b.Logf("redis %-22s %8d calls %8.3f calls/obj %7.3f us/obj", strings.TrimPrefix(name, "cmdstat_"),
			calls, float64(calls)/float64(n), usec/float64(n))
	}
}

// pprofAddr is where orchagent serves pprof when a benchmark profiles it.
const pprofAddr = "127.0.0.1:16061"

// fetch saves orchagent's pprof/metrics page path into file.
func fetch(b *testing.B, path, file string) {
	resp, err := http.Get("http://" + pprofAddr + path)
	if err != nil {
		b.Errorf("%s: %v", path, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(file, body, 0o644); err != nil {
		b.Error(err)
	}
}

// logMetrics logs orchagent's metrics lines containing substr (when it
// serves them, see bulk).
func logMetrics(b *testing.B, substr string) {
	resp, err := http.Get("http://" + pprofAddr + "/metrics")
	if err != nil {
		b.Logf("metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			b.Log(l)
		}
	}
}

// reportBulk reports both rates and their ratio as the rows of make
// bench's table read them: switchyard's rate (sy-UNIT/s), the batch
// tool's (ref-UNIT/s) and sy/ref (≥ 1: switchyard is at least as fast).
func reportBulk(b *testing.B, n int, unit string, orch, ipb time.Duration) {
	b.ReportMetric(float64(n)/orch.Seconds(), "sy-"+unit+"/s")
	b.ReportMetric(float64(n)/ipb.Seconds(), "ref-"+unit+"/s")
	b.ReportMetric(ipb.Seconds()/orch.Seconds(), "sy/ref")
}

// reportCPU reports cpuCost per object in µs (cpu-orch, cpu-redis,
// cpu-tool: scripts/bench.sh prints them as a second table).
func reportCPU(b *testing.B, n int, c cpuCost) {
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(us(c.orch), "cpu-orch-us/obj")
	b.ReportMetric(us(c.redis), "cpu-redis-us/obj")
	b.ReportMetric(us(c.tool), "cpu-tool-us/obj")
}

// BenchmarkBulkStaticRoutes10k: 10,000 STATIC_ROUTE keys in one pipeline →
// all ok, against ip -batch adding the same 10,000 routes.
func BenchmarkBulkStaticRoutes10k(b *testing.B) { benchRoutes(b, 10000, goPipeline) }

// BenchmarkBulkStaticRoutes100k is the same with 100,000 routes.
func BenchmarkBulkStaticRoutes100k(b *testing.B) { benchRoutes(b, 100000, goPipeline) }

func benchRoutes(b *testing.B, n int, w burstWriter) {
	keys := make([]string, n)
	batch := make([]string, n)
	for i := range keys {
		p := fmt.Sprintf("%d.%d.%d.0/24", 20+i/65536, i/256%256, i%256)
		keys[i] = "STATIC_ROUTE|" + p
		batch[i] = "route add " + p + " via 10.0.0.2 dev Ethernet0 proto 201"
	}
	for i := 0; i < b.N; i++ {
		orch, ipb, cpu := bulk(b, w, 1, keys, []any{"nexthop", "10.0.0.2", "ifname", "Ethernet0"}, batch)
		reportBulk(b, n, "routes", orch, ipb)
		reportCPU(b, n, cpu)
	}
}

// BenchmarkBulkInterfaces1k: 1,000 INTERFACE addresses on one port in one
// pipeline → all ok, against ip -batch adding the same addresses.
func BenchmarkBulkInterfaces1k(b *testing.B) { benchAddrs(b, 1000, 1, goPipeline) }

// BenchmarkBulkInterfaces10k is the same with 10,000 addresses. On one
// port the kernel's own work grows with the addresses the port already
// has (each add walks the port's address list and, in fib_sync_up, its
// next hops): both sides spend most of their time there.
func BenchmarkBulkInterfaces10k(b *testing.B) { benchAddrs(b, 10000, 1, goPipeline) }

// BenchmarkBulkInterfaces100k: 100,000 addresses, 100 on each of 1,000
// ports (so neither side meets the per-port cost above), against ip
// -batch adding the same addresses on the same ports.
func BenchmarkBulkInterfaces100k(b *testing.B) { benchAddrs(b, 100000, 1000, goPipeline) }

// benchAddrs: n addresses over ports ports (address i on port i%ports),
// each its own /24. The reference adds them with "brd +": orchagent
// sets the IPv4 broadcast as SONiC's intfmgrd does ("ip address add A
// broadcast B"), and without it ip would make a different address (no
// brd) for less kernel work. (iproute2 6.1 cannot set an address's
// protocol: the reference's lack IFA_PROTO 201.)
func benchAddrs(b *testing.B, n, ports int, w burstWriter) {
	keys := make([]string, n)
	batch := make([]string, n)
	for i := range keys {
		a := fmt.Sprintf("10.%d.%d.1/24", 100+i/250, i%250)
		if n > 38000 { // 10.100.0.0 … 10.255.249.0 hold 39,000
			a = fmt.Sprintf("%d.%d.%d.1/24", 11+i/65536, i/256%256, i%256)
		}
		port := fmt.Sprintf("Ethernet%d", i%ports)
		keys[i] = "INTERFACE|" + port + "|" + a
		batch[i] = "addr add " + a + " brd + dev " + port
	}
	for i := 0; i < b.N; i++ {
		orch, ipb, cpu := bulk(b, w, ports, keys, []any{"NULL", "NULL"}, batch)
		reportBulk(b, n, "addrs", orch, ipb)
		reportCPU(b, n, cpu)
	}
}
