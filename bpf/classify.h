/* classify.h: the impairment classifier and the scope-flow table,
 * included by impair.c (needs its structs and maps): tuple space search
 * over the port's active masks (classify4/6, with the IPv4 shape filter
 * and per-mask blooms), parse_classify (parse + classify, one noinline
 * function for the verifier) and flow_find (the set-associative flow
 * table of scope flow). See docs/impaird.md. */

/* best is the best match found so far (rank 0xffffffff = none). */
struct best {
	__u32 rank;
	__u32 slot;
	struct profile prof;
};

static __always_inline void take(struct best *b, struct match *mt)
{
	if (mt && mt->rank < b->rank) {
		b->rank = mt->rank;
		b->slot = mt->slot;
		__builtin_memcpy(&b->prof, &mt->prof, sizeof(b->prof));
	}
}

/* take_inline takes an inline entry (port_cfg.tab4/tab6: its rank and
 * rule slot) when it beats b, with the slot's profile (cf->prof). */
static __always_inline void take_inline(struct best *b, __u32 rank, __u32 s, struct port_cfg *cf)
{
	if (rank < b->rank && s < MAX_SLOTS) {
		b->rank = rank;
		b->slot = s;
		__builtin_memcpy(&b->prof, &cf->prof[s], sizeof(b->prof));
	}
}

/* imp_w0 and imp_w1 are the first two words of an IPv4 key's inline
 * form (impWords4 in apply.go builds the same): mask_id | family << 8 |
 * proto << 16 | dscp << 24 | vlan << 32 | sport << 48, and dport | src
 * << 32; the third is dst. An IPv6 key's six words (imp_words6 in
 * classify6, impWords6): imp_w0, dport, then the addresses, two 32-bit
 * words per 64-bit word, the first in the high half. */
static __always_inline __u64 imp_w0(struct tuple4 *k)
{
	return (__u64)k->mask_id | ((__u64)k->family << 8) | ((__u64)k->proto << 16) | ((__u64)k->dscp << 24) |
	       ((__u64)k->vlan << 32) | ((__u64)k->sport << 48);
}

static __always_inline __u64 imp_w1(struct tuple4 *k)
{
	return (__u64)k->dport | ((__u64)k->src << 32);
}

/* bloom_hash4 is the IPv4 pre-check's hash of a masked key (bloomHash in
 * apply.go computes the same): the per-mask blooms take its top 14 bits,
 * the shape filter its top FILTER_SHIFT bits. */
static __always_inline __u64 bloom_hash4(struct tuple4 *k)
{
	__u64 h = (((__u64)k->src << 32) | k->dst) * 0x9E3779B97F4A7C15ULL;
	h ^= ((__u64)k->sport << 48) | ((__u64)k->dport << 32) | ((__u64)k->vlan << 16) |
	     ((__u64)k->proto << 8) | k->dscp;
	return h * 0xBF58476D1CE4E5B9ULL;
}

/* shape_filter4 narrows the active masks to those the port config's shape
 * filter names for the packet (one array read, no map lookup). */
static __always_inline __u32 shape_filter4(struct tuple *t, struct port_cfg *cf, __u32 active)
{
	if (!cf->filter_on)
		return active;
	struct tuple4 *mk = &cf->common;
	struct tuple4 k = {
		.family = t->family & mk->family,
		.proto = t->proto & mk->proto,
		.dscp = t->dscp & mk->dscp,
		.vlan = t->vlan & mk->vlan,
		.sport = t->sport & mk->sport,
		.dport = t->dport & mk->dport,
		.src = t->src[0] & mk->src,
		.dst = t->dst[0] & mk->dst,
	};
	return active & cf->filter[(bloom_hash4(&k) >> (64 - FILTER_SHIFT)) & ((1 << FILTER_SHIFT) - 1)];
}

/* classify4 and classify6 are the tuple space search: for each active mask
 * one lookup of the masked tuple; one loop per family so that each loop
 * writes one key shape (a branch inside would double the verifier's
 * states per iteration).
 *
 * The masks key is a copy (mid), never the loop counter itself: a verifier
 * before 6.3 (Debian's 6.1) forgets every stack slot passed to a helper,
 * even as a read-only map key, so a counter whose address is taken comes
 * back unknown, the back-edge state looks like an earlier one, and the
 * program is rejected as an "infinite loop". m stays in a register (or a
 * plain spill, which the verifier tracks). */
