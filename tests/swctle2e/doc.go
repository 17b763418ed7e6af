// Package swctle2e holds the end-to-end tests of swctl, the demo and the
// container deployment: the built bin/swctl against a real redis-server,
// swctl with orchagent and syncd running against a network namespace,
// scripts/demo.sh run non-interactively (and its cleanup checked), and a
// consistency check of docker-compose.yml against the daemons' flags.
//
// Tests that need root, a daemon that is not written yet or a tool that is
// not installed skip and say why.
package swctle2e
