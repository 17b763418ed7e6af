package impaird

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/impaird/edt"
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
}

// STATE_DB fields impaird owns besides state and reason.
const (
	FieldXDPMode = "xdp_mode"
	FieldProgID  = "prog_id"
)

// Counter field names of IMPAIRMENT_COUNTERS.
var counterFields = []string{"rx_packets", "rx_bytes", "passed", "dropped_loss", "dropped_rate", "corrupted"}

// edtCounterFields are the IMPAIRMENT_COUNTERS fields of a port with a
// delay/jitter/shape profile (see edt.go).
var edtCounterFields = []string{CounterDelayed, CounterDroppedShape, CounterDroppedShapeLoss}

// retryMissing is how often a port whose netdev is missing, or that holds
// a foreign XDP program, is looked at again.
const retryMissing = 2 * time.Second

// resyncInterval is how often every port is reconciled again.
const resyncInterval = 10 * time.Second

// sweepKey is the work item that removes pins and results nobody wants.
const sweepKey = "\x00sweep"

// Run is the daemon: it watches IMPAIRMENT and IMPAIRMENT_FLOW, reconciles
// each port into its pinned XDP program and maps, writes results and, every
// CountersInterval, the counters, until ctx is done. The programs stay
// attached when it returns: a restarted impaird adopts them.
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
	conn, err := redisx.Connect(c.RedisURL)
	if err != nil {
		return fmt.Errorf("connect redis %s: %w", c.RedisURL, err)
	}
	defer conn.Close()
	cfgDB := conn.DB(schema.ConfigDB)
	if err := redisx.EnsureKeyspaceEvents(ctx, cfgDB, redisx.WatchClasses); err != nil {
		return err
	}
	k, err := openKernel(c.NetNS)
	if err != nil {
		return err
	}
	defer k.Close()

	inst, err := edt.New(edt.Options{NetNS: c.NetNS, PinDir: c.BPFFS})
	if err != nil {
		return err
	}
	defer inst.Close() // what is installed stays, as the XDP programs do

	d := newDaemon(c, k)
	d.edt = newEDTState(inst)
	d.results = redisx.NewStateWriter(conn.DB(schema.StateDB), []string{schema.FieldState, schema.FieldReason, FieldXDPMode, FieldProgID})
	d.counters = redisx.NewStateWriter(conn.DB(schema.CountersDB), append(append([]string(nil), counterFields...), edtCounterFields...))
	for _, pat := range []string{
		schema.ResultTable(schema.TableImpairment) + schema.StateSep + "*",
		schema.ResultTable(schema.TableImpairmentFlow) + schema.StateSep + "*",
	} {
		if err := d.results.Load(ctx, pat); err != nil {
			return fmt.Errorf("load previous results: %w", err)
		}
	}
	if err := d.counters.Load(ctx, schema.ImpairmentCountersTable+schema.CountersSep+"*"); err != nil {
		return fmt.Errorf("load previous counters: %w", err)
	}
	defer d.closePorts()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := workqueue.New(workqueue.Options{BaseDelay: 50 * time.Millisecond, MaxDelay: 5 * time.Second})
	defer q.ShutDown()

	// CONFIG_DB_INITIALIZED (orchagent's rule, docs/impaird.md): pins of
	// ports absent from CONFIG_DB are swept only once it is "1"; once it
	// has been "1", a key that vanishes while it is not "1" (Redis
	// restarted empty, or flushed) is held: its impairment stays in place
	// until it is "1" again. Redis is asked directly because a rescan
	// delivers the table keys before CONFIG_DB_INITIALIZED itself.
	var seenInit atomic.Bool
	holdDelete := func(ctx context.Context) bool {
		if !seenInit.Load() {
			return false
		}
		v, err := cfgDB.Get(ctx, schema.KeyConfigDBInitialized).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return true // unknown: keep; released at the next sync with "1"
		}
		return strings.TrimSpace(v) != "1"
	}
	// release ends the holds and lets the sweep run, once the first scan
	// is complete and CONFIG_DB_INITIALIZED is "1".
	release := func() {
		if !d.synced.Load() || !d.initialized.Load() {
			return
		}
		for _, p := range d.releaseHeld() {
			q.Add(p)
		}
		q.Add(sweepKey)
	}

	synced := make(chan struct{})
	w := redisx.NewWatcher(cfgDB, redisx.WatchOptions{
		DB:     schema.ConfigDB,
		Tables: []string{schema.TableImpairment, schema.TableImpairmentFlow},
		Keys:   []string{schema.KeyConfigDBInitialized},
		// OnSync runs once every scanned key was handed to the events
		// channel; the marker goes through the consumer goroutine so it
		// is handled after those events.
		OnSync: func(ctx context.Context) {
			select {
			case synced <- struct{}{}:
			case <-ctx.Done():
			}
		},
		OnError: func(err error) { c.Log.WithError(err).Warn("redis watcher") },
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() {
		defer wg.Done()
		// Ports are reconciled only once the first scan is complete: a
		// restarted impaird that applied IMPAIRMENT before it had read
		// IMPAIRMENT_FLOW would drop the port's rules for a moment.
		initial := true
		evs := w.Events(ctx)
		for {
			select {
			case ev, ok := <-evs:
				if !ok {
					return
				}
				if ev.Err != nil {
					c.Log.WithError(ev.Err).WithField("key", ev.Key).Warn("unreadable CONFIG_DB key")
					continue
				}
				if ev.Table == "" { // CONFIG_DB_INITIALIZED
					now := !ev.Deleted && strings.TrimSpace(ev.Value) == "1"
					if now {
						seenInit.Store(true)
						if !d.initialized.Swap(true) {
							c.Log.Info("CONFIG_DB_INITIALIZED is 1: impairments no longer configured may be removed")
						}
						release()
					} else {
						d.initialized.Store(false)
					}
					continue
				}
				if ev.Deleted && holdDelete(ctx) {
					if d.hold(ev) {
						c.Log.WithFields(logrus.Fields{"table": ev.Table, "key": ev.Key}).
							Warn("key gone while CONFIG_DB_INITIALIZED is not 1: impairment kept until it is")
					}
					continue
				}
				if port := d.setConfig(ev); port != "" && !initial {
					q.Add(port)
				}
			case <-synced:
				if restarted, err := d.results.CheckRestart(ctx); err == nil && restarted {
					d.results.Forget()
					d.counters.Forget()
				}
				if initial {
					c.Log.Info("CONFIG_DB scanned: reconciling ports")
				}
				initial = false
				d.synced.Store(true)
				for _, p := range d.knownPorts() {
					q.Add(p)
				}
				if d.initialized.Load() {
					release()
				} else {
					q.Add(sweepKey) // logs that the sweep waits
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.CountersInterval)
		defer t.Stop()
		lastResync := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := d.writeCounters(ctx); err != nil && ctx.Err() == nil {
					c.Log.WithError(err).Warn("write counters")
				}
				// Nothing tells impaird that a netdev was re-created or its
				// program detached behind its back: look again now and then
				// (a no-op when all is right).
				if time.Since(lastResync) >= resyncInterval && d.isSynced() {
					lastResync = time.Now()
					for _, p := range d.knownPorts() {
						q.Add(p)
					}
				}
			}
		}
	}()

	c.Log.WithFields(logrus.Fields{"redis": conn.String(), "netns": c.NetNS, "bpffs": c.BPFFS, "xdp_mode": c.Mode}).Info("impaird running")
	for {
		key, ok := q.Get(ctx)
		if !ok {
			break
		}
		var retry time.Duration
		if key == sweepKey {
			err = d.sweep(ctx)
		} else {
			retry, err = d.reconcile(ctx, key)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			c.Log.WithError(err).WithField("port", key).Warn("reconcile failed: retrying")
			q.AddRateLimited(key)
		case retry > 0:
			q.Forget(key)
			q.AddAfter(key, retry)
		default:
			q.Forget(key)
		}
		q.Done(key)
	}
	cancel()
	return nil
}

// daemon holds the desired state (raw CONFIG_DB hashes by port) and the
// loaded per-port programs.
type daemon struct {
	cfg      Config
	k        *kernel
	results  *redisx.StateWriter
	counters *redisx.StateWriter

	synced atomic.Bool // the first CONFIG_DB scan is complete
	// initialized: CONFIG_DB_INITIALIZED is "1" (the sweep may run).
	initialized atomic.Bool

	mu    sync.Mutex
	imp   map[string]schema.Fields            // port -> IMPAIRMENT hash
	flows map[string]map[string]schema.Fields // port -> IMPAIRMENT_FLOW key -> hash
	// ports are the loaded programs; resultKeys the STATE_DB keys written
	// per port (to delete the ones that are no longer wanted).
	ports      map[string]*bpf.Port
	resultKeys map[string]map[string]bool
	// edt is the delay/jitter/shaping state (nil in unit tests).
	edt *edtState
	// goodImp and goodFlows are the last fields of each key that parsed
	// (lastgood.go): applied while the key's current fields are invalid.
	goodImp   map[string]schema.Fields            // port -> IMPAIRMENT hash
	goodFlows map[string]map[string]schema.Fields // port -> IMPAIRMENT_FLOW key -> hash
	// plans: the last plan applied to each loaded port, put back when a
	// new one fails to apply.
	plans map[string]*bpf.Plan
	// applyPlan replaces bpf.Port.Apply in tests (nil: Apply).
	applyPlan func(*bpf.Port, *bpf.Plan) error
	// held: keys gone from CONFIG_DB while CONFIG_DB_INITIALIZED was not
	// "1" (STATE_DB result key -> table and key). Their last hash stays in
	// imp/flows, so their impairment stays in place, but they get no
	// result; releaseHeld forgets them.
	held map[string]heldKey
}

type heldKey struct{ table, key string }

func newDaemon(c Config, k *kernel) *daemon {
	return &daemon{
		cfg: c, k: k,
		imp: map[string]schema.Fields{}, flows: map[string]map[string]schema.Fields{},
		ports: map[string]*bpf.Port{}, resultKeys: map[string]map[string]bool{},
		held:    map[string]heldKey{},
		goodImp: map[string]schema.Fields{}, goodFlows: map[string]map[string]schema.Fields{},
		plans: map[string]*bpf.Plan{},
	}
}

// hold records that a configured key is gone from CONFIG_DB without
// removing its impairment (see Run); false when the key was not
// configured.
func (d *daemon) hold(ev redisx.Event) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ev.Table {
	case schema.TableImpairment:
		if _, ok := d.imp[ev.Key]; !ok {
			return false
		}
	case schema.TableImpairmentFlow:
		port, _, _ := strings.Cut(ev.Key, schema.ConfigSep)
		if _, ok := d.flows[port][ev.Key]; !ok {
			return false
		}
	default:
		return false
	}
	d.held[schema.ResultKey(ev.Table, ev.Key)] = heldKey{ev.Table, ev.Key}
	return true
}

