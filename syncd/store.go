package syncd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
)

// Store writes hashes of one Redis DB whose named fields syncd owns: it
// writes only fields whose value changed, removes only its own fields (the
// key vanishes with its last field, so a hash that also holds another
// daemon's fields survives), and sends everything staged since the last
// Flush in one pipeline.
//
// It plays the role of redisx.StateWriter with two differences syncd
// needs: ownership is per table (NEIGH_TABLE's "state" is syncd's,
// PORT_TABLE's is orchagent's) while one pipeline still spans all tables,
// and it counts round trips for the benchmark. Not safe for concurrent use.
type Store struct {
	c     *redis.Client
	owned func(key string) []string // fields syncd owns in key; nil = not ours

	cache   map[string]schema.Fields // owned fields as Redis holds them
	pending map[string]schema.Fields // cache entries after the staged writes (nil value = gone)
	pipe    redis.Pipeliner
	cmds    int
	keys    []string // key of each staged command, in order

	roundTrips atomic.Uint64 // pipelines and single commands sent
	commands   atomic.Uint64 // commands sent
}

// NewStore returns a Store on c; owned names the fields syncd owns in a
// key (by its table) and returns nil for keys that are not syncd's.
func NewStore(c *redis.Client, owned func(key string) []string) *Store {
	return &Store{c: c, owned: owned, cache: map[string]schema.Fields{}, pending: map[string]schema.Fields{}}
}

// StateOwned is the owned function of syncd's STATE_DB store.
func StateOwned(key string) []string {
	table, _ := SplitStateKey(key)
	return OwnedFields[table]
}

// CountersOwned is the owned function of syncd's COUNTERS_DB store.
func CountersOwned(string) []string { return CounterFields }

// RoundTrips is the number of Redis round trips (pipelines or single
// commands) the Store has made.
func (s *Store) RoundTrips() uint64 { return s.roundTrips.Load() }

// Commands is the number of Redis commands the Store has sent.
func (s *Store) Commands() uint64 { return s.commands.Load() }

