package engine

import (
	"maps"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchyard-net/switchyard/internal/paged"
	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// Entry is one CONFIG_DB key as the controller sees it: its whole current
// hash (without the NULL placeholder) and the generation of that hash.
// Fields is the cache's own copy: read it, never change it.
type Entry struct {
	Table, Key string
	Fields     schema.Fields
	Gen        string // schema.Generation(Fields)
	// Warning names fields the table does not define (see Config.Warn);
	// results of this entry carry it.
	Warning string
	// dels is the cache's count of deletions when the entry was read: a
	// result set with it (Handle.SetResultOf) needs no look-up to know
	// the key is still cached while no key was deleted since.
	dels uint64
	// id is the key's small integer while it is cached (Cache ids): the
	// index of its result in the engine's results, no look-up by name.
	id int32
}

// Stamp returns r marked as the result of this version of the entry: its
// generation and warning.
func (e Entry) Stamp(r schema.Result) schema.Result {
	r.Generation = e.Gen
	r.Warning = e.Warning
	return r
}

// IndexFunc maps a key of a table to the index value it is listed under
// ("" = not listed), e.g. VLAN_MEMBER "Vlan100|Ethernet0" → "Ethernet0".
type IndexFunc func(key string) string

// Cache is the desired state: the current hash of every watched CONFIG_DB
// key. The engine fills it; controllers read it (Get, Keys, ByIndex).
// Safe for concurrent use.
type Cache struct {
	warn func(table string, f schema.Fields) string

	mu    sync.RWMutex
	peaks map[string]*int // high-water mark of each table map (shrink)
	// tables maps each key to its id; the entry is ents[id]: the map's
	// slots are 24 bytes, not 56, and a reader holding the id (a queue
	// item's Ref) finds the entry without a look-up.
	tables  map[string]map[string]int32
	ents    paged.Slice[cached]
	indexes map[string]*index // by table
	held    map[string]bool   // "TABLE|key": gone, but kept (CONFIG_DB_INITIALIZED)
	// nheld is len(held), written under mu: Held asks it first, so a
	// result (a Held per key) takes no lock while nothing is held
	nheld atomic.Int64
	// dels counts keys deleted, written under mu (Entry.dels, cachedSince)
	dels atomic.Uint64
	// warnings of the keys that have one (rare: unknown fields), by
	// table then key, so an entry without one costs nothing for it
	warnings map[string]map[string]string
	// recent hashes set, whose strings, generation and warning a new
	// equal one of the same table shares (recentLocked)
	recent        [8]cached
	recentTable   [8]string
	recentWarning [8]string
	recentNext    int
	// ids: every cached key has a small integer, the lowest free one
	// (freeIDs: bit set = free below nextID), so ids stay dense and a
	// burst of deletes of the newest keys gives the top back.
	nextID  int32
	freeIDs []uint64
	nfree   int // bits set in freeIDs
	lowFree int // no free id in the words of freeIDs below it
	// onEvict (the engine's results) is told of an id whose key left
	// the cache: called outside mu, before the id can be handed out
	// again (Set and Delete run on one goroutine, the engine's consume).
	onEvict func(id int32)
}

// cached is an entry as the cache keeps it: the hash packed into one
// string (shrink.Pack) — 100k routes are 100k small strings, not 100k maps.
type cached struct {
	fields, gen string
	// table and key of the entry (the map's strings): a Ref is checked
	// against them (ents[id] in the cache; the id is the index)
	table, key string
}

type index struct {
	fn  IndexFunc
	ids map[string]map[string]struct{} // value -> keys
}

// NewCache returns an empty cache. warn (may be nil) names the fields of a
// hash its table does not define; its text becomes Entry.Warning.
func NewCache(warn func(table string, f schema.Fields) string) *Cache {
	return &Cache{warn: warn, tables: map[string]map[string]int32{}, peaks: map[string]*int{},
		indexes: map[string]*index{}, held: map[string]bool{}}
}

// Index lists table's keys by fn's value, for ByIndex. Call it before the
// cache is filled.
func (c *Cache) Index(table string, fn IndexFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.indexes[table] = &index{fn: fn, ids: map[string]map[string]struct{}{}}
}

// Set records the current hash of table|key (copied, NULL removed) and
// ends a hold of it. It reports whether the generation changed.
//
// A hash equal to one set recently (a burst of routes through one next
// hop) takes that one's strings, generation and warning: no SHA-256 and
// no unknown-field check per key, once per distinct hash; the key is
// looked up once, under one lock.
func (c *Cache) Set(table, key string, f schema.Fields) bool {
	changed, _ := c.set(table, key, f)
	return changed
}

// set is Set that also returns the key's id (the engine's queue item
// carries it as a Ref).
func (c *Cache) set(table, key string, f schema.Fields) (bool, int32) {
	cp := f
	if _, null := f[schema.NullField]; null {
		cp = maps.Clone(f)
		delete(cp, schema.NullField)
	}
	var buf [256]byte
	packed := shrink.AppendPacked(buf[:0], cp)
	return c.store(table, key, packed, "", cp)
}

// setPacked is set of a hash packed already (shrink.Pack's encoding,
// without NULL: the watcher's Event.Packed), kept as it is: no map
// filled and packed again per key. Only a hash not set recently is
// unpacked, into scratch (cleared first; the caller's, reused), for its
// generation and warning.
func (c *Cache) setPacked(table, key, packed string, scratch schema.Fields) (bool, int32) {
	return c.store(table, key, nil, packed, scratch)
}

// store is set and setPacked: the hash is pb (a buffer of the caller's,
// copied when kept) or, when pb is nil, ps (kept as it is); f holds its
// fields (set) or is the scratch map to unpack them into (setPacked).
func (c *Cache) store(table, key string, pb []byte, ps string, f schema.Fields) (bool, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.storeLocked(table, key, pb, ps, f)
}

// setPackedRun is setPacked of each of sets (table keys' packed hashes),
// under one lock instead of one per key (the consumer took and gave
// back the write lock per key, handing it to and from the worker's
// reads); changed and ids are appended to, one per set.
func (c *Cache) setPackedRun(sets []packedSet, scratch schema.Fields, changed []bool, ids []int32) ([]bool, []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range sets {
		ch, id := c.storeLocked(sets[i].table, sets[i].key, nil, sets[i].packed, scratch)
		changed, ids = append(changed, ch), append(ids, id)
	}
	return changed, ids
}

// packedSet is one key's packed hash for setPackedRun.
type packedSet struct{ table, key, packed string }

// storeLocked is store with c.mu held (let go while a new hash's
// generation is worked out).
func (c *Cache) storeLocked(table, key string, pb []byte, ps string, f schema.Fields) (bool, int32) {
	var e cached
	var warning string
	var known bool
	if pb != nil {
		e, warning, known = c.recentLocked(table, pb)
	} else {
		e, warning, known = c.recentStringLocked(table, ps)
	}
	if !known {
		// Worked out unlocked: readers wait for no SHA-256.
		c.mu.Unlock()
		if pb != nil {
			ps = string(pb)
		} else {
			clear(f)
			shrink.UnpackInto(f, ps)
		}
		e = cached{fields: ps, gen: schema.Generation(f)}
		if c.warn != nil {
			warning = c.warn(table, f)
		}
		c.mu.Lock()
	}
	t := c.tables[table]
	if t == nil {
		t = map[string]int32{}
		c.tables[table] = t
		c.peaks[table] = new(int)
	}
	id, had := t[key]
	var slot *cached
	if had {
		slot = c.ents.At(id)
		if slot.gen == e.gen {
			c.unholdLocked(table, key)
			return false, id // same hash: nothing new to keep
		}
		key = slot.key // the map's string
	} else {
		id = c.allocIDLocked()
		slot = c.ents.Take(id)
		c.ents.Occupied(id)
	}
	if !known {
		c.rememberLocked(table, e, warning)
	}
	c.setWarningLocked(table, key, warning)
	c.unholdLocked(table, key)
	e.table, e.key = table, key
	*slot = e
	if !had {
		t[key] = id
		shrink.Grew(t, c.peaks[table])
	}
	if ix := c.indexes[table]; ix != nil && !had {
		if v := ix.fn(key); v != "" {
			m := ix.ids[v]
			if m == nil {
				m = map[string]struct{}{}
				ix.ids[v] = m
			}
			m[key] = struct{}{}
		}
	}
	return true, id
}

// recentLocked returns the cached form (its strings shared) and the
// warning of a hash of table set recently and packed as packed. The
// fields are compared, not only generations.
func (c *Cache) recentLocked(table string, packed []byte) (cached, string, bool) {
	for i := range c.recent {
		if r := &c.recent[i]; r.gen != "" && r.fields == string(packed) && c.recentTable[i] == table {
			return *r, c.recentWarning[i], true
		}
	}
	return cached{}, "", false
}

// recentStringLocked is recentLocked of a packed string.
func (c *Cache) recentStringLocked(table, packed string) (cached, string, bool) {
	for i := range c.recent {
		if r := &c.recent[i]; r.gen != "" && r.fields == packed && c.recentTable[i] == table {
			return *r, c.recentWarning[i], true
		}
	}
	return cached{}, "", false
}

// rememberLocked makes e (a hash of table, with its warning) one of the
// recent hashes an equal one shares: a burst of routes through the same
// next hop keeps one copy of "nexthop 10.0.0.2 ifname Ethernet0" and of
// its generation, not 100k.
func (c *Cache) rememberLocked(table string, e cached, warning string) {
	i := c.recentNext % len(c.recent)
	e.table, e.key = "", "" // the hash's, not a key's
	c.recent[i], c.recentTable[i], c.recentWarning[i] = e, table, warning
	c.recentNext++
}

// setWarningLocked records table|key's warning ("" = none).
func (c *Cache) setWarningLocked(table, key, warning string) {
	w := c.warnings[table]
	switch {
	case warning != "":
		if w == nil {
			if c.warnings == nil {
				c.warnings = map[string]map[string]string{}
			}
			w = map[string]string{}
			c.warnings[table] = w
		}
		w[key] = warning
	case len(w) > 0:
		delete(w, key)
		if len(w) == 0 {
			delete(c.warnings, table) // its buckets go with it
		}
	}
}

// Delete forgets table|key; false when it was not there.
func (c *Cache) Delete(table, key string) bool {
	c.mu.Lock()
	id, ok := c.tables[table][key]
	if ok {
		c.deleteLocked(table, key)
	} else {
		c.unholdLocked(table, key)
	}
	evict := c.onEvict
	c.mu.Unlock()
	if ok && evict != nil {
		evict(id)
	}
	return ok
}

// allocIDLocked hands out the lowest free id.
func (c *Cache) allocIDLocked() int32 {
	for w := c.lowFree; c.nfree > 0 && w < len(c.freeIDs); w++ {
		if free := c.freeIDs[w]; free != 0 {
			b := int32(w*64 + bits.TrailingZeros64(free))
			c.freeIDs[w] &^= 1 << (b % 64)
			c.nfree--
			c.lowFree = w
			return b
		}
	}
	c.nextID++
	c.growIDsLocked()
	return c.nextID - 1
}

// freeIDLocked gives id back; free ids at the top lower the bound.
func (c *Cache) freeIDLocked(id int32) {
	if id != c.nextID-1 {
		c.freeIDs[id/64] |= 1 << (id % 64)
		c.nfree++
		c.lowFree = min(c.lowFree, int(id/64))
		return
	}
	c.nextID--
	for c.nextID > 0 && c.freeIDs[(c.nextID-1)/64]&(1<<((c.nextID-1)%64)) != 0 {
		c.nextID--
		c.freeIDs[c.nextID/64] &^= 1 << (c.nextID % 64)
		c.nfree--
	}
	n := int(c.nextID+63) / 64
	c.lowFree = min(c.lowFree, n)
	c.freeIDs = c.freeIDs[:n]
	if cap(c.freeIDs) > 2*n+16 {
		c.freeIDs = append([]uint64(nil), c.freeIDs...)
	}
}

// growIDsLocked makes room in freeIDs for ids below nextID.
func (c *Cache) growIDsLocked() {
	for len(c.freeIDs)*64 < int(c.nextID) {
		c.freeIDs = append(c.freeIDs, 0)
	}
}

// idOf returns the id of table|key while it is cached.
func (c *Cache) idOf(table, key string) (int32, bool) {
	c.mu.RLock()
	id, ok := c.tables[table][key]
	c.mu.RUnlock()
	return id, ok
}

// deleteLocked removes a cached key.
func (c *Cache) deleteLocked(table, key string) {
	c.unholdLocked(table, key)
	id := c.tables[table][key]
	c.freeIDLocked(id)
	c.ents.Vacate(id)
	delete(c.tables[table], key)
	c.dels.Add(1)
	c.tables[table] = shrink.Map(c.tables[table], c.peaks[table])
	c.setWarningLocked(table, key, "")
	if ix := c.indexes[table]; ix != nil {
		if v := ix.fn(key); v != "" {
			delete(ix.ids[v], key)
			if len(ix.ids[v]) == 0 {
				delete(ix.ids, v)
			}
		}
	}
}

// unholdLocked ends a hold of table|key; the usual case, nothing held,
// builds no "TABLE|key" string.
func (c *Cache) unholdLocked(table, key string) {
	if len(c.held) > 0 {
		delete(c.held, table+schema.ConfigSep+key)
		c.nheld.Store(int64(len(c.held)))
	}
}

// hold marks a cached key as gone from CONFIG_DB but kept; false when it
// is not cached.
func (c *Cache) hold(table, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tables[table][key]; !ok {
		return false
	}
	c.held[table+schema.ConfigSep+key] = true
	c.nheld.Store(int64(len(c.held)))
	return true
}

// releaseHeld deletes every held key and returns them ("TABLE|key").
func (c *Cache) releaseHeld() []string {
	c.mu.Lock()
	held := make([]string, 0, len(c.held))
	for k := range c.held {
		held = append(held, k)
	}
	c.mu.Unlock()
	sort.Strings(held)
	for _, ck := range held {
		t, k := splitConfigKey(ck)
		c.Delete(t, k)
	}
	return held
}

// Held reports whether table|key is gone from CONFIG_DB but kept until
// CONFIG_DB_INITIALIZED is "1" again.
func (c *Cache) Held(table, key string) bool {
	if c.nheld.Load() == 0 {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.held) > 0 && c.held[table+schema.ConfigSep+key]
}

// Get returns the entry of table|key.
func (c *Cache) Get(table, key string) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.tables[table][key]
	if !ok {
		return Entry{}, false
	}
	e := c.ents.At(id)
	f := shrink.Unpack(e.fields)
	if f == nil {
		f = schema.Fields{}
	}
	return Entry{Table: table, Key: key, Fields: f, Gen: e.gen, Warning: c.warnings[table][key], dels: c.dels.Load(), id: id}, true
}

