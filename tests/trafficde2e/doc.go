// Package trafficde2e runs bin/trafficd against a private redis-server
// and fresh network namespaces: TRAFFIC_GEN in, frames out of the switch
// port, counted by the receiver in the peer namespace (ip -s link), results
// and counters out. Needs root; skips otherwise.
package trafficde2e
