// Package daemon holds the few lines every switchyard daemon main shares:
// the common flags (--redis, --netns, --log-level, --metrics-addr, and the
// Go runtime's --mem-profile-rate, --gc-percent, --heap-headroom-mib,
// --heap-min-mib), logrus setup, the metrics endpoint and a context cancelled on
// SIGINT/SIGTERM.
package daemon

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/metrics"
)

// DefaultRedisURL is where daemons look for Redis when --redis is not given.
const DefaultRedisURL = "redis://127.0.0.1:6379"

// Flags are the flags every daemon takes.
type Flags struct {
	Redis       string
	NetNS       string
	LogLevel    string
	MetricsAddr string
	// HeapFloor, set before Register, makes --heap-min-mib default to
	// DefaultHeapMinMiB instead of 0 (off): for a daemon whose work comes
	// in bursts of CONFIG_DB keys over a small live heap (orchagent). No
	// syncd row gains from it, and syncd's RSS after a 100k-route delete
	// read 1.19-1.20× its idle with it against 1.11-1.19× without
	// (docs/performance.md, gcfloor).
	HeapFloor bool
	runtime   runtimeFlags
}

// Register adds the common flags to fs and applies the Go runtime
// settings' defaults at once (memory profiling off, DefaultGCPercent, the
// heap floor when HeapFloor is set);
// their flags change them when fs is parsed.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.runtime.register(fs, f.HeapFloor)
	fs.StringVar(&f.Redis, "redis", DefaultRedisURL,
		"Redis URL: redis://[user:pass@]host:port or unix:///path/redis.sock")
	fs.StringVar(&f.NetNS, "netns", "", "named network namespace (ip netns add NAME); empty = current")
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9101); empty = off")
}

// Metrics returns the daemon's metrics registry and starts serving it at
// --metrics-addr until ctx is done (nothing is served when it is empty;
// the registry is still returned, so callers need no nil checks).
func (f *Flags) Metrics(ctx context.Context, name string) (*prometheus.Registry, error) {
	reg := metrics.NewRegistry(name)
	if _, err := metrics.Serve(ctx, f.MetricsAddr, reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// Logger returns a structured logger for daemon name at the flag's level.
func (f *Flags) Logger(name string) (*logrus.Entry, error) {
	lvl, err := logrus.ParseLevel(f.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.LogLevel)
	}
	l := logrus.New()
	l.SetLevel(lvl)
	l.SetOutput(os.Stderr)
	l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, DisableColors: true})
	return l.WithField("daemon", name), nil
}

// SignalContext returns a context cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Fatal prints err prefixed with the daemon name and exits 1.
func Fatal(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
