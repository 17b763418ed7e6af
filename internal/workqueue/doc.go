// Package workqueue is the per-key reconcile queue of the daemons (the
// client-go workqueue idea, small): keys are deduplicated while waiting, a
// key being processed is never handed out twice at once (a re-add during
// processing is queued for after Done), failures back off exponentially per
// key up to a cap, and an overall token-bucket rate limit bounds retries.
//
//	func New(opts Options) *Queue
//	type Options struct {
//		BaseDelay time.Duration // first retry delay (default 5ms)
//		MaxDelay  time.Duration // backoff cap (default 5s)
//		QPS       float64       // overall limit on rate-limited re-adds (default 100); 0 = default
//		Burst     int           // (default 1000)
//	}
//	func (q *Queue) Add(key string)                        // now (dedup)
//	func (q *Queue) AddAfter(key string, d time.Duration)
//	func (q *Queue) AddRateLimited(key string)             // after the key's backoff
//	func (q *Queue) Forget(key string)                     // reset the key's backoff (on success / terminal error)
//	func (q *Queue) Retries(key string) int
//	func (q *Queue) Get(ctx context.Context) (key string, ok bool) // blocks; ok=false when ctx done or shut down
//	func (q *Queue) Done(key string)
//	func (q *Queue) GetBatch(ctx context.Context, buf []string, limit int) ([]string, bool) // up to limit at once
//	func (q *Queue) DoneAll(keys []string)                 // Forget + Done of each, one lock
//	func (q *Queue) AddAllTagged(keys []string, tags []int32) // AddAll, each key with a hint (engine: Cache id)
//	func (q *Queue) GetBatchTagged(ctx context.Context, buf []string, tags []int32, limit int) ([]string, []int32, bool)
//	func (q *Queue) Len() int
//	func (q *Queue) ShutDown()
//	func (q *Queue) ShuttingDown() bool
//
// Typical worker loop:
//
//	for {
//		key, ok := q.Get(ctx)
//		if !ok {
//			return
//		}
//		if err := reconcile(ctx, key); err != nil && !terminal(err) {
//			q.AddRateLimited(key) // retried after its backoff
//		} else {
//			q.Forget(key) // success or a terminal error: reset the backoff
//		}
//		q.Done(key)
//	}
//
// The worker's Get and Done do no operation on the map of queued keys
// (a burst's every key): a finished key is dropped from it by the next
// add, on the adder's goroutine, or by a Get that finds nothing to do.
//
// After ShutDown, Get returns ok=false at once even if keys are still
// queued (the daemon is stopping; it rescans on start). It must not know
// what a key means.
package workqueue