// GetInto is Get with the fields put in into (cleared first) instead of a
// new map: Entry.Fields is into, valid until into's next use. A
// controller that reads each key's hash once and keeps none of it (the
// values are the cache's own strings, safe to keep) saves a map per
// reconcile — 100k routes, 100k maps for the collector.
func (c *Cache) GetInto(table, key string, into schema.Fields) (Entry, bool) {
	return c.GetIntoRef(Ref{}, table, key, into)
}

// GetIntoRef is GetInto with ref, the key's Ref as the engine handed it
// with the item (RefBatchController): while the key still has that id
// the entry is found without a look-up by name; a stale or zero ref is
// a GetInto.
func (c *Cache) GetIntoRef(ref Ref, table, key string, into schema.Fields) (Entry, bool) {
	c.mu.RLock()
	r := c.readLocked(ref, table, key)
	c.mu.RUnlock()
	return r.Into(table, key, into)
}

// cachedSince reports whether e's key is still cached: without a look-up
// while no key was deleted since e was read (a burst of new keys).
func (c *Cache) cachedSince(e *Entry) bool {
	// Gen: e was read from the cache (every cached hash has one).
	return e.Gen != "" && c.dels.Load() == e.dels || c.Has(e.Table, e.Key)
}

// Has reports whether table|key is cached.
func (c *Cache) Has(table, key string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.tables[table][key]
	return ok
}

