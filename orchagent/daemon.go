package orchagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/workqueue"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Config configures the daemon (cmd/orchagent's flags).
type Config struct {
	RedisURL string
	NetNS    string
	Log      *logrus.Entry
}

// netlinkRecvBuffer is large enough that a bulk load's echoes rarely
// overflow; an overflow is survived anyway (relist, re-enqueue all).
const netlinkRecvBuffer = 32 << 20

// Run is the daemon: it subscribes to netlink events and primes the kernel
// view, watches the CONFIG_DB tables and CONFIG_DB_INITIALIZED, and runs
// the reconcile worker until ctx is done.
func Run(ctx context.Context, c Config) error {
	log := c.Log
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	conn, err := redisx.Connect(c.RedisURL)
	if err != nil {
		return fmt.Errorf("connect redis %s: %w", c.RedisURL, err)
	}
	defer conn.Close()
	cfgDB, stateDB := conn.DB(schema.ConfigDB), conn.DB(schema.StateDB)
	// Wait for Redis rather than die with it (a switch boots its daemons
	// together); a refused CONFIG SET is final.
	for {
		err := redisx.EnsureKeyspaceEvents(ctx, cfgDB, redisx.WatchClasses)
		var nce *redisx.NotifyConfigError
		if err == nil || errors.As(err, &nce) || ctx.Err() != nil {
			if err != nil {
				return err
			}
			break
		}
		log.WithError(err).Warn("waiting for redis")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	k, err := netlinkmgr.Open(netlinkmgr.Options{NetNS: c.NetNS})
	if err != nil {
		return fmt.Errorf("open netlink (netns %q): %w", c.NetNS, err)
	}
	defer k.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := workqueue.New(workqueue.Options{BaseDelay: 10 * time.Millisecond, MaxDelay: 3 * time.Second})
	defer q.ShutDown()

	sw := redisx.NewStateWriter(stateDB, schema.ResultFieldNames)
	for _, t := range Tables() {
		if err := sw.Load(ctx, schema.ResultTable(t)+schema.StateSep+"*"); err != nil {
			return fmt.Errorf("load previous results: %w", err)
		}
	}
	rw := newResultWriter(sw, log)
	o := New(Options{
		Kernel:  k,
		Results: rw,
		Log:     log,
		Enqueue: q.Add,
		ConfigExists: func(table, key string) bool {
			n, err := cfgDB.Exists(ctx, schema.ConfigKey(table, key)).Result()
			return err != nil || n > 0 // in doubt, keep the object
		},
	})

	kev, err := k.Watch(ctx, netlinkmgr.WatchOptions{RecvBuffer: netlinkRecvBuffer})
	if err != nil {
		return fmt.Errorf("subscribe to netlink events: %w", err)
	}
	if err := o.Prime(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(3)
	go func() {
		defer wg.Done()
		for ev := range kev {
			o.HandleEvent(ev)
		}
	}()
	go func() {
		defer wg.Done()
		rw.run(ctx)
	}()

	var initialized, synced, seenInit atomic.Bool
	var heldMu sync.Mutex
	held := map[string]bool{} // deletions waiting for CONFIG_DB_INITIALIZED
	maybeSweep := func(ctx context.Context) {
		if initialized.Load() && synced.Load() {
			heldMu.Lock()
			for k := range held {
				q.Add(k)
			}
			clear(held)
			heldMu.Unlock()
			o.RequestSweep()
			rw.cleanStale(ctx, o)
		}
	}
	// holdDelete: once CONFIG_DB_INITIALIZED was "1", a key that vanishes
	// while it is not "1" (Redis restarted empty, or was flushed) must not
	// tear the switch down: the deletion waits for the config to be
	// declared complete again. Redis is asked directly because the rescan
	// may deliver the table keys before CONFIG_DB_INITIALIZED itself.
	holdDelete := func(ctx context.Context) bool {
		if !seenInit.Load() {
			return false
		}
		v, err := cfgDB.Get(ctx, schema.KeyConfigDBInitialized).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return false
		}
		return strings.TrimSpace(v) != "1"
	}
	w := redisx.NewWatcher(cfgDB, redisx.WatchOptions{
		DB:     schema.ConfigDB,
		Tables: Tables(),
		Keys:   []string{schema.KeyConfigDBInitialized},
		OnSync: func(ctx context.Context) {
			if restarted, err := sw.CheckRestart(ctx); err == nil && restarted {
				log.Warn("redis restarted: rewriting every result")
				rw.rewrite(o)
			}
			first := !synced.Swap(true)
			if first {
				log.WithField("keys", len(o.ConfigKeys())).Info("CONFIG_DB scanned")
			}
			maybeSweep(ctx)
		},
		OnError: func(err error) { log.WithError(err).Warn("redis watcher") },
	})
	evs := w.Events(ctx)
	go func() {
		defer wg.Done()
		for ev := range evs {
			switch {
			case ev.Err != nil:
				log.WithError(ev.Err).WithField("key", ev.Key).Warn("unreadable CONFIG_DB key")
			case ev.Table == "":
				now := !ev.Deleted && strings.TrimSpace(ev.Value) == "1"
				if now {
					seenInit.Store(true)
				}
				if now && !initialized.Swap(true) {
					log.Info("CONFIG_DB_INITIALIZED is 1: stale owned objects may be swept")
					maybeSweep(ctx)
				} else if !now {
					initialized.Store(false)
				}
			case ev.Deleted && holdDelete(ctx):
				log.WithFields(logrus.Fields{"table": ev.Table, "key": ev.Key}).
					Warn("key gone while CONFIG_DB_INITIALIZED is not 1: kernel objects kept until it is")
				o.HoldDelete(ev.Table, ev.Key)
				heldMu.Lock()
				held[schema.ConfigKey(ev.Table, ev.Key)] = true
				heldMu.Unlock()
			case ev.Deleted:
				o.DeleteConfig(ev.Table, ev.Key)
			default:
				o.SetConfig(ev.Table, ev.Key, ev.Fields)
			}
		}
	}()

	log.WithFields(logrus.Fields{"redis": conn.String(), "netns": c.NetNS}).Info("orchagent running")
	keys := make([]string, 0, maxBatch)
	for {
		key, ok := q.Get(ctx)
		if !ok {
			break
		}
		// Take every key already ready (up to maxBatch), so a burst's route
		// writes go to the kernel in batches.
		keys = append(keys[:0], key)
		for len(keys) < maxBatch && q.Len() > 0 {
			k, ok := q.Get(ctx)
			if !ok {
				break
			}
			keys = append(keys, k)
		}
		errs := o.ReconcileBatch(ctx, keys)
		for i, key := range keys {
			if err := errs[i]; err != nil && ctx.Err() == nil {
				if key == sweepKey {
					log.WithError(err).Warn("sweep incomplete: retrying")
				}
				q.AddRateLimited(key)
			} else {
				q.Forget(key)
			}
			q.Done(key)
		}
	}
	cancel()
	return nil
}

// resultWriter batches results into StateWriter pipelines: a burst of
// reconciles becomes a few round trips, and a Redis outage only delays the
// writes (the newest result of each key wins).
type resultWriter struct {
	sw  *redisx.StateWriter
	log *logrus.Entry

	mu      sync.Mutex
	pending map[string]*schema.Result // STATE_DB key → result; nil = delete
	kick    chan struct{}
}

func newResultWriter(sw *redisx.StateWriter, log *logrus.Entry) *resultWriter {
	return &resultWriter{sw: sw, log: log, pending: map[string]*schema.Result{}, kick: make(chan struct{}, 1)}
}

func (w *resultWriter) put(key string, r *schema.Result) {
	w.mu.Lock()
	w.pending[key] = r
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// SetResult queues the owned fields of T_TABLE|key.
func (w *resultWriter) SetResult(table, key string, r schema.Result) {
	w.put(schema.ResultKey(table, key), &r)
}

// DeleteResult queues the removal of the owned fields of T_TABLE|key.
func (w *resultWriter) DeleteResult(table, key string) {
	w.put(schema.ResultKey(table, key), nil)
}

// rewrite queues every current result again (after a Redis restart).
func (w *resultWriter) rewrite(o *Orch) {
	o.mu.Lock()
	all := make(map[string]schema.Result, len(o.results))
	for k, r := range o.results {
		all[k] = r
	}
	o.mu.Unlock()
	for k, r := range all {
		table, key, _ := strings.Cut(k, schema.ConfigSep)
		w.SetResult(table, key, r)
	}
}

// cleanStale removes results left in STATE_DB by keys deleted while
// orchagent was down.
func (w *resultWriter) cleanStale(ctx context.Context, o *Orch) {
	for _, sk := range w.sw.Keys() {
		table, key, ok := configKeyOfResult(sk)
		if !ok {
			continue
		}
		if _, have := o.Result(schema.ConfigKey(table, key)); have || o.configured(table, key) {
			continue
		}
		w.DeleteResult(table, key)
	}
}

// configKeyOfResult maps "T_TABLE|k" back to CONFIG_DB table T and key k
// (FDB_TABLE|Vlan100:mac → FDB, Vlan100|mac).
func configKeyOfResult(sk string) (string, string, bool) {
	st, key, ok := strings.Cut(sk, schema.StateSep)
	if !ok {
		return "", "", false
	}
	for _, t := range Tables() {
		if schema.ResultTable(t) != st {
			continue
		}
		if t == schema.TableFDB {
			key = strings.Replace(key, ":", schema.ConfigSep, 1)
		}
		return t, key, true
	}
	return "", "", false
}

func (w *resultWriter) run(ctx context.Context) {
	retry := 50 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		for {
			w.mu.Lock()
			batch := w.pending
			w.pending = map[string]*schema.Result{}
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			b := w.sw.Batch()
			for k, r := range batch {
				if r == nil {
					b.Delete(k)
				} else {
					b.Set(k, r.Fields())
				}
			}
			if err := b.Flush(ctx); err != nil {
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					return
				}
				w.log.WithError(err).Warn("write results to STATE_DB: retrying")
				w.mu.Lock()
				for k, r := range batch {
					if _, newer := w.pending[k]; !newer {
						w.pending[k] = r
					}
				}
				w.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(retry):
				}
				if retry < 2*time.Second {
					retry *= 2
				}
				continue
			}
			retry = 50 * time.Millisecond
		}
	}
}
