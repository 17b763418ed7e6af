// Package redisx is the Redis plumbing shared by every daemon: connecting
// from a --redis URL and waiting for Redis (Dial: one log line, final auth
// errors, the password never shown), keyspace-notification setup, the
// level-triggered table watcher (subscribe, then scan, then resync after
// reconnects), the one STATE_DB/COUNTERS_DB writer that owns fields per key
// (StateWriter), the Sentinel that notices an emptied DB, and
// ExplainPermission for ACL refusals.
//
// It knows nothing about table contents: that is package schema.
//
// A daemon typically does:
//
//	conn, err := redisx.Dial(ctx, flags.Redis, log)   // waits for Redis; auth errors are final
//	cfg := conn.DB(schema.ConfigDB)
//	err = redisx.EnsureKeyspaceEvents(ctx, cfg, redisx.WatchClasses) // *NotifyConfigError: exit with its message
//	sw := redisx.NewStateWriter(conn.DB(schema.StateDB), []string{"state", "reason"})
//	err = sw.Load(ctx, "VLAN_TABLE|*")                // adopt what a previous run wrote
//	go redisx.NewSentinel(conn.DB(schema.StateDB), redisx.SentinelKey(schema.StateDB, name),
//		redisx.SentinelFields()).Run(ctx, time.Second, onLost, onError) // onLost: sw.Forget, rewrite all
//	w := redisx.NewWatcher(cfg, redisx.WatchOptions{DB: schema.ConfigDB, Tables: ..., Keys: ..., OnSync: ...})
//	for ev := range w.Events(ctx) { ... enqueue ev.Table/ev.Key ... }
//
// Guarantees and limits of the watcher:
//   - Nothing is missed across a disconnect or a Redis restart: every
//     complete (re)subscription and every run_id change triggers a rescan,
//     and keys known before but absent now are reported (deleted).
//   - Keys may be reported more often than they changed (level-triggered
//     consumers re-read; Events coalesces bursts into one read).
//   - Before each rescan the watcher re-applies WatchClasses, since a
//     restarted Redis without the redis.conf line has notifications off.
//   - FLUSHDB/FLUSHALL send no keyspace notifications: deletions done that
//     way are seen only at the next rescan. Delete keys with DEL/UNLINK.
//   - The subscription is one pattern for the whole DB when the watcher has
//     WholeDBTables tables or more (the table filter is then a map lookup
//     in Go), else a pattern per table; it runs on the watcher's own
//     connection (the client's Dialer, credentials and client name), read
//     by pushReader rather than go-redis' PubSub: one allocation per
//     notification. A silent dead connection is noticed by PING.
//   - Events reads the changed keys (pipelined HGETALL/GET) on a second
//     connection of its own, dialed by the same dialRaw and SELECTed to
//     the watched DB, its replies parsed straight into the events
//     (replyreader.go). A failed read closes it; the batch is read again.
//   - In Run mode a slow notify stalls the subscription; Redis then drops
//     the connection at its pubsub output-buffer limit, which the watcher
//     survives by rescanning — but keep notify quick (Events does).
//
// It must not: interpret table fields, hold kernel state, or write fields
// it does not own.
package redisx
