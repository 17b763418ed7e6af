// Package acle2e runs bin/impaird (and bin/orchagent) against a private
// redis-server, a private bpffs and fresh network namespaces: SONiC
// ACL_TABLE/ACL_RULE in CONFIG_DB, real TCP and UDP through the port's
// XDP (ingress) and tc (egress) ACL, results in STATE_DB and counters in
// COUNTERS_DB in aclshow's forms, judged by sockets and iproute2. Needs
// root; skips otherwise.
package acle2e
