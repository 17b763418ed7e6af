/* policer.h: the policer of impair.c's impairment stage (GCRA bucket
 * shared by all CPUs, per-CPU shares, clock-free drops while the bucket is
 * empty), included by impair.c (needs struct profile and struct pol_cpu).
 * See docs/impaird.md ("Policer"). */

/* Policer time unit: a tick is 1/64 ns (ns << TICK_SHIFT), so the cost of
 * a small packet at a high rate (5.12 ns for 64 bytes at 100 Gbit/s) is
 * truncated by at most 1/64 ns, not 1 ns. 2^64 ticks = 9 years of uptime. */
#define TICK_SHIFT 6

/* police_share is a GCRA token bucket in ticks shared by all CPUs (tat:
 * the time at which the bucket would be full again) with per-CPU shares.
 * A packet conforms when the debt (tat - now) plus its cost fits the
 * depth; the new tat is published with compare-and-swap, retried a
 * bounded number of times (a packet that loses every race is counted as
 * over rate). A conforming packet also takes a chunk of min(depth/16,
 * 100 us) as this CPU's share, which pays the CPU's next packets without
 * a clock read or a CAS.
 *
 * Takes are whole chunks: a packet conforms only when the bucket still
 * holds a chunk after its cost (or, for a packet too big for the depth
 * minus a chunk, when it holds the packet; then the take is what is
 * left, up to a chunk). Taking whatever room was left made a CPU offering
 * about the rate to a nearly empty bucket read the clock for every
 * packet or two (each take paid one packet more: scope flow 28 -> 41
 * ns/packet at 10 Gbit/s). Refused instead, it skips (below) until the
 * bucket holds a chunk; the tokens stay in the bucket, so the rate is
 * unchanged; packets are dropped up to one chunk (<= 100 us of rate)
 * earlier than a bucket read packet by packet would drop them, and that
 * chunk then pays later ones. A burst is bounded as before: the bucket's
 * room plus the CPUs' unspent shares.
 *
 * Over the rate the bucket stays empty and every packet would need a
 * clock read (bpf_ktime_get_ns costs ~25 ns in a VM: more than the rest
 * of the program). So a CPU the bucket refused computes when the bucket
 * can pay this packet and a chunk again (until), and drops the packets
 * it expects before then without a precise read: half as many as
 * arrive in that time at the rate it saw since its last precise read
 * (then it reads the clock and skips again), and only
 * while the coarse clock (never ahead of the precise one, ~2 ns) is
 * before until. The skipped packets' tokens stay in the bucket (it is
 * in debt, so none are lost unless it fills, which takes more than
 * SKIP_MIN_DEPTH minus a chunk, beyond one jiffy of coarse-clock lag):
 * the rate is unchanged, the drops come in runs of up to a chunk instead
 * of one by one. A bucket shallower than SKIP_MIN_DEPTH never skips. */
#define SHARE_MAX_TICKS (100000ULL << TICK_SHIFT) /* 100 us */
#define SKIP_MIN_DEPTH (8000000ULL << TICK_SHIFT) /* 8 ms: two jiffies at HZ=250 */
#define SKIP_MAX 65535

static __always_inline int police_share(__u64 *tat, struct profile *p, __u64 len, struct pol_cpu *pc)
{
	__u64 cost = (len * p->ns_per_byte_fp) >> (16 - TICK_SHIFT);
	__u64 share = pc->share;
	__u32 seen = pc->seen;
	if (share >= cost) {
		pc->share = share - cost;
		pc->seen = seen + 1;
		return 1;
	}
	if (seen < pc->skip && (bpf_ktime_get_coarse_ns() << TICK_SHIFT) < pc->until) {
		pc->seen = seen + 1;
		return 0;
	}
	__u64 now = bpf_ktime_get_ns() << TICK_SHIFT;
	__u64 at = pc->at;
	pc->at = now;
	pc->seen = 0;
	pc->skip = 0;
	__u64 depth = p->depth;
	__u64 chunk = depth >> 4;
	if (chunk > SHARE_MAX_TICKS)
		chunk = SHARE_MAX_TICKS;
	__u64 floor = cost + chunk <= depth ? chunk : 0; /* room to leave */
	__u64 old = 0;
#pragma unroll
	for (int i = 0; i < 4; i++) {
		old = *(volatile __u64 *)tat;
		__u64 base = old > now ? old : now;
		__u64 debt = base + cost - now;
		if (debt + floor > depth)
			break;
		__u64 extra = depth - debt;
		if (extra > chunk)
			extra = chunk;
		if (__sync_val_compare_and_swap(tat, old, base + cost + extra) == old) {
			pc->share = share + extra;
			return 1;
		}
	}
	/* refused (or lost every race): skip until the bucket holds this
	 * packet and a chunk */
	__u64 need = old + cost + chunk;
	if (depth >= SKIP_MIN_DEPTH && need > depth + now && now > at) {
		__u64 until = need - depth;
		__u64 tau = (now - at) / ((__u64)seen + 1); /* ticks per packet since the last read */
		/* half the packets expected before until: a slower arrival
		 * than measured then ends the skip early (another precise
		 * read, a shorter skip) rather than late */
		__u64 k = tau ? (until - now) / tau / 2 : 0;
		pc->skip = k > SKIP_MAX ? SKIP_MAX : k;
		pc->until = until;
	}
	return 0;
}
