/* acl.h: the ACL stage of a port (SONiC ACL_TABLE / ACL_RULE), included
 * by impair.c: the XDP program runs it on ingress before the impairment
 * stage, the tc program acl_egress on egress. See docs/acl.md.
 *
 * Classification is a tuple space search: every distinct match shape
 * (which fields, prefix lengths, port-range block sizes, TCP flag mask)
 * is one hash lookup of the packet's tuple masked by the shape. Shapes
 * are sorted by the best rank (lower wins) among their entries, so the
 * search stops as soon as the best match found beats the next shape's
 * best. Pre-checks published with the set name the shapes a packet
 * cannot match without computing their key: per family, the shapes its
 * class has at all (cand: an IPv4 packet never visits IPv6 shapes, an
 * empty class costs one load), the destination-port buckets (dskip), the
 * source and destination /16 (IPv4) or /48 (IPv6) buckets (askip) and
 * the VLAN ID (vskip, exact), ORed into one word; a per-family bloom
 * turns most other shapes into a hash computation without a lookup, and
 * the best-ranked entry of each of 1,024 slots per family is held inline
 * in the header (tab4/tab6), so a match on it costs no hash lookup.
 * Rules matching every IP packet (match-all, ETHER_TYPE 0x0800/0x86DD)
 * are a fallback the search starts from. A rule set is a header (shapes,
 * pre-checks, inline entries) in a one-element array
 * plus one hash per address family; impaird publishes a new set by
 * writing its hashes into the unused buffer and then swapping the header
 * pointer, so a packet sees the old or the new set, never a mix. */

#define ACL_INGRESS 0
#define ACL_EGRESS 1

#define ACL_MAX_SHAPES 64     /* match shapes per stage and address family */
#define ACL_MAX_RULES 16384   /* rules (counter indexes) per stage */
#define ACL_MAX_ENTRIES 262144 /* hash entries per stage and family */
#define ACL_BLOOM_SHIFT 20     /* 2^20 pre-check bits per stage and family */
#define ACL_BLOOM_WORDS (1 << (ACL_BLOOM_SHIFT - 6))
#define ACL_DPORT_SHIFT 13     /* destination-port pre-check buckets per family */
#define ACL_ADDR_SHIFT 13      /* address pre-check buckets per family and direction */
#define ACL_TAB_SHIFT 10       /* inline entries per stage and family (1,024; docs/acl.md) */

/* What parse reads beyond the impairment tuple. */
struct pkt_extra {
	__u16 etype; /* ethertype after the VLAN tags, host order */
	__u8 tcpflags;
	__u8 icmp_type;
	__u8 icmp_code;
	__u8 pad;
	__u16 l4off;   /* impair.c: offset of the L4 header (egress corrupt's checksum) */
	__u32 payload; /* impair.c: offset of the L4 payload */
};

/* An ACL key in three 64-bit words, as the classifier hashes and masks
 * them (aclFields.words in acl.go builds the same):
 *   addr: IPv4 source << 32 | destination (network order words)
 *   s1:   sport << 48 | dport << 32 | vlan << 16 | ethertype
 *   s2:   shape << 40 | proto << 32 | dscp << 24 | tcp flags << 16 |
 *         icmp type << 8 | icmp code
 * A shape's mask has the same words (shape bits 0). IPv6 keys have four
 * address words (source high, low, destination high, low), then s1, s2. */
struct acl_key4 {
	__u64 w[3];
};

struct acl_key {
	__u64 w[6];
};

/* Value of a rule hash: the rule's rank (lower wins), counter index and
 * action (1 = drop). */
struct acl_val {
	__u32 rank;
	__u32 idx;
	__u32 action;
	__u32 pad;
};

/* Inline entries (acl_hdr tab4/tab6): struct acl_ent4 / acl_ent6 of
 * inline.h. */

/* One match shape: its mask (acl_key words; IPv4: m[0..2]) and the best
 * rank among its entries. flags: ACL_SHAPE_L2 the mask has only
 * vlan/etype, so the shape also applies to non-IP packets (searched in
 * the IPv4 hash); ACL_SHAPE_FB the mask is empty or only the ethertype:
 * for IP packets its entries are folded into the header's fallback. */
#define ACL_SHAPE_L2 1
#define ACL_SHAPE_FB 2
struct acl_shape {
	__u64 m[6];
	__u32 best;
	__u32 flags;
};

/* The best rule matching every packet of a class (0 IPv4, 1 IPv6, 2
 * non-IP): a match-all rule or ETHER_TYPE 0x0800 / 0x86DD alone, e.g.
 * acl-loader's DEFAULT_RULE. The search starts from it (no lookup for
 * it, and shapes that cannot beat it are never searched). rank
 * 0xffffffff = none. */
