//go:build ignore

// impair.c: XDP ingress impairment of one switch port (one loaded instance
// per port, each with its own maps). See doc.go and docs/impaird.md.
//
// Per packet: parse L2-L4 -> classify (tuple space search over the active
// masks, best priority wins; no match = the port profile in slot 0) ->
// loss (random | gilbert | periodic) -> policer (token bucket in ns) ->
// corrupt -> XDP_PASS (with the rule's EDT class as metadata, if it has
// one) / XDP_DROP. Counters per slot and per CPU.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* inline entries (shared with the ACL) */
#include "inline.h"

char __license[] SEC("license") = "Dual MIT/GPL";

#define MAX_SLOTS 1025 /* slot 0 = port profile, 1..1024 = IMPAIRMENT_FLOW rules */
#define MAX_MASKS 32   /* distinct match shapes per port */
#define MAX_MATCHES 65536
#define MAX_V6_EXT 4    /* IPv6 extension headers skipped */

/* profile.flags */
#define F_LOSS_RANDOM 1
#define F_LOSS_GILBERT 2
#define F_LOSS_PERIODIC 4
#define F_RATE 8
#define F_CORRUPT 16
#define F_SCOPE_FLOW 32
#define F_SEEDED 64
#define F_LOSS_CORR 128   /* random loss with netem's correlation (loss_corr) */
#define F_LOSS_4STATE 256 /* netem's 4-state Markov loss (loss_model state) */
#define F_DUP 512         /* duplicate: copy made by impair_dup (tc ingress) */

/* A packet's match tuple; also a mask (same layout, ANDed field by field)
 * and, with mask_id set, a key of matches6 (IPv4: its tuple4 form is the
 * key of matches4). Ports, vlan in host order; addresses in network order
 * (IPv4 in src[0]/dst[0]). */
struct tuple {
	__u8 mask_id;
	__u8 family; /* 4, 6 */
	__u8 proto;
	__u8 dscp;
	__u16 vlan; /* outer VID, 0 = untagged */
	__u16 sport;
	__u16 dport;
	__u16 pad0;
	__u32 pad1;
	__u32 src[4];
	__u32 dst[4];
};

/* The IPv4 form of a tuple: the same fields, one address word each. */
struct tuple4 {
	__u8 mask_id;
	__u8 family;
	__u8 proto;
	__u8 dscp;
	__u16 vlan;
	__u16 sport;
	__u16 dport;
	__u16 pad0;
	__u32 src;
	__u32 dst;
};

/* One impairment profile. Probabilities are scaled to 2^32 (drop when a
 * 32-bit random number is below; 2^32 = always).
 *
 * The loss models share fields so the profile (copied per matching rule)
 * does not grow: F_LOSS_CORR keeps netem's rho in ge_p and netem's loss
 * threshold (percent * (2^32-1)) in ge_r; F_LOSS_4STATE keeps netem's
 * a1..a5 (p13, p31, p32, p14, p23, same scale) in ge_p, ge_r, ge_lg,
 * ge_lb and period. */
struct profile {
	__u32 flags;
	__u32 gen; /* changed on every rewrite: resets RNG, Gilbert and policer state */
	__u64 seed;
	__u64 loss;
	__u64 ge_p, ge_r, ge_lg, ge_lb;
	__u64 period;
	__u64 corrupt;
	__u64 ns_per_byte_fp; /* policer: ns per byte, 16 fraction bits */
	__u64 depth;          /* policer: bucket depth (burst) in ticks */
	/* IMPAIRMENT_FLOW with delay/jitter/shape: the rule's EDT class id
	 * (1..0x7fffff; 0 = none), handed to tc as XDP metadata on pass */
	__u32 edt_class;
	__u32 dup; /* F_DUP: P(duplicate) * 2^32, saturated at 2^32-1 */
};

/* Value of matches4/matches6: the rule's slot, rank (lower wins) and
 * whole profile, so one lookup classifies and configures, and one map
 * update replaces a rule's profile atomically. */
struct match {
	__u32 slot;
	__u32 rank;
	struct profile prof;
};

