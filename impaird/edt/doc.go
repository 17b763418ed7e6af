// Package edt gives impaird delay, jitter and rate shaping on a port by
// earliest departure time (EDT): a tc clsact egress BPF program
// (bpf/edt) stamps each packet's departure time into skb->tstamp and the
// fq qdisc, installed as the port's root qdisc, releases it then.
//
// It owns two things:
//
//   - ParseFields: the IMPAIRMENT / IMPAIRMENT_FLOW fields delay, jitter,
//     jitter_distribution, shape, shape_limit and reorder, parsed into a
//     Profile with precise errors (which field, which value, what to
//     write instead);
//   - Installer: Apply(ifname, Profile) and Remove(ifname) in one network
//     namespace, through netlink and bpf syscalls only. Apply installs and
//     owns fq as root qdisc (sized from the profile: horizon, limit,
//     flow_limit), clsact, and the egress program; Remove restores the
//     root qdisc that was there before. On kernels without fq or clsact
//     Apply fails with a *MissingFeatureError naming the feature.
//     Per class: SetClass(id, Profile) for packets marked
//     bpfedt.MarkClass(id), MarkIngress(ifname) to turn XDP metadata
//     into that mark on an ingress port.
//
// It must not talk to Redis, read the schema's tables or run commands
// (tc, ip): impaird decides which ports get which Profile and reports
// the results. See docs/edt.md for the design and measured precision.
package edt
