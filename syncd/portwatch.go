package syncd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// portUpdate is what the PORT watch reports: either the full set of
// configured ports (snapshot, after each (re)subscription) or single
// changes (name -> present).
type portUpdate struct {
	snapshot  bool
	reconnect bool // a snapshot after a resubscription: Redis may be new
	names     map[string]bool
}

// watchPorts watches CONFIG_DB PORT as the brief's watch rule says:
// PSUBSCRIBE first, then SCAN; each notification re-reads the key's
// existence (level-triggered). go-redis resubscribes after a disconnect;
// the resubscription confirmation triggers a new snapshot and a
// keyspace-events check (a restarted Redis has forgotten CONFIG SET).
func watchPorts(ctx context.Context, c *redis.Client, out chan<- portUpdate, log *logrus.Entry) {
	prefix := "__keyspace@" + strconv.Itoa(c.Options().DB) + "__:"
	pattern := prefix + schema.ConfigKey(schema.TablePort, "*")
	ps := c.PSubscribe(ctx, pattern)
	defer ps.Close()
	first := true
	send := func(u portUpdate) bool {
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.WithError(err).Debug("port watch: receive failed; reconnecting")
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "psubscribe" {
				continue
			}
			names, err := scanPorts(ctx, c)
			for err != nil && ctx.Err() == nil {
				log.WithError(err).Warn("port watch: scan PORT failed; retrying")
				sleep(ctx, 500*time.Millisecond)
				names, err = scanPorts(ctx, c)
			}
			if ctx.Err() != nil {
				return
			}
			if err := ensureKeyspaceEvents(ctx, c); err != nil {
				log.WithError(err).Error("port watch")
			}
			if !send(portUpdate{snapshot: true, reconnect: !first, names: names}) {
				return
			}
			first = false
		case *redis.Message:
			key := strings.TrimPrefix(m.Channel, prefix)
			_, name, ok := strings.Cut(key, schema.ConfigSep)
			if !ok || name == "" {
				continue
			}
			n, err := c.Exists(ctx, key).Result()
			if err != nil {
				// The resubscription after the reconnect rescans.
				continue
			}
			if !send(portUpdate{names: map[string]bool{name: n > 0}}) {
				return
			}
		}
	}
}

func scanPorts(ctx context.Context, c *redis.Client) (map[string]bool, error) {
	names := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, schema.ConfigKey(schema.TablePort, "*"), 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("scan CONFIG_DB PORT: %w", err)
		}
		for _, k := range keys {
			if _, name, ok := strings.Cut(k, schema.ConfigSep); ok && name != "" {
				names[name] = true
			}
		}
		if cursor = next; cursor == 0 {
			return names, nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ensureKeyspaceEvents makes notify-keyspace-events contain
// KeyspaceClasses, keeping the classes already there; a server that
// refuses CONFIG gets an error naming the redis.conf line to add.
func ensureKeyspaceEvents(ctx context.Context, c *redis.Client) error {
	return redisx.EnsureKeyspaceEvents(ctx, c, KeyspaceClasses)
}
