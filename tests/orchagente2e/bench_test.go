package orchagente2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// Benchmarks of the daemon end to end (recorded in docs/orchagent.md):
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

// bulk writes keys (each with fields) in one pipeline and measures until
// every result is ok; then the same kernel objects are added by
// "ip -batch" in a fresh namespace with the same port. Returns both
// durations.
func bulk(b *testing.B, keys []string, fields []any, batch []string) (orch, ipb time.Duration) {
	b.Helper()
	ctx := context.Background()
	e := e2eutil.NewSwitch(b)
	peer := testns.New(b)
	e.NS.Veth("Ethernet0", peer, "eth1")
	e.Start("orchagent", "--log-level", "warn")
	e.SetInitialized()
	e.HSet("INTERFACE|Ethernet0|10.0.0.1/24")
	e.WaitOK("INTERFACE|Ethernet0|10.0.0.1/24")

	table, _, _ := strings.Cut(keys[0], "|")
	ps := e.State.PSubscribe(ctx, "__keyspace@6__:"+table+"_TABLE|*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		b.Fatal(err)
	}
	ch := ps.Channel()
	pipe := e.Config.Pipeline()
	for _, k := range keys {
		pipe.HSet(ctx, k, fields...)
	}
	t0 := time.Now()
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.After(120 * time.Second)
	for len(seen) < len(keys) {
		select {
		case m := <-ch:
			seen[m.Channel] = true
		case <-deadline:
			b.Fatalf("%d of %d results written after 120s", len(seen), len(keys))
		}
	}
	for {
		p := e.State.Pipeline()
		for _, k := range keys {
			p.HGet(ctx, e2eutil.ResultKey(k), "state")
		}
		cmds, _ := p.Exec(ctx)
		ok := 0
		for _, c := range cmds {
			if v, _ := c.(interface{ Val() string }); v != nil && v.Val() == "ok" {
				ok++
			}
		}
		if ok == len(keys) {
			break
		}
		if time.Since(t0) > 120*time.Second {
			b.Fatalf("%d of %d ok after 120s", ok, len(keys))
		}
		time.Sleep(5 * time.Millisecond)
	}
	orch = time.Since(t0)
	e.Procs["orchagent"].Stop()

	ns := testns.New(b)
	ns.Veth("Ethernet0", nil, "p0")
	ns.IP("addr", "add", "10.0.0.1/24", "dev", "Ethernet0")
	f := filepath.Join(b.TempDir(), "batch")
	if err := os.WriteFile(f, []byte(strings.Join(batch, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	if out, err := exec.Command("ip", "-n", ns.Name, "-batch", f).CombinedOutput(); err != nil {
		b.Fatalf("ip -batch: %v: %s", err, out)
	}
	return orch, time.Since(t1)
}

func reportBulk(b *testing.B, n int, unit string, orch, ipb time.Duration) {
	b.ReportMetric(float64(n)/orch.Seconds(), "orchagent-"+unit+"/s")
	b.ReportMetric(float64(n)/ipb.Seconds(), "ip-batch-"+unit+"/s")
	b.ReportMetric(orch.Seconds()/ipb.Seconds(), "orch/ip-batch")
}

// BenchmarkBulkStaticRoutes10k: 10,000 STATIC_ROUTE keys in one pipeline →
// all ok, against ip -batch adding the same 10,000 routes.
func BenchmarkBulkStaticRoutes10k(b *testing.B) {
	const n = 10000
	keys := make([]string, n)
	batch := make([]string, n)
	for i := range keys {
		p := fmt.Sprintf("20.%d.%d.0/24", i/256, i%256)
		keys[i] = "STATIC_ROUTE|" + p
		batch[i] = "route add " + p + " via 10.0.0.2 dev Ethernet0 proto 201"
	}
	for i := 0; i < b.N; i++ {
		orch, ipb := bulk(b, keys, []any{"nexthop", "10.0.0.2", "ifname", "Ethernet0"}, batch)
		reportBulk(b, n, "routes", orch, ipb)
	}
}

// BenchmarkBulkInterfaces1k: 1,000 INTERFACE addresses on one port in one
// pipeline → all ok, against ip -batch adding the same addresses.
func BenchmarkBulkInterfaces1k(b *testing.B) {
	const n = 1000
	keys := make([]string, n)
	batch := make([]string, n)
	for i := range keys {
		a := fmt.Sprintf("10.%d.%d.1/24", 100+i/250, i%250)
		keys[i] = "INTERFACE|Ethernet0|" + a
		batch[i] = "addr add " + a + " dev Ethernet0"
	}
	for i := 0; i < b.N; i++ {
		orch, ipb := bulk(b, keys, []any{"NULL", "NULL"}, batch)
		reportBulk(b, n, "addrs", orch, ipb)
	}
}
