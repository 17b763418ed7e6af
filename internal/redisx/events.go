package redisx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NullField is SONiC's placeholder field of a key that has no fields
// ("NULL" = "NULL"); readers ignore it.
const NullField = "NULL"

// Event is a changed key's current state, as delivered by Events.
type Event struct {
	Table, Key string
	Fields     map[string]string // current hash without NULL; nil when Deleted
	// Packed is the hash in shrink.Pack's encoding (NULL left out; ""
	// for none) instead of Fields, when WatchOptions.Packed is set: the
	// consumer may keep the string.
	Packed  string
	Deleted bool
	// Value is the value of a plain string key (Table ""); Fields is nil
	// then. A plain key holding a hash fills Fields instead.
	Value string
	// Name is the key's whole name, TABLE<sep>KEY (the plain key's name
	// for Table ""); Key is a substring of it, so a consumer keeping both
	// keeps one string. (A key found gone by a rescan has it joined.)
	Name string
	// Err is set when the key exists but cannot be read as a hash (e.g.
	// WRONGTYPE); the consumer reports it. Connection failures are not
	// delivered: the key is read again once Redis answers.
	Err error
}

// readBatch is how many dirty keys are read in one pipeline.
const readBatch = 512

// firstBatch is the most keys read in the first pipeline of a burst (a
// take that had to wait for its first key); the next takes up to
// readBatch. The consumer gets a burst's first keys after one short
// round trip instead of after the answer of a whole readBatch (~270–500
// keys at 1k addresses: the kernel's first add came a median 7.6 ms after
// the burst's start); a burst costs one more round trip and one more pass
// of the engine's worker. Growing by doubling (32, 64, ... 512) started
// as early but cost more passes and CPU at 1k (docs/performance.md,
// "Engine: cost per key", a burst's first kernel write sooner).
const firstBatch = 32

// burstGap is how long the deliverer must have handed nothing over for a
// take that waits to count as a burst's start (firstBatch). A wait inside
// a burst — the deliverer caught up with a writer such as redis-cli
// --pipe, whose HSETs and so their notifications arrive in pieces — takes
// whatever has come, up to readBatch: one engine pass (an HGETALL round
// trip, a kernel sendmsg, a STATE_DB flush) for it, not one more per 32
// keys. A lone change after idle is one key either way. Short: redis-cli's
// notifications come every ~0.3 ms on a quiet host, and bursts written
// back to back (BenchmarkEnginePath1k's, ~1.5-2 ms apart) keep their
// small first read.
const burstGap = time.Millisecond

// Events is the coalescing convenience on top of Watcher: it runs the
// watcher until ctx is done and delivers each changed key's *current* hash
// (or Deleted) once per burst — any number of notifications of a key
// queued while it waits give one read of its latest state. Keys are
// delivered in the order they first became dirty. The channel is closed
// when ctx is done.
//
// In this mode WatchOptions.OnSync runs once every key found by the scan
// has been handed to the channel (not merely noticed).
func (w *Watcher) Events(ctx context.Context) <-chan Event {
	out := make(chan Event)
	w.start(ctx, func(ctx context.Context, evs []Event) bool {
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}, func() { close(out) })
	return out
}

// EventBatches is Events handing over each read batch (up to 512 keys,
// in order) as one slice: a burst costs the consumer one channel receive
// (and the two goroutines one switch) per batch, not per key. Coalescing
// is the same: the deliverer is at most one batch ahead of the consumer.
// OnSync runs once every batch before it was received; a consumer that
// handles a whole batch before anything else sees the scan's keys before
// the sync, as with Events.
func (w *Watcher) EventBatches(ctx context.Context) <-chan []Event {
	out := make(chan []Event)
	w.start(ctx, func(ctx context.Context, evs []Event) bool {
		select {
		case out <- evs:
			return true
		case <-ctx.Done():
			return false
		}
	}, func() { close(out) })
	return out
}

// start runs the watcher and the deliverer until ctx is done, then calls
// done (which closes the consumer's channel).
func (w *Watcher) start(ctx context.Context, send func(context.Context, []Event) bool, done func()) {
	co := newCoalescer(w.opts.Tables, w.opts.Separator)
	w.pace = func(ctx context.Context) { co.waitRoom(ctx, scanBacklog) }
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer co.close()
		if err := w.run(ctx, func(ch Change, full string) {
			co.mark(ch, full)
			if w.testMarked != nil {
				w.testMarked(ch)
			}
		}, func(context.Context) { co.barrier() }); err != nil {
			w.report(err)
		}
	}()
	go func() {
		defer wg.Done()
		defer cancel()
		w.deliver(ctx, co, send)
	}()
	go func() {
		wg.Wait()
		done()
	}()
}

