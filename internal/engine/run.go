package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/workqueue"
	"github.com/switchyard-net/switchyard/schema"
)

// Run is a daemon's whole life: connect, build the controller with
// factory, watch its tables, reconcile until ctx is done. It returns nil
// when ctx ends, an error when the daemon cannot run (wrong password,
// keyspace notifications refused, STATE_DB not writable, the factory's
// error).
func Run(ctx context.Context, cfg Config, factory Factory) error {
	log := cfg.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 256
	}
	if cfg.Queue.BaseDelay <= 0 {
		cfg.Queue.BaseDelay = 10 * time.Millisecond
	}
	if cfg.Queue.MaxDelay <= 0 {
		cfg.Queue.MaxDelay = 5 * time.Second
	}
	if cfg.LostInterval <= 0 {
		cfg.LostInterval = 500 * time.Millisecond
	}
	conn, err := redisx.Dial(ctx, cfg.RedisURL, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer conn.Close()
	cfgDB, stateDB := conn.DB(schema.ConfigDB), conn.DB(schema.StateDB)
	if err := redisx.EnsureKeyspaceEvents(ctx, cfgDB, redisx.WatchClasses); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	sentinel := redisx.SentinelKey(schema.StateDB, cfg.Name)
	if err := stateDB.HSet(ctx, sentinel, "pid", strconv.Itoa(os.Getpid())).Err(); err != nil {
		return fmt.Errorf("write STATE_DB %s: %w", sentinel, redisx.ExplainPermission(err))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e := &engine{cfg: cfg, log: log, ctx: ctx, cancel: cancel, cfgDB: cfgDB, cache: NewCache(cfg.Warn)}
	e.q = workqueue.New(cfg.Queue)
	defer e.q.ShutDown()
	e.m = newMetrics(cfg.Registry, func() float64 { return float64(e.q.Len()) })
	h := &Handle{Cache: e.cache, Log: log, Redis: conn, Registry: cfg.Registry, e: e}
	ctrl, err := factory(h)
	if err != nil {
		return err
	}
	if c, ok := ctrl.(io.Closer); ok {
		defer c.Close()
	}
	e.ctrl = ctrl
	tables := ctrl.Tables()
	e.tables = map[string]bool{}
	for _, t := range tables {
		e.tables[t] = true
	}
	sw := redisx.NewStateWriter(stateDB, append(append([]string(nil), schema.ResultFieldNames...), cfg.ResultFields...))
	sw.Compact() // a fingerprint per result, not its values: a result's fields change together
	for _, t := range tables {
		if err := sw.Load(ctx, schema.ResultTable(t)+schema.StateSep+"*"); err != nil {
			return fmt.Errorf("load previous results: %w", redisx.ExplainPermission(err))
		}
	}
	if err := sw.Dial(ctx); err != nil {
		log.WithError(err).Warn("STATE_DB: cannot open the results connection yet (the first write will retry)")
	}
	e.res = newResults(sw, log, e.cache, tables, ctrl.Item, e.m)
	if o, ok := ctrl.(ResultOwner); ok {
		e.res.owns = o.OwnsResult
	}
	_, e.res.keyItems = ctrl.(KeyItems)
	defer e.wg.Wait()
	defer cancel()
	if s, ok := ctrl.(Starter); ok {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	e.wg.Add(3)
	go func() { defer e.wg.Done(); e.res.run(ctx) }()
	go func() {
		defer e.wg.Done()
		redisx.NewSentinel(stateDB, sentinel, map[string]string{"pid": strconv.Itoa(os.Getpid())}).
			Run(ctx, cfg.LostInterval, func(context.Context) {
				n := e.res.rewriteAll()
				e.m.inc(lostC)
				log.WithField("results", n).Warn("STATE_DB was emptied (FLUSHDB, restart or resync): rewriting every result")
			}, func(err error) { log.WithError(err).Warn("STATE_DB sentinel") })
	}()
	synced := make(chan struct{})
	go func() { defer e.wg.Done(); e.consume(ctx, tables, synced) }()

	log.WithFields(logrus.Fields{"redis": conn.String(), "tables": tables}).Info("watching CONFIG_DB")
	select {
	case <-synced: // the first scan is in the cache
	case <-ctx.Done():
		return e.fatalErr()
	}
	e.work(ctx)
	return e.fatalErr()
}

// summarize logs, at info, one line per burst: the results that changed,
// counted per table and state, 250 ms after the queue last ran dry (a
// burst that refills the queue meanwhile is summed into the same line).
// Per-object lines are at debug.
func (e *engine) summarize() {
	if e.summaryPending.Swap(true) {
		return
	}
	time.AfterFunc(250*time.Millisecond, func() {
		e.summaryPending.Store(false)
		if e.q.Len() > 0 {
			return // still busy: the next dry queue summarizes
		}
		if s := e.res.summary(); s != "" {
			e.log.WithField("results", s).Info("reconciled")
		}
	})
}

// ready calls Config.Ready once, after the results of the first pass are
// in STATE_DB (a reader woken by READY finds them).
func (e *engine) ready(ctx context.Context) {
	if e.cfg.Ready == nil {
		return
	}
	e.readyOnce.Do(func() {
		go func() {
			if e.res.waitFlushed(ctx) {
				e.cfg.Ready()
			}
		}()
	})
}

// fatal ends the daemon with err (a refusal no retry can fix).
func (e *engine) fatal(err error) {
	e.fatalOnce.Do(func() {
		e.fatalError = err
		e.cancel()
	})
}

func (e *engine) fatalErr() error {
	var err error
	e.fatalOnce.Do(func() {}) // no fatal after this point wins a race with the exit
	err = e.fatalError
	return err
}

// consume applies CONFIG_DB events to the cache and queue, and the gate's
// transitions; it closes first when the first scan is delivered.
func (e *engine) consume(ctx context.Context, tables []string, first chan<- struct{}) {
	syncCh := make(chan struct{})
	w := redisx.NewWatcher(e.cfgDB, redisx.WatchOptions{
		DB:     schema.ConfigDB,
		Tables: tables,
		Keys:   []string{schema.KeyConfigDBInitialized},
		// Hashes come packed, as the cache keeps them (Cache.setPacked).
		Packed: true,
		// OnSync runs in the watcher's delivery goroutine once the scan's
		// events were received here; the marker is handled in order.
		OnSync: func(ctx context.Context) {
			select {
			case syncCh <- struct{}{}:
			case <-ctx.Done():
			}
		},
		// The watcher keeps no map of every key it saw: a rescan asks
		// for the keys held here (cache and bad keys) to find the gone.
		Known: e.known,
		OnError: func(err error) {
			if redisx.IsPermission(err) {
				// err names the refused pattern and the literal ACL rule
				// (Redis allows a PSUBSCRIBE pattern only when a rule equals it).
				e.fatal(fmt.Errorf("watch CONFIG_DB: the redis user may not subscribe to the keyspace channels of db %d: %w", schema.ConfigDB, err))
				return
			}
			e.log.WithError(err).Warn("redis watcher")
		},
	})
	evs := w.EventBatches(ctx)
	idle := time.NewTimer(idleTrim) // trimConsumer's
	defer idle.Stop()
	for {
		select {
		case <-idle.C:
			e.trimConsumer(w)
			continue
		case batch, ok := <-evs:
			if !ok {
				return
			}
			idle.Reset(idleTrim)
			e.events(ctx, batch)
			w.Release(batch) // the cache keeps its own packed copy
			// The batches the watcher has ready now reach the queue
			// together, up to a worker's batch: the worker wakes once
			// and reconciles them in one pass instead of many passes of
			// one. A lone change waits for nothing. A batch is handled
			// whole before the sync marker (OnSync follows its receipt).
			for more := true; more && len(e.adds) < e.cfg.MaxBatch; {
				select {
				case batch, ok := <-evs:
					if !ok {
						e.flushAdds()
						return
					}
					e.events(ctx, batch)
					w.Release(batch)
				default:
					more = false
				}
			}
			e.flushAdds()
		case <-syncCh:
			e.m.inc(resyncsC)
			if !e.gate.synced.Swap(true) {
				for _, t := range tables {
					e.m.keys(t, e.cache.Len(t))
				}
				e.log.WithField("keys", e.cachedKeys(tables)).Info("CONFIG_DB scanned: reconciling")
				e.started.Store(true)
				e.enqueueAll(tables)
				close(first)
				if e.q.Len() == 0 { // nothing configured: ready as it is
					e.ready(ctx)
				}
				if !e.gate.initialized.Load() {
					e.log.Info("CONFIG_DB_INITIALIZED is not 1: what no key configures is kept until it is")
				}
			}
			e.maybeRelease()
		}
	}
}

// trimConsumer lets go of the arrays consume keeps from one batch of
// events to the next, and the watcher's (a burst's worth: the daemon
// idles with them otherwise); consume's goroutine, idle for idleTrim.
func (e *engine) trimConsumer(w *redisx.Watcher) {
	w.Trim()
	e.adds, e.addTags = nil, nil
	e.runSets, e.runHeld, e.runChanged, e.runIDs = nil, nil, nil, nil
}

// known yields every key the engine holds something for: cached keys
// (not the held ones: known gone already) and keys that are not config
// (redisx WatchOptions.Known).
func (e *engine) known(yield func(table, key string)) {
	e.cache.eachKey(yield)
	e.res.eachBad(yield)
}

func (e *engine) cachedKeys(tables []string) int {
	n := 0
	for _, t := range tables {
		n += e.cache.Len(t)
	}
	return n
}

// enqueueAll queues every cached key's item (the first scan).
func (e *engine) enqueueAll(tables []string) {
	for _, t := range tables {
		for _, k := range e.cache.Keys(t) {
			e.q.Add(e.ctrl.Item(t, k))
		}
	}
}

// maybeRelease lets held deletions go and queues the sweep once the gate
// is open.
func (e *engine) maybeRelease() {
	if !e.gate.open() {
		return
	}
	held := e.cache.releaseHeld()
	if len(held) > 0 {
		e.log.WithField("keys", len(held)).Info("CONFIG_DB_INITIALIZED is 1: removing what keys gone meanwhile configured")
	}
	for _, ck := range held {
		t, k := splitConfigKey(ck)
		e.q.Add(e.ctrl.Item(t, k))
	}
	e.requestSweep()
}

func (e *engine) requestSweep() {
	if e.started.Load() && e.gate.open() {
		e.q.Add(sweepItem)
	}
}

// work runs the reconcile worker until ctx is done: one item at a time,
// or up to MaxBatch ready items for a BatchController, taken from the
// queue under one lock and, when they succeed, finished under one lock
// (the queue's, the results', the metrics' per table): a burst of 100k
// keys takes no lock per key here.
func (e *engine) work(ctx context.Context) {
	bc, batching := e.ctrl.(BatchController)
	rc, refs := e.ctrl.(RefBatchController)
	refs = refs && batching && e.res.keyItems
	limit := 1
	if batching {
		limit = e.cfg.MaxBatch
	}
	e.q.SetIdle(idleTrim, func() {
		e.q.Trim()
		if t, ok := e.ctrl.(Trimmer); ok {
			t.Trim()
		}
	})
	items := make([]string, 0, limit+1)
	tags := make([]int32, 0, limit+1)
	var refBuf []Ref
	done := make([]string, 0, limit)
	own := make([]error, 0, 1) // errs when they are not the controller's slice
	for {
		var ok bool
		if items, tags, ok = e.q.GetBatchTagged(ctx, items[:0], tags[:0], limit); !ok {
			return
		}
		// The sweep runs after the batch's other items.
		sweep := false
		if i := slices.Index(items, sweepItem); i >= 0 {
			items, sweep = slices.Delete(items, i, i+1), true
			tags = slices.Delete(tags, i, i+1)
		}
		start := time.Now()
		// The pass's results are written together when it ends.
		pass := len(items) > 1
		if pass {
			e.res.beginPass()
		}
		var errs []error
		switch {
		case len(items) == 0:
			errs = own[:0]
		case refs:
			refBuf = refBuf[:0]
			for _, t := range tags {
				refBuf = append(refBuf, Ref{id: t})
			}
			errs = rc.ReconcileBatchRefs(ctx, items, refBuf)
		case batching:
			errs = bc.ReconcileBatch(ctx, items)
		default:
			errs = append(own[:0], e.ctrl.Reconcile(ctx, items[0]))
		}
		if sweep {
			// Never into the array of the controller's slice: a copy.
			items, errs = append(items, sweepItem), append(errs[:len(errs):len(errs)], e.sweep(ctx))
		}
		if pass {
			e.res.endPass()
		}
		took := time.Since(start).Seconds() / float64(len(items))
		done = done[:0]
		for i, it := range items {
			if errs[i] == nil && it != sweepItem {
				done = append(done, it)
			} else {
				e.finish(ctx, it, errs[i], took)
			}
		}
		e.finishOK(done, took)
		// The arrays are kept for the next pass, not the pass's keys:
		// after a burst's last pass they held 2,000 key strings, which
		// pinned the spans of the burst they sat in.
		clear(items)
		clear(done)
		if e.q.Len() == 0 {
			e.ready(ctx)
			e.summarize()
		}
	}
}

// finishOK ends the items that reconciled successfully: results of
// their keys that are gone are removed, their backoff is forgotten.
func (e *engine) finishOK(items []string, took float64) {
	if len(items) == 0 {
		return
	}
	e.res.reconciledAll(items)
	e.m.reconciledAll(items, took, e.tableOfItem)
	e.q.DoneAll(items)
}

// finish ends one item's reconcile: success forgets its backoff and
// removes results of its keys that are gone; failure backs off.
func (e *engine) finish(ctx context.Context, item string, err error, took float64) {
	defer e.q.Done(item)
	table := e.tableOfItem(item)
	if err == nil { // apart: errors.As below would put rq on the heap for every item
		e.q.Forget(item)
		if item != sweepItem {
			e.res.reconciled(item)
		}
		e.m.reconciled(table, "ok", took)
		return
	}
	var rq *requeueError
	switch {
	case errors.As(err, &rq):
		e.q.Forget(item)
		e.res.reconciled(item)
		e.q.AddAfter(item, rq.after)
		e.m.reconciled(table, "requeue", took)
	case ctx.Err() != nil:
	default:
		e.log.WithError(err).WithField("item", schema.Clip(item)).Warn("reconcile failed: retrying")
		e.q.AddRateLimited(item)
		e.m.reconciled(table, "retry", took)
	}
}

// tableOfItem is the metric label of an item: its table when the item is
// "TABLE|key", else "item".
func (e *engine) tableOfItem(item string) string {
	if item == sweepItem {
		return "sweep"
	}
	// Only a table of the controller's: an item that is not "T|k" (a
	// port, a key without its table) starts with anything, and a label
	// must be bounded and valid UTF-8 (prometheus panics otherwise).
	if t, k := splitConfigKey(item); k != "" && e.tables[t] {
		return t
	}
	return "item"
}

// sweep runs the controller's sweep, then removes results whose key is
// gone.
func (e *engine) sweep(ctx context.Context) error {
	if !e.gate.open() {
		return nil
	}
	err := e.ctrl.Sweep(ctx)
	e.m.swept(err)
	if err != nil {
		return err
	}
	if n := e.res.cleanStale(); n > 0 {
		e.log.WithField("results", n).Info("removed results of keys no longer configured")
	}
	return nil
}
