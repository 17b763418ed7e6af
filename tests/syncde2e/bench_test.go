package syncde2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
)

// flushedRe matches syncd's debug line after each flush.
var flushedRe = regexp.MustCompile(`msg=flushed .*total_commands=(\d+) total_events=(\d+) total_round_trips=(\d+)`)

// syncdTotals are the cumulative figures of syncd's last flush log line.
type syncdTotals struct{ commands, events, roundTrips float64 }

func lastTotals(out string) syncdTotals {
	m := flushedRe.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return syncdTotals{}
	}
	l := m[len(m)-1]
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	return syncdTotals{commands: f(l[1]), events: f(l[2]), roundTrips: f(l[3])}
}

// BenchmarkBurst10k measures, per burst of 10,000 FDB entries or routes
// created at once (bridge/ip -batch) in syncd's namespace: the time from
// the start of the burst until STATE_DB holds every key (converge-ms),
// Redis round trips and commands per kernel event, and syncd's CPU time
// per 1,000 kernel events (relisted objects count as events). syncd runs
// with counters effectively off, so the figures are the mirror's alone.
func BenchmarkBurst10k(b *testing.B) {
	kinds := []struct {
		name  string
		lines func(n int, del bool) []string
		tool  string
		args  []string
	}{
		{"fdb", fdbLines, "bridge", nil},
		{"routes", routeLines, "ip", nil},
		// A 32 KiB socket buffer makes the kernel drop messages: the cost
		// of the overflow path (relist, sweep).
		{"routes-overflow", routeLines, "ip", []string{"--netlink-rcvbuf", "32768"}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			e := newEnv(b)
			e.configurePorts("Ethernet0", "Ethernet4")
			e.start(append([]string{"--log-level", "debug", "--counters-interval", "1h"}, k.args...)...)
			e.WaitField(e.State, "PORT_TABLE|Ethernet0", "oper_status", "up")
			e.WaitField(e.State, "SWITCHYARD_DAEMON|syncd", "pid", strconv.Itoa(e.syncd.Cmd.Process.Pid)) // counted in base
			ctx := context.Background()
			base := e.State.DBSize(ctx).Val()
			add, del := writeBatch(b, k.lines(burstSize, false)), writeBatch(b, k.lines(burstSize, true))
			run := func(file string) {
				e.NS.Run(k.tool, "-n", e.NS.Name, "-batch", file)
			}
			waitSize := func(n int64) {
				deadline := time.Now().Add(e2eutil.Wait)
				for e.State.DBSize(ctx).Val() != n {
					if time.Now().After(deadline) {
						b.Fatalf("STATE_DB holds %d keys, want %d", e.State.DBSize(ctx).Val(), n)
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
			// totalsAfter waits until syncd has logged at least cmds more
			// commands than since (every burst key needs one write), so
			// the figures read are those of the whole burst.
			totalsAfter := func(since syncdTotals, cmds float64) syncdTotals {
				deadline := time.Now().Add(e2eutil.Wait)
				for {
					t := lastTotals(e.syncd.Output())
					if t.commands-since.commands >= cmds || time.Now().After(deadline) {
						return t
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			var conv, lag time.Duration
			var events, rts, cmds, cpu float64
			pid := e.syncd.Cmd.Process.Pid
			c0 := lastTotals(e.syncd.Output())
			b.ResetTimer()
			for range b.N {
				t0, cpu0 := time.Now(), e2eutil.ProcCPU(b, pid).Seconds()
				run(add)
				t1 := time.Now()
				waitSize(base + burstSize)
				t2 := time.Now()
				b.StopTimer()
				c1 := totalsAfter(c0, burstSize)
				cpu1 := e2eutil.ProcCPU(b, pid).Seconds()
				conv += t2.Sub(t0)
				lag += t2.Sub(t1)
				events += c1.events - c0.events
				rts += c1.roundTrips - c0.roundTrips
				cmds += c1.commands - c0.commands
				cpu += cpu1 - cpu0
				run(del)
				waitSize(base)
				c0 = totalsAfter(c1, burstSize)
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(float64(conv.Milliseconds())/n, "converge-ms")
			b.ReportMetric(float64(lag.Milliseconds())/n, "lag-ms")
			b.ReportMetric(events/n, "events/burst")
			if events > 0 {
				b.ReportMetric(rts/events, "roundtrips/event")
				b.ReportMetric(cmds/events, "cmds/event")
				b.ReportMetric(cpu*1000/(events/1000), "cpu-ms/1k-events")
			}
			b.Logf("overflows: %d", strings.Count(e.syncd.Output(), "overflowed"))
		})
	}
}
