// Command trafficd sends CONFIG_DB TRAFFIC_GEN streams (background
// traffic) out of switch ports and reports results and counters. See
// docs/trafficd.md.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/switchyard-net/switchyard/internal/daemon"
	"github.com/switchyard-net/switchyard/trafficd"
)

func main() {
	var f daemon.Flags
	fs := flag.NewFlagSet("trafficd", flag.ExitOnError)
	f.Register(fs)
	interval := fs.Duration("counters-interval", time.Second, "how often TRAFFIC_GEN_COUNTERS are written")
	fs.Parse(os.Args[1:])
	log, err := f.Logger("trafficd")
	if err != nil {
		daemon.Fatal("trafficd", err)
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	go daemon.ReturnMemory(ctx, 5*time.Second)
	reg, err := f.Metrics(ctx, "trafficd")
	if err != nil {
		daemon.Fatal("trafficd", err)
	}
	err = trafficd.Run(ctx, trafficd.Config{
		RedisURL: f.Redis, NetNS: f.NetNS, Log: log, Registry: reg, CountersInterval: *interval,
		// systemd Type=notify: ready once the first scan is reconciled.
		Ready: func() { daemon.NotifyReady(log) },
	})
	if err != nil {
		daemon.Fatal("trafficd", err)
	}
}
