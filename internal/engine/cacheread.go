package engine

import (
	"strings"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/schema"
)

// Reading a worker pass's entries at once. In a burst the consumer sets
// keys (Cache.set, the write lock) while the worker reads the ones queued
// before (GetIntoRef, the read lock), key after key: a reader waits for
// a writer that waits for the readers, and in a 100k-route burst the two
// goroutines handed the lock over ~3,500 times, the worker asleep for a
// third of the burst (docs/performance.md, routes5). ReadRefs takes the
// read lock once for a pass; each key's hash is unpacked later, unlocked.

// Read is a key's cached entry read ahead by ReadRefs; Into unpacks it.
// The zero Read was not read (Into: absent).
type Read struct {
	e       cached
	warning string
	dels    uint64
	id      int32
	ok      bool // the key was cached
	read    bool // ReadRefs read it
}

// Done reports whether ReadRefs read this entry (cached or not).
func (r *Read) Done() bool { return r.read }

// ReadRefs reads ahead, under one read lock, the entries of the items of
// table among items ("TABLE|key", a KeyItems controller's), refs[i]
// being items[i]'s Ref (may be shorter: zero Refs). out (appended to
// out[:0], one per item) holds what GetIntoRef would find for each at
// this moment; an item of another table is not read (Done false). A
// key set again after this read is queued again (its item is being
// processed), so a pass that reads ahead misses no change.
func (c *Cache) ReadRefs(table string, items []string, refs []Ref, out []Read) []Read {
	out = out[:0]
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, it := range items {
		t, key, ok := strings.Cut(it, schema.ConfigSep)
		if !ok || t != table {
			out = append(out, Read{})
			continue
		}
		var ref Ref
		if i < len(refs) {
			ref = refs[i]
		}
		out = append(out, c.readLocked(ref, table, key))
	}
	return out
}

// readLocked is the entry of table|key, found by ref while the key still
// has that id, else by name; c.mu held (read).
func (c *Cache) readLocked(ref Ref, table, key string) Read {
	r := Read{read: true, dels: c.dels.Load()}
	id := ref.id - 1
	if ref.id > 0 {
		if p := c.ents.At(id); p != nil && p.gen != "" && p.key == key && p.table == table {
			r.e, r.ok = *p, true
		}
	}
	if !r.ok {
		if id, r.ok = c.tables[table][key]; r.ok {
			r.e = *c.ents.At(id)
		}
	}
	if !r.ok {
		return Read{read: true}
	}
	r.id = id
	if len(c.warnings) > 0 {
		r.warning = c.warnings[table][key]
	}
	return r
}

// Into is the entry r read of table|key, its fields unpacked into into
// (cleared first), as GetIntoRef returns it; false when the key was not
// cached (or r was not read).
func (r *Read) Into(table, key string, into schema.Fields) (Entry, bool) {
	clear(into)
	if !r.ok {
		return Entry{}, false
	}
	for s := r.e.fields; s != ""; {
		k, v, rest, ok := shrink.Next(s)
		if !ok {
			break
		}
		into[k] = v
		s = rest
	}
	return Entry{Table: table, Key: key, Fields: into, Gen: r.e.gen, Warning: r.warning, dels: r.dels, id: r.id}, true
}

// Packed is Into without the map: the entry (Fields nil) and its hash in
// shrink.Pack's encoding, the cache's own string (safe to keep). A
// reader that parses the packed hash itself (orchagent's routes) unpacks
// nothing; false when the key was not cached (or r was not read).
func (r *Read) Packed(table, key string) (Entry, string, bool) {
	if !r.ok {
		return Entry{}, "", false
	}
	return Entry{Table: table, Key: key, Gen: r.e.gen, Warning: r.warning, dels: r.dels, id: r.id}, r.e.fields, true
}
