package redisx

import (
	"context"
	"sync"
	"time"

	"github.com/switchyard-net/switchyard/internal/shrink"
)

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

	testWaiting func() // tests: called when a take starts waiting
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
	items, _, ok := c.takeAfterWait(ctx, buf, max, max, time.Time{})
	return items, ok
}

// takeAfterWait is takeInto taking at most idleMax items (when fewer
// than max) if it had to wait for the first of them and the time is
// capFrom or later: the first keys of a burst that finds the deliverer
// idle (a zero capFrom: whenever it waited). waited says it did.
func (c *coalescer) takeAfterWait(ctx context.Context, buf []item, max, idleMax int, capFrom time.Time) (items []item, waited, ok bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, waited, false
		}
		if c.fifo.n > 0 {
			if waited && (capFrom.IsZero() || !time.Now().Before(capFrom)) {
				max = min(max, idleMax)
			}
			items := c.popLocked(buf, max)
			c.mu.Unlock()
			c.tookSome()
			return items, waited, true
		}
		c.mu.Unlock()
		waited = true
		if c.testWaiting != nil {
			c.testWaiting()
		}
		select {
		case <-ctx.Done():
			return nil, waited, false
		case <-c.wake:
		}
	}
}

// tryTake takes up to max items into buf[:0] without waiting: nil when
// fewer than least (at least one) are queued, or the coalescer is closed.
func (c *coalescer) tryTake(buf []item, max, least int) []item {
	c.mu.Lock()
	if c.closed || c.fifo.n == 0 || c.fifo.n < least {
		c.mu.Unlock()
		return nil
	}
	items := c.popLocked(buf, max)
	c.mu.Unlock()
	c.tookSome()
	return items
}

// popLocked takes up to max items from the FIFO's front into buf[:0] (a
// new array when buf has no room) and drops them from the dirty sets.
func (c *coalescer) popLocked(buf []item, max int) []item {
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
	return items
}

// tookSome tells a scan waiting for room (waitRoom) that items went.
func (c *coalescer) tookSome() {
	select {
	case c.room <- struct{}{}:
	default:
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
