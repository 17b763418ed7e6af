/* parse.h: the packet parser of impair.c's programs (XDP and tc), included
 * by impair.c after acl.h (needs struct tuple, struct pkt_extra,
 * struct vlan_hdr and struct v6_frag). */

/* parse fills t, x (for the ACL) and the L4 payload offset; returns -1
 * for non-IP (x->etype set, t->family 0) or truncated packets, which the
 * impairment stage passes untouched. Inlined into parse_classify and
 * acl_egress (XDP and skb contexts). */
static __always_inline int parse(void *data, void *data_end, struct tuple *t, __u32 *payload,
				 struct pkt_extra *x)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return -1;
	__u16 proto = eth->h_proto;
	__u32 off = sizeof(*eth);

#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		struct vlan_hdr *vh = data + off;
		if ((void *)(vh + 1) > data_end)
			return -1;
		if (i == 0)
			t->vlan = bpf_ntohs(vh->tci) & 0x0fff;
		proto = vh->proto;
		off += sizeof(*vh);
	}
	x->etype = bpf_ntohs(proto);

	__u8 l4;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + off;
		if ((void *)(ip + 1) > data_end)
			return -1;
		__u32 ihl = ip->ihl * 4;
		if (ihl < sizeof(*ip))
			return -1;
		t->family = 4;
		t->dscp = ip->tos >> 2;
		t->src[0] = ip->saddr;
		t->dst[0] = ip->daddr;
		l4 = ip->protocol;
		t->proto = l4;
		off += ihl;
		if (ip->frag_off & bpf_htons(0x1fff)) { /* not the first fragment: no L4 header */
			*payload = off;
			return 0;
		}
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;
		if ((void *)(ip6 + 1) > data_end)
			return -1;
		t->family = 6;
		t->dscp = (bpf_ntohs(*(__be16 *)ip6) >> 6) & 0x3f;
		__builtin_memcpy(t->src, &ip6->saddr, 16);
		__builtin_memcpy(t->dst, &ip6->daddr, 16);
		l4 = ip6->nexthdr;
		off += sizeof(*ip6);
#pragma unroll
		for (int i = 0; i < MAX_V6_EXT; i++) {
			if (l4 == IPPROTO_HOPOPTS || l4 == IPPROTO_ROUTING || l4 == IPPROTO_DSTOPTS) {
				__u8 *h = data + off;
				if ((void *)(h + 2) > data_end)
					return -1;
				l4 = h[0];
				off += ((__u32)h[1] + 1) * 8;
			} else if (l4 == IPPROTO_FRAGMENT) {
				struct v6_frag *fh = data + off;
				if ((void *)(fh + 1) > data_end)
					return -1;
				l4 = fh->nexthdr;
				off += sizeof(*fh);
				if (fh->frag_off & bpf_htons(0xfff8)) {
					t->proto = l4;
					*payload = off;
					return 0;
				}
			} else {
				break;
			}
		}
		t->proto = l4;
	} else {
		return -1;
	}

	x->l4off = off;
	if (l4 == IPPROTO_TCP) {
		struct tcphdr *th = data + off;
		if ((void *)(th + 1) > data_end)
			return -1;
		t->sport = bpf_ntohs(th->source);
		t->dport = bpf_ntohs(th->dest);
		x->tcpflags = ((__u8 *)th)[13];
		off += th->doff * 4;
	} else if (l4 == IPPROTO_UDP) {
		struct udphdr *uh = data + off;
		if ((void *)(uh + 1) > data_end)
			return -1;
		t->sport = bpf_ntohs(uh->source);
		t->dport = bpf_ntohs(uh->dest);
		off += sizeof(*uh);
	} else if (l4 == IPPROTO_ICMP || l4 == IPPROTO_ICMPV6) {
		__u8 *ic = data + off;
		if ((void *)(ic + 2) <= data_end) {
			x->icmp_type = ic[0];
			x->icmp_code = ic[1];
		}
		off += 8;
	}
	*payload = off;
	return 0;
}
