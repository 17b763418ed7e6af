//go:build ignore

// edt.c: earliest-departure-time delay, jitter and shaping on egress.
// A tc clsact egress program (direct action) stamps skb->tstamp
// (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns and of fq) with the
// time the packet may leave; the fq root qdisc holds it until then.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char __license[] SEC("license") = "GPL";

#define DIST_SIZE 4096       /* entries per distribution table (netem's) */
#define DIST_SCALE_SHIFT 13  /* table values are sigma * 8192 (NETEM_DIST_SCALE) */
#define NUM_DISTS 4

/* A class carried across from XDP ingress: skb->mark = MARK_MAGIC | id. */
#define MARK_MAGIC 0xED000000u
#define MARK_MAGIC_MASK 0xFF000000u
#define MARK_CLASS_MASK 0x00FFFFFFu

/* An skb->tstamp further than this ahead of now is not a departure time
 * (a receive timestamp in CLOCK_REALTIME, say) and is ignored. */
#define MAX_AHEAD_NS (60ull * 1000000000ull)

enum dist { DIST_UNIFORM = 0, DIST_NORMAL = 1, DIST_PARETO = 2, DIST_PARETONORMAL = 3 };

#define F_REORDER 1 /* jitter may reorder a flow */

/* Which profile: a port (ifindex, class 0) or a class carried in the mark
 * (ifindex 0, class id). */
struct key {
	__u32 ifindex;
	__u32 class;
};

/* One profile, written whole by the control plane. */
struct cfg {
	__u64 delay_ns;
	__u64 jitter_ns;
	__u64 rate_bps;   /* shaping rate; 0 = no shaping */
	__u64 limit_ns;   /* a packet waiting longer than this to be shaped is dropped */
	__u32 loss;       /* channel loss after shaping: P(drop) * 2^32 */
	__u32 dist;       /* enum dist */
	__u32 flags;      /* F_* */
	__u32 _pad;
	/* netem's slotting: slot_max_ns 0 = none */
	__u64 slot_min_ns;
	__u64 slot_max_ns;
	__u32 slot_packets; /* per slot; 0 = no cap */
	__u32 slot_bytes;   /* per slot; 0 = no cap */
	__u32 slot_dist;    /* enum dist: not uniform = netem's "slot distribution"
			     * form, slot_min_ns the delay, slot_max_ns the jitter */
	__u32 _pad2;
};

/* The shaper's virtual clock: when the link is next free. */
struct shaper {
	struct bpf_spin_lock lock;
	__u32 _pad;
	__u64 next_ns;
};

/* Slotting state of a profile (netem's struct slotstate). */
struct slot_state {
	struct bpf_spin_lock lock;
	__u32 _pad;
	__u64 next_ns; /* when the current slot opens; 0 = none yet */
	__s64 packets_left;
	__s64 bytes_left;
};

struct stats {
	__u64 packets;       /* stamped and passed */
	__u64 bytes;
	__u64 dropped_limit; /* congestion: beyond the shaping queue limit */
	__u64 dropped_loss;  /* channel loss after shaping */
};

struct flow_key {
	struct key key;
	__u32 hash; /* skb flow hash */
};

struct dist_table {
	__s16 v[DIST_SIZE];
};

/* key -> cfg */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct cfg);
} configs SEC(".maps");

/* key -> shaper state, shared by all CPUs (spin lock) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct shaper);
} shapers SEC(".maps");

/* key -> per-CPU counters */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct stats);
} counters SEC(".maps");

/* key -> slotting state, shared by all CPUs (spin lock) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct slot_state);
} slots SEC(".maps");

/* flow -> last departure time, to keep a flow's order without reorder */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, __u64);
} flows SEC(".maps");

/* ingress ifindex -> class id: edt_ingress_port marks every packet
 * arriving on the port with MARK_MAGIC | id (a per-port profile applied
 * on whichever port the packet leaves by). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} port_classes SEC(".maps");

/* enum dist -> netem-style inverse CDF table (filled by Go at load) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NUM_DISTS);
	__type(key, __u32);
	__type(value, struct dist_table);
} dists SEC(".maps");

/* 0 -> per-CPU xorshift64* state (seeded from the kernel on first use) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rng SEC(".maps");

static __always_inline __u64 rng_next(void)
{
	__u32 zero = 0;
	__u64 *s = bpf_map_lookup_elem(&rng, &zero);
	if (!s)
		return ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
	__u64 x = *s;
	if (!x)
		x = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* jitter_sample is netem's tabledist without mu: a signed offset in ns. */