/* Port-wide config: bit m of active_masks set = masks[m] is in use; the
 * port profile (slot 0) when has_port. It lives in a one-element array
 * that is never written after it is published: a change publishes a new
 * inner array in the outer array-of-maps (one pointer swap; the kernel
 * frees the old one after an RCU grace period), so a packet reads the
 * whole old or the whole new config, and both lookups are inlined array
 * lookups (a hash lookup costs ~20 ns per packet). */
#define FILTER_SHIFT 14 /* shape filter: 16384 entries */
#define IMP_TAB_SHIFT 12 /* inline entries per family: 4096 */
struct port_cfg {
	__u32 active_masks;
	__u32 has_port;
	struct profile port;
	/* IPv4 shape filter: one lookup instead of one per shape. common is
	 * the AND of the masks that have IPv4 entries (tuple4 form, mask_id
	 * 0); filter[bloom_hash4(packet & common) >> (64 - FILTER_SHIFT)] has
	 * bit m set when mask m has an entry whose key ANDed with common
	 * hashes there, so the other masks are not searched. filter_on 0:
	 * search every active mask. */
	__u32 filter_on;
	__u32 pad;
	struct tuple4 common;
	__u32 filter[1 << FILTER_SHIFT];
	/* IPv4 inline entries (inline.h): the best-ranked matches4 entry of
	 * each slot, key in imp_words4's words, the rule's slot in idx; its
	 * profile is prof[idx]. Published with the config (a rule's profile
	 * change republishes it), so a match on one costs no hash lookup. A
	 * key whose slot is unshared (more 0) and holds another key has no
	 * entry: neither pre-check bloom nor lookup. */
	struct acl_ent4 tab4[1 << IMP_TAB_SHIFT];
	/* IPv6 inline entries, as tab4 for matches6 (imp_words6's words) */
	struct acl_ent6 tab6[1 << IMP_TAB_SHIFT];
	/* the profile of each rule slot with an inline entry */
	struct profile prof[MAX_SLOTS];
};

/* A CPU's view of a shared policer bucket (police_share): its share of
 * tokens and, while the bucket is empty, the drops it decides without a
 * clock read. at, seen: the last precise clock read (ticks) and the
 * packets this CPU decided since without one; until: when the bucket can
 * pay again (ticks); skip: the packets after at to drop unseen while the
 * coarse clock is before until (0: none). */
struct pol_cpu {
	__u64 share; /* ticks this CPU took from the bucket, unspent */
	__u64 at;
	__u64 until;
	__u32 skip;
	__u32 seen;
};

/* Per-CPU state of one slot: counters, RNG and Gilbert state. */
struct slot_pcpu {
	__u64 rx_packets, rx_bytes, passed, dropped_loss, dropped_rate, corrupted;
	__u64 rng;
	__u32 gen;
	__u32 ge_bad; /* Markov state: Gilbert bad (1), or the 4-state model's (0..3) */
	struct pol_cpu pol; /* policer, scope rule */
	__u64 duplicated;
	__u32 crnd_last; /* loss_corr: netem's last correlated random number */
	__u32 pad;
};

/* Shared (all CPUs) state of one slot for scope rule. */
struct slot_shared {
	__u64 tat; /* policer: theoretical arrival time, ticks */
	__u64 period_cnt;
	__u32 gen;
	__u32 pad;
};

struct flow_state {
	__u64 tat;
	__u64 period_cnt;
	__u32 gen;
	__u32 ge_bad;
};

/* scope flow: a 4-way set-associative table of flow states in a shared
 * array (one inlined array lookup instead of an LRU hash lookup). A way's
 * tag is the whole flow key in 64-bit words (acl.h's layout: addresses
 * src,dst for IPv4, src hi/lo, dst hi/lo for IPv6; ports, vlan, proto,
 * family; slot | FLOW_VALID), so a hit is exact; a new flow takes the
 * set's next way round-robin (evicting the flow that arrived there
 * first). */
#define FLOW_WAYS 4
#define FLOW_SET_SHIFT 14 /* 16384 sets x 4 ways = 65536 flows */
#define FLOW_VALID (1ULL << 32)
struct flow_ent {
	__u64 k[6];
	struct flow_state st;
};

struct flow_set {
	struct flow_ent e[FLOW_WAYS];
	__u64 next;
};

