// Command orchagent reconciles CONFIG_DB (PORT, VLAN, VLAN_MEMBER,
// INTERFACE, VLAN_INTERFACE, STATIC_ROUTE, FDB) into the Linux kernel and
// writes each key's outcome to STATE_DB. See docs/orchagent.md.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/switchyard-net/switchyard/internal/daemon"
	"github.com/switchyard-net/switchyard/orchagent"
)

const name = "orchagent"

func main() {
	// Config arrives in bursts over a small live heap: a heap floor keeps
	// the collector out of them (daemon.DefaultHeapMinMiB).
	f := daemon.Flags{HeapFloor: true}
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	f.Register(fs)
	fs.Parse(os.Args[1:])
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
	err = orchagent.Run(ctx, orchagent.Config{RedisURL: f.Redis, NetNS: f.NetNS, Log: log, Registry: reg,
		// systemd Type=notify: ready once the first scan is reconciled.
		Ready: func() { daemon.NotifyReady(log) }})
	if err != nil {
		daemon.Fatal(name, err)
	}
}