static __always_inline void classify4(struct tuple *t, __u32 active, struct port_cfg *cf, struct best *b)
{
	for (__u32 m = 0; m < MAX_MASKS; m++) {
		if (!(active >> m))
			break;
		if (!((active >> m) & 1))
			continue;
		__u32 mid = m;
		struct tuple *mk = bpf_map_lookup_elem(&masks, &mid);
		if (!mk)
			break;
		struct tuple4 k = {
			.mask_id = m,
			.family = t->family & mk->family,
			.proto = t->proto & mk->proto,
			.dscp = t->dscp & mk->dscp,
			.vlan = t->vlan & mk->vlan,
			.sport = t->sport & mk->sport,
			.dport = t->dport & mk->dport,
			.src = t->src[0] & mk->src[0],
			.dst = t->dst[0] & mk->dst[0],
		};
		/* the inline entry of the key's slot (imp_words4, inline.h) */
		__u64 w0 = imp_w0(&k), w1 = imp_w1(&k), w2 = k.dst;
		__u64 hh = w0 * ACL_C0 + w1 * ACL_C1 + w2 * ACL_C2;
		struct acl_ent4 *e = &cf->tab4[(hh >> (64 - IMP_TAB_SHIFT)) & ((1 << IMP_TAB_SHIFT) - 1)];
		int r = inline_probe4(e, w0, w1, w2);
		if (r == INL_HIT) {
			take_inline(b, e->rank, e->idx, cf);
			continue;
		}
		if (r == INL_MISS)
			continue;
		struct bloom *bl = bpf_map_lookup_elem(&blooms, &mid);
		if (bl && bl->on) {
			__u32 idx = bloom_hash4(&k) >> 50;
			if (!((bl->bits[(idx >> 6) & (BLOOM_WORDS - 1)] >> (idx & 63)) & 1))
				continue;
		}
		take(b, bpf_map_lookup_elem(&matches4, &k));
	}
}

static __always_inline void classify6(struct tuple *t, __u32 active, struct port_cfg *cf, struct best *b)
{
	for (__u32 m = 0; m < MAX_MASKS; m++) {
		if (!(active >> m))
			break;
		if (!((active >> m) & 1))
			continue;
		__u32 mid = m;
		struct tuple *mk = bpf_map_lookup_elem(&masks, &mid);
		if (!mk)
			break;
		struct tuple k = {
			.mask_id = m,
			.family = t->family & mk->family,
			.proto = t->proto & mk->proto,
			.dscp = t->dscp & mk->dscp,
			.vlan = t->vlan & mk->vlan,
			.sport = t->sport & mk->sport,
			.dport = t->dport & mk->dport,
		};
#pragma unroll
		for (int i = 0; i < 4; i++) {
			k.src[i] = t->src[i] & mk->src[i];
			k.dst[i] = t->dst[i] & mk->dst[i];
		}
		/* the inline entry of the key's slot (imp_words6) */
		/* tuple and tuple4 begin alike: imp_w0 reads those 8 bytes */
		__u64 w[6] = {imp_w0((struct tuple4 *)&k), k.dport,
			      ((__u64)k.src[0] << 32) | k.src[1], ((__u64)k.src[2] << 32) | k.src[3],
			      ((__u64)k.dst[0] << 32) | k.dst[1], ((__u64)k.dst[2] << 32) | k.dst[3]};
		__u64 hh = w[0] * ACL_C0 + w[1] * ACL_C1 + w[2] * ACL_C2 + w[3] * ACL_C3 + w[4] * ACL_C4 +
			   w[5] * ACL_C5;
		struct acl_ent6 *e = &cf->tab6[(hh >> (64 - IMP_TAB_SHIFT)) & ((1 << IMP_TAB_SHIFT) - 1)];
		int r = inline_probe6(e, w);
		if (r == INL_HIT) {
			take_inline(b, e->rank, e->idx, cf);
			continue;
		}
		if (r == INL_MISS)
			continue;
		take(b, bpf_map_lookup_elem(&matches6, &k));
	}
}

/* classify is the tuple space search of a parsed packet t over cf's
 * active masks (the IPv4 shape filter first), the best match in *b:
 * inlined into both global functions, parse_classify (XDP) and
 * classify_egress (tc egress). */
