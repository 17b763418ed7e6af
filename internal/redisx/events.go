package redisx

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

// NullField is SONiC's placeholder field of a key that has no fields
// ("NULL" = "NULL"); readers ignore it.
const NullField = "NULL"

// Event is a changed key's current state, as delivered by Events.
type Event struct {
	Table, Key string
	Fields     map[string]string // current hash without NULL; nil when Deleted
	Deleted    bool
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
func (w *Watcher) deliver(ctx context.Context, co *coalescer, send func(context.Context, []Event) bool) {
	retry := newBackoff()
	defer w.closeReadConn()
	var spare []item // the last batch's items array, taken into again
	for {
		clear(spare[:cap(spare)]) // its strings are not kept alive
		items, ok := co.takeInto(ctx, spare, readBatch)
		if !ok {
			return
		}
		spare = items[:0]
		events, err := w.read(ctx, items)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.report(fmt.Errorf("read changed keys of db %d: %w", w.opts.DB, err))
			co.requeue(items)
			if !retry.sleep(ctx) {
				return
			}
			continue
		}
		retry.reset()
		// events[i] belongs to items[i]; a barrier's slot is dropped and
		// the events are sent in runs between barriers.
		from, n := 0, 0
		for i, it := range items {
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
	}
}

// read fetches the current state of items in one pipeline; events[i]
// belongs to items[i] (zero for barriers). A connection error fails the
// whole batch (and closes the read connection: the next read dials
// again); per-key errors land in Event.Err.
//
// The pipeline goes over the watcher's own connection (dialRaw, SELECTed
// to the watched DB) and the replies are parsed straight into the events
// (replyreader.go): ~1 allocation per field-less key and 2 per hash, not
// go-redis' ~7.6. docs/performance.md, "Redis side", has the figures.
func (w *Watcher) read(ctx context.Context, items []item) ([]Event, error) {
	rc := &w.rc
	if rc.conn == nil {
		conn, rd, err := dialRaw(ctx, w.c.Options(), w.opts.DB)
		if err != nil {
			return nil, err
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
	o, conn := w.c.Options(), rc.conn
	conn.SetWriteDeadline(ioDeadline(ctx, o.WriteTimeout))
	conn.SetReadDeadline(ioDeadline(ctx, o.ReadTimeout))
	// A cancelled ctx ends a blocked write or read at once.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error) ([]Event, error) {
		stop()
		w.closeReadConn()
		return nil, err // connection trouble: retry the whole batch
	}
	if _, err := conn.Write(buf); err != nil {
		return fail(err)
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
		h, err := rc.rd.hashInto(w.reusedMap())
		re, reply := err.(respError) // hash returns it unwrapped
		switch {
		case reply:
			ev.Err = fmt.Errorf("hgetall %s: %w", it.full, ExplainPermission(re, "hgetall", it.full))
		case err != nil:
			return fail(err)
		case h == nil:
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
// its buckets after clear, so a 1,000-field hash's is let go.
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

// item is a dirty key or a sync barrier in the coalescer's FIFO: the
// key's whole name and its table's number, 24 bytes (a Change and the name
// were 56, and the dirty set's Change 32 per key more): deleting 100k keys
// queues nearly all of them while the deliverer reads, at the moment a
// restarted orchagent's heap is at its largest (docs/performance.md).
type item struct {
	full  string // TABLE<sep>KEY, or a plain key
	table uint16 // 1 + the table's index in WatchOptions.Tables; 0 = a plain key
	sync  bool
}

// change is the item's Change (Table one of tables, Key part of full).
func (it item) change(tables []string, sepLen int) Change {
	if it.table == 0 {
		return Change{Key: it.full}
	}
	t := tables[it.table-1]
	return Change{Table: t, Key: it.full[len(t)+sepLen:]}
}

// scanBacklog is how many dirty keys a scan may leave queued before it
// waits for the deliverer (Watcher.pace): a restart's scan of 100k keys
// otherwise queued every one of them at once — a dirty set and a FIFO of
// 100k entries at the moment the process's heap peaks (docs/performance.md).
const scanBacklog = 4 * readBatch

// queueBlock is the size of the FIFO's blocks.
const queueBlock = 256

// itemQueue is a FIFO in fixed blocks: a burst does not grow (and copy) one
// array to the burst's size, and each block goes as soon as it is read.
type itemQueue struct {
	blocks [][]item // blocks[0][head:] is the front
	head   int
	n      int
	spare  []item // the last block read, cleared: the next one pushed
}

func (q *itemQueue) push(it item) {
	if k := len(q.blocks); k == 0 || len(q.blocks[k-1]) == queueBlock {
		b := q.spare
		if b == nil {
			b = make([]item, 0, queueBlock)
		}
		q.blocks, q.spare = append(q.blocks, b), nil
	}
	last := &q.blocks[len(q.blocks)-1]
	*last = append(*last, it)
	q.n++
}

// pop appends up to max items from the front to out.
func (q *itemQueue) pop(out []item, max int) []item {
	for len(out) < max && q.n > 0 {
		b := q.blocks[0]
		k := min(max-len(out), len(b)-q.head)
		out = append(out, b[q.head:q.head+k]...)
		clear(b[q.head : q.head+k]) // the block may stay: drop its strings
		q.head += k
		q.n -= k
		if q.head == len(b) {
			if len(b) == queueBlock {
				q.spare = b[:0] // cleared above
			}
			q.blocks[0] = nil
			q.blocks = q.blocks[1:]
			q.head = 0
		}
	}
	if q.n == 0 {
		q.blocks, q.head = nil, 0
	}
	return out
}

// coalescer is a dirty set plus FIFO: a key is queued once however often
// it is marked until it is taken.
type coalescer struct {
	mu     sync.Mutex
	fifo   itemQueue
	dirty  map[string]struct{} // table keys by whole name
	plain  map[string]struct{} // plain keys (a name may look like a table key)
	peak   int                 // high-water mark of dirty (shrink)
	wake   chan struct{}       // cap 1: something was queued
	room   chan struct{}       // cap 1: something was taken
	closed bool
	tables []string // the watcher's tables (item.table)
	sep    string
	last   uint16 // item.table of the last table key marked
}

func newCoalescer(tables []string, sep string) *coalescer {
	return &coalescer{dirty: map[string]struct{}{}, plain: map[string]struct{}{}, tables: tables, sep: sep,
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// itemOf is ch as an item; full is its whole name when known ("" = join
// Table and Key).
func (c *coalescer) itemOf(ch Change, full string) item {
	if ch.Table == "" {
		return item{full: ch.Key}
	}
	if full == "" {
		full = ch.Table + c.sep + ch.Key
	}
	// A burst is one table's keys: compare with the last one first. The
	// watcher marks only keys of its tables.
	if c.last == 0 || c.tables[c.last-1] != ch.Table {
		for i, t := range c.tables {
			if t == ch.Table {
				c.last = uint16(i + 1)
				break
			}
		}
	}
	return item{full: full, table: c.last}
}

// set is the dirty set it belongs to.
func (c *coalescer) set(it item) map[string]struct{} {
	if it.table == 0 {
		return c.plain
	}
	return c.dirty
}

func (c *coalescer) mark(ch Change, full string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.itemOf(ch, full)
	// One insert tells a key already marked (the length stays), not a
	// look-up and an insert: 100k keys of a burst, 100k map operations.
	set := c.set(it)
	n := len(set)
	set[it.full] = struct{}{}
	if len(set) == n {
		return
	}
	if it.table != 0 {
		shrink.Grew(c.dirty, &c.peak)
	}
	c.fifo.push(it)
	c.signal()
}

// barrier queues a sync marker behind every key marked so far.
func (c *coalescer) barrier() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fifo.push(item{sync: true})
	c.signal()
}

// requeue puts items back in front (after a failed read), keeping their
// order; a key marked again meanwhile moves up rather than being queued
// twice, so a barrier still follows every key marked before it.
func (c *coalescer) requeue(items []item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	again := map[item]bool{}
	for _, it := range items {
		if !it.sync {
			set := c.set(it)
			if _, ok := set[it.full]; ok {
				again[it] = true
			}
			set[it.full] = struct{}{}
		}
	}
	rest := c.fifo.pop(nil, c.fifo.n)
	for _, it := range items {
		c.fifo.push(it)
	}
	for _, it := range rest {
		if !it.sync && again[it] {
			continue
		}
		c.fifo.push(it)
	}
	c.signal()
}

func (c *coalescer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *coalescer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.signal()
	select {
	case c.room <- struct{}{}:
	default:
	}
}

// take waits for up to max items; ok=false when ctx is done or closed.
func (c *coalescer) take(ctx context.Context, max int) ([]item, bool) {
	return c.takeInto(ctx, nil, max)
}

// takeInto is take appending to buf[:0] (the deliverer's array of the
// last batch, cleared) when it has room for max.
func (c *coalescer) takeInto(ctx context.Context, buf []item, max int) ([]item, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, false
		}
		if c.fifo.n > 0 {
			if cap(buf) < min(max, c.fifo.n) {
				buf = make([]item, 0, min(max, c.fifo.n))
			}
			items := c.fifo.pop(buf[:0], max)
			for _, it := range items {
				if !it.sync {
					delete(c.set(it), it.full)
				}
			}
			c.dirty = shrink.Map(c.dirty, &c.peak)
			c.mu.Unlock()
			select {
			case c.room <- struct{}{}:
			default:
			}
			return items, true
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, false
		case <-c.wake:
		}
	}
}

// waitRoom waits until fewer than limit items are queued (or the
// coalescer is closed, or ctx done).
func (c *coalescer) waitRoom(ctx context.Context, limit int) {
	for {
		c.mu.Lock()
		n, closed := c.fifo.n, c.closed
		c.mu.Unlock()
		if n < limit || closed {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.room:
		}
	}
}