static __always_inline __s64 jitter_sample(const struct cfg *c)
{
	__u64 sigma = c->jitter_ns;
	__u64 r = rng_next();
	if (c->dist == DIST_UNIFORM)
		return (__s64)((r >> 1) % (2 * sigma)) - (__s64)sigma;
	__u32 d = c->dist;
	struct dist_table *t = bpf_map_lookup_elem(&dists, &d);
	if (!t)
		return 0;
	__s64 v = t->v[(r >> 52) & (DIST_SIZE - 1)];
	return (v * (__s64)sigma) >> DIST_SCALE_SHIFT;
}

static __always_inline struct stats *stats_of(const struct key *k)
{
	struct stats *st = bpf_map_lookup_elem(&counters, k);
	if (st)
		return st;
	struct stats zero = {};
	bpf_map_update_elem(&counters, k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&counters, k);
}

static __always_inline struct shaper *shaper_of(const struct key *k)
{
	struct shaper *sh = bpf_map_lookup_elem(&shapers, k);
	if (sh)
		return sh;
	struct shaper zero = {};
	bpf_map_update_elem(&shapers, k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&shapers, k);
}

static __always_inline struct slot_state *slot_of(const struct key *k)
{
	struct slot_state *ss = bpf_map_lookup_elem(&slots, k);
	if (ss)
		return ss;
	struct slot_state zero = {};
	bpf_map_update_elem(&slots, k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&slots, k);
}

/* slot_gap is netem's next slot delay (get_slot_next): with a
 * distribution, delay + table sample x jitter (tabledist; at least 0),
 * else uniform in [min, max] (30 random bits keep the product in 64 bits
 * for gaps up to 10 s). */
static __always_inline __u64 slot_gap(const struct cfg *c)
{
	if (c->slot_dist != DIST_UNIFORM) {
		/* tabledist(delay, jitter) with the jitter tables */
		__u32 d = c->slot_dist;
		struct dist_table *t = bpf_map_lookup_elem(&dists, &d);
		if (!t)
			return c->slot_min_ns;
		__s64 v = t->v[(rng_next() >> 52) & (DIST_SIZE - 1)];
		__s64 g = (__s64)c->slot_min_ns + ((v * (__s64)c->slot_max_ns) >> DIST_SCALE_SHIFT);
		return g > 0 ? g : 0;
	}
	__u64 span = c->slot_max_ns - c->slot_min_ns;
	if (!span)
		return c->slot_min_ns;
	return c->slot_min_ns + ((span * (rng_next() >> 34)) >> 30);
}

/* slot_time is netem's slotting on a departure time t (netem_dequeue):
 * a packet due after the current slot opened starts a new slot one gap
 * after it; a packet leaves when its slot opens; a slot whose packets or
 * bytes run out is followed by the next one a gap later. */
static __always_inline __u64 slot_time(const struct key *k, const struct cfg *c, __u64 t, __u32 len)
{
	struct slot_state *ss = slot_of(k);
	if (!ss)
		return t;
	__s64 maxp = c->slot_packets ? c->slot_packets : 0x7fffffff;
	__s64 maxb = c->slot_bytes ? c->slot_bytes : 0x7fffffff;
	/* random numbers first: no helper calls under the lock */
	__u64 gap_new = slot_gap(c), gap_next = slot_gap(c);
	bpf_spin_lock(&ss->lock);
	if (ss->next_ns < t) {
		ss->next_ns = t + gap_new;
		ss->packets_left = maxp;
		ss->bytes_left = maxb;
	}
	__u64 dep = ss->next_ns;
	ss->packets_left--;
	ss->bytes_left -= len;
	if (ss->packets_left <= 0 || ss->bytes_left <= 0) {
		ss->next_ns = dep + gap_next;
		ss->packets_left = maxp;
		ss->bytes_left = maxb;
	}
	bpf_spin_unlock(&ss->lock);
	return dep;
}

