// Package swctl is the logic of the swctl command-line tool: SONiC-like
// "config" verbs that write CONFIG_DB, "config load"/"config save" of a
// config_db.json, "wait" for the daemons' results and "show" tables read
// from STATE_DB and COUNTERS_DB.
//
// Everything it writes is first validated with package schema — the same
// parsers the daemons use — so an invalid entry never reaches Redis. It
// talks only to Redis: it never touches the kernel and never runs ip,
// bridge, tc or a shell. cmd/swctl is a thin main around Main.
package swctl