struct acl_fb {
	__u32 rank;
	__u32 idx;
	__u32 action;
	__u32 pad;
};

/* A published rule set of one stage: shapes of each family sorted by
 * best rank; its hashes are acl_rules4/6[stage * 2 + buf]. bloom4/6:
 * the pre-check of each family, the bit of the hash below set for every entry of
 * its hash (keys with their shape index), so a shape whose bit is clear
 * costs a hash computation, not a hash-map lookup (~15 ns through an
 * inner map). Published with the set, so always exact for it. */
struct acl_hdr {
	__u32 n4;
	__u32 n6;
	__u32 buf;
	__u32 pad;
	struct acl_fb fb[3];
	/* The shapes a packet of each class (as fb) may be searched in, bit i
	 * = shape i of its family (s4 for IPv4 and non-IP, s6): the shapes
	 * below n4 / n6 without ACL_SHAPE_FB, for non-IP the ACL_SHAPE_L2
	 * ones. 0: the packet's class has no shape to search (one load). */
	__u64 cand[3];
	struct acl_shape s4[ACL_MAX_SHAPES];
	struct acl_shape s6[ACL_MAX_SHAPES];
	__u64 bloom4[ACL_BLOOM_WORDS];
	__u64 bloom6[ACL_BLOOM_WORDS];
	/* destination-port pre-check of each family (IPv4/non-IP, IPv6):
	 * bit i of dskip[fam][acl_dport_bucket(dport)] set = shape i pins
	 * (part of) the destination port and none of its entries takes a
	 * port of that bucket, so the shape is not searched. All zero: no
	 * pre-check (aclDportSkip in acl_dport.go fills it). */
	__u64 dskip[2][1 << ACL_DPORT_SHIFT];
	/* address pre-check ([family][source, destination]), as dskip: bit i
	 * of askip[fam][dir][acl_addr_bucket(word & ACL_APM*)] set =
	 * shape i pins the whole field and none of its entries has that
	 * prefix there (aclAddrSkip in acl_precheck.go fills it). */
	__u64 askip[2][2][1 << ACL_ADDR_SHIFT];
	/* VLAN pre-check, exact: bit i of vskip[fam][vid] set = shape i pins
	 * (part of) the VLAN ID and none of its entries takes vid (0 for
	 * untagged packets, which no VLAN rule matches); aclVlanSkip in
	 * acl_precheck.go fills it. */
	__u64 vskip[2][4096];
	/* inline entries of each family: the best-ranked entry of each slot
	 * (the hash holds every entry as well), so a search ending on one
	 * costs no hash lookup (~10 ns) */
	struct acl_ent4 tab4[1 << ACL_TAB_SHIFT];
	struct acl_ent6 tab6[1 << ACL_TAB_SHIFT];
};

/* The address pre-check's fields in their key words (aclAddrField in
 * acl_precheck.go): the first 16 bits of the IPv4 source (word 0, high half)
 * and destination (low half), the first 48 of an IPv6 address (words 0
 * and 2); addresses are in network order in memory. */
#define ACL_APM4_SRC ((__u64)bpf_htonl(0xffff0000) << 32)
#define ACL_APM4_DST ((__u64)bpf_htonl(0xffff0000))
#define ACL_APM6 (((__u64)0xffffffff << 32) | bpf_htonl(0xffff0000))

/* acl_addr_bucket is the address pre-check bucket of a key word ANDed
 * with the field's mask (aclAddrBucket in acl_precheck.go). */
static __always_inline __u32 acl_addr_bucket(__u64 w)
{
	return (w * 0xD6E8FEB86659FD93ULL) >> (64 - ACL_ADDR_SHIFT);
}

/* acl_dport_bucket is the pre-check bucket of a destination port. */
static __always_inline __u32 acl_dport_bucket(__u16 dport)
{
	return ((__u32)dport * 0x9E3779B1u) >> (32 - ACL_DPORT_SHIFT);
}

/* The pre-check hash: ACL_C0..ACL_C5 of inline.h. */

static __always_inline __u64 acl_small1(__u16 sport, __u16 dport, __u16 vlan, __u16 etype)
{
	return ((__u64)sport << 48) | ((__u64)dport << 32) | ((__u64)vlan << 16) | etype;
}

static __always_inline __u64 acl_small2(__u8 shape, __u8 proto, __u8 dscp, __u8 flags, __u8 it, __u8 ic)
{
	return ((__u64)shape << 40) | ((__u64)proto << 32) | ((__u64)dscp << 24) | ((__u64)flags << 16) |
	       ((__u64)it << 8) | ic;
}

