package enginee2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

var daemons = []string{"orchagent", "syncd", "impaird"}

// startAll starts every daemon on s with extra flags.
func startAll(s *e2eutil.Switch, extra ...string) {
	for _, d := range daemons {
		s.Start(d, extra...)
	}
}

// Redis down at start: every daemon waits, logging the same line, and
// works once Redis is up.
func TestEveryDaemonWaitsForRedis(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	s.NS.Veth("Ethernet0", peer, "eth0")
	s.Redis.Stop()
	startAll(s)
	for _, d := range daemons {
		p := s.Procs[d]
		e2eutil.Eventually(t, e2eutil.Wait, d+" logs that it waits for redis", func() (bool, string) {
			out := p.Output()
			return strings.Contains(out, `msg="waiting for redis"`) && strings.Contains(out, `redis="unix://`), out
		})
		if p.Exited() {
			t.Fatalf("%s exited while Redis was down:\n%s", d, p.Output())
		}
	}
	s.Redis.Restart()
	s.HSet("PORT|Ethernet0", "mtu", "1400")
	s.HSet("IMPAIRMENT|Ethernet0", "loss", "1")
	s.WaitOK("PORT|Ethernet0", "IMPAIRMENT|Ethernet0")
	s.WaitField(s.State, "PORT_TABLE|Ethernet0", "mtu", "1400") // syncd mirrors Ethernet0
}

// A wrong password: every daemon exits at once with the same message, and
// none prints the password.
func TestEveryDaemonRefusesAWrongPassword(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	s.MountBPFFS()
	srv := testredis.Start(t, "--requirepass", "right")
	url := strings.Replace(srv.TCPURL(), "redis://", "redis://:SECRET@", 1)
	for _, d := range daemons {
		p := s.StartWith(d, url)
		e2eutil.Eventually(t, e2eutil.Wait, d+" exits", func() (bool, string) { return p.Exited(), p.Output() })
		out := p.Output()
		if !strings.Contains(out, "authentication failed") || !strings.Contains(out, "check the user and password in --redis") {
			t.Errorf("%s: want the authentication message, got:\n%s", d, out)
		}
		if strings.Contains(out, "SECRET") {
			t.Errorf("%s printed the password:\n%s", d, out)
		}
	}
}

// FLUSHDB of STATE_DB: every daemon's results and mirror are back within
// 2 s.
func TestEveryDaemonRepairsFlushedState(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	s.NS.Veth("Ethernet0", peer, "eth0")
	startAll(s)
	ctx := context.Background()
	s.HSet("PORT|Ethernet0", "mtu", "1400")
	s.HSet("IMPAIRMENT|Ethernet0", "loss", "1")
	s.HSet("STATIC_ROUTE|10.50.0.0/16", "blackhole", "true")
	s.HSet("STATIC_ROUTE|10.51.0.0/16", "blackhole", "maybe")
	s.WaitOK("PORT|Ethernet0", "IMPAIRMENT|Ethernet0", "STATIC_ROUTE|10.50.0.0/16")
	s.WaitState("STATIC_ROUTE|10.51.0.0/16", "error", "blackhole")
	want := []string{"PORT_TABLE|Ethernet0", "IMPAIRMENT_TABLE|Ethernet0", "STATIC_ROUTE_TABLE|10.50.0.0/16",
		"STATIC_ROUTE_TABLE|10.51.0.0/16", "ROUTE_TABLE|10.50.0.0/16"}
	have := func() (bool, string) {
		for _, k := range want {
			if n, _ := s.State.Exists(ctx, k).Result(); n == 0 {
				return false, k + " missing"
			}
		}
		h, _ := s.State.HGetAll(ctx, "PORT_TABLE|Ethernet0").Result()
		if h["state"] != "ok" || h["mtu"] != "1400" {
			return false, fmt.Sprintf("PORT_TABLE|Ethernet0 %v: want orchagent's state and syncd's mtu", h)
		}
		return true, ""
	}
	e2eutil.Eventually(t, e2eutil.Wait, "every result and mirror key", have)
	if err := s.State.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	e2eutil.Eventually(t, e2eutil.Wait, "results and mirror back after FLUSHDB", have)
	if took := time.Since(flushed); took > 2*time.Second {
		t.Fatalf("back after %v: want within 2s", took)
	}
	t.Logf("STATE_DB repaired %v after FLUSHDB", time.Since(flushed).Round(time.Millisecond))
}

