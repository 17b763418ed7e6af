package syncd

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Options configure Run (cmd/syncd's flags).
type Options struct {
	RedisURL         string
	NetNS            string
	CountersInterval time.Duration // 0 = DefaultCountersInterval
	RecvBuffer       int           // netlink socket receive buffer
	Log              *logrus.Entry
	// Registry receives syncd's metrics (nil = none).
	Registry prometheus.Registerer
	// Ready is called once the first complete mirror is written (systemd).
	Ready func()
}

// Run is the daemon: connect to Redis (waiting while it is down, as every
// daemon does), open the namespace's netlink handle and mirror until ctx
// is done.
func Run(ctx context.Context, o Options) error {
	log := o.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	conn, err := redisx.Dial(ctx, o.RedisURL, log)
	if ctx.Err() != nil {
		return nil // stopped while waiting for Redis
	}
	if err != nil {
		return err
	}
	defer conn.Close()
	k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: o.NetNS})
	if err != nil {
		return fmt.Errorf("open netlink (netns %q): %w", o.NetNS, err)
	}
	defer k.Close()
	files, host := openFiles(o.NetNS, log)
	defer func() {
		if files != nil {
			files.Close()
		}
		if host != nil && host != files {
			host.Close()
		}
	}()
	d := New(Config{
		Kernel: k, State: conn.DB(schema.StateDB), Counters: conn.DB(schema.CountersDB),
		Config: conn.DB(schema.ConfigDB), CountersInterval: o.CountersInterval, RecvBuffer: o.RecvBuffer, Log: log,
		Files: files, HostFiles: host,
	})
	registerMetrics(o.Registry, d, k)
	if o.Ready != nil {
		go func() {
			select {
			case <-d.Ready():
				o.Ready()
			case <-ctx.Done():
			}
		}()
	}
	log.WithField("redis", conn.String()).WithField("netns", o.NetNS).Info("starting")
	err = d.Run(ctx)
	s := d.Stats()
	log.WithField("events", s.Events).WithField("round_trips", s.RoundTrips).
		WithField("commands", s.Commands).WithField("resyncs", s.Resyncs).Info("stopped")
	return err
}

// Metrics (docs/metrics.md): the mirror's own figures, and the port
// counters it mirrors, read from the kernel at scrape time.
var (
	descPort = prometheus.NewDesc("switchyard_port_stats_total",
		"Kernel link statistics of CONFIG_DB PORT entries (as COUNTERS:<port>), by port and counter.",
		[]string{"port", "counter"}, nil)
)

type portCollector struct {
	d *Daemon
	k netlinkmgr.Kernel
}

func (c portCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descPort }

func (c portCollector) Collect(ch chan<- prometheus.Metric) {
	links, err := c.k.Links().List()
	if err != nil {
		return
	}
	for _, l := range links {
		if l.Stats == nil || !c.d.view.IsConfigured(l.Name) {
			continue
		}
		s := l.Stats
		for name, v := range map[string]uint64{
			FieldRxPackets: s.RxPackets, FieldTxPackets: s.TxPackets, FieldRxBytes: s.RxBytes, FieldTxBytes: s.TxBytes,
			FieldRxErrors: s.RxErrors, FieldTxErrors: s.TxErrors, FieldRxDropped: s.RxDropped, FieldTxDropped: s.TxDropped,
		} {
			ch <- prometheus.MustNewConstMetric(descPort, prometheus.CounterValue, float64(v), l.Name, name)
		}
	}
}

func registerMetrics(reg prometheus.Registerer, d *Daemon, k netlinkmgr.Kernel) {
	if reg == nil {
		return
	}
	counter := func(name, help string, f func(Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "switchyard", Subsystem: "syncd", Name: name, Help: help},
			func() float64 { return float64(f(d.Stats())) })
	}
	reg.MustRegister(
		counter("events_total", "Kernel events applied to the mirror.", func(s Stats) uint64 { return s.Events }),
		counter("bursts_total", "Flushes that wrote something.", func(s Stats) uint64 { return s.Bursts }),
		counter("redis_round_trips_total", "Redis round trips of the STATE_DB and COUNTERS_DB writers.", func(s Stats) uint64 { return s.RoundTrips }),
		counter("redis_commands_total", "Redis commands of those writers.", func(s Stats) uint64 { return s.Commands }),
		counter("resyncs_total", "Full rewrites (start, Redis restart, emptied DB, netlink overflow, failed write).", func(s Stats) uint64 { return s.Resyncs }),
		portCollector{d: d, k: k},
	)
}

// openFiles opens the sysfs/procfs view of the namespace for the
// PORT_TUNING_TABLE mirror; without it (mounting a namespace's sysfs
// needs CAP_SYS_ADMIN) the mirror is off and says so once.
func openFiles(netns string, log *logrus.Entry) (files, host *nsfs.FS) {
	files, err := nsfs.Open(nsfs.Options{NetNS: netns})
	if err != nil {
		log.WithError(err).Warn("PORT_TUNING_TABLE mirror off: cannot read the namespace's sysfs")
		return nil, nil
	}
	host = files
	if netns != "" {
		host, _ = nsfs.Open(nsfs.Options{})
	}
	return files, host
}