/* acl_bloom_has tests a key's two pre-check bits (a blocked bloom: both
 * in one 64-bit word): word and first bit from the top bits of the hash,
 * the second bit, tested only when the first is set, from the top of the
 * hash times another odd constant. With 75,000 entries in 2^20 bits a key
 * of no entry passes ~2% of the time instead of 7% with one bit
 * (aclBloomBits in acl.go sets the same). */
static __always_inline int acl_bloom_has(__u64 *bloom, __u64 hh)
{
	__u64 w = bloom[(hh >> (64 - ACL_BLOOM_SHIFT + 6)) & (ACL_BLOOM_WORDS - 1)];
	if (!((w >> ((hh >> (64 - ACL_BLOOM_SHIFT)) & 63)) & 1))
		return 0;
	return (w >> ((hh * ACL_C1) >> 58)) & 1;
}

/* Per rule (stage * ACL_MAX_RULES + idx, idx 1..), per CPU; idx 0 counts
 * the packets no rule matched. */
struct acl_cnt {
	__u64 packets;
	__u64 bytes;
};

/* Never used by the program: the shapes of the inner maps with BTF
 * (as cfg_proto in impair.c); impaird creates each inner map from these
 * specs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct acl_hdr);
} acl_hdr_proto SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACL_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct acl_key4);
	__type(value, struct acl_val);
} acl_rules4_proto SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACL_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct acl_key);
	__type(value, struct acl_val);
} acl_rules6_proto SEC(".maps");

/* stage -> the published header (a one-element array); absent = no ACL */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_ARRAY);
		__uint(max_entries, 1);
		__uint(key_size, sizeof(__u32));
		__uint(value_size, sizeof(struct acl_hdr));
	});
} acl_hdrs SEC(".maps");

/* stage * 2 + buf -> IPv4 / non-IP rule hash */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__uint(max_entries, ACL_MAX_ENTRIES);
		__uint(map_flags, BPF_F_NO_PREALLOC);
		__uint(key_size, sizeof(struct acl_key4));
		__uint(value_size, sizeof(struct acl_val));
	});
} acl_rules4 SEC(".maps");

/* stage * 2 + buf -> IPv6 rule hash */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__uint(max_entries, ACL_MAX_ENTRIES);
		__uint(map_flags, BPF_F_NO_PREALLOC);
		__uint(key_size, sizeof(struct acl_key));
		__uint(value_size, sizeof(struct acl_val));
	});
} acl_rules6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * ACL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct acl_cnt);
} acl_cnts SEC(".maps");

/* counter index -> rule name: control-plane bookkeeping (never read by
 * the program), so a restarted impaird keeps every rule's counter. */
struct acl_name {
	char name[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * ACL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct acl_name);
} acl_names SEC(".maps");

/* acl_active says whether a stage has a rule set (an inlined array
 * lookup: no call when a port has no ACL). */
static __always_inline int acl_active(__u32 stage)
{
	return bpf_map_lookup_elem(&acl_hdrs, &stage) != NULL;
}

/* acl_run classifies one parsed packet (t->family 0 = non-IP) against the
 * stage's rule set, counts it on the winning rule and returns 1 to drop.
 *
 * A global function: verified once with unknown arguments and shared by
 * the XDP and the tc program (it never touches the packet). The shape
 * loop reads the masks from the header in place; the best match is kept
 * in scalars (a pointer kept across iterations makes each one a new
 * verifier state). */
