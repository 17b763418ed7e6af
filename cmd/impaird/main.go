// Command impaird applies CONFIG_DB IMPAIRMENT and IMPAIRMENT_FLOW entries
// as XDP programs on switch ports (loss, Gilbert-Elliott bursts, periodic
// drops, policing, corruption) and reports results and counters. See
// docs/impaird.md.
package main

import (
	"flag"
	"os"
	"time"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/impaird"
	"github.com/switchyard-net/switchyard/internal/daemon"
)

func main() {
	var f daemon.Flags
	fs := flag.NewFlagSet("impaird", flag.ExitOnError)
	f.Register(fs)
	bpffs := fs.String("bpffs", impaird.DefaultBPFFS, "bpffs directory for the pinned links and maps (one subdirectory per port)")
	mode := fs.String("xdp-mode", string(bpf.ModeAuto), "XDP attach mode: auto (native, else generic), native or generic")
	fs.Parse(os.Args[1:])
	log, err := f.Logger("impaird")
	if err != nil {
		daemon.Fatal("impaird", err)
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	go daemon.ReturnMemory(ctx, 5*time.Second)
	reg, err := f.Metrics(ctx, "impaird")
	if err != nil {
		daemon.Fatal("impaird", err)
	}
	err = impaird.Run(ctx, impaird.Config{
		RedisURL: f.Redis, NetNS: f.NetNS, BPFFS: *bpffs, Mode: bpf.XDPMode(*mode), Log: log, Registry: reg,
		// systemd Type=notify: ready once the first scan is reconciled.
		Ready: func() { daemon.NotifyReady(log) },
	})
	if err != nil {
		daemon.Fatal("impaird", err)
	}
}