/* A CPU's unspent policer share of one flowtab way (scope flow): tag is
 * the flow's 64-bit hash mixed with its generation, so a share left by an
 * evicted flow or an older profile is dropped, never spent. */
struct flow_share {
	struct pol_cpu pol;
	__u64 tag;
};

/* Never used by the program: the shape of cfg's inner arrays with BTF
 * (clang emits only a forward declaration of a value type inside
 * __array(), so the inner definition gives sizes); impaird creates each
 * inner array from this map's spec. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_cfg);
} cfg_proto SEC(".maps");

/* key 0 -> the current config's inner array (key 0 -> struct port_cfg);
 * absent = nothing configured. Key 1 is the egress stage's (egress.h;
 * written only in a port's egress instance, docs/impaird.md). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(max_entries, 1);
		__uint(key_size, sizeof(__u32));
		__uint(value_size, sizeof(struct port_cfg));
	});
} cfg SEC(".maps");

/* mask id -> mask; a slot is only written while its bit in cfg is clear */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_MASKS);
	__type(key, __u32);
	__type(value, struct tuple);
} masks SEC(".maps");

/* IPv4 pre-check, one per mask: bit bloom_bit(key) of bits is set for
 * every matches4 entry of the mask (a superset: bits are cleared only while
 * the mask id is free). A clear bit skips the mask's hash lookup. on = 0:
 * not filled yet (e.g. a map new to pins of an older release): look up. */
#define BLOOM_WORDS 256 /* 16384 bits per mask */
struct bloom {
	__u64 bits[BLOOM_WORDS];
	__u64 on;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_MASKS);
	__type(key, __u32);
	__type(value, struct bloom);
} blooms SEC(".maps");

/* IPv4 packets: the 20-byte form of a masked tuple (mask_id set) -> rule
 * slot, rank and profile. Hashing 20 instead of 48 bytes saves ~10 ns per
 * lookup. Rules that do not pin the family have entries in both maps. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_MATCHES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tuple4);
	__type(value, struct match);
} matches4 SEC(".maps");

/* IPv6 packets: masked tuple (mask_id set) -> rule slot, rank and profile */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_MATCHES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tuple);
	__type(value, struct match);
} matches6 SEC(".maps");

/* slot -> per-CPU counters, RNG, Gilbert state */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct slot_pcpu);
} pcpu SEC(".maps");

/* slot -> shared policer and periodic state */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct slot_shared);
} shared SEC(".maps");

/* scope flow: flow hash -> set of FLOW_WAYS flow states (shared by all
 * CPUs, so a flow's policer is exact wherever its packets are processed) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << FLOW_SET_SHIFT);
	__type(key, __u32);
	__type(value, struct flow_set);
} flowtab SEC(".maps");

/* scope flow: set * FLOW_WAYS + way -> this CPU's policer share */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FLOW_WAYS << FLOW_SET_SHIFT);
	__type(key, __u32);
	__type(value, struct flow_share);
} flowshare SEC(".maps");

/* slot -> rule name: control-plane bookkeeping (never read by the
 * program) so a restarted impaird re-adopts its slots from the pins. */
struct slot_name {
	char name[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct slot_name);
} slot_names SEC(".maps");

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct v6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 id;
};

#include "acl.h"

/* the parser (XDP and skb contexts) */
#include "parse.h"

/* xorshift64* (seed 004): per-CPU state, upper 32 bits of the product. */
static __always_inline __u32 rng_next(struct slot_pcpu *c)
{
	__u64 x = c->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return (x * 0x2545F4914F6CDD1DULL) >> 32;
}

