package redisx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

// Change says a key of a watched table may have changed (level-triggered:
// the consumer re-reads the key). Key is the part after "TABLE|"; for a
// plain key of WatchOptions.Keys, Table is "" and Key the whole key.
type Change struct{ Table, Key string }

// WatchOptions configures a Watcher.
type WatchOptions struct {
	DB     int                       // database whose __keyspace@N__ channels are watched
	Tables []string                  // table names; keys are TABLE<Separator>KEY
	Keys   []string                  // plain keys, reported with Table ""
	OnSync func(ctx context.Context) // called after each full (re)scan completes

	// Separator between table and key; default "|" (CONFIG_DB, STATE_DB).
	// APPL_DB and COUNTERS_DB use ":".
	Separator string
	// OnError, when set, is told about transient failures (disconnects,
	// failed scans); the watcher keeps retrying on its own.
	OnError func(err error)
	// RunIDInterval is how often INFO server run_id is polled to notice a
	// restarted Redis (default 1s).
	RunIDInterval time.Duration
	// Known, when set, calls yield for every key of Tables the consumer
	// holds something for (the engine: its cached keys and its bad
	// keys): the watcher then keeps no map of every key it has seen (a
	// map operation per notification, and a map of every key). A scan
	// asks it first and reports every such key the scan does not find
	// (deleted while no notification reached us) — a Change like any
	// other: the read that follows tells whether it is gone. nil: the
	// watcher keeps its own map of the keys it has seen.
	Known func(yield func(table, key string))
	// Packed, when set, delivers a table key's hash as Event.Packed (the
	// fields in shrink.Pack's encoding, NULL left out) with Fields nil:
	// a consumer that keeps hashes packed (the engine's Cache) gets them
	// so, without a map filled here and packed again there.
	Packed bool
}

// WholeDBTables is how many tables make a Watcher subscribe one pattern for
// its whole DB (__keyspace@N__:*, the table filter done in Go) instead of
// one pattern per table. redis-server glob-matches every keyspace
// notification of every DB against every pattern of every client (~50 ns
// each), while a notification of a table nobody watches that reaches a
// whole-DB watcher costs a delivery (~0.2 us in redis-server, a message
// to decode in the daemon): orchagent (most of CONFIG_DB's traffic, 15+
// tables) takes one pattern, syncd's and impaird's two-table watches of
// CONFIG_DB keep theirs and never see a route's notification.
// docs/performance.md, "Redis side", has the figures.
const WholeDBTables = 4

// Watcher watches tables of one DB: PSUBSCRIBE __keyspace@N__:TABLE|* (or
// __keyspace@N__:* for WholeDBTables or more) first, then SCAN TABLE|*,
// calling notify for every key seen; after a disconnect or a Redis restart
// (run_id change) it resubscribes and rescans, and also notifies keys it
// knew that are now gone. A Watcher runs once at a time.
type Watcher struct {
	c        *redis.Client
	opts     WatchOptions
	prefix   string // "__keyspace@N__:"
	prefixB  []byte // prefix, and the separator, as bytes
	sepB     []byte
	patterns map[string]string // PSUBSCRIBE pattern -> table ("" for the whole-DB pattern)
	wholeDB  bool              // one pattern; the table is the key's part before the separator
	tableIdx map[string]uint32 // table -> index in opts.Tables
	channels []string          // SUBSCRIBE channels of the plain keys
	rescan   chan struct{}     // cap 1: a (re)scan is wanted

	mu        sync.Mutex
	known     map[string]knownKey // full key -> what we know of it
	knownPeak int                 // high-water mark of known (shrink)
	epoch     uint32              // incremented when a scan starts
	runID     string              // of the server the last scan read

	emitMu sync.Mutex // serializes notify calls

	// pace, when set (Events, EventBatches), is called by a scan after
	// each page of keys and waits while the consumer is far behind.
	pace func(ctx context.Context)

	rc readConn // Events' reads of changed keys (the deliverer's)

	// reuse: empty maps of released batches (Release), for the reads
	reuseMu     sync.Mutex
	reuse       []map[string]string
	reuseEvents [][]Event // arrays of released batches

	testMarked func(Change) // tests: called after Events marked a key dirty
}

