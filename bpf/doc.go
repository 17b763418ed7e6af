// Package bpf is switchyard's XDP data plane for impairments: the C
// program (impair.c, built with bpf2go; the generated Go and .o files are
// committed and `make check-generate` keeps them fresh), the compiler from
// its own input types (Spec, RuleSpec, Match) to map entries (Compile),
// and Port, which loads one
// program instance per port with its maps pinned on bpffs, attaches it
// with a bpf link, applies plans and reads counters.
//
// Data plane layout (one instance per port):
//
//   - one non-preallocated hash element holds the port config (active
//     masks and the IMPAIRMENT profile, "slot 0"); each match entry holds
//     its IMPAIRMENT_FLOW rule's slot (1..1024), rank and whole profile.
//     Every update replaces an element whole (freed after an RCU grace
//     period), so a packet sees the old or the new profile, never a mix;
//   - rules are classified by tuple space search: each distinct match
//     shape (which fields, prefix lengths, port-range block sizes) is a
//     mask; per packet one hash lookup per active mask, best rank wins;
//     for IPv4 a shape filter in the port config (keyed by the packet
//     ANDed with the AND of the masks) and a bloom per mask skip the
//     masks that cannot match;
//   - counters, RNG (xorshift64*), Gilbert and 4-state Markov state and
//     netem's correlated number (netem.h) are per CPU per slot;
//     the policer (GCRA in nanoseconds, compare-and-swap) and the periodic
//     counter are shared per slot, or per 5-tuple for scope flow (a
//     4-way set-associative array of exact-tagged flows, flowtab), with
//     per-CPU policer shares per slot or per flow;
//   - duplicate: XDP decides and asks in the packet metadata; impair_dup
//     (dup.h, dup.go), a tc ingress program of the same object, clones.
//
// The same collection holds the port's ACL stages (acl.h, acl*.go,
// docs/acl.md): the ingress ACL runs in the XDP program before the
// impairment stage, the egress ACL in the tc program acl_egress; rule
// sets are compiled by CompileACL and published atomically by ApplyACL.
//
// It must not talk to Redis, import the schema or run commands (impaird
// translates CONFIG_DB records into Specs); netlink questions (is a
// foreign XDP program attached, which mode) belong to impaird.
package bpf