// deliver reads dirty keys in pipelined batches and sends their events
// (every event before a barrier is sent before its OnSync).
//
// The next batch is read while the current one is handed over: once a
// batch's replies are in, the keys queued behind it (up to readBatch,
// taken without waiting) are written at once, before the batch goes to
// the consumer — redis-server answers them while the consumer takes and
// works on the current batch, and their replies are there when the
// deliverer comes back for them, where it used to write them only once the
// consumer had received the current batch and then wait a round trip
// (docs/performance.md, "addresses: bursts that trickle in"). Replies come
// in the order the batches were written; a connection failure puts both
// batches back, in order.
func (w *Watcher) deliver(ctx context.Context, co *coalescer, send func(context.Context, []Event) bool) {
	retry := newBackoff()
	defer w.closeReadConn()
	var free [][]item // arrays of delivered batches, cleared, taken into again
	spare := func() []item {
		if n := len(free); n > 0 {
			b := free[n-1]
			free = free[:n-1]
			return b
		}
		return nil
	}
	var cur, next []item // written; cur's replies come first
	var handed time.Time // when the last batch was handed over
	failed := func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		w.closeReadConn() // a batch written behind is dropped with it
		w.report(fmt.Errorf("read changed keys of db %d: %w", w.opts.DB, err))
		co.requeue(append(append(make([]item, 0, len(cur)+len(next)), cur...), next...))
		cur, next = nil, nil
		return retry.sleep(ctx)
	}
	for {
		if cur == nil {
			// A burst's first keys (the take waited for them, nothing
			// handed over for burstGap): firstBatch.
			items, _, ok := co.takeAfterWait(ctx, spare(), readBatch, firstBatch, handed.Add(burstGap))
			if !ok {
				return
			}
			cur = items
			if err := w.write(ctx, cur); err != nil {
				if !failed(err) {
					return
				}
				continue
			}
		}
		events, err := w.recv(ctx, cur)
		if err != nil {
			if !failed(err) {
				return
			}
			continue
		}
		// The keys queued behind cur are written now, once cur's replies
		// are in (written before, redis-server would answer both in one go
		// and cur's replies would wait for the next batch's work), and
		// before cur is handed over. (Waiting for firstBatch of them
		// before taking any made no difference in BenchmarkEnginePath1k.)
		// Not after a full batch: the deliverer is behind a backlog, its
		// next take after the hand-over is full too, and reading ahead
		// only ran the consumer beside a busy worker (orchagent's CPU per
		// route +5% in 10k bursts, docs/performance.md, addr5).
		if len(cur) >= readBatch {
			// the read after the hand-over, as before
		} else if items := co.tryTake(spare(), readBatch, 1); items != nil {
			next = items
			if err := w.write(ctx, next); err != nil {
				if ctx.Err() != nil {
					return
				}
				// cur is in and goes on; next is read again (write
				// closed the connection: the next write dials).
				w.report(fmt.Errorf("read changed keys of db %d: %w", w.opts.DB, err))
				co.requeue(next)
				next = nil
			}
		}
		retry.reset()
		// events[i] belongs to cur[i]; a barrier's slot is dropped and
		// the events are sent in runs between barriers.
		from, n := 0, 0
		for i, it := range cur {
			if !it.sync {
				events[n] = events[i]
				n++
				continue
			}
			if n > from && !send(ctx, events[from:n:n]) {
				return
			}
			from = n
			if w.opts.OnSync != nil {
				w.opts.OnSync(ctx)
			}
		}
		if n > from && !send(ctx, events[from:n:n]) {
			return
		}
		handed = time.Now()
		clear(cur[:cap(cur)]) // its strings are not kept alive
		if len(free) < 2 {
			free = append(free, cur[:0])
		}
		cur, next = next, nil
	}
}

// read fetches the current state of items in one pipeline (write, then
// recv); events[i] belongs to items[i] (zero for barriers).
func (w *Watcher) read(ctx context.Context, items []item) ([]Event, error) {
	if err := w.write(ctx, items); err != nil {
		return nil, err
	}
	return w.recv(ctx, items)
}

