package engine

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/paged"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// maxReason bounds a result's reason: a reason quotes input (clipped by
// schema) and kernel messages, never megabytes.
const maxReason = 1024

// results owns the result hashes of one controller's tables in STATE_DB:
// it remembers the current result of every key (to rewrite them all when
// STATE_DB is emptied), overrides results of keys that are not valid
// config (bad), and batches writes through a redisx.StateWriter so a burst
// of reconciles is a few round trips and a Redis outage only delays them.
type results struct {
	sw     *redisx.StateWriter
	log    *logrus.Entry
	cache  *Cache
	tables []string
	item   func(table, key string) string
	owns   func(table, key string) bool // nil: every result key of tables
	// keyItems: the controller's item of a key is "TABLE|key" (KeyItems)
	keyItems bool
	m        *metrics

	mu      sync.Mutex
	peaks   [3]int                         // high-water marks of current, bad, byItem (shrink)
	byID    paged.Slice[slot]              // results of cached keys, by Cache id
	current map[string]kept                // "T|k" -> result of a key no longer cached
	bad     map[string]schema.Result       // "T|k" -> engine-made error
	nbad    atomic.Int64                   // len(bad), written under mu: clearBad asks it first
	byItem  map[string]map[string]struct{} // item -> "T|k" with a result
	pending map[string]write               // STATE_DB key -> write (deletions, keys without a slot)
	spare   map[string]write               // the last batch's map, emptied, for the next
	pendIDs []int32                        // slots to write (slot.queued), written after pending
	spareID []int32                        // the last batch's pendIDs, emptied
	epoch   uint32                         // the last slot.ep handed out
	dropped []redisx.SlotEpoch             // slots evicted: the writer's fingerprints of them go
	writing bool                           // a batch is being sent
	// The worker's pass of several items (beginPass, endPass): slots
	// queued meanwhile wait in passIDs and go out together when it ends,
	// one STATE_DB transaction instead of one per result as each comes.
	inPass  bool
	passIDs []int32
	kick    chan struct{}
	// counts of results set since the last summary: table -> state -> n
	counts map[string]map[schema.State]int
}

func newResults(sw *redisx.StateWriter, log *logrus.Entry, cache *Cache, tables []string, item func(string, string) string, m *metrics) *results {
	r := &results{sw: sw, log: log, cache: cache, tables: tables, item: item, m: m,
		current: map[string]kept{}, bad: map[string]schema.Result{},
		byItem: map[string]map[string]struct{}{}, pending: map[string]write{},
		kick: make(chan struct{}, 1)}
	cache.mu.Lock()
	cache.onEvict = r.evict
	cache.mu.Unlock()
	return r
}

func clipReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return schema.Clip(s[:maxReason]) + "…"
}

// set records the result of table|key and queues its write. A key that is
// bad keeps the engine's error; a key no longer cached is ignored (its
// deletion is on the way); a held key's result is remembered, not written.
func (r *results) set(table, key string, res schema.Result, extra schema.Fields) {
	r.setOf("", nil, table, key, res, extra)
}

