package syncd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// DefaultCountersInterval is how often COUNTERS:<port> is refreshed.
const DefaultCountersInterval = time.Second

// maxBurst bounds how many queued kernel events are folded into one flush,
// so a never-ending stream still reaches Redis.
const maxBurst = 50000

// maxFlush bounds the keys of one burst written to Redis; the rest follow
// as soon as it is written. What a burst has in flight costs about 1 KB a
// key (its hash rendered and copied, the Redis commands): 50,000 at once
// doubled syncd's peak heap at 100k routes.
const maxFlush = 4096

// linger is how long the loop waits for the next kernel event of a burst
// once the queue is empty, and maxLinger how long a burst may be held in
// all (also under a steady stream): the kernel emits a 10k-object burst over ~100 ms, a little faster
// than syncd consumes it in bursts of a few events, so a short wait folds
// it into far fewer pipelines for at most maxLinger of added latency.
const (
	linger    = time.Millisecond
	maxLinger = 20 * time.Millisecond
)

// retryDelay is the pause before a failed Redis write or load is retried.
const retryDelay = 500 * time.Millisecond

// DefaultSentinelInterval is how often syncd checks that STATE_DB and
// COUNTERS_DB still hold its sentinel keys: an emptied DB is repaired
// within this plus one rewrite (the issue asks for 2 s).
const DefaultSentinelInterval = 500 * time.Millisecond

// Config configures a Daemon.
type Config struct {
	Kernel   netlinkmgr.Kernel
	State    *redis.Client // STATE_DB
	Counters *redis.Client // COUNTERS_DB
	Config   *redis.Client // CONFIG_DB (the PORT table)

	CountersInterval time.Duration // 0 = DefaultCountersInterval
	SentinelInterval time.Duration // 0 = DefaultSentinelInterval
	Name             string        // sentinel key name (SWITCHYARD_DAEMON|<Name>); "" = "syncd"
	RecvBuffer       int           // netlink socket receive buffer; 0 = netlinkmgr's default
	Log              *logrus.Entry // nil = discard
	// Files and HostFiles read the PORT_TUNING_TABLE mirror (the ports'
	// namespace, the daemon's own for the host-wide value); nil Files =
	// no tuning mirror.
	Files, HostFiles *nsfs.FS
}

// Stats are cumulative figures of a running Daemon (for logs and benchmarks).
type Stats struct {
	Events     uint64 // kernel events applied
	Bursts     uint64 // flushes that wrote something
	RoundTrips uint64 // Redis round trips of the STATE_DB and COUNTERS_DB writers
	Commands   uint64 // Redis commands of those writers
	Resyncs    uint64 // full rewrites (start, Redis restart, emptied DB, failed write)
}

// Daemon is syncd: it mirrors one namespace's kernel into Redis.
type Daemon struct {
	cfg      Config
	log      *logrus.Entry
	view     *View
	state    *redisx.StateWriter
	counters *redisx.StateWriter
	tuning   tuningMirror
	batch    *redisx.Batch // STATE_DB writes of a resync
	lost     chan string   // a sentinel's key vanished: the DB was emptied

	// A burst is written by its own goroutine while the loop goes on
	// reading the kernel: a loop blocked on Redis stops reading netlink,
	// and at 100k routes/s the socket buffer overflows within tens of
	// milliseconds (a relist of everything). One burst at a time, so
	// Redis sees them in order; keys touched meanwhile wait in the View.
	inflight bool
	written  chan error // the result of the burst in flight
	writers  sync.WaitGroup

	synced     bool // the kernel's initial listing is complete
	portsKnown bool // the PORT table has been scanned once
	needResync bool // Forget + Load + full rewrite before the next flush
	failing    bool // the last flush failed (log once per outage)

	events  atomic.Uint64
	bursts  atomic.Uint64
	resyncs atomic.Uint64
	ready   chan struct{} // closed after the first complete mirror
}

