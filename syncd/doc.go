// Package syncd mirrors what the Linux kernel of one network namespace
// really holds into Redis for downstream services: ports and VLAN devices
// (STATE_DB PORT_TABLE, VLAN_TABLE), bridge FDB entries (FDB_TABLE),
// IPv4/IPv6 neighbours (NEIGH_TABLE), main-table routes (ROUTE_TABLE),
// addresses of VLAN interfaces (INTERFACE_TABLE) and per-port link counters
// (COUNTERS_DB COUNTERS:<port>, and COUNTERS:<oid> found through
// COUNTERS_PORT_NAME_MAP). docs/syncd.md describes the keys and fields.
//
// It is built in layers, each testable on its own:
//
//   - mirror.go: pure functions from netlinkmgr objects to STATE_DB keys and
//     field maps, and the fields syncd owns per table (no I/O);
//   - sonic.go: the shapes SONiC's readers use (PORT_TABLE netdev_oper_status,
//     INTERFACE_TABLE of VlanN addresses, COUNTERS_PORT_NAME_MAP and the SAI
//     port counters of COUNTERS:<oid>) and the ownership split with orchagent;
//     interfaces.go reads syncd's INTERFACE_TABLE keys back (orchagent's
//     engine removes them when it starts);
//   - view.go, view_routes.go: the View, syncd's picture of the kernel,
//     updated event by event (a route is one map slot of plain values and
//     an interned next-hop set: ~94 B); it records which STATE_DB keys a
//     change may have touched and answers "what should key K hold now"
//     (level-triggered), including listings after a netlink overflow;
//   - Redis is written through redisx.StateWriter with per-table ownership
//     (StateOwnership, CountersOwnership): only changes, only its own
//     fields, one MULTI/EXEC per flush;
//   - portwatch.go: the CONFIG_DB PORT watch (which ports to mirror);
//   - syncd.go: the daemon loop that feeds kernel and PORT events into the
//     View and flushes the touched keys, at most 4,096 per pipeline, written
//     by a goroutine of their own while the loop reads the kernel on (one
//     burst in flight at a time), with a full rewrite after a start, a Redis
//     restart, a failed write, or an emptied STATE_DB/COUNTERS_DB (a
//     redisx.Sentinel per DB).
//
// syncd only reads the kernel: it must never change a link, route or FDB
// entry. In Redis it writes only the fields it owns (OwnedFields), so a
// hash that also holds orchagent's state/reason survives syncd's deletes.
package syncd