static __always_inline __u64 splitmix64(__u64 z)
{
	z += 0x9E3779B97F4A7C15ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* reseed resets a slot's per-CPU state when its profile changed: from the
 * seed (each CPU its own stream) or from the kernel's RNG. */
static __always_inline void reseed(struct slot_pcpu *c, struct profile *p)
{
	__u64 s;
	if (p->flags & F_SEEDED)
		s = splitmix64(p->seed ^ ((__u64)bpf_get_smp_processor_id() << 32));
	else
		s = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
	c->rng = s ? s : 0x9E3779B97F4A7C15ULL;
	c->crnd_last = splitmix64(s) >> 32; /* netem: init_crandom's first "last" */
	c->ge_bad = 0;
	__builtin_memset(&c->pol, 0, sizeof(c->pol));
	c->gen = p->gen;
}

/* netem's correlated loss and 4-state model (crandom_lose, lose_4state) */
#include "netem.h"

/* lose decides the loss verdict for one packet. */
static __always_inline int lose(struct profile *p, struct slot_pcpu *c, __u32 *ge_bad, __u64 *pcnt)
{
	if (p->flags & F_LOSS_RANDOM)
		return rng_next(c) < p->loss;
	if (p->flags & F_LOSS_GILBERT) {
		__u32 bad = *ge_bad;
		if (bad) {
			if (rng_next(c) < p->ge_r)
				bad = 0;
		} else if (rng_next(c) < p->ge_p) {
			bad = 1;
		}
		*ge_bad = bad;
		return rng_next(c) < (bad ? p->ge_lb : p->ge_lg);
	}
	if ((p->flags & F_LOSS_PERIODIC) && pcnt) {
		__u64 n = __sync_fetch_and_add(pcnt, 1) + 1;
		return p->period && n % p->period == 0;
	}
	/* netem's models last: the older ones pay no extra branch */
	if (p->flags & F_LOSS_CORR)
		return crandom_lose(p, c);
	if (p->flags & F_LOSS_4STATE)
		return lose_4state(p, c, ge_bad);
	return 0;
}

/* the policer (police_share) */
#include "policer.h"

/* corrupt flips one random bit of the L4 payload; 0 when there is none. */
static __always_inline int corrupt(struct xdp_md *ctx, __u32 off, struct slot_pcpu *c)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	if (off >= len)
		return 0;
	__u32 plen = len - off;
	__u32 pos = off + rng_next(c) % plen;
	if (pos > 0x3fff)
		return 0;
	__u8 *b = data + pos;
	if ((void *)(b + 1) > data_end)
		return 0;
	*b ^= 1 << (rng_next(c) >> 29);
	return 1;
}

/* EDT class metadata (docs/edt.md): MARK_MAGIC | class id in the 4 bytes
 * in front of the packet, which the tc ingress program edt_ingress_meta
 * copies into skb->mark for the egress program. */
#define EDT_MARK_MAGIC 0xed000000
#define EDT_CLASS_MASK 0x00ffffff

/* set_class prepends the class metadata; a driver without metadata
 * room (adjust_meta fails) leaves the packet unclassified. */
static __always_inline void set_class(struct xdp_md *ctx, __u32 id)
{
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u32)))
		return;
	void *data = (void *)(long)ctx->data;
	__u32 *meta = (void *)(long)ctx->data_meta;
	if ((void *)(meta + 1) > data)
		return;
	*meta = EDT_MARK_MAGIC | (id & EDT_CLASS_MASK);
}

/* duplicate: pass_meta (XDP side) and impair_dup (the tc program) */
#include "dup.h"

/* classification and the scope-flow table */
#include "classify.h"

/* What impair_stage decided. */
#define STAGE_SKIP 0 /* pass: nothing matched, or counted as passed already */
#define STAGE_PASS 1 /* pass, counted in rx: the caller may corrupt, then counts it passed */
#define STAGE_DROP 2 /* drop (counted) */

/* impair_stage is the impairment stage of one parsed IP packet of len
 * bytes, shared by the ingress (XDP, impair()) and egress (tc, egress.h)
 * programs: the best rule's profile (bm) or else the port's (cf), the
 * slot's counters, then loss and the policer with the slot's, the flow's
 * or the per-CPU share's state. On STAGE_PASS, *pp and *cp are the
 * profile and the slot's per-CPU state. */
static __always_inline int impair_stage(struct tuple *t, struct best *bm, struct port_cfg *cf, __u64 len,
					struct profile **pp, struct slot_pcpu **cp)
{
	struct profile *p;
	__u32 slot;
	if (bm->rank != 0xffffffff) {
		p = &bm->prof;
		slot = bm->slot;
	} else if (cf->has_port) {
		p = &cf->port;
		slot = 0;
	} else {
		return STAGE_SKIP; /* no rule matched and the port has no profile */
	}
	struct slot_pcpu *c = bpf_map_lookup_elem(&pcpu, &slot);
	if (!c)
		return STAGE_SKIP;
	c->rx_packets++;
	c->rx_bytes += len;
	if (c->gen != p->gen)
		reseed(c, p);