// New returns a Daemon for cfg.
func New(cfg Config) *Daemon {
	if cfg.CountersInterval <= 0 {
		cfg.CountersInterval = DefaultCountersInterval
	}
	if cfg.SentinelInterval <= 0 {
		cfg.SentinelInterval = DefaultSentinelInterval
	}
	if cfg.Name == "" {
		cfg.Name = "syncd"
	}
	log := cfg.Log
	if log == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		log = logrus.NewEntry(l)
	}
	d := &Daemon{
		cfg: cfg, log: log, view: NewView(),
		state:      redisx.NewOwnedWriter(cfg.State, StateOwnership),
		counters:   redisx.NewOwnedWriter(cfg.Counters, CountersOwnership),
		lost:       make(chan string, 1),
		written:    make(chan error, 1),
		needResync: true,
		ready:      make(chan struct{}),
	}
	// STATE_DB keeps a 16-byte fingerprint per key of what was written
	// (a route's, neighbour's or FDB entry's fields change together);
	// COUNTERS_DB keeps values: a poll changes a few of many fields.
	d.state.Compact()
	d.batch = d.state.Batch()
	d.tuning = newTuningMirror(cfg)
	return d
}

// Ready is closed once the mirror is complete for the first time.
func (d *Daemon) Ready() <-chan struct{} { return d.ready }

// Stats returns the cumulative figures (safe from any goroutine).
func (d *Daemon) Stats() Stats {
	return Stats{
		Events: d.events.Load(), Bursts: d.bursts.Load(),
		RoundTrips: d.state.RoundTrips() + d.counters.RoundTrips(),
		Commands:   d.state.Commands() + d.counters.Commands(),
		Resyncs:    d.resyncs.Load(),
	}
}

// Run mirrors until ctx is done (then it returns nil) or the kernel watch
// fails.
func (d *Daemon) Run(ctx context.Context) error {
	if err := ensureKeyspaceEvents(ctx, d.cfg.Config); err != nil {
		return err
	}
	events, err := d.cfg.Kernel.Watch(ctx, netlinkmgr.WatchOptions{ListExisting: true, RecvBuffer: d.cfg.RecvBuffer})
	if err != nil {
		return fmt.Errorf("watch kernel: %w", err)
	}
	d.view.BeginListing()
	ports := make(chan portUpdate, 64)
	go watchPorts(ctx, d.cfg.Config, ports, d.log)
	sctx, stopSentinels := context.WithCancel(ctx)
	var sentinels sync.WaitGroup
	defer func() { stopSentinels(); sentinels.Wait(); d.writers.Wait() }()
	d.startSentinels(sctx, &sentinels)

	tick := time.NewTicker(d.cfg.CountersInterval)
	defer tick.Stop()
	retry := time.NewTimer(0)
	<-retry.C
	// failed handles a failed write: retry with a full rewrite.
	failed := func(err error) {
		// Warn once per outage, not every retry.
		if !d.failing {
			d.log.WithError(err).Warn("redis write failed; retrying with a full rewrite")
		} else {
			d.log.WithError(err).Debug("redis write failed again")
		}
		d.failing = true
		d.needResync = true
		retry.Reset(retryDelay)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if ok {
				d.apply(ev)
				ok = d.drain(events)
			}
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("kernel watch ended")
			}
			if d.view.RoutesSuspect() && !d.view.Listing() {
				d.relistRoutes()
			}
		case u := <-ports:
			d.applyPorts(u)
		case key := <-d.lost:
			d.log.WithField("sentinel", key).Warn("redis DB emptied (sentinel gone); rewriting the mirror")
			d.needResync = true
		case err := <-d.written:
			d.inflight = false
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				failed(err)
				continue
			}
		case <-tick.C:
			if d.synced && d.portsKnown && !d.needResync && !d.inflight {
				if err := d.writeCounters(ctx); err != nil {
					d.log.WithError(err).Warn("write counters")
					d.needResync = true
				}
				d.checkInterfaces(ctx)
				if err := d.writeTuning(ctx); err != nil {
					d.log.WithError(err).Warn("write PORT_TUNING_TABLE")
				}
			}
		case <-retry.C:
		}
		if err := d.flush(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failed(err)
		} else if d.failing && !d.needResync && !d.inflight {
			d.log.Info("redis writes work again")
			d.failing = false
		}
	}
}

