// Package engine is the one controller loop under every switchyard daemon
// that reconciles CONFIG_DB: orchagent and impaird supply a Controller
// (their tables, Reconcile, Sweep) and engine.Run does everything else,
// once:
//
//   - connect to Redis (waiting while it is down, one clear message for a
//     wrong password), make sure keyspace notifications are on;
//   - watch the controller's tables (subscribe, then scan, rescan after a
//     disconnect or Redis restart) into a Cache of whole hashes;
//   - refuse keys that cannot be config (wrong Redis type, oversized) with
//     a `state error` result, keeping what was applied before;
//   - enqueue work items into a rate-limited queue and run Reconcile;
//   - gate deletions and the sweep on CONFIG_DB_INITIALIZED;
//   - own the results in STATE_DB: stamp generation and warnings, write
//     only changes, remove results of keys that are gone, rewrite them all
//     when STATE_DB was emptied or Redis restarted.
//
// It must not know what a table means (that is schema and the controller)
// and never touches the kernel. See docs/engine.md.
package engine