SEC("tc")
int edt_egress(struct __sk_buff *skb)
{
	struct key k = {};
	struct cfg *c = 0;

	if ((skb->mark & MARK_MAGIC_MASK) == MARK_MAGIC) {
		k.class = skb->mark & MARK_CLASS_MASK;
		c = bpf_map_lookup_elem(&configs, &k);
	}
	if (!c) {
		k.ifindex = skb->ifindex;
		k.class = 0;
		c = bpf_map_lookup_elem(&configs, &k);
		if (!c)
			return TC_ACT_OK;
	}

	__u64 now = bpf_ktime_get_ns();
	__u64 t = now;
	/* Respect an earlier departure time (TCP pacing) if it is one. */
	if (skb->tstamp > now && skb->tstamp - now < MAX_AHEAD_NS)
		t = skb->tstamp;
	/* Bytes on the wire: wire_len counts every segment's headers of a
	 * GSO packet (qdisc_pkt_len_init), len only the first's. */
	__u32 len = skb->wire_len ? skb->wire_len : skb->len;
	struct stats *st = stats_of(&k);

	if (c->rate_bps) {
		/* Shaping: a virtual clock per profile, advanced by the packet's
		 * serialization time at the rate; the packet starts when the
		 * link is free. Congestion loss first (tail drop beyond the
		 * queue limit), then channel loss (seed 004 §3.4). */
		struct shaper *sh = shaper_of(&k);
		if (!sh)
			return TC_ACT_OK;
		__u64 tx = (__u64)len * 8000000000ull / c->rate_bps;
		int drop = 0;
		bpf_spin_lock(&sh->lock);
		__u64 start = sh->next_ns > t ? sh->next_ns : t;
		if (start - t > c->limit_ns)
			drop = 1;
		else
			sh->next_ns = start + tx;
		bpf_spin_unlock(&sh->lock);
		if (drop) {
			if (st)
				st->dropped_limit++;
			return TC_ACT_SHOT;
		}
		t = start;
	}
	if (c->loss && (__u32)(rng_next() >> 32) < c->loss) {
		if (st)
			st->dropped_loss++;
		return TC_ACT_SHOT;
	}

	__s64 d = (__s64)c->delay_ns;
	if (c->jitter_ns)
		d += jitter_sample(c);
	if (d > 0)
		t += d;
	if (c->slot_max_ns || c->slot_dist)
		t = slot_time(&k, c, t, len);

	if (!(c->flags & F_REORDER)) {
		/* Never depart before the previous packet of this flow. Two
		 * CPUs sending one flow at once may race here; a flow normally
		 * stays on one CPU (one socket, one queue). */
		struct flow_key fk = {.key = k, .hash = bpf_get_hash_recalc(skb)};
		__u64 *last = bpf_map_lookup_elem(&flows, &fk);
		if (last) {
			if (*last > t)
				t = *last;
			*last = t;
		} else {
			bpf_map_update_elem(&flows, &fk, &t, BPF_ANY);
		}
	}

	skb->tstamp = t;
	if (st) {
		st->packets++;
		st->bytes += len;
	}
	return TC_ACT_OK;
}

/* edt_ingress_meta: tc ingress on a port whose XDP program classified
 * the packet. XDP cannot set skb->mark; it prepends 4 bytes of metadata
 * (bpf_xdp_adjust_meta(ctx, -4)) holding MARK_MAGIC | class id, which
 * the kernel keeps in front of the skb's data, and this program copies
 * them into skb->mark for edt_egress on whichever port the packet
 * leaves by. Metadata without the magic is left alone. */
SEC("tc")
int edt_ingress_meta(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *meta = (void *)(long)skb->data_meta;

	if (meta + sizeof(__u32) > data)
		return TC_ACT_OK;
	__u32 v = *(__u32 *)meta;
	if ((v & MARK_MAGIC_MASK) == MARK_MAGIC)
		skb->mark = v;
	return TC_ACT_OK;
}

/* edt_ingress_port: tc ingress on a port with a per-port EDT profile
 * (IMPAIRMENT delay/jitter/shape): every packet arriving on the port is
 * marked MARK_MAGIC | the class id configured for it in port_classes,
 * so edt_egress applies the arriving port's profile on whichever port
 * the packet leaves by. A port without an entry is left alone. A packet
 * XDP classified (class metadata, as edt_ingress_meta reads it) keeps
 * its class: a per-class profile (IMPAIRMENT_FLOW) replaces the port's. */
SEC("tc")
int edt_ingress_port(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *meta = (void *)(long)skb->data_meta;

	if (meta + sizeof(__u32) <= data) {
		__u32 v = *(__u32 *)meta;
		if ((v & MARK_MAGIC_MASK) == MARK_MAGIC) {
			skb->mark = v;
			return TC_ACT_OK;
		}
	}
	/* A class an earlier ingress program set in the mark (impaird's
	 * impair_dup, for a duplicated packet whose metadata the clone
	 * dropped) is kept, as the metadata's would be. */
	if ((skb->mark & MARK_MAGIC_MASK) == MARK_MAGIC)
		return TC_ACT_OK;
	__u32 idx = skb->ifindex;
	__u32 *id = bpf_map_lookup_elem(&port_classes, &idx);

	if (id)
		skb->mark = MARK_MAGIC | (*id & MARK_CLASS_MASK);
	return TC_ACT_OK;
}
