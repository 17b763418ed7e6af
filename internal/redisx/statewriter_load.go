package redisx

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/internal/paged"
	"github.com/switchyard-net/switchyard/internal/shrink"
)

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
		w.roundTrips.Add(1)
		w.commands.Add(1)
		keys, next, err := w.c.ScanType(ctx, cursor, pattern, 1000, "hash").Result()
		if err != nil {
			return fmt.Errorf("load %s: scan: %w", pattern, ExplainPermission(err, "scan"))
		}
		if err := w.adopt(ctx, keys); err != nil {
			return fmt.Errorf("load %s: %w", pattern, err)
		}
		if next == 0 {
			w.markLoaded(pattern)
			return nil
		}
		cursor = next
	}
}

// adopt reads the owned fields of keys in one pipeline into the cache.
func (w *StateWriter) adopt(ctx context.Context, keys []string) error {
	pipe := w.c.Pipeline()
	cmds := make([]redis.Cmder, len(keys))
	lists := make([][]string, len(keys))
	for i, k := range keys {
		list, all := w.owned(k)
		switch {
		case all:
			cmds[i] = pipe.HGetAll(ctx, k)
		case len(list) > 0:
			cmds[i], lists[i] = pipe.HMGet(ctx, k, list...), list
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	// Hold the lock across the read: a Set racing with it must not have
	// its newer value replaced in the cache by the older one read here.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slots = paged.Slice[slotSum]{} // what Redis holds is read now: by key, not by slot
	w.roundTrips.Add(1)
	w.commands.Add(uint64(pipe.Len()))
	_, _ = pipe.Exec(ctx) // per-command errors below
	for i, k := range keys {
		got := map[string]string{}
		switch cmd := cmds[i].(type) {
		case nil:
			continue // not ours
		case *redis.MapStringStringCmd:
			h, err := cmd.Result()
			if err != nil {
				if isServerError(err) && !IsPermission(err) {
					continue // changed type since the scan
				}
				return fmt.Errorf("hgetall %s: %w", k, ExplainPermission(err, cmd.Args()...))
			}
			got = h
		case *redis.SliceCmd:
			vals, err := cmd.Result()
			if err != nil {
				if isServerError(err) && !IsPermission(err) {
					continue
				}
				return fmt.Errorf("hmget %s: %w", k, ExplainPermission(err, cmd.Args()...))
			}
			for j, v := range vals {
				if s, ok := v.(string); ok {
					got[lists[i][j]] = s
				}
			}
		}
		list, all := w.owned(k)
		switch {
		case w.compactFor(list, all) && len(got) == 0:
			delete(w.sums, k)
		case w.compactFor(list, all):
			w.sums[k] = w.fingerprint(list, shrink.Pack(got))
			shrink.Grew(w.sums, &w.sumPeak)
		case len(got) == 0:
			delete(w.cache, k)
		default:
			w.cache[k] = shrink.Pack(got)
		}
	}
	return nil
}

// markLoaded records pattern's prefix when pattern is "prefix*" (no other
// glob characters): Load then saw every key of ours under it, so a key
// there that is not in the cache holds no owned field — Set needs no HDEL
// of the owned fields it leaves out (syncd's routes: one command, not two).
func (w *StateWriter) markLoaded(pattern string) {
	prefix, ok := strings.CutSuffix(pattern, "*")
	if !ok || strings.ContainsAny(prefix, `*?[\`) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.loaded, prefix) {
		w.loaded = append(w.loaded, prefix)
	}
}

// Keys returns, sorted, the keys holding owned fields as far as the writer
// knows (what it wrote or loaded).
func (w *StateWriter) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.cache)+len(w.sums))
	for k, f := range w.cache {
		if len(f) > 0 {
			keys = append(keys, k)
		}
	}
	for k, wr := range w.sums {
		if wr.mask != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Forget drops the cache (after a Redis restart, or when a Sentinel saw
// the DB emptied) so the next Set of every key writes it in full.
func (w *StateWriter) Forget() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cache = map[string]string{}
	if w.compact {
		w.sums = map[string]written{}
	}
	w.slots = paged.Slice[slotSum]{}
	w.loaded = nil
}

// CheckRestart compares the server's run_id with the one seen by the
// previous call (or the first Load); when Redis restarted (its data is gone) it calls Forget
// and returns true: the daemon should then Set every key again. Call it
// periodically, e.g. on each resync tick. A Sentinel sees more (FLUSHDB,
// a replica resync) and supersedes it.
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
