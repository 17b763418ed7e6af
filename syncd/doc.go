// Package syncd mirrors what the Linux kernel of one network namespace
// really holds into Redis for downstream services: ports and VLAN devices
// (STATE_DB PORT_TABLE, VLAN_TABLE), bridge FDB entries (FDB_TABLE),
// IPv4/IPv6 neighbours (NEIGH_TABLE), main-table routes (ROUTE_TABLE) and
// per-port link counters (COUNTERS_DB COUNTERS:<port>).
//
// It is built in three layers, each testable on its own:
//
//   - mirror.go: pure functions from netlinkmgr objects to STATE_DB keys and
//     field maps (no I/O);
//   - view.go: the View, syncd's picture of the kernel, updated event by
//     event; it records which STATE_DB keys a change may have touched, and
//     answers "what should key K hold now" (level-triggered);
//   - syncd.go: the daemon loop that feeds kernel and CONFIG_DB events into
//     the View and flushes the touched keys to Redis, one pipeline per burst.
//
// syncd only reads the kernel: it must never change a link, route or FDB
// entry. In Redis it writes only the fields it owns (see OwnedFields), so a
// hash that also holds orchagent's state/reason survives syncd's deletes.
package syncd
