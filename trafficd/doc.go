// Package trafficd is the background traffic generator: TRAFFIC_GEN
// streams (CONFIG_DB) sent out of switch ports from prebuilt frames,
// paced by a token bucket on the monotonic clock, over AF_XDP (copy mode)
// or a packet socket with PACKET_QDISC_BYPASS and sendmmsg. Results go to
// STATE_DB TRAFFIC_GEN_TABLE, counters to COUNTERS_DB
// TRAFFIC_GEN_COUNTERS. It is a controller on internal/engine. See
// docs/trafficd.md.
package trafficd
