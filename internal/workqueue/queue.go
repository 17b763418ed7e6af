package workqueue

import (
	"context"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"sync"
	"time"
)

// Options configures a Queue. Zero values take the defaults.
type Options struct {
	BaseDelay time.Duration // first retry delay (default 5ms)
	MaxDelay  time.Duration // backoff cap (default 5s)
	QPS       float64       // overall limit on rate-limited re-adds (default 100); 0 = default
	Burst     int           // (default 1000)
}

const (
	defaultBaseDelay = 5 * time.Millisecond
	defaultMaxDelay  = 5 * time.Second
	defaultQPS       = 100
	defaultBurst     = 1000
)

// Queue is a deduplicating per-key work queue with per-key exponential
// backoff and an overall token-bucket rate limit. All methods are safe for
// concurrent use.
type Queue struct {
	opts Options

	mu    sync.Mutex
	queue []queued // FIFO of keys ready to be handed out: queue[head:]
	head  int
	// dirty: keys queued, handed out (processing) or finished and not
	// yet dropped from it (stale): a key is queued when it is in dirty
	// and neither processing nor stale. The worker does no operation on
	// this big map (a burst's every key): GetBatch leaves the key in it,
	// Done lists it in stale, and the next add (the consumer's
	// goroutine), or a Get that finds nothing to do, drops the stale.
	dirty map[string]struct{}
	stale []string // finished keys still in dirty
	// processing: keys handed out by Get and not yet Done; true when
	// added again meanwhile (Done queues it again)
	processing map[string]bool
	waiting    map[string]*waiter // keys waiting for AddAfter's delay
	failures   map[string]int     // per-key backoff exponent
	bucket     tokenBucket
	wake       chan struct{} // closed (and replaced) whenever a Get may proceed
	waiters    int           // Gets blocked on the current wake (not yet woken)
	shutdown   bool
	peaks      [2]int // high-water marks of dirty and failures (shrink)
	// idleAfter, onIdle: SetIdle's
	idleAfter time.Duration
	onIdle    func()
}

// queued is a key in the FIFO with the tag it was added with (AddAllTagged).
type queued struct {
	key string
	tag int32
}

// waiter is one pending AddAfter; the timer's callback acts only if it is
// still the key's current waiter (a sooner AddAfter supersedes it).
type waiter struct {
	at    time.Time
	timer *time.Timer
}

// New returns an empty queue.
func New(opts Options) *Queue {
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = defaultBaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = defaultMaxDelay
	}
	if opts.MaxDelay < opts.BaseDelay {
		opts.MaxDelay = opts.BaseDelay
	}
	if opts.QPS <= 0 {
		opts.QPS = defaultQPS
	}
	if opts.Burst <= 0 {
		opts.Burst = defaultBurst
	}
	return &Queue{
		opts:       opts,
		dirty:      map[string]struct{}{},
		processing: map[string]bool{},
		waiting:    map[string]*waiter{},
		failures:   map[string]int{},
		bucket:     tokenBucket{qps: opts.QPS, burst: float64(opts.Burst), tokens: float64(opts.Burst)},
		wake:       make(chan struct{}),
	}
}

// Add queues key for processing now. A key already waiting is not queued
// twice; a key being processed is queued again after its Done. Adds after
// ShutDown are ignored.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key, 0)
}

// AddAll is Add of every key under one lock: a worker blocked in Get
// wakes once and finds them all ready (one batch, not one per key).
func (q *Queue) AddAll(keys []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range keys {
		q.addLocked(k, 0)
	}
}

// AddAllTagged is AddAll where tags[i] (0 = none) goes with keys[i]: a
// key queued by it comes out of GetBatchTagged with its tag. The tag is
// a hint the queue does not interpret (the engine's Cache id of the
// key): a key already queued keeps the tag it was queued with, and a key
// re-queued by Done after it was added while being processed has none.
func (q *Queue) AddAllTagged(keys []string, tags []int32) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, k := range keys {
		q.addLocked(k, tags[i])
	}
}

func (q *Queue) addLocked(key string, tag int32) {
	if q.shutdown {
		return
	}
	if len(q.stale) > 0 {
		q.dropStaleLocked()
	}
	if again, ok := q.processing[key]; ok { // (a small map: a batch's keys)
		if !again {
			q.processing[key] = true // Done re-queues it
		}
		return
	}
	// One insert tells a key already dirty (the length stays): one map
	// operation per key of a burst, not a look-up and an insert.
	n := len(q.dirty)
	q.dirty[key] = struct{}{}
	if len(q.dirty) == n {
		return // queued already
	}
	shrink.Grew(q.dirty, &q.peaks[0])
	q.pushLocked(key, tag)
	q.signalLocked()
}