// Keys returns the keys holding fields syncd owns (as far as it knows), sorted.
func (s *Store) Keys() []string {
	out := make([]string, 0, len(s.cache))
	for k := range s.cache {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Has reports whether key holds fields syncd owns.
func (s *Store) Has(key string) bool { _, ok := s.cache[key]; return ok }

// Forget drops what the Store knows about Redis (after a Redis restart or
// a failed flush) and anything staged: the next Set writes every field.
func (s *Store) Forget() {
	clear(s.cache)
	clear(s.pending)
	s.pipe, s.cmds, s.keys = nil, 0, nil
}

// Load adopts the owned fields of the keys matching pattern (SCAN, then
// HMGET in pipelines of 1,000 keys): after a restart of syncd these are
// what it wrote before, to be kept, corrected or removed as stale.
func (s *Store) Load(ctx context.Context, pattern string) error {
	var keys []string
	var cursor uint64
	for {
		s.roundTrips.Add(1)
		s.commands.Add(1)
		batch, next, err := s.c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		keys = append(keys, batch...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(keys)
	keys = dedupe(keys)
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		chunk := keys[:n]
		keys = keys[n:]
		pipe := s.c.Pipeline()
		cmds := make([]*redis.SliceCmd, len(chunk))
		for i, k := range chunk {
			cmds[i] = pipe.HMGet(ctx, k, s.owned(k)...)
		}
		s.roundTrips.Add(1)
		s.commands.Add(uint64(len(chunk)))
		if _, err := pipe.Exec(ctx); err != nil && !isServerError(err) {
			return fmt.Errorf("load %s: %w", pattern, err)
		}
		for i, k := range chunk {
			if cmds[i].Err() != nil {
				continue // not a hash: not ours
			}
			owned := s.owned(k)
			vals := cmds[i].Val()
			f := schema.Fields{}
			for j, v := range vals {
				if str, ok := v.(string); ok && j < len(owned) {
					f[owned[j]] = str
				}
			}
			if len(f) > 0 {
				s.cache[k] = f
			}
		}
	}
	return nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, k := range sorted {
		if i == 0 || k != sorted[i-1] {
			out = append(out, k)
		}
	}
	return out
}

// current is what key holds after the staged writes.
func (s *Store) current(key string) schema.Fields {
	if f, ok := s.pending[key]; ok {
		return f
	}
	return s.cache[key]
}

func (s *Store) pipeline() redis.Pipeliner {
	if s.pipe == nil {
		s.pipe = s.c.Pipeline()
	}
	return s.pipe
}

// Set stages key to hold exactly fields among the owned ones: changed
// values are written, owned fields absent from fields are removed. Fields
// syncd does not own are ignored.
func (s *Store) Set(ctx context.Context, key string, fields schema.Fields) {
	owned := s.owned(key)
	cur := s.current(key)
	next := schema.Fields{}
	var hset []any
	var hdel []string
	for _, name := range owned {
		v, want := fields[name]
		old, have := cur[name]
		switch {
		case want:
			next[name] = v
			if !have || old != v {
				hset = append(hset, name, v)
			}
		case have:
			hdel = append(hdel, name)
		}
	}
	if len(hset) > 0 {
		s.pipeline().HSet(ctx, key, hset...)
		s.staged(key)
	}
	if len(hdel) > 0 {
		s.pipeline().HDel(ctx, key, hdel...)
		s.staged(key)
	}
	if len(hset)+len(hdel) > 0 {
		if len(next) == 0 {
			next = nil
		}
		s.pending[key] = next
	}
}

// Delete stages the removal of syncd's fields of key; other fields (and
// so the key, when it has any) stay.
func (s *Store) Delete(ctx context.Context, key string) {
	cur := s.current(key)
	if len(cur) == 0 {
		return
	}
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	s.pipeline().HDel(ctx, key, names...)
	s.staged(key)
	s.pending[key] = nil
}

func (s *Store) staged(key string) {
	s.cmds++
	s.keys = append(s.keys, key)
}

// Staged is the number of commands waiting for Flush.
func (s *Store) Staged() int { return s.cmds }

// KeyErrors are keys Redis refused to write (a server error such as
// WRONGTYPE: another writer stored something that is not a hash); the rest
// of the pipeline was applied. Such a key is retried when next touched.
type KeyErrors map[string]error

func (e KeyErrors) Error() string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Sprintf("redis refused %d keys, e.g. %s: %v", len(keys), keys[0], e[keys[0]])
}

// isServerError tells a reply of the server from a connection failure.
func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// Flush sends the staged commands in one pipeline. On a connection error
// the Store forgets everything (Redis may hold part of the pipeline): the
// caller must Load again and rewrite. Keys the server refused come back as
// KeyErrors, everything else having been written.
func (s *Store) Flush(ctx context.Context) error {
	if s.pipe == nil || s.cmds == 0 {
		return nil
	}
	pipe, n, keys := s.pipe, s.cmds, s.keys
	s.pipe, s.cmds, s.keys = nil, 0, nil
	s.roundTrips.Add(1)
	s.commands.Add(uint64(n))
	cmds, err := pipe.Exec(ctx)
	var failed KeyErrors
	if err != nil {
		failed = KeyErrors{}
		for i, c := range cmds {
			if e := c.Err(); e != nil && i < len(keys) {
				if !isServerError(e) {
					failed = nil
					break
				}
				failed[keys[i]] = e
			}
		}
		if len(failed) == 0 {
			s.Forget()
			return fmt.Errorf("write %d commands: %w", n, err)
		}
	}
	for k, f := range s.pending {
		switch {
		case failed[k] != nil:
			delete(s.cache, k) // unknown: the next Set writes every field
		case f == nil:
			delete(s.cache, k)
		default:
			s.cache[k] = f
		}
	}
	clear(s.pending)
	if failed != nil {
		return failed
	}
	return nil
}
