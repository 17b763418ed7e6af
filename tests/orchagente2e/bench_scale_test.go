package orchagente2e

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// BenchmarkScale100kRoutes: 100,000 STATIC_ROUTE keys (make bench only).
// Reports, for orchagent and syncd, resident memory per route above idle
// once all are applied and mirrored, and how much of the idle figure
// comes back once they are deleted; for orchagent a restart over the
// applied 100k: seconds until every result is back and the netlink changes
// it made (want 0).
//
//	go test -run '^$' -bench Scale100k -benchtime 1x ./tests/orchagente2e
func BenchmarkScale100kRoutes(b *testing.B) {
	const n = 100000
	for i := 0; i < b.N; i++ {
		e := e2eutil.NewSwitch(b)
		peer := testns.New(b)
		e.NS.Veth("Ethernet0", peer, "eth1")
		e.NS.IP("link", "set", "Ethernet0", "up")
		e.NS.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
		ctx := context.Background()
		e.Config.Set(ctx, "CONFIG_DB_INITIALIZED", "1", 0)
		e.HSet("PORT|Ethernet0", "admin_status", "up") // syncd mirrors routes of configured ports' namespace
		// Free ports: other engineers' benchmarks run on the same host.
		orchPort, syncdPort := strconv.Itoa(testredis.FreePort(b)), strconv.Itoa(testredis.FreePort(b))
		prof := []string{}
		if os.Getenv("SWITCHYARD_HEAP_DIR") != "" {
			// Off by default (internal/daemon); SWITCHYARD_MEM_PROFILE_RATE=4096
			// samples finely enough to attribute a few MB.
			prof = []string{"--mem-profile-rate", cmp.Or(os.Getenv("SWITCHYARD_MEM_PROFILE_RATE"), "524288")}
			if err := os.MkdirAll(os.Getenv("SWITCHYARD_HEAP_DIR"), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		// Runtime flags to compare (e.g. "--heap-headroom-mib 8"), both daemons.
		prof = append(prof, strings.Fields(os.Getenv("SWITCHYARD_BENCH_DAEMON_ARGS"))...)
		orch := e.Start("orchagent", append([]string{"--log-level", "info", "--metrics-addr", "127.0.0.1:" + orchPort}, prof...)...)
		syncd := e.Start("syncd", append([]string{"--log-level", "info", "--metrics-addr", "127.0.0.1:" + syncdPort}, prof...)...)
		e.WaitOK("PORT|Ethernet0")
		time.Sleep(6 * time.Second) // one ReturnMemory interval: idle figures
		idle := map[string]int{"orchagent": orch.RSS(), "syncd": syncd.RSS()}
		idleAnon := map[string]int{"orchagent": orch.AnonRSS(), "syncd": syncd.AnonRSS()}
		smaps(b, orch.Cmd.Process.Pid, "orchagent-idle")
		memStats(b, orchPort, "orchagent-idle")
		heapProfile(b, orchPort, "orchagent-idle")
		memStats(b, syncdPort, "syncd-idle")
		heapProfile(b, syncdPort, "syncd-idle")

		keys := make([]string, n)
		for j := range keys {
			keys[j] = fmt.Sprintf("STATIC_ROUTE|%d.%d.%d.0/24", 30+j/65536, j/256%256, j%256)
		}
		gc0 := e2eutil.Metric(b, "127.0.0.1:"+orchPort, "go_gc_duration_seconds_count")
		cpu0 := map[string]time.Duration{"orchagent": e2eutil.ProcCPU(b, orch.Cmd.Process.Pid), "syncd": e2eutil.ProcCPU(b, syncd.Cmd.Process.Pid)}
		t0 := time.Now()
		for j := 0; j < n; j += 5000 {
			p := e.Config.Pipeline()
			for _, k := range keys[j:min(j+5000, n)] {
				p.HSet(ctx, k, "nexthop", "10.0.0.2", "ifname", "Ethernet0")
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		waitCount(b, e, "STATIC_ROUTE_TABLE|*", n, "ok")
		applied := time.Since(t0)
		waitCount(b, e, "ROUTE_TABLE|3[01].*", n, "")
		mirrored := time.Since(t0)
		loadGCs := e2eutil.Metric(b, "127.0.0.1:"+orchPort, "go_gc_duration_seconds_count") - gc0
		cpu := map[string]time.Duration{"orchagent": e2eutil.ProcCPU(b, orch.Cmd.Process.Pid) - cpu0["orchagent"],
			"syncd": e2eutil.ProcCPU(b, syncd.Cmd.Process.Pid) - cpu0["syncd"]}
		time.Sleep(6 * time.Second)
		full := map[string]int{"orchagent": orch.RSS(), "syncd": syncd.RSS()}
		fullAnon := map[string]int{"orchagent": orch.AnonRSS(), "syncd": syncd.AnonRSS()}
		heapProfile(b, orchPort, "orchagent-full")
		heapProfile(b, syncdPort, "syncd-full")
		memStats(b, orchPort, "orchagent-full")
		memStats(b, syncdPort, "syncd-full")

		// Restart orchagent over the applied kernel.
		orch.Kill()
		saveOutput(b, orch, "orchagent-first")
		settled(b, e.NS)
		mon := startMonitor(b, e.NS)
		mon.ready(b, e.NS)
		if keys, _ := e.State.Keys(ctx, "STATIC_ROUTE_TABLE|*").Result(); len(keys) > 0 {
			for j := 0; j < len(keys); j += 10000 {
				e.State.Del(ctx, keys[j:min(j+10000, len(keys))]...)
			}
		}
		t1 := time.Now()
		orchPort = strconv.Itoa(testredis.FreePort(b))
		orch = e.Start("orchagent", append([]string{"--log-level", "info", "--metrics-addr", "127.0.0.1:" + orchPort}, prof...)...)
		if os.Getenv("SWITCHYARD_HEAP_DIR") != "" {
			// Half the results back: what the restart holds near its peak
			// (the profile's collection moves the restart's pacing a little).
			// (STATE_DB holds syncd's 100k ROUTE_TABLE keys too: count a
			// sample of the results.)
			var sample []string
			for j := 0; j < n; j += n / 100 {
				sample = append(sample, "STATIC_ROUTE_TABLE"+strings.TrimPrefix(keys[j], "STATIC_ROUTE"))
			}
			for e.State.Exists(ctx, sample...).Val() < int64(len(sample)/2) && time.Since(t1) < time.Minute {
				time.Sleep(20 * time.Millisecond)
			}
			heapProfile(b, orchPort, "orchagent-restarting")
		}
		waitCount(b, e, "STATIC_ROUTE_TABLE|*", n, "ok")
		restart := time.Since(t1)
		restartCPU := e2eutil.ProcCPU(b, orch.Cmd.Process.Pid) // all of the new process's
		// heap_sys only grows (released pages stay counted): the restart's peak.
		restartHeap := e2eutil.Metric(b, "127.0.0.1:"+orchPort, "go_memstats_heap_sys_bytes")
		restartGCs := e2eutil.Metric(b, "127.0.0.1:"+orchPort, "go_gc_duration_seconds_count")
		memStats(b, orchPort, "orchagent-restarted")
		heapProfile(b, orchPort, "orchagent-restarted")
		seen := mon.seen()
		writes := len(seen)
		mon.stop()
		if writes > 0 { // the restart goal is none: say what they were
			b.Logf("restart: ip monitor saw %d changes, first ones:\n%s", writes, strings.Join(seen[:min(len(seen), 20)], "\n"))
		}

		// Delete them all: memory comes back.
		for j := 0; j < n; j += 10000 {
			e.Config.Del(ctx, keys[j:min(j+10000, n)]...)
		}
		if os.Getenv("SWITCHYARD_HEAP_DIR") != "" {
			time.Sleep(time.Second) // mid-delete: what the delete burst holds
			heapProfile(b, orchPort, "orchagent-deleting")
		}
		waitCount(b, e, "STATIC_ROUTE_TABLE|*", 0, "")
		waitCount(b, e, "ROUTE_TABLE|3[01].*", 0, "")
		time.Sleep(11 * time.Second) // two ReturnMemory intervals
		after := map[string]int{"orchagent": orch.RSS(), "syncd": syncd.RSS()}
		afterAnon := map[string]int{"orchagent": orch.AnonRSS(), "syncd": syncd.AnonRSS()}
		smaps(b, orch.Cmd.Process.Pid, "orchagent-after")
		smaps(b, syncd.Cmd.Process.Pid, "syncd-after")
		// heap_sys only grows: the restarted process's peak, the restart's
		// or the delete's, whichever was larger (what sizes the runtime
		// metadata it keeps: docs/performance.md). Read after smaps: the
		// scrape allocates.
		peakHeap := e2eutil.Metric(b, "127.0.0.1:"+orchPort, "go_memstats_heap_sys_bytes")
		memStats(b, orchPort, "orchagent-after")
		heapProfile(b, orchPort, "orchagent-after")
		saveOutput(b, orch, "orchagent-restarted")
		heapProfile(b, syncdPort, "syncd-after")
		memStats(b, syncdPort, "syncd-after")

		b.ReportMetric(float64(n)/applied.Seconds(), "routes/s-applied")
		b.ReportMetric(float64(n)/mirrored.Seconds(), "routes/s-mirrored")
		b.ReportMetric(restart.Seconds(), "restart-s")
		// Collections: what a lower heap goal costs (load = the first
		// process's 100k; restart = the new process until all results).
		b.ReportMetric(loadGCs, "orchagent-gcs-load")
		b.ReportMetric(restartGCs, "restart-gcs")
		b.ReportMetric(float64(writes), "restart-netlink-changes")
		b.ReportMetric(restartHeap/(1<<20), "restart-heap-sys-MB")
		b.ReportMetric(restartCPU.Seconds(), "restart-cpu-s")
		b.ReportMetric(peakHeap/(1<<20), "after-heap-sys-MB")
		for _, d := range []string{"orchagent", "syncd"} {
			b.ReportMetric(float64(full[d]-idle[d])*1024/n, d+"-B/route")
			b.ReportMetric(float64(after[d])/float64(idle[d]), d+"-after/idle")
			b.ReportMetric(float64(afterAnon[d])/float64(idleAnon[d]), d+"-anon-after/idle")
			b.ReportMetric(cpu[d].Seconds()*1e6/n, d+"-cpu-us/route")
		}
		b.Logf("anonymous RSS KiB idle/full/after-delete: orchagent %d/%d/%d, syncd %d/%d/%d",
			idleAnon["orchagent"], fullAnon["orchagent"], afterAnon["orchagent"], idleAnon["syncd"], fullAnon["syncd"], afterAnon["syncd"])
		b.Logf("RSS KiB idle/full/after-delete: orchagent %d/%d/%d (restarted process after), syncd %d/%d/%d",
			idle["orchagent"], full["orchagent"], after["orchagent"], idle["syncd"], full["syncd"], after["syncd"])
	}
}

// waitCount polls until pattern matches want keys (with field state ==
// state when state is not ""), up to 3 minutes.
func waitCount(b *testing.B, e *e2eutil.Switch, pattern string, want int, state string) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		keys := e2eutil.Keys(e.State, pattern)
		got := len(keys)
		if state != "" && got == want {
			got = 0
			for j := 0; j < len(keys); j += 10000 {
				p := e.State.Pipeline()
				for _, k := range keys[j:min(j+10000, len(keys))] {
					p.HGet(ctx, k, "state")
				}
				cmds, _ := p.Exec(ctx)
				for _, c := range cmds {
					if v, _ := c.(interface{ Val() string }); v != nil && v.Val() == state {
						got++
					}
				}
			}
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d after 3 minutes", pattern, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// memStats saves the daemon's Go memory figures (go_memstats_* of its
// /metrics) as $SWITCHYARD_HEAP_DIR/name.metrics when that variable is set.
func memStats(b *testing.B, port, name string) {
	dir := os.Getenv("SWITCHYARD_HEAP_DIR")
	if dir == "" {
		return
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
	if err != nil {
		b.Logf("metrics %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var keep []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "go_memstats_") || strings.HasPrefix(l, "go_gc_") {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name+".metrics"), []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
}

// heapProfile saves the daemon's heap profile as $SWITCHYARD_HEAP_DIR/name.pb.gz
// when that variable is set (go tool pprof -sample_index=inuse_space ...).
func heapProfile(b *testing.B, port, name string) {
	dir := os.Getenv("SWITCHYARD_HEAP_DIR")
	if dir == "" {
		return
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/debug/pprof/heap?gc=1")
	if err != nil {
		b.Logf("heap profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Fatal(err)
	}
}

// smaps saves the daemon's /proc/PID/smaps as $SWITCHYARD_HEAP_DIR/name.smaps
// when that variable is set: which mappings hold its anonymous pages (the
// Go heap's arenas at 0xc000000000, the runtime's own mappings elsewhere).
func smaps(b *testing.B, pid int, name string) {
	dir := os.Getenv("SWITCHYARD_HEAP_DIR")
	if dir == "" {
		return
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		b.Fatalf("smaps %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".smaps"), raw, 0o644); err != nil {
		b.Fatal(err)
	}
}

// saveOutput saves a daemon's output as $SWITCHYARD_HEAP_DIR/name.log when
// that variable is set (with GODEBUG=gctrace=1: the heap at each collection).
func saveOutput(b *testing.B, p *e2eutil.Proc, name string) {
	dir := os.Getenv("SWITCHYARD_HEAP_DIR")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".log"), []byte(p.Output()), 0o644); err != nil {
		b.Fatal(err)
	}
}