// knownKey is a table key seen by a scan or a notification: 8 bytes
// beside the key, not two strings' worth (100k routes are 100k of these).
type knownKey struct {
	table uint32 // index in opts.Tables
	epoch uint32 // scan epoch in which it was last seen or touched
}

// NewWatcher returns a Watcher of opts.Tables and opts.Keys in c's server.
// opts.DB names the watched DB; when c is connected to another DB, the
// watcher uses its own client on opts.DB so scans read the watched DB.
func NewWatcher(c *redis.Client, opts WatchOptions) *Watcher {
	if c.Options().DB != opts.DB {
		o := *c.Options()
		o.DB = opts.DB
		c = redis.NewClient(&o)
	}
	if opts.Separator == "" {
		opts.Separator = "|"
	}
	if opts.RunIDInterval <= 0 {
		opts.RunIDInterval = time.Second
	}
	w := &Watcher{
		c:        c,
		opts:     opts,
		prefix:   fmt.Sprintf("__keyspace@%d__:", opts.DB),
		patterns: map[string]string{},
		rescan:   make(chan struct{}, 1),
		known:    map[string]knownKey{},
		tableIdx: map[string]uint32{},
	}
	w.wholeDB = true
	for i, t := range opts.Tables {
		if _, dup := w.tableIdx[t]; !dup {
			w.tableIdx[t] = uint32(i)
		}
		// A table name holding the separator ("A|B") cannot be found
		// by cutting the key at its first separator.
		if strings.Contains(t, opts.Separator) {
			w.wholeDB = false
		}
	}
	if len(w.tableIdx) < WholeDBTables {
		w.wholeDB = false
	}
	switch {
	case w.wholeDB:
		w.patterns[w.prefix+"*"] = ""
	default:
		for _, t := range opts.Tables {
			w.patterns[w.prefix+escapeGlob(t+opts.Separator)+"*"] = t
		}
	}
	w.prefixB, w.sepB = []byte(w.prefix), []byte(opts.Separator)
	seen := map[string]bool{}
	for _, k := range opts.Keys {
		if !seen[k] { // a duplicate would keep the confirmation count short
			seen[k] = true
			w.channels = append(w.channels, w.prefix+k)
		}
	}
	return w
}

// Run watches until ctx is done, calling notify (never concurrently) for
// every key found by a scan, every keyspace notification and every known
// key gone after a rescan. Notifications of one key may repeat: the
// consumer re-reads the key and acts on its current state. It returns nil
// when ctx is done, an error only when there is nothing to watch.
//
// Keyspace notifications must be on (EnsureKeyspaceEvents with
// WatchClasses); without them only the scans report changes.
func (w *Watcher) Run(ctx context.Context, notify func(Change)) error {
	return w.run(ctx, func(ch Change, _ string) { notify(ch) }, w.opts.OnSync)
}

// emitFunc is notify with the key's full name (TABLE<sep>KEY, or the
// plain key), which Events reads without joining it again.
type emitFunc func(ch Change, full string)

func (w *Watcher) run(ctx context.Context, notify emitFunc, onSync func(context.Context)) error {
	total := len(w.patterns) + len(w.channels)
	if total == 0 {
		return errors.New("redis watcher: no tables and no keys to watch")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	patterns := slices.Sorted(maps.Keys(w.patterns))
	sub, err := newSubscriber(w.c.Options(), w.channels, patterns)
	if err != nil {
		return err
	}

	emit := func(ch Change, full string) {
		w.emitMu.Lock()
		defer w.emitMu.Unlock()
		notify(ch, full)
	}

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // unblocks Receive, which has no deadline
		defer wg.Done()
		<-ctx.Done()
		sub.close()
	}()
	go func() {
		defer wg.Done()
		w.scanLoop(ctx, emit, onSync)
	}()
	go func() {
		defer wg.Done()
		w.pollLoop(ctx, sub)
	}()
	w.receiveLoop(ctx, sub, total, emit)
	cancel()
	wg.Wait()
	return nil
}

