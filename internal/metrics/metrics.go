// Package metrics serves a daemon's Prometheus metrics (--metrics-addr):
// one registry per daemon with the Go runtime and process collectors, and
// an HTTP server at /metrics that lives as long as the daemon. Packages
// register their own metrics on the registry; this package knows none of
// them. See docs/metrics.md for every metric name.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every switchyard metric: switchyard_<subsystem>_<name>.
const Namespace = "switchyard"

// NewRegistry returns a registry with the Go runtime and process
// collectors and the constant label daemon=<name> on every metric. Beside
// the Go collector's default (go_memstats_*, go_gc_duration_seconds…) it
// exports the runtime's /gc/heap/live:bytes as go_gc_heap_live_bytes: the
// heap the last collection found reachable, the leak check's figure (RSS
// and heap_alloc also hold garbage and the runtime's own sizing).
func NewRegistry(daemon string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	goc := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}))
	reg.MustRegister(goc, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Serve serves reg at http://addr/metrics (and Go's profiles at
// /debug/pprof/) until ctx is done. An empty
// addr serves nothing and returns nil at once. The listener is opened
// before Serve returns an error, so a busy port fails the daemon's start.
func Serve(ctx context.Context, addr string, reg *prometheus.Registry) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Go's profiles, for "why is the RSS this high" on a live switch.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	// The execution trace: when each goroutine ran, waited for a CPU, sat
	// in a system call or blocked (go tool trace FILE), for "where does a
	// burst wait".
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener closed under us: the daemon goes on without metrics
		}
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return stop, nil
}
