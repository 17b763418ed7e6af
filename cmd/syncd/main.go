// Command syncd mirrors the kernel of one network namespace into Redis:
// STATE_DB PORT_TABLE, VLAN_TABLE, FDB_TABLE, NEIGH_TABLE, ROUTE_TABLE and
// COUNTERS_DB COUNTERS:<port>. See docs/syncd.md.
//
//	syncd [--redis URL] [--netns NAME] [--log-level L] [--metrics-addr A] [--counters-interval 1s]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/switchyard-net/switchyard/internal/daemon"
	"github.com/switchyard-net/switchyard/syncd"
)

const name = "syncd"

func main() {
	var f daemon.Flags
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	f.Register(fs)
	interval := fs.Duration("counters-interval", syncd.DefaultCountersInterval,
		"how often COUNTERS:<port> is refreshed from the kernel's link statistics")
	rcvbuf := fs.Int("netlink-rcvbuf", 32<<20,
		"netlink socket receive buffer in bytes (overflow is survived by a relist, but costs one)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\nMirror the kernel into Redis STATE_DB and COUNTERS_DB.\n\n", name)
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		daemon.Fatal(name, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *interval < 10*time.Millisecond {
		daemon.Fatal(name, fmt.Errorf("--counters-interval %v: want at least 10ms", *interval))
	}
	log, err := f.Logger(name)
	if err != nil {
		daemon.Fatal(name, err)
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	go daemon.ReturnMemory(ctx, 5*time.Second)
	reg, err := f.Metrics(ctx, name)
	if err != nil {
		daemon.Fatal(name, err)
	}
	err = syncd.Run(ctx, syncd.Options{
		RedisURL: f.Redis, NetNS: f.NetNS, CountersInterval: *interval, RecvBuffer: *rcvbuf, Log: log, Registry: reg,
		// systemd Type=notify: ready once the first mirror is complete.
		Ready: func() { daemon.NotifyReady(log) },
	})
	if err != nil {
		daemon.Fatal(name, err)
	}
}