// write sends the HGETALL (GET for a plain key) of every item in one
// write, on the watcher's own connection (dialRaw, SELECTed to the watched
// DB; dialled here when there is none). Its replies are read by recv, in
// the order the batches were written: the deliverer writes a burst's next
// batch once the current one's replies are in, before it hands that one
// over, so redis-server answers it while the consumer takes the current
// one (deliver). A
// connection failure closes the connection (the next write dials again).
func (w *Watcher) write(ctx context.Context, items []item) error {
	rc := &w.rc
	if rc.conn == nil {
		conn, rd, err := dialRaw(ctx, w.c.Options(), w.opts.DB)
		if err != nil {
			return err
		}
		rc.conn, rc.rd = conn, rd
	}
	buf := rc.wbuf[:0]
	for _, it := range items {
		switch {
		case it.sync:
		case it.table == 0:
			buf = appendCommand(buf, "GET", it.full)
		default:
			buf = appendCommand(buf, "HGETALL", it.full)
		}
	}
	rc.wbuf = shrinkScratch(buf)
	conn := rc.conn
	conn.SetWriteDeadline(ioDeadline(ctx, w.c.Options().WriteTimeout))
	// A cancelled ctx ends a blocked write at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	_, err := conn.Write(buf)
	stop()
	if err != nil {
		w.closeReadConn()
		return err
	}
	return nil
}

// recv reads the replies of the oldest batch written (items, as given to
// write) and parses them straight into the events (replyreader.go): ~1
// allocation per field-less key and 2 per hash, not go-redis' ~7.6
// (docs/performance.md, "Redis side"). events[i] belongs to items[i]
// (zero for barriers). A connection error fails the whole batch (and
// closes the connection: every batch written on it is read again); per-key
// errors land in Event.Err.
func (w *Watcher) recv(ctx context.Context, items []item) ([]Event, error) {
	rc := &w.rc
	if rc.conn == nil {
		return nil, errors.New("read connection closed")
	}
	conn := rc.conn
	conn.SetReadDeadline(ioDeadline(ctx, w.c.Options().ReadTimeout))
	// A cancelled ctx ends a blocked read at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) ([]Event, error) {
		stop()
		w.closeReadConn()
		return nil, err // connection trouble: retry the whole batch
	}
	events := w.eventArray(len(items))
	var wrongType []int // GETs of a plain key holding a hash, read below
	for i, it := range items {
		if it.sync {
			continue
		}
		ch := it.change(w.opts.Tables, len(w.opts.Separator))
		ev := Event{Table: ch.Table, Key: ch.Key, Name: it.full}
		if ch.Table == "" {
			v, null, err := rc.rd.bulk()
			re, reply := err.(respError) // bulk returns it unwrapped
			switch {
			case reply && strings.HasPrefix(string(re), "WRONGTYPE"):
				wrongType = append(wrongType, i)
			case reply:
				ev.Err = fmt.Errorf("get %s: %w", ch.Key, ExplainPermission(re, "get", ch.Key))
			case err != nil:
				return fail(err)
			case null:
				ev.Deleted = true
			default:
				ev.Value = v
			}
			events[i] = ev
			continue
		}
		var h map[string]string
		var err error
		exists := false
		if w.opts.Packed {
			ev.Packed, exists, err = rc.rd.hashPacked()
		} else {
			h, err = rc.rd.hashInto(w.reusedMap())
			exists = h != nil
		}
		re, reply := err.(respError) // hash returns it unwrapped
		switch {
		case reply:
			ev.Err = fmt.Errorf("hgetall %s: %w", it.full, ExplainPermission(re, "hgetall", it.full))
		case err != nil:
			return fail(err)
		case !exists:
			ev.Deleted = true
		default:
			ev.Fields = h
		}
		events[i] = ev
	}
	stop()
	for _, i := range wrongType {
		ev := &events[i]
		f, ok, err := ReadHash(ctx, w.c, ev.Key)
		if err != nil && !isServerError(err) {
			return nil, err
		}
		ev.Fields, ev.Deleted, ev.Err = f, !ok && err == nil, err
	}
	return events, nil
}

// maxReused bounds the maps kept for reuse (Release): a read batch's
// worth, the maps of the batch the consumer handed back while the
// deliverer fills the next (~150 KB of two-field maps kept after a
// burst). maxReusedLen bounds the fields a map may have had: a map keeps
// its buckets after clear, so a 1,000-field hash's is let go. (Two
// batches' worth saved 0.07 allocation per key in BenchmarkEnginePath10k
// for 150 KB more kept: not worth it.)
const (
	maxReused    = readBatch
	maxReusedLen = 16
)