// receiveLoop reads the subscription. Every complete (re)subscription —
// the confirmation whose count reaches all our channels — asks for a
// rescan: whatever happened while the connection was down (or before the
// first subscription) was not notified.
func (w *Watcher) receiveLoop(ctx context.Context, sub *subscriber, total int, emit emitFunc) {
	retry := newBackoff()
	for {
		msg, err := sub.receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.report(fmt.Errorf("keyspace subscription db %d: %w", w.opts.DB, w.explain(err)))
			sub.drop() // a refused subscription is tried again on a new connection
			if !retry.sleep(ctx) {
				return
			}
			continue
		}
		retry.reset()
		switch string(msg.kind) {
		case "subscribe", "psubscribe":
			if msg.count >= int64(total) {
				w.requestRescan()
			}
		case "message", "pmessage":
			w.handle(msg, emit)
		}
	}
}

// handle turns one keyspace notification into a Change. Only the key's
// name of a watched table (or plain key) becomes a string.
func (w *Watcher) handle(m push, emit emitFunc) {
	keyb, ok := bytes.CutPrefix(m.channel, w.prefixB)
	if !ok {
		return
	}
	if string(m.kind) == "message" {
		key := string(keyb)
		emit(Change{Key: key}, key)
		return
	}
	table, ok := w.patterns[string(m.pattern)]
	if !ok {
		return
	}
	if w.wholeDB {
		// The one pattern sees every key of the DB: the table is the
		// part before the first separator, and must be one we watch
		// (a plain key of opts.Keys came through SUBSCRIBE too).
		t, _, found := bytes.Cut(keyb, w.sepB)
		i, watched := w.tableIdx[string(t)]
		if !found || !watched {
			return
		}
		table = w.opts.Tables[i]
	}
	key := string(keyb)
	if w.opts.Known == nil {
		w.mu.Lock()
		switch string(m.payload) {
		case "del", "expired", "evicted", "rename_from", "move_from":
			delete(w.known, key)
			w.known = shrink.Map(w.known, &w.knownPeak)
		default:
			w.known[key] = knownKey{table: w.tableIdx[table], epoch: w.epoch}
			shrink.Grew(w.known, &w.knownPeak)
		}
		w.mu.Unlock()
	}
	emit(Change{Table: table, Key: key[len(table)+len(w.opts.Separator):]}, key)
}

func (w *Watcher) requestRescan() {
	select {
	case w.rescan <- struct{}{}:
	default: // one is pending already
	}
}

// scanLoop runs a full scan whenever one is requested, retrying failures.
func (w *Watcher) scanLoop(ctx context.Context, emit emitFunc, onSync func(context.Context)) {
	retry := newBackoff()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.rescan:
		}
		if err := w.scan(ctx, emit); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.report(fmt.Errorf("rescan db %d: %w", w.opts.DB, err))
			if !retry.sleep(ctx) {
				return
			}
			w.requestRescan()
			continue
		}
		retry.reset()
		if onSync != nil {
			onSync(ctx)
		}
	}
}

