/* egress.h: the port's tc clsact egress program, included at the end of
 * impair.c: the egress ACL stage (acl.h), then the egress impairment
 * stage. See docs/impaird.md, "Both directions".
 *
 * The egress impairment stage runs the ingress stage's code (shape_filter4,
 * classify4/6, lose, police_share, reseed, flow_find) on its own
 * configuration: key CFG_EGRESS of cfg. impaird loads a second instance of
 * the collection per port for egress (its own masks, matches, counters,
 * policer and flow state, with the ACL maps of the ingress instance
 * reused), writes the egress profile at key 1 of that instance's cfg and
 * attaches that instance's egress program. The ingress XDP program reads
 * key 0 only, so its path is unchanged. */

#define CFG_EGRESS 1

/* classify_egress is the tuple space search of the egress stage, as
 * parse_classify's (the IPv4 shape filter of cf, then the masks): a
 * global function for the same reason (the verifier walks the mask loop
 * once). */
__attribute__((noinline)) int classify_egress(struct tuple *t, struct port_cfg *cf, struct best *b)
{
	if (!t || !b || !cf)
		return -1;
	classify(t, cf, b);
	return 0;
}

/* corrupt_skb flips one random bit of the L4 payload of an skb (the same
 * draws as corrupt: position, then bit). A TCP or UDP checksum is then
 * adjusted by the opposite of the change (bpf_l4_csum_replace, pseudo-
 * header form): on a CHECKSUM_PARTIAL skb (offloaded, as on veth) the
 * field holds the pseudo-header sum the device completes over the
 * payload, so the completed checksum is the one of the *original*
 * payload and the receiver sees the corruption (netem gets the same by
 * calling skb_checksum_help first); on a completed checksum the field
 * ends up off by twice the change, wrong as well. A UDP checksum of 0
 * (none) is left alone. Returns 0 when there is no payload. */
static __always_inline int corrupt_skb(struct __sk_buff *skb, struct pkt_extra *x, __u8 proto,
				       struct slot_pcpu *c)
{
	__u32 len = skb->len, off = x->payload;
	if (off >= len)
		return 0;
	__u32 pos = off + rng_next(c) % (len - off);
	__u8 bit = 1 << (rng_next(c) >> 29);
	__u32 l4 = x->l4off;
	__u32 lo = (pos - l4) & 1; /* the low byte of its checksum word */
	__u32 word = pos - lo;
	__u16 v = 0; /* the word in packet byte order */
	int whole = word + 1 < len;
	if (whole ? bpf_skb_load_bytes(skb, word, &v, 2) : bpf_skb_load_bytes(skb, word, &v, 1))
		return 0;
	__u16 old = v;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v ^= (__u16)bit << (lo * 8);
#else
	v ^= (__u16)bit << ((1 - lo) * 8);
#endif
	if (whole ? bpf_skb_store_bytes(skb, word, &v, 2, 0) : bpf_skb_store_bytes(skb, word, &v, 1, 0))
		return 0;
	__u16 new = v;
	__u32 csum = 0;
	if (proto == IPPROTO_TCP)
		csum = l4 + 16;
	else if (proto == IPPROTO_UDP)
		csum = l4 + 6;
	if (csum) {
		__u16 cur = 0;
		if (bpf_skb_load_bytes(skb, csum, &cur, 2) == 0 && !(proto == IPPROTO_UDP && cur == 0))
			bpf_l4_csum_replace(skb, csum, new, old, BPF_F_PSEUDO_HDR | sizeof(__u16));
	}
	return 1;
}

/* impair_egress is the egress impairment stage for one parsed IP packet:
 * impair_stage (impair.c, shared with the ingress program) on the egress
 * config, then corrupt; TC_ACT_SHOT drops, TC_ACT_UNSPEC lets the next
 * filter (EDT's) run. */
static __always_inline int impair_egress(struct __sk_buff *skb, struct port_cfg *cf, struct tuple *t,
					 struct pkt_extra *x)
{
	struct best bm = {.rank = 0xffffffff};
	classify_egress(t, cf, &bm);
	struct profile *p;
	struct slot_pcpu *c;
	int v = impair_stage(t, &bm, cf, skb->len, &p, &c);
	if (v == STAGE_DROP)
		return TC_ACT_SHOT;
	if (v == STAGE_SKIP)
		return TC_ACT_UNSPEC;
	if ((p->flags & F_CORRUPT) && rng_next(c) < p->corrupt && corrupt_skb(skb, x, t->proto, c))
		c->corrupted++;
	c->passed++;
	return TC_ACT_UNSPEC;
}

/* The port's egress program (tc clsact egress, direct action, docs/acl.md
 * and docs/impaird.md): the egress ACL stage decides first, then the
 * egress impairment stage. It never ends classification with a pass:
 * TC_ACT_UNSPEC lets the next filter (EDT's, prio 0xed) run, so EDT
 * shapes only what both stages let through. */
SEC("tc")
int acl_egress(struct __sk_buff *skb)
{
	__u32 key = CFG_EGRESS, zero = 0;
	struct port_cfg *cf = NULL;
	void *inner = bpf_map_lookup_elem(&cfg, &key);
	if (inner)
		cf = bpf_map_lookup_elem(inner, &zero);
	int acl = acl_active(ACL_EGRESS);
	if (!acl && !cf)
		return TC_ACT_UNSPEC;
	__u32 lin = skb->data_end - skb->data;
	if (lin < 128 && skb->len > lin)
		bpf_skb_pull_data(skb, skb->len < 128 ? skb->len : 128);
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct tuple t = {};
	struct pkt_extra x = {};
	__u32 payload = 0;
	int ok = parse(data, data_end, &t, &payload, &x);
	x.payload = payload;
	if (ok < 0 && t.family != 0)
		return TC_ACT_UNSPEC; /* truncated IP */
	if (skb->vlan_present) /* the outer tag, offloaded into the skb */
		t.vlan = skb->vlan_tci & 0x0fff;
	if (acl && acl_run(&t, &x, ACL_EGRESS, skb->len))
		return TC_ACT_SHOT;
	if (ok < 0 || !cf)
		return TC_ACT_UNSPEC;
	return impair_egress(skb, cf, &t, &x);
}
