// Package syncde2e holds the end-to-end tests and benchmarks of syncd: the
// built bin/syncd against a private redis-server and fresh network
// namespaces, with iproute2 (ip -j, bridge -j) as the independent judge of
// what the kernel holds and real traffic (ping across a bridge named
// Bridge) to make the kernel learn MACs and neighbours.
//
// Everything here needs root and skips, saying why, without it.
package syncde2e