// releaseHeld forgets the held keys and returns their ports to reconcile
// (which removes what they impaired).
func (d *daemon) releaseHeld() []string {
	d.mu.Lock()
	held := d.held
	d.held = map[string]heldKey{}
	d.mu.Unlock()
	var ports []string
	for _, h := range held {
		if p := d.setConfig(redisx.Event{Table: h.table, Key: h.key, Deleted: true}); p != "" {
			ports = append(ports, p)
		}
	}
	if len(held) > 0 {
		d.cfg.Log.WithField("keys", len(held)).Info("CONFIG_DB_INITIALIZED is 1: removing impairments of keys gone meanwhile")
	}
	return ports
}

// setConfig records one event and returns the port to reconcile.
func (d *daemon) setConfig(ev redisx.Event) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.held, schema.ResultKey(ev.Table, ev.Key)) // set again, or deleted for good
	switch ev.Table {
	case schema.TableImpairment:
		if ev.Deleted {
			delete(d.imp, ev.Key)
		} else {
			d.imp[ev.Key] = ev.Fields
		}
		return ev.Key
	case schema.TableImpairmentFlow:
		port, _, _ := strings.Cut(ev.Key, schema.ConfigSep)
		if ev.Deleted {
			delete(d.flows[port], ev.Key)
			if len(d.flows[port]) == 0 {
				delete(d.flows, port)
			}
		} else {
			if d.flows[port] == nil {
				d.flows[port] = map[string]schema.Fields{}
			}
			d.flows[port][ev.Key] = ev.Fields
		}
		if port == "" {
			port = "\x00" + ev.Key // still reconciled, to report the key error
		}
		return port
	}
	return ""
}