// drain applies the events queued behind the first of a burst, lingering
// briefly for stragglers; false when the channel closed.
func (d *Daemon) drain(events <-chan netlinkmgr.Event) bool {
	deadline := time.Now().Add(maxLinger)
	var t *time.Timer
	for n := 1; n < maxBurst; n++ {
		if n%64 == 0 && time.Now().After(deadline) {
			return true // a steady stream: flush at least every maxLinger
		}
		select {
		case ev, ok := <-events:
			if !ok {
				return false
			}
			d.apply(ev)
			continue
		default:
		}
		wait := min(linger, time.Until(deadline))
		if wait <= 0 {
			return true
		}
		if t == nil {
			t = time.NewTimer(wait)
			defer t.Stop()
		} else {
			t.Reset(wait)
		}
		select {
		case ev, ok := <-events:
			if !ok {
				return false
			}
			d.apply(ev)
		case <-t.C:
			return true
		}
	}
	return true
}

func (d *Daemon) apply(ev netlinkmgr.Event) {
	d.events.Add(1)
	switch ev.Kind {
	case netlinkmgr.EventResync:
		d.log.Warn("netlink socket overflowed; relisting the kernel")
	case netlinkmgr.EventSynced:
		if !d.synced {
			d.log.Debug("initial kernel listing complete")
		}
		d.synced = true
	}
	d.view.Apply(ev)
}

// relistRoutes relists the main table and each VRF's table.
func (d *Daemon) relistRoutes() {
	tables := append([]int{netlinkmgr.MainTable}, d.view.VrfTables()...)
	var all []netlinkmgr.RouteInfo
	for _, t := range tables {
		rs, err := d.cfg.Kernel.Routes().List(netlinkmgr.RouteFilter{Table: t})
		if err != nil {
			d.log.WithError(err).WithField("table", t).Warn("relist routes after link down")
			return
		}
		all = append(all, rs...)
	}
	d.view.ReplaceRoutes(all, tables...)
}

func (d *Daemon) applyPorts(u portUpdate) {
	for p, present := range u.names {
		d.view.SetPort(p, present)
	}
	for p, present := range u.tuning {
		d.tuning.setPort(p, present)
	}
	if u.synced {
		if u.reconnect {
			d.log.Info("redis reconnected or restarted; rewriting the mirror")
			d.needResync = true
		}
		d.portsKnown = true
	}
}

// flush writes what changed: it renders the touched keys and hands them
// to a goroutine of their own (one burst in flight at a time; the result
// comes back on d.written). Nothing is written before the kernel listing
// and the PORT scan are complete, or while a relist is running, so the
// mirror never shows a half-listed kernel or deletes what is merely not
// listed yet.
func (d *Daemon) flush(ctx context.Context) error {
	if !d.synced || !d.portsKnown || d.view.Listing() || d.inflight {
		return nil
	}
	if d.needResync {
		return d.resync(ctx)
	}
	if d.view.DirtyCount() == 0 {
		return nil
	}
	b := d.state.Batch()
	d.view.TakeWants(maxFlush, func(k string, f schema.Fields, ok bool) {
		if ok {
			b.Set(k, f)
		} else {
			b.Delete(k)
		}
	})
	d.inflight = true
	d.writers.Add(1)
	go func() {
		defer d.writers.Done()
		d.written <- d.commit(ctx, b, "burst")
	}()
	return nil
}

// commit flushes a STATE_DB batch. Keys Redis refused (not a hash) are
// logged and retried when next touched; any other failure is returned.
func (d *Daemon) commit(ctx context.Context, b *redisx.Batch, what string) error {
	if b.Len() == 0 {
		return nil
	}
	before := d.state.Commands()
	if err := b.Flush(ctx); err != nil {
		var refused redisx.KeyErrors
		if !errors.As(err, &refused) {
			return err
		}
		d.log.WithError(err).Warn("keys not written")
	}
	n := d.state.Commands() - before
	if n == 0 {
		return nil
	}
	d.bursts.Add(1)
	if d.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		s := d.Stats()
		d.log.WithFields(logrus.Fields{"what": what, "commands": n, "total_events": s.Events,
			"total_round_trips": s.RoundTrips, "total_commands": s.Commands}).Debug("flushed")
	}
	return nil
}

