package syncd

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
)

// KeyspaceClasses are the notify-keyspace-events classes syncd makes sure
// of (redisx.WatchClasses: K, g, $, h, x, e) — what its own PORT watch
// needs and what downstream consumers of STATE_DB need to see syncd's
// HSET/HDEL.
const KeyspaceClasses = redisx.WatchClasses

// portUpdate is what the PORT watch reports, in order: single keys
// (name -> present), and a synced marker after each full (re)scan.
type portUpdate struct {
	names     map[string]bool
	tuning    map[string]bool // PORT_TUNING keys (name -> present)
	synced    bool            // every existing PORT key has been reported
	reconnect bool            // a rescan after the first: Redis reconnected or restarted
}

// watchPorts watches CONFIG_DB PORT (and PORT_TUNING, whose ports get
// the tuning mirror) with redisx.Watcher (subscribe, then
// scan; rescan after a reconnect or a run_id change, re-enabling keyspace
// events first) and reports each key's existence, re-read on every
// notification (level-triggered). Sends are blocking and come from the
// watcher's serialized callbacks, so the synced marker follows the keys
// of its scan.
func watchPorts(ctx context.Context, c *redis.Client, out chan<- portUpdate, log *logrus.Entry) {
	send := func(u portUpdate) {
		select {
		case out <- u:
		case <-ctx.Done():
		}
	}
	first := true
	w := redisx.NewWatcher(c, redisx.WatchOptions{
		DB:     schema.ConfigDB,
		Tables: []string{schema.TablePort, schema.TablePortTuning},
		OnSync: func(context.Context) {
			send(portUpdate{synced: true, reconnect: !first})
			first = false
		},
		OnError: func(err error) { log.WithError(err).Debug("port watch") },
	})
	err := w.Run(ctx, func(ch redisx.Change) {
		if (ch.Table != schema.TablePort && ch.Table != schema.TablePortTuning) || ch.Key == "" {
			return
		}
		n, err := c.Exists(ctx, schema.ConfigKey(ch.Table, ch.Key)).Result()
		if err != nil {
			return // Redis is away: the watcher rescans once it is back
		}
		if ch.Table == schema.TablePortTuning {
			send(portUpdate{tuning: map[string]bool{ch.Key: n > 0}})
			return
		}
		send(portUpdate{names: map[string]bool{ch.Key: n > 0}})
	})
	if err != nil {
		log.WithError(err).Error("port watch stopped")
	}
}

// ensureKeyspaceEvents makes notify-keyspace-events contain
// KeyspaceClasses, keeping the classes already there; a server that
// refuses CONFIG gets an error naming the redis.conf line to add.
func ensureKeyspaceEvents(ctx context.Context, c *redis.Client) error {
	return redisx.EnsureKeyspaceEvents(ctx, c, KeyspaceClasses)
}