// dropStaleLocked drops the finished keys from dirty.
func (q *Queue) dropStaleLocked() {
	for _, k := range q.stale {
		delete(q.dirty, k)
	}
	clear(q.stale)
	q.stale = q.stale[:0]
	if cap(q.stale) > 4096 {
		q.stale = nil
	}
	q.dirty = shrink.Map(q.dirty, &q.peaks[0])
}

// SetIdle makes a Get that has waited after with nothing to hand out
// call f, once per Get, on its own goroutine and without the queue's
// lock, then wait on: the moment a burst is over and its worker may let go
// of what it kept for the next pass (Trim). Call it before the first Get.
func (q *Queue) SetIdle(after time.Duration, f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.idleAfter, q.onIdle = after, f
}

// Trim lets go of the arrays and maps a burst grew that hold nothing now
// (the FIFO, the finished keys, the keys being processed); the next burst
// makes them again. The map of queued keys is shrink's already.
func (q *Queue) Trim() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.queue) {
		q.queue, q.head = nil, 0
	}
	if len(q.stale) == 0 {
		q.stale = nil
	}
	if len(q.processing) == 0 {
		q.processing = map[string]bool{} // an emptied map keeps its table
	}
}

// pushLocked appends key to the FIFO; when the array is full and mostly
// handed out already, the rest moves to its front instead of growing it.
func (q *Queue) pushLocked(key string, tag int32) {
	if len(q.queue) == cap(q.queue) && q.head >= len(q.queue)/2 && q.head > 0 {
		n := copy(q.queue, q.queue[q.head:])
		clear(q.queue[n:])
		q.queue, q.head = q.queue[:n], 0
	}
	q.queue = append(q.queue, queued{key, tag})
}

// signalLocked wakes every blocked Get; they re-check the queue. With
// none blocked (a worker busy with a burst) it costs nothing, not a new
// channel per Add. The woken are no longer counted: the Adds that follow
// before they run (a burst's keys, one by one) find no waiter either.
func (q *Queue) signalLocked() {
	if q.waiters == 0 {
		return
	}
	close(q.wake)
	q.wake = make(chan struct{})
	q.waiters = 0
}

// AddAfter queues key once d has passed. When the key already waits for a
// sooner time that time is kept; a sooner d replaces a later one. d <= 0 is
// Add.
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	at := time.Now().Add(d)
	if w, ok := q.waiting[key]; ok {
		if !at.Before(w.at) {
			return
		}
		w.timer.Stop()
	}
	w := &waiter{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.waiting[key] != w {
			return // superseded by a sooner AddAfter, or shut down
		}
		delete(q.waiting, key)
		q.addLocked(key, 0)
	})
	q.waiting[key] = w
}

// AddRateLimited queues key after its backoff: BaseDelay doubled for every
// AddRateLimited since the last Forget, capped at MaxDelay, and no sooner
// than the overall token bucket (QPS, Burst) allows.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	shrink.Grew(q.failures, &q.peaks[1])
	d := backoff(q.opts.BaseDelay, q.opts.MaxDelay, n)
	if bd := q.bucket.reserve(time.Now()); bd > d {
		d = bd
	}
	q.mu.Unlock()
	q.AddAfter(key, d)
}

// backoff is base*2^n capped at max, without overflowing.
func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	if d > max {
		return max
	}
	return d
}

// Forget resets key's backoff (call it on success or on a terminal error).
// It does not remove the key from the queue.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.failures) == 0 {
		return // the usual case: no map work per success
	}
	delete(q.failures, key)
	q.failures = shrink.Map(q.failures, &q.peaks[1])
}