// scan notifies every existing key of the tables, every plain key, and
// every known key neither seen by this scan nor touched by a notification
// since it began (deleted while we were not listening).
//
// It first makes sure notifications are on: a restarted Redis without the
// redis.conf line has lost the daemon's CONFIG SET.
func (w *Watcher) scan(ctx context.Context, emit emitFunc) error {
	if err := EnsureKeyspaceEvents(ctx, w.c, WatchClasses); err != nil {
		var nce *NotifyConfigError
		if !errors.As(err, &nce) {
			return err
		}
		w.report(err) // maybe set in redis.conf; scan anyway
	}
	id, err := RunID(ctx, w.c)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.epoch++
	epoch := w.epoch
	w.runID = id
	w.mu.Unlock()
	// With opts.Known: the consumer's keys as the scan starts, each
	// dropped when the scan finds it; what is left may be gone. (A key
	// the consumer learns meanwhile came by a notification; one it drops
	// meanwhile is read again: a Change is only "read it".)
	var want map[string]uint32
	if w.opts.Known != nil {
		want = map[string]uint32{}
		w.opts.Known(func(table, key string) {
			if i, ok := w.tableIdx[table]; ok {
				want[table+w.opts.Separator+key] = i
			}
		})
	}
	for _, table := range w.opts.Tables {
		prefix := table + w.opts.Separator
		match := escapeGlob(prefix) + "*"
		var cursor uint64
		for {
			keys, next, err := w.c.Scan(ctx, cursor, match, 1000).Result()
			if err != nil {
				return fmt.Errorf("scan %s: %w", match, err)
			}
			if want != nil {
				for _, k := range keys {
					delete(want, k)
				}
			} else {
				w.mu.Lock()
				for _, k := range keys {
					w.known[k] = knownKey{table: w.tableIdx[table], epoch: epoch}
				}
				w.mu.Unlock()
			}
			for _, k := range keys {
				emit(Change{Table: table, Key: k[len(prefix):]}, k)
			}
			if w.pace != nil {
				w.pace(ctx)
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	for _, k := range w.opts.Keys {
		emit(Change{Key: k}, k)
	}
	var gone []Change
	for k, i := range want {
		t := w.opts.Tables[i]
		gone = append(gone, Change{Table: t, Key: k[len(t)+len(w.opts.Separator):]})
	}
	w.mu.Lock()
	for k, kk := range w.known {
		if kk.epoch != epoch {
			delete(w.known, k)
			t := w.opts.Tables[kk.table]
			gone = append(gone, Change{Table: t, Key: k[len(t)+len(w.opts.Separator):]})
		}
	}
	w.known = shrink.Map(w.known, &w.knownPeak)
	w.mu.Unlock()
	for _, ch := range gone {
		emit(ch, "")
	}
	return nil
}

// pollLoop notices a restarted Redis by a run_id other than the last
// scan's, and checks the subscription connection with PING (a dead one is
// then replaced, which resubscribes and rescans).
func (w *Watcher) pollLoop(ctx context.Context, sub *subscriber) {
	t := time.NewTicker(w.opts.RunIDInterval)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if id, err := RunID(ctx, w.c); err == nil {
			w.mu.Lock()
			changed := w.runID != "" && id != w.runID
			w.mu.Unlock()
			if changed {
				w.requestRescan()
			}
		}
		if n%5 == 4 {
			sub.ping(max(pingTimeout, 15*w.opts.RunIDInterval)) // a failure fails the read: receiveLoop reports it and reconnects
		}
	}
}

// RunID returns the server's INFO server run_id, which changes whenever
// redis-server restarts.
func RunID(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("info server: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("info server: no run_id")
}

// explain turns a NOPERM of the subscription (a channel rule of the ACL
// user) into a *PermissionError naming one refused channel and the rule
// to add; Redis does not say which one it refused.
func (w *Watcher) explain(err error) error {
	if !IsPermission(err) {
		return err
	}
	if len(w.channels) > 0 {
		return ExplainPermission(err, "subscribe", w.channels[0])
	}
	patterns := slices.Sorted(maps.Keys(w.patterns))
	if len(patterns) == 0 {
		return ExplainPermission(err, "psubscribe")
	}
	return ExplainPermission(err, "psubscribe", patterns[0])
}

func (w *Watcher) report(err error) {
	if w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}

// escapeGlob quotes the Redis glob characters of s.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// backoff is the retry delay of the watcher's loops: 50ms doubling to 2s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }

func (b *backoff) reset() { b.d = 50 * time.Millisecond }

// sleep waits the current delay (false when ctx is done) and doubles it.
func (b *backoff) sleep(ctx context.Context) bool {
	t := time.NewTimer(b.d)
	defer t.Stop()
	if b.d < 2*time.Second {
		b.d *= 2
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