// setOf is set with ck, "TABLE|key" when the caller has that string ("" =
// none): with a KeyItems controller it is the key's item too, so no
// string is built for either; and with e (nil = none), the cache entry
// the result is of (Cache.cachedSince).
func (r *results) setOf(ck string, e *Entry, table, key string, res schema.Result, extra schema.Fields) {
	res.Reason = clipReason(res.Reason)
	res.Warning = clipReason(res.Warning)
	if res.State == schema.StateOK {
		res.Reason = ""
	}
	rec := record{res: res, extra: maps.Clone(extra)}
	// An item that is the key itself (orchagent) is the key's name here
	// too: one string, not two (none when the caller gave it).
	var it string
	if r.keyItems && ck != "" && isConfigKey(ck, table, key) {
		it = ck
	} else {
		it = r.item(table, key)
		ck = it
		if !isConfigKey(it, table, key) {
			ck = table + schema.ConfigSep + key
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Under mu: a key the cache drops after this is evicted after this
	// result is in its slot (evict waits for mu), so nothing is lost.
	var id int32
	if e != nil && e.Table == table && e.Key == key && e.Gen != "" && r.cache.dels.Load() == e.dels {
		id = e.id // no key deleted since e was read: still cached, same id
	} else if id2, ok := r.cache.idOf(table, key); ok {
		id = id2
	} else {
		return // not cached: its deletion is on the way
	}
	if len(r.bad) > 0 {
		if _, bad := r.bad[ck]; bad {
			return
		}
	}
	s := r.slotLocked(id, ck)
	if s.has && s.k.record().equal(rec) {
		return
	}
	s.k, s.has = keep(rec), true
	if r.counts == nil {
		r.counts = map[string]map[schema.State]int{}
	}
	if r.counts[table] == nil {
		r.counts[table] = map[schema.State]int{}
	}
	r.counts[table][res.State]++
	// An item that is the key itself (orchagent) needs no set: reconciled
	// looks the key up in current directly.
	if it != ck {
		if r.byItem[it] == nil {
			r.byItem[it] = map[string]struct{}{}
			shrink.Grew(r.byItem, &r.peaks[2])
		}
		r.byItem[it][ck] = struct{}{}
	}
	if r.cache.Held(table, key) {
		return
	}
	r.queueLocked(id, s)
}

// queueLocked queues the write of slot s (id's).
func (r *results) queueLocked(id int32, s *slot) {
	if !s.queued {
		s.queued = true
		if r.inPass {
			r.passIDs = append(r.passIDs, id)
			return
		}
		r.pendIDs = append(r.pendIDs, id)
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

// beginPass holds the results set from now on until endPass: the worker
// calls it around a pass of several items (a lone item's result goes out
// at once, as ever).
func (r *results) beginPass() {
	r.mu.Lock()
	r.inPass = true
	r.mu.Unlock()
}

// endPass queues the results set since beginPass for one write.
func (r *results) endPass() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inPass = false
	if len(r.passIDs) == 0 {
		return
	}
	r.pendIDs = append(r.pendIDs, r.passIDs...)
	if cap(r.passIDs) > 4096 { // a 100k pass's array is let go
		r.passIDs = nil
	}
	r.passIDs = r.passIDs[:0]
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// isConfigKey reports whether s is table|key.
func isConfigKey(s, table, key string) bool {
	return len(s) == len(table)+len(schema.ConfigSep)+len(key) && s[:len(table)] == table &&
		s[len(table):len(table)+len(schema.ConfigSep)] == schema.ConfigSep && s[len(table)+len(schema.ConfigSep):] == key
}

// remove deletes the result of table|key (unless the key is bad).
func (r *results) remove(table, key string) {
	ck := table + schema.ConfigSep + key
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, bad := r.bad[ck]; bad {
		return
	}
	r.removeLocked(table, key, true)
}

// removeLocked deletes table|key's result; cached: the key may still be
// in the cache (its slot is emptied too).
func (r *results) removeLocked(table, key string, cached bool) {
	ck := table + schema.ConfigSep + key
	if cached {
		if s := r.slotOfLocked(table, key, ck); s != nil {
			s.has, s.queued = false, false
			r.newEpochLocked(s) // deleted by name
		}
	}
	delete(r.current, ck)
	r.current = shrink.Map(r.current, &r.peaks[0])
	if it := r.item(table, key); it == ck {
		// no set: see set
	} else if m := r.byItem[it]; m != nil {
		delete(m, ck)
		if len(m) == 0 {
			delete(r.byItem, it)
			r.byItem = shrink.Map(r.byItem, &r.peaks[2])
		}
	}
	r.putLocked(schema.ResultKey(table, key), write{del: true})
}

// setBad gives table|key the engine's error (wrong type, oversized); the
// controller's results for it are ignored until clearBad.
func (r *results) setBad(table, key string, res schema.Result) {
	ck := table + schema.ConfigSep + key
	res.Reason = clipReason(res.Reason)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.bad[ck]; ok && old == res {
		return
	}
	r.bad[ck] = res
	r.nbad.Store(int64(len(r.bad)))
	if s := r.slotOfLocked(table, key, ck); s != nil {
		s.queued = false // the error is newer than the result queued
		r.newEpochLocked(s)
	}
	shrink.Grew(r.bad, &r.peaks[1])
	r.putLocked(schema.ResultKey(table, key), write{k: keep(record{res: res})})
}

// eachBad calls f with every key that is not config, under the lock (f
// must not call results).
func (r *results) eachBad(f func(table, key string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ck := range r.bad {
		f(splitConfigKey(ck))
	}
}

// clearBad ends the engine's error of table|key: its result is removed
// (the controller writes a new one when it reconciles the key).
func (r *results) clearBad(table, key string) bool {
	if r.nbad.Load() == 0 {
		return false // every set of a burst: no lock, no "T|k"
	}
	ck := table + schema.ConfigSep + key
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.bad[ck]; !ok {
		return false
	}
	delete(r.bad, ck)
	r.nbad.Store(int64(len(r.bad)))
	r.bad = shrink.Map(r.bad, &r.peaks[1])
	r.removeLocked(table, key, true)
	return true
}

// isBad reports whether table|key holds something that is not config.
func (r *results) isBad(table, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.bad[table+schema.ConfigSep+key]
	return ok
}

// reconciled removes the results of item's keys that are no longer
// configured, once the controller has reconciled the item successfully.
func (r *results) reconciled(item string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconciledLocked(item)
}

// reconciledAll is reconciled of every item, under one lock.
func (r *results) reconciledAll(items []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.current) == 0 && len(r.byItem) == 0 {
		return // a burst: no key's result waits to be removed
	}
	for _, it := range items {
		r.reconciledLocked(it)
	}
}

func (r *results) reconciledLocked(item string) {
	// An item that is its key: the result of a key no longer cached is
	// in current (evicted from its slot), which a burst leaves empty: no
	// look-up in the cache for a key still configured.
	if _, ok := r.current[item]; ok {
		if t, k := splitConfigKey(item); !r.cache.Has(t, k) {
			if _, bad := r.bad[item]; !bad && r.item(t, k) == item {
				r.removeLocked(t, k, false)
			}
		}
	}
	for ck := range r.byItem[item] {
		t, k := splitConfigKey(ck)
		if _, bad := r.bad[ck]; !bad && !r.cache.Has(t, k) {
			r.removeLocked(t, k, false)
		}
	}
}

// rewrite queues the current result of table|key again, in full.
func (r *results) rewrite(table, key string) {
	ck := table + schema.ConfigSep + key
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.slotOfLocked(table, key, ck); s != nil && s.has {
		id, _ := r.cache.idOf(table, key)
		r.queueLocked(id, s)
	} else if k, ok := r.current[ck]; ok {
		r.putLocked(schema.ResultKey(table, key), write{k: k})
	}
}

// rewriteAll queues every result again, in full (STATE_DB was emptied or
// Redis restarted).
func (r *results) rewriteAll() int {
	r.sw.Forget()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	r.byID.Each(func(id int32, s *slot) {
		if !s.has {
			return
		}
		t, k := splitConfigKey(s.ck)
		if _, bad := r.bad[s.ck]; bad || r.cache.Held(t, k) {
			return
		}
		r.queueLocked(id, s)
		n++
	})
	for ck, kp := range r.current {
		t, k := splitConfigKey(ck)
		if _, bad := r.bad[ck]; bad || r.cache.Held(t, k) {
			continue
		}
		r.putLocked(schema.ResultKey(t, k), write{k: kp})
		n++
	}
	for ck, res := range r.bad {
		t, k := splitConfigKey(ck)
		r.putLocked(schema.ResultKey(t, k), write{k: keep(record{res: res})})
		n++
	}
	return n
}

// cleanStale removes results in STATE_DB (written by a previous run, or
// left by a key deleted while the daemon was down) whose CONFIG_DB key is
// neither cached nor bad.
func (r *results) cleanStale() int {
	n := 0
	keys := r.sw.Keys()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sk := range keys {
		for _, t := range r.tables {
			k, ok := schema.ConfigKeyOfResult(t, sk)
			if !ok {
				continue
			}
			ck := t + schema.ConfigSep + k
			if _, bad := r.bad[ck]; bad || r.cache.Has(t, k) || (r.owns != nil && !r.owns(t, k)) {
				break
			}
			if _, queued := r.pending[sk]; !queued {
				delete(r.current, ck)
				r.current = shrink.Map(r.current, &r.peaks[0])
				r.putLocked(sk, write{del: true})
				n++
			}
			break
		}
	}
	return n
}

func (r *results) putLocked(sk string, w write) {
	r.pending[sk] = w
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// summary returns and resets the per-table counts of results changed
// since the last call: "PORT ok=3 error=1, STATIC_ROUTE ok=10000" ("" when
// none).
func (r *results) summary() string {
	r.mu.Lock()
	counts := r.counts
	r.counts = nil
	r.mu.Unlock()
	if len(counts) == 0 {
		return ""
	}
	tables := make([]string, 0, len(counts))
	for t := range counts {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	var b strings.Builder
	for i, t := range tables {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t)
		for _, st := range []schema.State{schema.StateOK, schema.StatePending, schema.StateError} {
			if n := counts[t][st]; n > 0 {
				fmt.Fprintf(&b, " %s=%d", st, n)
			}
		}
	}
	return b.String()
}

// flushed reports whether every queued result is written.
func (r *results) flushed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) == 0 && len(r.pendIDs) == 0 && len(r.passIDs) == 0 && !r.writing
}

// waitFlushed waits until every queued result is written (false when ctx
// ends first).
func (r *results) waitFlushed(ctx context.Context) bool {
	for {
		if r.flushed() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
