package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard-net/switchyard/schema"
)

// gate is the CONFIG_DB_INITIALIZED rule (docs/engine.md): config is
// applied as it arrives, but what a key made is removed only when that
// key's deletion is trusted, and the sweep runs only once the config is
// declared complete.
//
//   - The sweep (and results of keys gone while the daemon was down) waits
//     until the first scan is done and CONFIG_DB_INITIALIZED is "1".
//   - Once it has been "1", a key that vanishes while it is not "1" (Redis
//     restarted empty, CONFIG_DB flushed) is held: the controller still
//     sees it, its result is not rewritten, until it is "1" again.
type gate struct {
	initialized atomic.Bool // CONFIG_DB_INITIALIZED is "1"
	seen        atomic.Bool // it has been "1" since the daemon started
	synced      atomic.Bool // the first scan was delivered
}

func initValue(v string) bool { return strings.TrimSpace(v) == "1" }

// update records a new value of CONFIG_DB_INITIALIZED; it reports
// whether the gate just opened.
func (g *gate) update(present bool, v string) (opened bool) {
	now := present && initValue(v)
	if !now {
		g.initialized.Store(false)
		return false
	}
	g.seen.Store(true)
	return !g.initialized.Swap(true)
}

// open reports whether held keys may go and the sweep may run.
func (g *gate) open() bool { return g.synced.Load() && g.initialized.Load() }

// holdDelete reports whether a key deletion must be held. Redis is asked
// directly: a rescan delivers the table keys before CONFIG_DB_INITIALIZED
// itself, so the cached value may be stale. In doubt (Redis error) hold.
func (g *gate) holdDelete(ctx context.Context, c *redis.Client) bool {
	if !g.seen.Load() {
		return false
	}
	v, err := c.Get(ctx, schema.KeyConfigDBInitialized).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return true
	}
	return !initValue(v)
}