static __always_inline void classify(struct tuple *t, struct port_cfg *cf, struct best *b)
{
	__u32 active = cf->active_masks;
	if (!active)
		return;
	if (t->family == 4) {
		active = shape_filter4(t, cf, active);
		if (active)
			classify4(t, active, cf, b);
	} else {
		classify6(t, active, cf, b);
	}
}

/* parse_classify parses the packet into t and x (the ACL's fields and
 * the payload offset; -1: not IP or truncated, the impairment stage
 * passes it untouched) and fills b with the best rule matching it
 * among the active masks of cf (NULL: none; IPv4: those its shape filter
 * names) (b unchanged when none matches).
 *
 * A global (separately verified) function, so the verifier walks parsing
 * and the mask loop once, with the packet, the active masks and *b
 * unknown, and the caller sees one state after it: inlined, the verifier
 * walked the rest of the program again for every parse path and every
 * iteration at which the mask loop can end (420k of its 1M-instruction
 * budget on 6.18, over it on Debian's 6.1); now 22k (18k on 6.1). One
 * function, not one for parsing and one for classifying: a BPF-to-BPF call
 * costs ~8 ns on a CPU whose returns go through the SRSO "safe RET" thunk. */
__attribute__((noinline)) int parse_classify(struct xdp_md *ctx, struct tuple *t, struct pkt_extra *x,
					     struct port_cfg *cf, struct best *b)
{
	if (!t || !b || !x)
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (parse(data, data_end, t, &x->payload, x) < 0)
		return -1;
	if (cf)
		classify(t, cf, b);
	return 0;
}

/* flow_find finds or creates the scope-flow state of a packet's flow in
 * flowtab. DSCP is not part of the flow: a flow re-marking its packets
 * stays one. The set index is the ACL pre-check's hash of the key words
 * (acl.h), its top FLOW_SET_SHIFT bits. Two CPUs creating flows in one set
 * at once take different ways (the counter is atomic); a flow created by
 * two CPUs at once may hold two ways until one is evicted. */
static __always_inline struct flow_state *flow_find(struct tuple *t, __u32 slot, __u32 gen, __u32 *way,
						     __u64 *tag)
{
	__u64 k0, k1 = 0, k2 = 0, k3 = 0;
	if (t->family == 4) {
		k0 = ((__u64)t->src[0] << 32) | t->dst[0];
	} else {
		k0 = ((__u64)t->src[0] << 32) | t->src[1];
		k1 = ((__u64)t->src[2] << 32) | t->src[3];
		k2 = ((__u64)t->dst[0] << 32) | t->dst[1];
		k3 = ((__u64)t->dst[2] << 32) | t->dst[3];
	}
	__u64 k4 = ((__u64)t->sport << 48) | ((__u64)t->dport << 32) | ((__u64)t->vlan << 16) |
		   ((__u64)t->proto << 8) | t->family;
	__u64 k5 = FLOW_VALID | slot;
	__u64 h = k0 * ACL_C0 + k1 * ACL_C1 + k2 * ACL_C2 + k3 * ACL_C3 + k4 * ACL_C4 + k5 * ACL_C5;
	__u32 idx = h >> (64 - FLOW_SET_SHIFT);
	struct flow_set *s = bpf_map_lookup_elem(&flowtab, &idx);
	if (!s)
		return NULL;
	*tag = h ^ ((__u64)gen * ACL_C1);
#pragma unroll
	for (int i = 0; i < FLOW_WAYS; i++) {
		struct flow_ent *e = &s->e[i];
		if (e->k[5] == k5 && e->k[4] == k4 && e->k[0] == k0 && e->k[1] == k1 && e->k[2] == k2 &&
		    e->k[3] == k3) {
			*way = idx * FLOW_WAYS + i;
			return &e->st;
		}
	}
	__u32 w = __sync_fetch_and_add(&s->next, 1) & (FLOW_WAYS - 1);
	*way = idx * FLOW_WAYS + w;
	struct flow_ent *e = &s->e[w];
	e->k[5] = 0; /* invalid while the key is rewritten */
	e->st.tat = 0;
	e->st.period_cnt = 0;
	e->st.ge_bad = 0;
	e->st.gen = gen;
	e->k[0] = k0;
	e->k[1] = k1;
	e->k[2] = k2;
	e->k[3] = k3;
	e->k[4] = k4;
	e->k[5] = k5;
	return &e->st;
}
