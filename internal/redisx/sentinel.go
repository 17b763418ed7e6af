package redisx

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelTable is the table of the daemons' sentinel keys:
// SWITCHYARD_DAEMON|<daemon> in STATE_DB, SWITCHYARD_DAEMON:<daemon> in
// COUNTERS_DB.
const SentinelTable = "SWITCHYARD_DAEMON"

// processStarted is when this process started, for the "started" field.
var processStarted = time.Now()

// countersDB is schema.CountersDB, the one DB whose keys join table and
// key with ":" (redisx does not import schema; a test checks they agree).
const countersDB = 2

// SentinelKey is daemon's sentinel key in database db:
// SWITCHYARD_DAEMON:<daemon> in COUNTERS_DB (2), SWITCHYARD_DAEMON|<daemon>
// in STATE_DB (6) and any other DB.
func SentinelKey(db int, daemon string) string {
	if db == countersDB {
		return SentinelTable + ":" + daemon
	}
	return SentinelTable + "|" + daemon
}

// SentinelFields are the fields of a sentinel of this process: pid and
// started (RFC 3339).
func SentinelFields() map[string]string {
	return map[string]string{
		"pid":     strconv.Itoa(os.Getpid()),
		"started": processStarted.UTC().Format(time.RFC3339),
	}
}

// Sentinel notices that a DB lost what a daemon wrote there: FLUSHDB or
// FLUSHALL, a Redis restart with empty data, a replica resync, a DEL. It
// keeps one hash of its own in the DB and checks that it still exists; a
// writer's cache cannot see any of these (FLUSHDB sends no keyspace
// notification), the sentinel's absence can.
type Sentinel struct {
	c      *redis.Client
	key    string
	fields map[string]string
}

// NewSentinel returns a Sentinel keeping key (see SentinelKey) with fields
// (see SentinelFields; empty means SentinelFields()) on c's DB.
func NewSentinel(c *redis.Client, key string, fields map[string]string) *Sentinel {
	if len(fields) == 0 {
		fields = SentinelFields()
	}
	return &Sentinel{c: c, key: key, fields: maps.Clone(fields)}
}

// Key is the sentinel's key.
func (s *Sentinel) Key() string { return s.key }

// Run writes the sentinel (HSET), then every interval checks it (EXISTS)
// until ctx ends. When it is gone Run writes it again and then calls
// onLost, on Run's goroutine: the daemon should forget its writers' caches
// and rewrite everything it owns in the DB (onLost may block; checks pause
// meanwhile). A loss seen while the rewrite of the sentinel fails is
// reported once the write succeeds. Every failed command is passed to
// onError (nil: ignored) — once per interval while Redis is down, so rate-
// limit logging there.
func (s *Sentinel) Run(ctx context.Context, interval time.Duration, onLost func(ctx context.Context), onError func(error)) {
	if onError == nil {
		onError = func(error) {}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	written, lost := false, false
	for {
		switch {
		case !written || lost:
			if err := s.write(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				onError(err)
				break
			}
			written = true
			if lost {
				lost = false
				onLost(ctx)
			}
		default:
			n, err := s.c.Exists(ctx, s.key).Result()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				onError(fmt.Errorf("sentinel %s: exists: %w", s.key, ExplainPermission(err, "exists", s.key)))
			case n == 0:
				lost = true
				continue // write it again at once
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sentinel) write(ctx context.Context) error {
	args := make([]any, 0, 2*len(s.fields))
	for k, v := range s.fields {
		args = append(args, k, v)
	}
	if err := s.c.HSet(ctx, s.key, args...).Err(); err != nil {
		return fmt.Errorf("sentinel %s: hset: %w", s.key, ExplainPermission(err, "hset", s.key))
	}
	return nil
}
