package impaird

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/engine"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/workqueue"
	"github.com/switchyard-net/switchyard/schema"
)

// Config configures the daemon (cmd/impaird's flags).
type Config struct {
	RedisURL string
	NetNS    string
	BPFFS    string      // pin directory; default DefaultBPFFS
	Mode     bpf.XDPMode // auto, native or generic
	Log      *logrus.Entry
	// CountersInterval is how often COUNTERS_DB is written (default 1s).
	CountersInterval time.Duration
	// Registry receives the daemon's metrics (nil = none).
	Registry prometheus.Registerer
	// Ready is called once the first scan is reconciled (systemd).
	Ready func()
}

// STATE_DB fields impaird owns besides state and reason.
const (
	FieldXDPMode = "xdp_mode"
	FieldProgID  = "prog_id"
)

// Counter field names of IMPAIRMENT_COUNTERS.
var counterFields = []string{"rx_packets", "rx_bytes", "passed", "dropped_loss", "dropped_rate", "corrupted", "duplicated"}

// edtCounterFields are the IMPAIRMENT_COUNTERS fields of a port with a
// delay/jitter/shape profile (see edt.go).
var edtCounterFields = []string{CounterDelayed, CounterDroppedShape, CounterDroppedShapeLoss}

// Run is the daemon: the engine (internal/engine) with impaird's tables
// as its controller. Each port is a work item: its XDP program and maps
// (and its share of delay/jitter/shaping) are made to match its
// IMPAIRMENT and IMPAIRMENT_FLOW keys; every CountersInterval the counters
// are written. The programs stay attached when it returns: a restarted
// impaird adopts them.
func Run(ctx context.Context, c Config) error {
	if c.Log == nil {
		c.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	if c.BPFFS == "" {
		c.BPFFS = DefaultBPFFS
	}
	if c.Mode == "" {
		c.Mode = bpf.ModeAuto
	}
	if c.CountersInterval <= 0 {
		c.CountersInterval = time.Second
	}
	switch c.Mode {
	case bpf.ModeAuto, bpf.ModeNative, bpf.ModeGeneric:
	default:
		return fmt.Errorf("--xdp-mode %q: want auto, native or generic", c.Mode)
	}
	if err := ensureBPFFS(c.BPFFS); err != nil {
		return err
	}
	return engine.Run(ctx, engine.Config{
		Name: "impaird", RedisURL: c.RedisURL, Log: c.Log, Registry: c.Registry, Ready: c.Ready,
		ResultFields: append([]string{FieldXDPMode, FieldProgID}, scheduleResultFields...),
		Warn:         schema.FieldsWarning,
		Queue:        workqueue.Options{BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second},
	}, func(h *engine.Handle) (engine.Controller, error) { return newController(h, c) })
}

// daemon holds the desired state (raw CONFIG_DB hashes by port) and the
// loaded per-port programs.
type daemon struct {
	cfg      Config
	k        *kernel
	h        *engine.Handle // the engine: cache, results (nil in unit tests)
	counters *redisx.StateWriter

	mu    sync.Mutex
	imp   map[string]schema.Fields            // port -> IMPAIRMENT hash
	flows map[string]map[string]schema.Fields // port -> IMPAIRMENT_FLOW key -> hash
	// ports are the loaded programs.
	ports map[string]*bpf.Port
	// entries are the cache entries last read per "TABLE|key" (refresh):
	// their generation and warning stamp the results.
	entries map[string]engine.Entry
	// edt is the delay/jitter/shaping state (nil in unit tests).
	edt *edtState
	// goodImp and goodFlows are the last fields of each key that parsed
	// (lastgood.go): applied while the key's current fields are invalid.
	goodImp   map[string]schema.Fields            // port -> IMPAIRMENT hash
	goodFlows map[string]map[string]schema.Fields // port -> IMPAIRMENT_FLOW key -> hash
	// plans: the last plan applied to each loaded port, put back when a
	// new one fails to apply.
	plans map[string]*bpf.Plan
	// egPlans: the same for each port's egress plan (egress.go).
	egPlans map[string]*bpf.Plan
	// applyPlan replaces bpf.Port.Apply in tests (nil: Apply).
	applyPlan func(*bpf.Port, *bpf.Plan) error
	// sch is the schedules (schedule.go).
	sch *schedState
	// acl is the ACL_TABLE/ACL_RULE view and per-port outcomes (acl.go).
	acl *aclState
	// aclCounters writes COUNTERS:<table>:<rule> and their SAI forms.
	aclCounters *redisx.StateWriter
}

func newDaemon(c Config, k *kernel) *daemon {
	return &daemon{
		cfg: c, k: k,
		imp: map[string]schema.Fields{}, flows: map[string]map[string]schema.Fields{},
		ports: map[string]*bpf.Port{}, entries: map[string]engine.Entry{},
		goodImp: map[string]schema.Fields{}, goodFlows: map[string]map[string]schema.Fields{},
		plans: map[string]*bpf.Plan{}, egPlans: map[string]*bpf.Plan{}, sch: newSchedState(), acl: newACLState(),
	}
}

// closePorts releases file descriptors; pins keep the programs running.
func (d *daemon) closePorts() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.ports {
		p.Close()
	}
}

// sweep removes pin directories of ports nobody configures any more
// (e.g. deleted while impaird was down). The engine runs it only once
// CONFIG_DB_INITIALIZED is "1"; results of gone keys are the engine's.
func (d *daemon) sweep(ctx context.Context) error {
	entries, err := os.ReadDir(d.cfg.BPFFS)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.cfg.BPFFS, err)
	}
	d.mu.Lock()
	// A directory whose name pinName does not give is no port's (see
	// pins.go): stale too.
	wanted := func(name string) bool {
		port, ok := portOfPin(name)
		return ok && (d.configured(ctx, port) || d.ports[port] != nil)
	}
	var stale []string
	for _, e := range entries {
		if e.IsDir() && !wanted(e.Name()) {
			stale = append(stale, e.Name())
		}
	}
	d.mu.Unlock()
	for _, name := range stale {
		d.cfg.Log.WithField("pin_dir", name).Info("removing pins of an impairment no longer configured")
		if err := bpf.RemovePins(filepath.Join(d.cfg.BPFFS, name)); err != nil {
			return fmt.Errorf("remove stale pins %s: %w", name, err)
		}
	}
	return nil
}