func (d *daemon) isSynced() bool { return d.synced.Load() }

func (d *daemon) knownPorts() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	for p := range d.imp {
		seen[p] = true
	}
	for p := range d.flows {
		seen[p] = true
	}
	for p := range d.ports {
		seen[p] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	return out
}

// closePorts releases file descriptors; pins keep the programs running.
func (d *daemon) closePorts() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.ports {
		p.Close()
	}
}

// sweep removes, once CONFIG_DB was scanned, pin directories and results
// of ports nobody configures any more (e.g. deleted while impaird was down).
func (d *daemon) sweep(ctx context.Context) error {
	if !d.initialized.Load() {
		d.cfg.Log.Info("CONFIG_DB_INITIALIZED is not 1: pins of ports not configured are kept until it is")
		return nil
	}
	entries, err := os.ReadDir(d.cfg.BPFFS)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.cfg.BPFFS, err)
	}
	d.mu.Lock()
	// A directory whose name pinName does not give is no port's (see
	// pins.go): stale too.
	wanted := func(name string) bool {
		port, ok := portOfPin(name)
		return ok && (d.imp[port] != nil || len(d.flows[port]) > 0 || d.ports[port] != nil)
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
	// Results of keys that are gone.
	b := d.results.Batch()
	d.mu.Lock()
	for _, key := range d.results.Keys() {
		table, rest, _ := strings.Cut(key, schema.StateSep)
		port, _, _ := strings.Cut(rest, schema.ConfigSep)
		switch table {
		case schema.ResultTable(schema.TableImpairment):
			if d.imp[rest] == nil && !d.resultKeys[port][key] {
				b.Delete(key)
			}
		case schema.ResultTable(schema.TableImpairmentFlow):
			if d.flows[port][rest] == nil && !d.resultKeys[port][key] {
				b.Delete(key)
			}
		}
	}
	d.mu.Unlock()
	return b.Flush(ctx)
}