	__u32 *ge_bad = &c->ge_bad;
	__u64 *tat = NULL, *pcnt = NULL;
	struct pol_cpu *pol = &c->pol;
	if (p->flags & F_SCOPE_FLOW) {
		__u32 way = 0;
		__u64 tag = 0;
		struct flow_state *fs = flow_find(t, slot, p->gen, &way, &tag);
		if (!fs) {
			c->passed++;
			return STAGE_SKIP;
		}
		if (p->flags & F_RATE) {
			struct flow_share *fsh = bpf_map_lookup_elem(&flowshare, &way);
			if (!fsh) {
				c->passed++;
				return STAGE_SKIP;
			}
			if (fsh->tag != tag) {
				fsh->tag = tag;
				__builtin_memset(&fsh->pol, 0, sizeof(fsh->pol));
			}
			pol = &fsh->pol;
		}
		if (fs->gen != p->gen) {
			fs->gen = p->gen;
			fs->tat = 0;
			fs->period_cnt = 0;
			fs->ge_bad = 0;
		}
		ge_bad = &fs->ge_bad;
		tat = &fs->tat;
		pcnt = &fs->period_cnt;
	} else if (p->flags & (F_RATE | F_LOSS_PERIODIC)) {
		struct slot_shared *s = bpf_map_lookup_elem(&shared, &slot);
		if (!s) {
			c->passed++;
			return STAGE_SKIP;
		}
		if (s->gen != p->gen) {
			s->gen = p->gen;
			s->tat = 0;
			s->period_cnt = 0;
		}
		tat = &s->tat;
		pcnt = &s->period_cnt;
	}

	if (lose(p, c, ge_bad, pcnt)) {
		c->dropped_loss++;
		return STAGE_DROP;
	}
	if ((p->flags & F_RATE) && tat && !police_share(tat, p, len, pol)) {
		c->dropped_rate++;
		return STAGE_DROP;
	}
	*pp = p;
	*cp = c;
	return STAGE_PASS;
}

SEC("xdp")
int impair(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct tuple t = {};
	__u32 payload = 0;
	__u32 zero = 0;

	/* No impairment configured: the ACL stage may still have rules. */
	struct port_cfg *cf = NULL;
	void *inner = bpf_map_lookup_elem(&cfg, &zero);
	if (inner)
		cf = bpf_map_lookup_elem(inner, &zero);
	if (!cf && !acl_active(ACL_INGRESS))
		return XDP_PASS; /* nothing configured */
	/* The best match is copied (slot, rank, profile): a pointer kept across
	 * iterations would make every iteration a new verifier state. */
	struct best bm = {.rank = 0xffffffff};
	struct pkt_extra x = {};
	int pc = parse_classify(ctx, &t, &x, cf, &bm);
	/* The ACL stage (acl.h) decides first: parsed IP packets and non-IP
	 * ones (family 0); truncated IP packets pass it. The impairment
	 * classification above only read maps. */
	if ((pc == 0 || t.family == 0) && acl_active(ACL_INGRESS) &&
	    acl_run(&t, &x, ACL_INGRESS, data_end - data))
		return XDP_DROP;
	if (pc < 0 || !cf)
		return XDP_PASS;
	payload = x.payload;

	struct profile *p;
	struct slot_pcpu *c;
	int v = impair_stage(&t, &bm, cf, data_end - data, &p, &c);
	if (v == STAGE_DROP)
		return XDP_DROP;
	if (v == STAGE_SKIP)
		return XDP_PASS;
	if ((p->flags & F_CORRUPT) && rng_next(c) < p->corrupt && corrupt(ctx, payload, c))
		c->corrupted++;
	c->passed++;
	if (p->flags & F_DUP)
		pass_meta(ctx, p, c);
	else if (p->edt_class)
		set_class(ctx, p->edt_class);
	return XDP_PASS;
}

/* The port's egress program: the egress ACL stage, then the egress
 * impairment stage (egress.h). */
#include "egress.h"

/* The minimal program the benchmark compares against. */
SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
