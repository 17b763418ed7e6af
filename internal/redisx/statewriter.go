package redisx

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/internal/paged"
	"github.com/switchyard-net/switchyard/internal/shrink"
)

// AllFields as the only owned field makes a StateWriter own every field of
// the keys it writes (COUNTERS_DB hashes with a dynamic set of counters).
// Delete then removes the whole key.
const AllFields = "*"

// Ownership names the fields a writer owns in a key: nil for a key that is
// not the writer's, [AllFields] for every field. It must return the same
// list for the same key every time.
type Ownership func(key string) []string

// OwnFields owns the same fields in every key.
func OwnFields(fields ...string) Ownership {
	list := slices.Clone(fields)
	sort.Strings(list)
	list = slices.Compact(list)
	if slices.Contains(list, AllFields) {
		list = []string{AllFields}
	}
	return func(string) []string { return list }
}

// OwnTables owns, per table, the fields named: the table of a key is the
// part before its first sep ("PORT_TABLE|eth0" with sep "|"). Keys of
// other tables are not the writer's.
func OwnTables(sep string, tables map[string][]string) Ownership {
	own := make(map[string][]string, len(tables))
	for t, f := range tables {
		own[t] = OwnFields(f...)("")
	}
	return func(key string) []string {
		t, _, _ := strings.Cut(key, sep)
		return own[t]
	}
}

// StateWriter is the one writer of STATE_DB/COUNTERS_DB hashes: it owns
// fields per key (Ownership), writes only values that changed since it
// last wrote them (a cache of what it wrote), removes only its own fields
// — the key vanishes by itself when no field is left — and sends a burst,
// across all tables, in one MULTI/EXEC. Several daemons can thus share one
// hash (orchagent state/reason, syncd oper_status). Safe for concurrent use.
type StateWriter struct {
	c   *redis.Client
	own Ownership

	mu     sync.Mutex        // held across a flush so the cache follows Redis' order
	cache  map[string]string // key -> owned fields as Redis holds them (shrink.Pack)
	peak   int               // high-water mark of cache (shrink)
	loaded []string          // key prefixes Load read whole: a key there not in cache holds nothing of ours
	// compact (Compact): keys of listed owned fields keep a fingerprint
	// in sums instead of their values in cache.
	compact bool
	seed    maphash.Seed
	sums    map[string]written
	sumPeak int
	slots   paged.Slice[slotSum] // fingerprints of keys written by slot (SetPackedAt)
	args    []string             // Flush's argument array, kept for the next
	runID   string               // for CheckRestart

	// The flush's connection and transaction (statewriter_tx.go), under mu.
	conn net.Conn
	rd   *pushReader
	tx   txWriter

	roundTrips atomic.Uint64
	commands   atomic.Uint64
}

// NewStateWriter returns a writer of the fields owned (or of every field
// when owned is [AllFields]) in every key on c's DB.
func NewStateWriter(c *redis.Client, owned []string) *StateWriter {
	return NewOwnedWriter(c, OwnFields(owned...))
}

// NewOwnedWriter returns a writer of the fields own names per key on c's
// DB, e.g. OwnTables(schema.StateSep, map[string][]string{...}).
func NewOwnedWriter(c *redis.Client, own Ownership) *StateWriter {
	return &StateWriter{c: c, own: own, cache: map[string]string{}}
}

// written is what a compact writer keeps of a key: a hash of the owned
// fields it wrote and which of them (bit i: own(key)[i]).
type written struct {
	sum, mask uint64
}

// Compact makes the writer keep, for keys whose owned fields are listed
// (not AllFields), a 16-byte fingerprint of what it wrote instead of the
// values: "unchanged, send nothing" still holds, but a change rewrites
// every owned field of the key, not only those that differ. For writers
// of many keys whose fields change together (the engine's results). Call
// it before the first write or Load.
func (w *StateWriter) Compact() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.compact = true
	w.seed = maphash.MakeSeed()
	w.sums = map[string]written{}
}

// compactFor reports whether key's cache is a fingerprint.
func (w *StateWriter) compactFor(list []string, all bool) bool {
	return w.compact && !all && len(list) <= 64
}

// fingerprint is the written entry of packed owned fields.
func (w *StateWriter) fingerprint(list []string, packed string) written {
	wr := written{sum: maphash.String(w.seed, packed)}
	for p := packed; ; {
		f, _, rest, ok := shrink.Next(p)
		if !ok {
			return wr
		}
		if i := slices.Index(list, f); i >= 0 {
			wr.mask |= 1 << i
		}
		p = rest
	}
}