// Retries is the number of AddRateLimited calls for key since its last
// Forget.
func (q *Queue) Retries(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get blocks until a key is ready and hands it out; the caller must call
// Done(key) when finished with it. ok is false when ctx is done or the
// queue is shut down (keys still queued are then abandoned: the daemon is
// stopping and rescans on start).
func (q *Queue) Get(ctx context.Context) (key string, ok bool) {
	var one [1]string
	keys, ok := q.GetBatch(ctx, one[:0], 1)
	if !ok {
		return "", false
	}
	return keys[0], true
}

// GetBatch is Get of up to limit ready keys at once, under one lock: it
// blocks until at least one is ready and appends them to buf (returned).
// Each must be finished with Done or DoneAll. limit < 1 is 1.
func (q *Queue) GetBatch(ctx context.Context, buf []string, limit int) ([]string, bool) {
	buf, _, ok := q.getBatch(ctx, buf, nil, false, limit)
	return buf, ok
}

// GetBatchTagged is GetBatch that also appends each key's tag to tags
// (AddAllTagged; 0 = none): tags[i] is the tag of the key at buf[i].
func (q *Queue) GetBatchTagged(ctx context.Context, buf []string, tags []int32, limit int) ([]string, []int32, bool) {
	return q.getBatch(ctx, buf, tags, true, limit)
}

func (q *Queue) getBatch(ctx context.Context, buf []string, tags []int32, tagged bool, limit int) ([]string, []int32, bool) {
	limit = max(limit, 1)
	idled := false // SetIdle's f ran in this Get
	for {
		q.mu.Lock()
		if q.shutdown {
			q.mu.Unlock()
			return buf, tags, false
		}
		if len(q.queue) > q.head {
			for n := 0; n < limit && len(q.queue) > q.head; n++ {
				it := q.queue[q.head]
				q.queue[q.head] = queued{}
				q.head++
				q.processing[it.key] = false // (still in dirty: see dirty)
				buf = append(buf, it.key)
				if tagged {
					tags = append(tags, it.tag)
				}
			}
			if q.head == len(q.queue) {
				// Emptied: start again at the front of the same array
				// (no new one per burst), unless a big burst grew it.
				q.queue, q.head = q.queue[:0], 0
				if cap(q.queue) > 4096 {
					q.queue = nil
				}
			}
			q.mu.Unlock()
			return buf, tags, true
		}
		if len(q.stale) > 0 {
			q.dropStaleLocked() // nothing else to do meanwhile
		}
		wake := q.wake
		q.waiters++
		var idle <-chan time.Time
		var timer *time.Timer
		onIdle := q.onIdle
		if onIdle != nil && !idled {
			timer = time.NewTimer(q.idleAfter)
			idle = timer.C
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			q.unwait(wake)
			return buf, tags, false
		case <-wake: // signalLocked stopped counting this Get
		case <-idle:
			q.unwait(wake)
			onIdle()
			idled = true
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// unwait stops counting a Get that stopped waiting on wake by itself.
func (q *Queue) unwait(wake chan struct{}) {
	q.mu.Lock()
	if q.wake == wake { // still counted: not woken meanwhile
		q.waiters--
	}
	q.mu.Unlock()
}

// Done marks key as finished; if it was added again while being processed
// it is queued now.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.doneLocked(key)
}

// DoneAll is Forget and Done of every key under one lock (a batch that
// succeeded): one lock per batch, not two per key.
func (q *Queue) DoneAll(keys []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, key := range keys {
		if len(q.failures) > 0 {
			delete(q.failures, key)
		}
		q.doneLocked(key)
	}
	if len(q.failures) == 0 {
		q.failures = shrink.Map(q.failures, &q.peaks[1])
	}
}

func (q *Queue) doneLocked(key string) {
	again, ok := q.processing[key] // (it is still in dirty)
	if !ok {
		return // not handed out (a Done too many)
	}
	delete(q.processing, key)
	if again && !q.shutdown {
		q.pushLocked(key, 0) // queued: its dirty entry stands
		q.signalLocked()
		return
	}
	q.stale = append(q.stale, key)
}

// Len is the number of keys ready to be handed out (not counting keys being
// processed or waiting for a delay).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue) - q.head
}

// ShutDown stops the queue: blocked and later Gets return ok=false, pending
// delays are cancelled and later Adds are ignored.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.shutdown = true
	for k, w := range q.waiting {
		w.timer.Stop()
		delete(q.waiting, k)
	}
	q.signalLocked()
}

// ShuttingDown reports whether ShutDown was called.
func (q *Queue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// tokenBucket is the overall limit on rate-limited re-adds: Burst tokens,
// refilled at QPS per second; a reservation that finds the bucket empty
// waits for its token.
type tokenBucket struct {
	qps, burst float64
	tokens     float64
	last       time.Time
}

// reserve takes one token and returns how long to wait for it.
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	if !b.last.IsZero() {
		b.tokens += now.Sub(b.last).Seconds() * b.qps
		if b.tokens > b.burst {
			b.tokens = b.burst
		}
	}
	b.last = now
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.qps * float64(time.Second))
}
