/* netem.h: netem's correlated random loss and 4-state Markov loss model,
 * included by impair.c (needs struct profile, struct slot_pcpu and
 * rng_next). See docs/impaird.md, "netem's remaining models". */

/* crandom_lose is netem's correlated random loss (loss_event, CLG_RANDOM
 * with get_crandom): the random number is a weighted mean of a fresh one
 * and the last, weights 1 - rho and rho (rho = correlation * (2^32-1) +
 * 1, over 2^32); lost when netem's threshold is >= it. */
static __always_inline int crandom_lose(struct profile *p, struct slot_pcpu *c)
{
	__u64 value = rng_next(c);
	__u64 rho = p->ge_p + 1;
	__u32 answer = (value * ((1ULL << 32) - rho) + (__u64)c->crnd_last * rho) >> 32;
	c->crnd_last = answer;
	return p->ge_r && p->ge_r >= answer;
}

/* States of the 4-state model, netem's numbering minus one (so a zeroed
 * state is the initial TX_IN_GAP_PERIOD). */
#define S4_TX_GAP 0
#define S4_TX_BURST 1
#define S4_LOST_GAP 2
#define S4_LOST_BURST 3

/* lose_4state is netem's loss_4state, comparison for comparison (32-bit
 * sums wrap as netem's do): one random number per packet picks the next
 * state, and the packet is lost when that state is a loss state. */
static __always_inline int lose_4state(struct profile *p, struct slot_pcpu *c, __u32 *state)
{
	__u32 rnd = rng_next(c);
	__u32 a1 = p->ge_p, a2 = p->ge_r, a3 = p->ge_lg, a4 = p->ge_lb, a5 = p->period;

	switch (*state) {
	case S4_TX_GAP:
		if (rnd < a4) {
			*state = S4_LOST_GAP;
			return 1;
		}
		if (rnd < (__u32)(a1 + a4)) {
			*state = S4_LOST_BURST;
			return 1;
		}
		return 0;
	case S4_TX_BURST:
		if (rnd < a5) {
			*state = S4_LOST_BURST;
			return 1;
		}
		return 0;
	case S4_LOST_BURST:
		if (rnd < a3)
			*state = S4_TX_BURST;
		else if (rnd < (__u32)(a2 + a3))
			*state = S4_TX_GAP;
		else
			return 1;
		return 0;
	default: /* S4_LOST_GAP */
		*state = S4_TX_GAP;
		return 0;
	}
}
