// Package netlinkmgr is switchyard's typed netlink wrapper (the design of
// seed 000 in idiomatic Go): Info types whose optional fields mean
// "untouched" when unset, one manager interface per object kind, one Kernel
// per network namespace that reuses its netlink sockets, typed events from
// the kernel's multicast groups, typed errors, and an in-memory Fake of the
// same interfaces for unit tests of callers.
//
// It must not run ip, bridge, tc or a shell: netlink syscalls only. Each
// call's doc comment names its iproute2 equivalent.
package netlinkmgr