// --metrics-addr: each daemon serves its metrics.
func TestMetricsEndpoints(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	peer := testns.New(t)
	s.NS.Veth("Ethernet0", peer, "eth0")
	addrs := map[string]string{}
	for _, d := range daemons {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[d] = l.Addr().String()
		l.Close()
		s.Start(d, "--metrics-addr", addrs[d])
	}
	s.HSet("PORT|Ethernet0", "mtu", "1400")
	s.HSet("IMPAIRMENT|Ethernet0", "loss", "1")
	s.WaitOK("PORT|Ethernet0", "IMPAIRMENT|Ethernet0")
	want := map[string][]string{
		"orchagent": {"switchyard_engine_reconciles_total{outcome=\"ok\",table=\"PORT\"}", "switchyard_engine_queue_depth",
			"switchyard_engine_state_write_batches_total", "switchyard_netlink_resyncs_total", "process_resident_memory_bytes"},
		"impaird": {"switchyard_engine_reconciles_total{outcome=\"ok\",table=\"item\"}",
			"switchyard_impairment_packets_total{outcome=\"rx\",port=\"Ethernet0\",rule=\"\"}"},
		"syncd": {"switchyard_syncd_events_total", "switchyard_port_stats_total{counter=\"rx_packets\",port=\"Ethernet0\"}"},
	}
	for d, names := range want {
		e2eutil.Eventually(t, e2eutil.Wait, d+" metrics", func() (bool, string) {
			resp, err := http.Get("http://" + addrs[d] + "/metrics")
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			for _, n := range names {
				if !strings.Contains(string(b), n) {
					return false, "no " + n
				}
			}
			return true, ""
		})
	}
	_ = schema.ConfigDB
}

// No daemon prints the password of a --redis URL it refuses or cannot use.
func TestNoDaemonPrintsThePassword(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	s.MountBPFFS()
	port := strings.TrimPrefix(s.Redis.TCPURL(), "redis://127.0.0.1:")
	for _, url := range []string{
		"redis://u:SECRET@127.0.0.1:" + port + "/4",
		"redis://u:SECRET@127.0.0.1:" + port + "?db=4",
		"redis://u:SECRET@127.0.0.1:99999",
		"redis://u:SECRET@[::1",
		"unix:///nonexistent/redis.sock?password=SECRET",
	} {
		for _, d := range daemons {
			p := s.StartWith(d, url)
			// Refused at once, or waiting for a Redis that is not there:
			// either way, give it a moment to print.
			time.Sleep(300 * time.Millisecond)
			if out := p.Output(); strings.Contains(out, "SECRET") {
				t.Errorf("%s --redis %s printed the password:\n%s", d, url, out)
			}
			p.Kill()
		}
	}
}

// A working route's hash replaced by a string in one MULTI: state error
// naming the type, the route stays (the last good config); DEL removes it.
func TestWorkingKeyReplacedByAString(t *testing.T) {
	s := e2eutil.NewSwitch(t)
	s.Start("orchagent")
	ctx := context.Background()
	s.HSet("STATIC_ROUTE|10.60.0.0/24", "blackhole", "true")
	s.WaitOK("STATIC_ROUTE|10.60.0.0/24")
	pipe := s.Config.TxPipeline()
	pipe.Del(ctx, "STATIC_ROUTE|10.60.0.0/24")
	pipe.Set(ctx, "STATIC_ROUTE|10.60.0.0/24", "x", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s.WaitState("STATIC_ROUTE|10.60.0.0/24", "error", "is a Redis string, not a hash")
	if got := ourRoutes(s.NS); len(got) != 1 || got[0] != "10.60.0.0/24" {
		t.Fatalf("routes %v: want the last good 10.60.0.0/24 kept", got)
	}
	s.Del("STATIC_ROUTE|10.60.0.0/24")
	s.WaitGone("STATIC_ROUTE|10.60.0.0/24")
	e2eutil.Eventually(t, e2eutil.Wait, "route removed after DEL", func() (bool, string) {
		got := ourRoutes(s.NS)
		return len(got) == 0, fmt.Sprint(got)
	})
}
