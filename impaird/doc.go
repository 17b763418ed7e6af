// Package impaird is the impairment daemon: it watches CONFIG_DB
// IMPAIRMENT and IMPAIRMENT_FLOW, translates each port's parsed entries
// into the data plane's own types (compile.go) and compiles them (package
// bpf, which does not know the schema) into its own XDP program instance
// and maps, attaches it with a bpf
// link (native XDP, generic as fallback), pins link and maps under --bpffs
// so a restart adopts them without a gap, and writes results to STATE_DB
// (IMPAIRMENT_TABLE, IMPAIRMENT_FLOW_TABLE) and counters to COUNTERS_DB
// (IMPAIRMENT_COUNTERS) every second.
//
// A bad update keeps the last good configuration running (lastgood.go);
// pin directories encode the port name (pins.go).
//
// It never replaces an XDP program it did not attach, and it talks to the
// kernel only through bpf syscalls and netlink (never ip/tc processes).
// See docs/impaird.md.
package impaird
