// Package edt is the earliest-departure-time data plane for delay,
// jitter and rate shaping: the C program edt.c (a tc clsact egress
// program, direct action, built with bpf2go; the generated Go and .o
// files are committed and `make check-generate` keeps them fresh), the
// netem distribution tables it samples jitter from, and Objects, which
// loads one instance and reads and writes its maps.
//
// Data plane: per packet, the profile is looked up by the class carried
// in skb->mark (MarkClass, set at ingress) or else by the egress
// ifindex; departure = max(shaper start + delay + jitter sample, the
// flow's previous departure unless reorder is on), where the shaper
// start is the per-profile virtual clock (advanced by len*8e9/rate under
// a spin lock) or now. A packet whose shaper start is further than the
// queue limit ahead is tail-dropped (congestion loss), then channel loss
// applies; the rest get skb->tstamp (CLOCK_MONOTONIC) and TC_ACT_OK, and
// the fq qdisc releases them at that time.
//
// It must not touch qdiscs, filters or links: attaching is impaird/edt's.
package edt