// Ref names a cached key by its id, for a reader that is handed it with
// the key's name (the engine's queue items): GetIntoRef then finds the
// entry without a look-up. The zero Ref names nothing.
type Ref struct{ id int32 } // 1 + the id; 0 = none

// refOf is id's Ref.
func refOf(id int32) Ref { return Ref{id: id + 1} }

// eachKey calls f with every cached key but the held ones, under the
// read lock (f must not call the cache).
func (c *Cache) eachKey(f func(table, key string)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for table, keys := range c.tables {
		for k := range keys {
			if len(c.held) > 0 && c.held[table+schema.ConfigSep+k] {
				continue
			}
			f(table, k)
		}
	}
}

// Keys returns table's keys, sorted.
func (c *Cache) Keys(table string) []string {
	c.mu.RLock()
	keys := make([]string, 0, len(c.tables[table]))
	for k := range c.tables[table] {
		keys = append(keys, k)
	}
	c.mu.RUnlock()
	sort.Strings(keys)
	return keys
}

// KeysWithPrefix returns, sorted, table's keys that start with prefix
// (STATIC_ROUTE "Vrf_red|"): one pass over the table, for the rare event
// that concerns a group of keys no index lists.
func (c *Cache) KeysWithPrefix(table, prefix string) []string {
	c.mu.RLock()
	var keys []string
	for k := range c.tables[table] {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	c.mu.RUnlock()
	sort.Strings(keys)
	return keys
}

// Len is the number of keys of table.
func (c *Cache) Len(table string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tables[table])
}

// ByIndex returns, sorted, the keys of table listed under value by the
// table's IndexFunc.
func (c *Cache) ByIndex(table, value string) []string {
	c.mu.RLock()
	ix := c.indexes[table]
	var keys []string
	if ix != nil {
		keys = make([]string, 0, len(ix.ids[value]))
		for k := range ix.ids[value] {
			keys = append(keys, k)
		}
	}
	c.mu.RUnlock()
	sort.Strings(keys)
	return keys
}

func splitConfigKey(ck string) (string, string) {
	for i := 0; i < len(ck); i++ {
		if ck[i] == '|' {
			return ck[:i], ck[i+1:]
		}
	}
	return ck, ""
}
