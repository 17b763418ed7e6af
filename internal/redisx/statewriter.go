package redisx

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"
)

// AllFields as the only owned field makes a StateWriter own every field of
// the keys it writes (COUNTERS_DB hashes with a dynamic set of counters).
// Delete then removes the whole key.
const AllFields = "*"

// StateWriter writes STATE_DB/COUNTERS_DB hashes whose named fields this
// daemon owns: it writes only values that changed since it last wrote them
// (a cache of what it wrote), removes only its own fields — the key
// vanishes by itself when no field is left — and pipelines bursts. Several
// daemons can thus share one hash (orchagent state/reason, syncd
// oper_status). Safe for concurrent use.
type StateWriter struct {
	c        *redis.Client
	owned    map[string]bool
	ownedAll bool
	list     []string // owned fields, sorted

	mu    sync.Mutex // held across a flush so the cache follows Redis' order
	cache map[string]map[string]string
	runID string // for CheckRestart
}

// NewStateWriter returns a writer of the fields owned (or of every field
// when owned is [AllFields]) on c's DB.
func NewStateWriter(c *redis.Client, owned []string) *StateWriter {
	w := &StateWriter{c: c, owned: map[string]bool{}, cache: map[string]map[string]string{}}
	for _, f := range owned {
		if f == AllFields {
			w.ownedAll = true
			continue
		}
		if !w.owned[f] {
			w.owned[f] = true
			w.list = append(w.list, f)
		}
	}
	sort.Strings(w.list)
	return w
}

// Set makes key's owned fields equal fields: changed or new values are
// written (HSET), owned fields absent from fields are removed (HDEL).
// Nothing is sent when Redis already holds fields as last written. A field
// not owned by the writer is an error and nothing is written.
func (w *StateWriter) Set(ctx context.Context, key string, fields map[string]string) error {
	b := w.Batch()
	b.Set(key, fields)
	return b.Flush(ctx)
}

// Delete removes key's owned fields (HDEL; DEL when the writer owns all
// fields). Other owners' fields stay.
func (w *StateWriter) Delete(ctx context.Context, key string) error {
	b := w.Batch()
	b.Delete(key)
	return b.Flush(ctx)
}

// Batch collects Sets and Deletes for one pipelined round trip (syncd
// writes bursts of thousands). A Batch is used by one goroutine.
func (w *StateWriter) Batch() *Batch { return &Batch{w: w} }

// Batch is a list of writes sent by Flush in one MULTI/EXEC pipeline, so
// readers see each batch whole.
type Batch struct {
	w   *StateWriter
	ops []op
}

// op is one queued Set (fields, never nil) or Delete (del).
type op struct {
	key    string
	fields map[string]string
	del    bool
}

// Set queues StateWriter.Set(key, fields); fields is copied. A field the
// writer does not own fails the whole Flush.
func (b *Batch) Set(key string, fields map[string]string) {
	f := maps.Clone(fields)
	if f == nil {
		f = map[string]string{}
	}
	b.ops = append(b.ops, op{key: key, fields: f})
}

// Delete queues StateWriter.Delete(key).
func (b *Batch) Delete(key string) { b.ops = append(b.ops, op{key: key, del: true}) }

// Len is the number of queued operations.
func (b *Batch) Len() int { return len(b.ops) }

