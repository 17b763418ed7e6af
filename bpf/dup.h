/* dup.h: duplication, included by impair.c (needs struct profile,
 * struct slot_pcpu, rng_next and the EDT metadata constants). XDP decides
 * and asks in the metadata (pass_meta); impair_dup, a tc ingress program
 * of the same object, makes the copy. See docs/impaird.md. */

#include <linux/pkt_cls.h>

/* Duplication (docs/impaird.md): XDP cannot clone a packet, so it decides
 * (seeded RNG, counted in the slot) and asks impair_dup, the port's tc
 * ingress program, for the copy: metadata DUP_MAGIC | class id (0 =
 * none). impair_dup turns it back into the class metadata, clones the
 * packet into the port's ingress with skb->mark DUP_MAGIC | class id,
 * and when the copy comes by, gives it its class mark and lets it go. */
#define DUP_MAGIC 0xdd000000
#define MAGIC_MASK 0xff000000

/* pass_meta writes the pass metadata: the EDT class and, drawn here,
 * the duplicate request. */
static __always_inline void pass_meta(struct xdp_md *ctx, struct profile *p, struct slot_pcpu *c)
{
	__u32 magic = EDT_MARK_MAGIC;
	if ((p->flags & F_DUP) && rng_next(c) < p->dup) {
		magic = DUP_MAGIC;
		c->duplicated++;
	}
	if (magic == EDT_MARK_MAGIC && !p->edt_class)
		return;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u32)))
		return;
	void *data = (void *)(long)ctx->data;
	__u32 *meta = (void *)(long)ctx->data_meta;
	if ((void *)(meta + 1) > data)
		return;
	*meta = magic | (p->edt_class & EDT_CLASS_MASK);
}

/* impair_dup: tc ingress (direct action) on a port with duplicate, in
 * front of any other ingress filter (it returns TC_ACT_UNSPEC: the next
 * filter runs). See pass_meta. */
SEC("tc")
int impair_dup(struct __sk_buff *skb)
{
	if ((skb->mark & MAGIC_MASK) == DUP_MAGIC) { /* the copy */
		__u32 cls = skb->mark & EDT_CLASS_MASK;
		skb->mark = cls ? (EDT_MARK_MAGIC | cls) : 0;
		return TC_ACT_UNSPEC;
	}
	void *data = (void *)(long)skb->data;
	__u32 *meta = (void *)(long)skb->data_meta;
	if ((void *)(meta + 1) > data)
		return TC_ACT_UNSPEC;
	__u32 v = *meta;
	if ((v & MAGIC_MASK) != DUP_MAGIC)
		return TC_ACT_UNSPEC;
	__u32 cls = v & EDT_CLASS_MASK;
	*meta = cls ? (EDT_MARK_MAGIC | cls) : 0;
	__u32 mark = skb->mark;
	skb->mark = DUP_MAGIC | cls;
	bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
	/* The clone left the original cloned, so the helper made its head
	 * private (pskb_expand_head), which drops the metadata: the class
	 * goes on in skb->mark, where edt_ingress_meta/_port keep it. */
	skb->mark = cls ? (EDT_MARK_MAGIC | cls) : mark;
	return TC_ACT_UNSPEC;
}