// resync re-reads what Redis holds of ours, removes what the kernel no
// longer has and writes everything else (only differences go out).
func (d *Daemon) resync(ctx context.Context) error {
	d.resyncs.Add(1)
	d.tuning.forget()
	d.state.Forget()
	d.counters.Forget()
	for _, t := range StateTables {
		if err := d.state.Load(ctx, StateKey(t, "*")); err != nil {
			return err
		}
	}
	for _, p := range []string{schema.CountersKey(schema.CountersTable, "*"), CountersPortNameMap} {
		if err := d.counters.Load(ctx, p); err != nil {
			return err
		}
	}
	d.view.TakeDirty()
	want := d.view.Keys()
	keep := make(map[string]struct{}, len(want))
	for _, k := range want {
		keep[k] = struct{}{}
		f, _ := d.view.Want(k)
		d.batch.Set(k, f)
	}
	var gone []string
	for _, k := range d.state.Keys() {
		if _, ok := keep[k]; !ok {
			gone = append(gone, k)
		}
	}
	foreign := d.notOurs(ctx, gone)
	stale := 0
	for _, k := range gone {
		if !foreign[k] {
			d.batch.Delete(k)
			stale++
		}
	}
	if err := d.commit(ctx, d.batch, "resync"); err != nil {
		return err
	}
	d.needResync = false
	d.log.WithFields(logrus.Fields{"keys": len(want), "stale_removed": stale}).Info("mirror complete")
	if err := d.writeCounters(ctx); err != nil {
		return err
	}
	select {
	case <-d.ready:
	default:
		close(d.ready)
	}
	return nil
}

// writeCounters refreshes, for every configured port, COUNTERS:<port>,
// its SAI form COUNTERS:<oid> and COUNTERS_PORT_NAME_MAP from one link
// dump, in one pipeline, and removes the counters of ports gone. The same
// dump refreshes the LAG mirror (View.RefreshLag): LACP state the bond
// driver does not announce shows within one interval.
func (d *Daemon) writeCounters(ctx context.Context) error {
	links, err := d.cfg.Kernel.Links().List()
	if err != nil {
		d.log.WithError(err).Warn("list links for counters")
		return nil
	}
	keep := map[string]struct{}{}
	names := schema.Fields{}
	b := d.counters.Batch()
	for _, l := range links {
		d.view.RefreshLag(l)
		if !d.view.IsConfigured(l.Name) || l.Stats == nil {
			continue
		}
		k := schema.CountersKey(schema.CountersTable, l.Name)
		keep[k] = struct{}{}
		b.Set(k, CounterFieldsOf(*l.Stats))
		oid := PortOID(l.Name)
		names[l.Name] = oid
		k = schema.CountersKey(schema.CountersTable, oid)
		keep[k] = struct{}{}
		b.Set(k, SAICountersOf(*l.Stats))
	}
	if len(names) > 0 {
		keep[CountersPortNameMap] = struct{}{}
		b.Set(CountersPortNameMap, names)
	}
	for _, k := range d.counters.Keys() {
		if _, ok := keep[k]; !ok {
			b.Delete(k)
		}
	}
	err = b.Flush(ctx)
	var refused redisx.KeyErrors
	if errors.As(err, &refused) {
		d.log.WithError(err).Warn("counters not written")
		return nil
	}
	return err
}

// startSentinels keeps syncd's sentinel key in STATE_DB and COUNTERS_DB
// (redisx.Sentinel): when one vanishes — FLUSHDB, FLUSHALL, a Redis
// restart without data, a replica resync — the loop forgets what it wrote
// and rewrites the whole mirror.
func (d *Daemon) startSentinels(ctx context.Context, wg *sync.WaitGroup) {
	for _, s := range []*redisx.Sentinel{
		redisx.NewSentinel(d.cfg.State, redisx.SentinelKey(schema.StateDB, d.cfg.Name), redisx.SentinelFields()),
		redisx.NewSentinel(d.cfg.Counters, redisx.SentinelKey(schema.CountersDB, d.cfg.Name), redisx.SentinelFields()),
	} {
		key := s.Key()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Run(ctx, d.cfg.SentinelInterval, func(context.Context) {
				select {
				case d.lost <- key:
				default: // a rewrite is pending already
				}
			}, func(err error) { d.log.WithError(err).Debug("sentinel") })
		}()
	}
}
