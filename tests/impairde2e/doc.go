// Package impairde2e runs bin/impaird against a private redis-server, a
// private bpffs and fresh network namespaces: config in, real UDP traffic
// through an XDP-impaired veth port, results and counters out, judged by
// a receiver socket and iproute2. Needs root; skips otherwise.
package impairde2e