__attribute__((noinline)) int acl_run(struct tuple *t, struct pkt_extra *x, __u32 stage, __u32 len)
{
	if (!t || !x)
		return 0;
	__u32 st = stage & 1;
	void *hi = bpf_map_lookup_elem(&acl_hdrs, &st);
	if (!hi)
		return 0;
	__u32 zero = 0;
	struct acl_hdr *h = bpf_map_lookup_elem(hi, &zero);
	if (!h)
		return 0;
	__u32 slot = st * 2 + (h->buf & 1);
	/* The search starts from the fallback, read from the map (a constant
	 * initial rank would also be a different verifier state from the
	 * rank of a match, doubling the states per shape). */
	__u32 cls = t->family == 6 ? 1 : t->family == 4 ? 0 : 2;
	struct acl_fb *fb = &h->fb[cls];
	__u32 brank = fb->rank, bidx = fb->idx, bact = fb->action;

	__u64 s1 = acl_small1(t->sport, t->dport, t->vlan, x->etype);
	__u64 s2 = acl_small2(0, t->proto, t->dscp, x->tcpflags, x->icmp_type, x->icmp_code);
	if (t->family == 6) {
		void *rules = bpf_map_lookup_elem(&acl_rules6, &slot);
		if (!rules)
			return 0;
		__u64 a0 = ((__u64)t->src[0] << 32) | t->src[1], a1 = ((__u64)t->src[2] << 32) | t->src[3];
		__u64 a2 = ((__u64)t->dst[0] << 32) | t->dst[1], a3 = ((__u64)t->dst[2] << 32) | t->dst[3];
		__u64 cand = h->cand[1] & ~(h->dskip[1][acl_dport_bucket(t->dport) & ((1 << ACL_DPORT_SHIFT) - 1)] |
					    h->askip[1][0][acl_addr_bucket(a0 & ACL_APM6)] |
					    h->askip[1][1][acl_addr_bucket(a2 & ACL_APM6)] |
					    h->vskip[1][t->vlan & 0xfff]);
		for (__u32 i = 0; i < ACL_MAX_SHAPES; i++) {
			if (!(cand >> i))
				break;
			if (!((cand >> i) & 1))
				continue;
			struct acl_shape *s = &h->s6[i];
			if (s->best >= brank)
				break;
			struct acl_key k = {.w = {a0 & s->m[0], a1 & s->m[1], a2 & s->m[2], a3 & s->m[3],
						  s1 & s->m[4], (s2 & s->m[5]) | ((__u64)i << 40)}};
			__u64 hh = k.w[0] * ACL_C0 + k.w[1] * ACL_C1 + k.w[2] * ACL_C2 + k.w[3] * ACL_C3 +
				   k.w[4] * ACL_C4 + k.w[5] * ACL_C5;
			if (!acl_bloom_has(h->bloom6, hh))
				continue;
			struct acl_ent6 *e = &h->tab6[(hh >> (64 - ACL_TAB_SHIFT)) & ((1 << ACL_TAB_SHIFT) - 1)];
			int r = inline_probe6(e, k.w);
			if (r == INL_HIT) {
				if (e->rank < brank) {
					brank = e->rank;
					bidx = e->idx;
					bact = e->action;
				}
				continue;
			}
			if (r == INL_MISS)
				continue;
			struct acl_val *v = bpf_map_lookup_elem(rules, &k);
			if (v && v->rank < brank) {
				brank = v->rank;
				bidx = v->idx;
				bact = v->action;
			}
		}
	} else {
		void *rules = bpf_map_lookup_elem(&acl_rules4, &slot);
		if (!rules)
			return 0;
		__u64 a0 = ((__u64)t->src[0] << 32) | t->dst[0];
		__u64 cand = h->cand[cls] & ~(h->dskip[0][acl_dport_bucket(t->dport) & ((1 << ACL_DPORT_SHIFT) - 1)] |
					      h->askip[0][0][acl_addr_bucket(a0 & ACL_APM4_SRC)] |
					      h->askip[0][1][acl_addr_bucket(a0 & ACL_APM4_DST)] |
					      h->vskip[0][t->vlan & 0xfff]);
		for (__u32 i = 0; i < ACL_MAX_SHAPES; i++) {
			if (!(cand >> i))
				break;
			if (!((cand >> i) & 1))
				continue;
			struct acl_shape *s = &h->s4[i];
			if (s->best >= brank)
				break;
			struct acl_key4 k = {.w = {a0 & s->m[0], s1 & s->m[1], (s2 & s->m[2]) | ((__u64)i << 40)}};
			__u64 hh = k.w[0] * ACL_C0 + k.w[1] * ACL_C1 + k.w[2] * ACL_C2;
			if (!acl_bloom_has(h->bloom4, hh))
				continue;
			struct acl_ent4 *e = &h->tab4[(hh >> (64 - ACL_TAB_SHIFT)) & ((1 << ACL_TAB_SHIFT) - 1)];
			int r = inline_probe4(e, k.w[0], k.w[1], k.w[2]);
			if (r == INL_HIT) {
				if (e->rank < brank) {
					brank = e->rank;
					bidx = e->idx;
					bact = e->action;
				}
				continue;
			}
			if (r == INL_MISS)
				continue;
			struct acl_val *v = bpf_map_lookup_elem(rules, &k);
			if (v && v->rank < brank) {
				brank = v->rank;
				bidx = v->idx;
				bact = v->action;
			}
		}
	}
	/* No branch on whether a rule matched (bidx stays 0, the stage's
	 * no-match counter): a branch the verifier can decide for the initial
	 * constants marks them precise, and then the paths through the loops
	 * (matched here or not) no longer prune. */
	__u32 ci = st * ACL_MAX_RULES + (bidx & (ACL_MAX_RULES - 1));
	struct acl_cnt *c = bpf_map_lookup_elem(&acl_cnts, &ci);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
	return bact & 1;
}