// RoundTrips is the number of Redis round trips (pipelines, SCANs) the
// writer has made.
func (w *StateWriter) RoundTrips() uint64 { return w.roundTrips.Load() }

// Commands is the number of Redis commands the writer has sent (MULTI and
// EXEC not counted).
func (w *StateWriter) Commands() uint64 { return w.commands.Load() }

// owned is own(key) as a list and "all fields".
func (w *StateWriter) owned(key string) (list []string, all bool) {
	list = w.own(key)
	if len(list) == 1 && list[0] == AllFields {
		return nil, true
	}
	return list, false
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
// writes bursts of thousands). A Batch is used by one goroutine; after
// Flush it is empty and may be used again.
func (w *StateWriter) Batch() *Batch { return &Batch{w: w} }

// Trim lets go of the arrays Flush keeps for the next one (arguments,
// commands, the encoded transaction): after a burst they are a flush's
// worth, up to ~0.4 MB, held for good by an idle writer. The next Flush
// makes them again. For a caller that knows it is idle (the engine's
// result writer, a second after its last flush).
func (w *StateWriter) Trim() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.args = nil
	w.tx.cmds, w.tx.buf = nil, nil
}

// Batch is a list of writes sent by Flush in one MULTI/EXEC pipeline, so
// readers see each batch whole.
type Batch struct {
	w   *StateWriter
	ops []op
}

// op is one queued Set (fields packed by shrink.Pack) or Delete (del).
type op struct {
	key    string
	packed string
	del    bool
	slot   int32 // SetPackedAt's slot; -1 (or ep 0): none
	ep     uint32
}

// Set queues StateWriter.Set(key, fields); fields is copied. A field the
// writer does not own fails the whole Flush.
func (b *Batch) Set(key string, fields map[string]string) {
	b.ops = append(b.ops, op{key: key, packed: shrink.Pack(fields), slot: -1})
}

// SetPacked is Set of fields already packed by shrink.Pack (or built by
// shrink.AppendPair in ascending name order): the writer keeps the string
// as its cache of the key, without another copy.
func (b *Batch) SetPacked(key, packed string) {
	b.ops = append(b.ops, op{key: key, packed: packed, slot: -1})
}

// Delete queues StateWriter.Delete(key).
func (b *Batch) Delete(key string) { b.ops = append(b.ops, op{key: key, del: true, slot: -1}) }

// Len is the number of queued operations.
func (b *Batch) Len() int { return len(b.ops) }

// KeyErrors are keys Redis refused to write when running a transaction (a
// reply such as WRONGTYPE: another writer stored something that is not a
// hash); everything else of the batch was written. Such a key is written
// in full when next set.
type KeyErrors map[string]error

func (e KeyErrors) Error() string {
	keys := slices.Sorted(maps.Keys(e))
	return fmt.Sprintf("redis refused %d keys, e.g. %s: %v", len(keys), keys[0], e[keys[0]])
}