// Release hands back a batch received from EventBatches once the
// consumer is done with it and keeps none of its Fields maps (the
// strings in them, Table, Key and Value may be kept: only the map
// objects are reused). The deliverer fills them with later reads
// instead of a new map per changed key — a burst of 100k routes makes
// 100k maps of garbage otherwise. Not calling it is always correct.
//
// The batch's array is reused too: it must not be read after Release.
func (w *Watcher) Release(batch []Event) {
	var held [64]map[string]string
	maps := held[:0]
	for i := range batch {
		if f := batch[i].Fields; f != nil && len(f) <= maxReusedLen {
			clear(f)
			maps = append(maps, f)
		}
		if len(maps) == len(held) {
			w.putMaps(maps, nil)
			maps = maps[:0]
		}
	}
	clear(batch) // its strings are not kept alive by a reused array
	w.putMaps(maps, batch)
}

// maxReusedArrays bounds the event arrays kept for reuse (the deliverer
// is at most one batch ahead of the consumer; 48 KiB each).
const maxReusedArrays = 2

func (w *Watcher) putMaps(maps []map[string]string, events []Event) {
	w.reuseMu.Lock()
	defer w.reuseMu.Unlock()
	n := min(len(maps), maxReused-len(w.reuse))
	w.reuse = append(w.reuse, maps[:n]...)
	switch {
	case cap(events) == 0:
	case len(w.reuseEvents) < maxReusedArrays:
		w.reuseEvents = append(w.reuseEvents, events[:0])
	default: // full: the smallest gives way to a bigger one
		small := 0
		for i, a := range w.reuseEvents {
			if cap(a) < cap(w.reuseEvents[small]) {
				small = i
			}
		}
		if cap(events) > cap(w.reuseEvents[small]) {
			w.reuseEvents[small] = events[:0]
		}
	}
}

// eventArray returns n zero events: a released batch's array when one is
// big enough, else a new one.
func (w *Watcher) eventArray(n int) []Event {
	w.reuseMu.Lock()
	for i, a := range w.reuseEvents {
		if cap(a) >= n {
			last := len(w.reuseEvents) - 1
			w.reuseEvents[i] = w.reuseEvents[last]
			w.reuseEvents[last] = nil
			w.reuseEvents = w.reuseEvents[:last]
			w.reuseMu.Unlock()
			return a[:n] // zero: cleared by Release
		}
	}
	w.reuseMu.Unlock()
	return make([]Event, n)
}

// Trim lets go of the event arrays and maps Release handed back (a
// burst's batches: ~0.1 MB kept for good by an idle daemon otherwise);
// the next batches make them again. For a consumer that knows it is idle.
func (w *Watcher) Trim() {
	w.reuseMu.Lock()
	defer w.reuseMu.Unlock()
	clear(w.reuseEvents)
	w.reuseEvents = nil
	clear(w.reuse)
	w.reuse = nil
}

// reusedMap returns an empty map Release handed back, or nil (the
// deliverer's; a batch's maps are taken from the shared list at once).
func (w *Watcher) reusedMap() map[string]string {
	rc := &w.rc
	if len(rc.reuse) == 0 {
		w.reuseMu.Lock()
		rc.reuse, w.reuse = w.reuse, rc.reuse[:0]
		w.reuseMu.Unlock()
		if len(rc.reuse) == 0 {
			return nil
		}
	}
	m := rc.reuse[len(rc.reuse)-1]
	rc.reuse[len(rc.reuse)-1] = nil
	rc.reuse = rc.reuse[:len(rc.reuse)-1]
	return m
}

// readConn is the connection of the Watcher's reads of changed keys
// (used by the deliverer only).
type readConn struct {
	conn net.Conn
	rd   *pushReader
	wbuf []byte // the pipeline's commands (reused)
	// reuse: released maps taken from Watcher.reuse (reusedMap)
	reuse []map[string]string
}

// closeReadConn closes the read connection; the next read dials again.
func (w *Watcher) closeReadConn() {
	if w.rc.conn != nil {
		w.rc.conn.Close()
	}
	w.rc = readConn{reuse: w.rc.reuse}
}

// ReadHash returns a key's hash without the NULL placeholder; ok=false if
// the key is absent. A key holding only NULL gives an empty map and ok.
func ReadHash(ctx context.Context, c *redis.Client, key string) (map[string]string, bool, error) {
	h, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, false, fmt.Errorf("hgetall %s: %w", key, err)
	}
	if len(h) == 0 {
		return nil, false, nil
	}
	delete(h, NullField)
	return h, true, nil
}