// Flush sends the queued operations' differences in one round trip (none
// when nothing changed) and empties the batch. On failure the cache of the
// batch's keys is dropped, so the next Set of them writes in full.
func (b *Batch) Flush(ctx context.Context) error {
	ops := b.ops
	b.ops = nil
	w := b.w
	for _, o := range ops {
		for f := range o.fields {
			if !w.ownedAll && !w.owned[f] {
				return fmt.Errorf("state writer: field %q of %s is not among the owned fields %v", f, o.key, w.list)
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	pipe := w.c.TxPipeline()
	touched := map[string]bool{}
	n := 0
	for _, o := range ops {
		if w.queue(ctx, pipe, o) {
			touched[o.key] = true
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		for k := range touched {
			delete(w.cache, k)
		}
		return fmt.Errorf("write %d state keys: %w", len(touched), err)
	}
	return nil
}

// queue adds o's difference from the cache to pipe and updates the cache;
// false when there is nothing to send.
func (w *StateWriter) queue(ctx context.Context, pipe redis.Pipeliner, o op) bool {
	cached, known := w.cache[o.key]
	if o.del {
		delete(w.cache, o.key)
		switch {
		case known && len(cached) == 0:
			return false
		case w.ownedAll:
			pipe.Del(ctx, o.key)
		case known:
			pipe.HDel(ctx, o.key, slices.Sorted(maps.Keys(cached))...)
		default: // unknown key: it may hold any owned field
			pipe.HDel(ctx, o.key, w.list...)
		}
		return true
	}
	var set []any
	for _, f := range slices.Sorted(maps.Keys(o.fields)) {
		if v, ok := cached[f]; !ok || v != o.fields[f] {
			set = append(set, f, o.fields[f])
		}
	}
	var del []string
	if known {
		for f := range cached {
			if _, ok := o.fields[f]; !ok {
				del = append(del, f)
			}
		}
		sort.Strings(del)
	} else {
		for _, f := range w.list {
			if _, ok := o.fields[f]; !ok {
				del = append(del, f)
			}
		}
	}
	if len(set) > 0 {
		pipe.HSet(ctx, o.key, set...)
	}
	if len(del) > 0 {
		pipe.HDel(ctx, o.key, del...)
	}
	if len(o.fields) == 0 {
		// Nothing of ours is left. Remember "known empty" only for this
		// flush; a later Set rewrites from scratch, which keeps the cache
		// from growing with every key ever deleted.
		delete(w.cache, o.key)
	} else {
		w.cache[o.key] = o.fields
	}
	return len(set) > 0 || len(del) > 0
}

// Load adopts the owned fields of existing keys matching pattern (a SCAN
// MATCH glob, e.g. "PORT_TABLE|*"), so that after a daemon restart Set
// writes only differences and Keys lists what may be stale. Only hashes
// are considered.
func (w *StateWriter) Load(ctx context.Context, pattern string) error {
	if id, err := RunID(ctx, w.c); err == nil {
		w.mu.Lock()
		if w.runID == "" { // a restart after this Load is then noticed
			w.runID = id
		}
		w.mu.Unlock()
	}
	var cursor uint64
	for {
		keys, next, err := w.c.ScanType(ctx, cursor, pattern, 1000, "hash").Result()
		if err != nil {
			return fmt.Errorf("load %s: scan: %w", pattern, err)
		}
		if err := w.adopt(ctx, keys); err != nil {
			return fmt.Errorf("load %s: %w", pattern, err)
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// adopt reads the owned fields of keys in one pipeline into the cache.
func (w *StateWriter) adopt(ctx context.Context, keys []string) error {
	if len(keys) == 0 || (!w.ownedAll && len(w.list) == 0) {
		return nil
	}
	pipe := w.c.Pipeline()
	cmds := make([]redis.Cmder, len(keys))
	for i, k := range keys {
		if w.ownedAll {
			cmds[i] = pipe.HGetAll(ctx, k)
		} else {
			cmds[i] = pipe.HMGet(ctx, k, w.list...)
		}
	}
	// Hold the lock across the read: a Set racing with it must not have
	// its newer value replaced in the cache by the older one read here.
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = pipe.Exec(ctx) // per-command errors below
	for i, k := range keys {
		got := map[string]string{}
		switch cmd := cmds[i].(type) {
		case *redis.MapStringStringCmd:
			h, err := cmd.Result()
			if err != nil {
				if isServerError(err) {
					continue // changed type since the scan
				}
				return fmt.Errorf("hgetall %s: %w", k, err)
			}
			got = h
		case *redis.SliceCmd:
			vals, err := cmd.Result()
			if err != nil {
				if isServerError(err) {
					continue
				}
				return fmt.Errorf("hmget %s: %w", k, err)
			}
			for j, v := range vals {
				if s, ok := v.(string); ok {
					got[w.list[j]] = s
				}
			}
		}
		if len(got) == 0 {
			delete(w.cache, k)
		} else {
			w.cache[k] = got
		}
	}
	return nil
}

// Keys returns, sorted, the keys holding owned fields as far as the writer
// knows (what it wrote or loaded).
func (w *StateWriter) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.cache))
	for k, f := range w.cache {
		if len(f) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Forget drops the cache (after a Redis restart) so the next Set of every
// key writes it in full.
func (w *StateWriter) Forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cache = map[string]map[string]string{}
}

// CheckRestart compares the server's run_id with the one seen by the
// previous call (or the first Load); when Redis restarted (its data is gone) it calls Forget
// and returns true: the daemon should then Set every key again. Call it
// periodically, e.g. on each resync tick.
func (w *StateWriter) CheckRestart(ctx context.Context) (bool, error) {
	id, err := RunID(ctx, w.c)
	if err != nil {
		return false, err
	}
	w.mu.Lock()
	prev := w.runID
	w.runID = id
	w.mu.Unlock()
	if prev == "" || prev == id {
		return false, nil
	}
	w.Forget()
	return true, nil
}