// Flush sends the queued operations' differences in one round trip (none
// when nothing changed) and empties the batch. When Redis refused the
// transaction (EXECABORT) the error is the refused command's own, a NOPERM
// explained (*PermissionError); when it refused single keys while running
// it, the error is KeyErrors. The cache of keys not known to be written is
// dropped, so the next Set of them writes in full.
func (b *Batch) Flush(ctx context.Context) error {
	ops := b.ops
	b.ops = nil
	defer func() {
		// The array is kept for the batch's next use (a writer's batch
		// of a few hundred results at a time); a 100k one is let go.
		if b.ops == nil && cap(ops) <= 4096 {
			clear(ops)
			b.ops = ops[:0]
		}
	}()
	w := b.w
	for _, o := range ops {
		list, all := w.owned(o.key)
		if all {
			continue
		}
		for p := o.packed; ; {
			f, _, rest, ok := shrink.Next(p)
			if !ok {
				break
			}
			if !slices.Contains(list, f) {
				return fmt.Errorf("state writer: field %q of %s is not among the owned fields %v", f, o.key, list)
			}
			p = rest
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	tx := &w.tx
	tx.reset(w.spiller(ctx))
	defer tx.release()
	// One argument array for the whole batch, carved per command: a
	// burst of results is not a slice per key.
	// The array is the writer's, kept from one Flush to the next (under
	// mu; nothing holds its commands after Flush): a batch of 256 results
	// allocates none.
	args := w.args[:0]
	if cap(args) < 4*len(ops)+8 {
		args = make([]string, 0, 4*len(ops)+8)
	}
	defer func() {
		if cap(args) <= 1<<14 {
			clear(args[:cap(args)])
			w.args = args[:0]
		}
	}()
	touched := 0
	for i := range ops {
		var sent bool
		if args, sent = w.queue(tx, &ops[i], args); sent {
			touched++
		} else {
			ops[i].key = "" // not sent: its cache entry is right
		}
	}
	n := tx.Len()
	if n == 0 {
		return nil
	}
	w.roundTrips.Add(1)
	w.commands.Add(uint64(n))
	errs, err := w.exec(ctx, tx)
	if err == nil {
		return nil
	}
	failed, err := execErrors(tx.cmds, errs, err)
	if failed == nil {
		// Redis may hold the old values or the new: unknown. Without the
		// loaded prefixes, an unknown key gets every owned field it does
		// not set removed.
		for _, o := range ops {
			if o.key != "" {
				delete(w.cache, o.key)
				delete(w.sums, o.key)
				w.forgetSlot(&o)
			}
		}
		w.cache = shrink.Map(w.cache, &w.peak)
		w.sums = shrink.Map(w.sums, &w.sumPeak)
		w.loaded = nil
		return fmt.Errorf("write %d state keys: %w", touched, err)
	}
	for i := range ops {
		if _, bad := failed[ops[i].key]; bad {
			w.forgetSlot(&ops[i])
		}
	}
	for k := range failed {
		delete(w.cache, k)
		delete(w.sums, k)
		w.cache = shrink.Map(w.cache, &w.peak)
		w.sums = shrink.Map(w.sums, &w.sumPeak)
	}
	return failed
}

// execErrors sorts the errors of an executed transaction: KeyErrors when
// Redis ran it and refused single commands, else (nil and) the error that
// explains the failure — for an EXECABORT, the refused command's own.
func execErrors(cmds [][]string, errs []error, err error) (KeyErrors, error) {
	aborted := strings.HasPrefix(err.Error(), "EXECABORT")
	if !aborted && !isServerError(err) {
		return nil, err // connection or context: unknown what was written
	}
	failed := KeyErrors{}
	for i, e := range errs {
		if e == nil || strings.HasPrefix(e.Error(), "EXECABORT") {
			continue
		}
		args := cmds[i]
		e = ExplainPermission(e, anyArgs(args)...)
		if aborted {
			return nil, fmt.Errorf("%s %v: %w", args[0], cmdKey(args), e)
		}
		failed[cmdKey(args)] = e
	}
	if aborted || len(failed) == 0 {
		return nil, err
	}
	return failed, nil
}

func cmdKey(args []string) string {
	if len(args) < 2 {
		return ""
	}
	return args[1]
}

// anyArgs is args as ExplainPermission takes them (an error's path only).
func anyArgs(args []string) []any {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return a
}

// queue adds o's difference from the cache to pipe and updates the cache;
// false when there is nothing to send. Command arguments are appended to
// args (returned grown), whose capacity is shared by the batch.
func (w *StateWriter) queue(tx *txWriter, o *op, args []string) ([]string, bool) {
	list, all := w.owned(o.key)
	if w.compactFor(list, all) {
		return w.queueCompact(tx, o, args, list)
	}
	cached, known := w.cache[o.key]
	if !known && w.inLoaded(o.key) {
		known = true // Load saw none of our fields there, nor did we write any since
	}
	if o.del {
		delete(w.cache, o.key)
		w.cache = shrink.Map(w.cache, &w.peak)
		switch {
		case known && cached == "":
			return args, false
		case all:
			args = append(args, "del", o.key)
			tx.add(args[len(args)-2 : len(args) : len(args)])
		case known:
			start := len(args)
			args = append(args, "hdel", o.key)
			for p := cached; ; {
				f, _, rest, ok := shrink.Next(p)
				if !ok {
					break
				}
				args = append(args, f)
				p = rest
			}
			tx.add(args[start:len(args):len(args)])
		case len(list) == 0:
			return args, false
		default: // unknown key: it may hold any owned field
			args = w.appendHDel(tx, args, o.key, list)
		}
		return args, true
	}
	if known && cached == o.packed {
		return args, false // Redis holds exactly this (the common case)
	}
	// Both packed maps are sorted by name: one merge finds the values to
	// set and, when the cache is known, the names to delete.
	set := len(args)
	args = append(args, "hset", o.key)
	var dels []string
	np, cp := o.packed, cached
	nk, nv, nrest, nok := shrink.Next(np)
	ck, cv, crest, cok := shrink.Next(cp)
	for nok || cok {
		switch {
		case cok && (!nok || ck < nk): // cached only: gone
			dels = append(dels, ck)
			ck, cv, crest, cok = shrink.Next(crest)
		case nok && (!cok || nk < ck): // new
			args = append(args, nk, nv)
			nk, nv, nrest, nok = shrink.Next(nrest)
		default: // both
			if nv != cv {
				args = append(args, nk, nv)
			}
			nk, nv, nrest, nok = shrink.Next(nrest)
			ck, cv, crest, cok = shrink.Next(crest)
		}
	}
	sent := false
	if len(args)-set > 2 {
		tx.add(args[set:len(args):len(args)])
		sent = true
	} else {
		args = args[:set]
	}
	if !known {
		dels = dels[:0]
		for _, f := range list {
			if !packedHas(o.packed, f) {
				dels = append(dels, f)
			}
		}
	}
	if len(dels) > 0 {
		args = w.appendHDel(tx, args, o.key, dels)
		sent = true
	}
	if o.packed == "" {
		// Nothing of ours is left. Remember "known empty" only for this
		// flush; a later Set rewrites from scratch, which keeps the cache
		// from growing with every key ever deleted.
		delete(w.cache, o.key)
		w.cache = shrink.Map(w.cache, &w.peak)
	} else {
		w.cache[o.key] = o.packed
		shrink.Grew(w.cache, &w.peak)
	}
	return args, sent
}

// queueCompact is queue for a key whose cache is a fingerprint.
func (w *StateWriter) queueCompact(tx *txWriter, o *op, args []string, list []string) ([]string, bool) {
	old, known := w.lookupSum(o)
	// Under a loaded prefix a key without a fingerprint holds nothing of
	// ours — unless, written by name, its fingerprint is in a slot: with
	// slots in use, a key written by name and not found is unknown.
	if !known && (o.ep != 0 || w.slots.Empty()) && w.inLoaded(o.key) {
		known = true
	}
	all := uint64(1)<<len(list) - 1
	if len(list) == 64 {
		all = ^uint64(0)
	}
	if o.del {
		delete(w.sums, o.key)
		w.sums = shrink.Map(w.sums, &w.sumPeak)
		if known {
			return w.hdelMask(tx, o.key, list, old.mask, args)
		}
		return w.hdelMask(tx, o.key, list, all, args)
	}
	now := w.fingerprint(list, o.packed)
	if known && now == old {
		if o.ep != 0 && o.slot >= 0 {
			w.storeSlot(o, now) // taken from the map, or kept
		}
		return args, false
	}
	sent := false
	if o.packed != "" {
		start := len(args)
		args = append(args, "hset", o.key)
		for p := o.packed; ; {
			f, v, rest, ok := shrink.Next(p)
			if !ok {
				break
			}
			args = append(args, f, v)
			p = rest
		}
		tx.add(args[start:len(args):len(args)])
		sent = true
	}
	gone := all &^ now.mask
	if known {
		gone = old.mask &^ now.mask
	}
	args, deleted := w.hdelMask(tx, o.key, list, gone, args)
	sent = sent || deleted
	switch {
	case o.ep != 0 && o.slot >= 0:
		w.storeSlot(o, now)
	case o.packed == "":
		delete(w.sums, o.key)
		w.sums = shrink.Map(w.sums, &w.sumPeak)
	default:
		w.sums[o.key] = now
		shrink.Grew(w.sums, &w.sumPeak)
	}
	return args, sent
}

// hdelMask queues HDEL of the names of list in mask (nothing for none).
func (w *StateWriter) hdelMask(tx *txWriter, key string, list []string, mask uint64, args []string) ([]string, bool) {
	if mask == 0 {
		return args, false
	}
	start := len(args)
	args = append(args, "hdel", key)
	for i, f := range list {
		if mask&(1<<i) != 0 {
			args = append(args, f)
		}
	}
	tx.add(args[start:len(args):len(args)])
	return args, true
}

// appendHDel queues HDEL key names.
func (w *StateWriter) appendHDel(tx *txWriter, args []string, key string, names []string) []string {
	start := len(args)
	args = append(args, "hdel", key)
	for _, f := range names {
		args = append(args, f)
	}
	tx.add(args[start:len(args):len(args)])
	return args
}

// packedHas reports whether packed map p has name f.
func packedHas(p, f string) bool {
	for {
		k, _, rest, ok := shrink.Next(p)
		if !ok || k > f {
			return false
		}
		if k == f {
			return true
		}
		p = rest
	}
}

// inLoaded reports whether key is under a prefix Load read whole.
func (w *StateWriter) inLoaded(key string) bool {
	for _, p := range w.loaded {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
