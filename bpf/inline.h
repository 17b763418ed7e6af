/* inline.h: inline entries, the mechanism the ACL (acl.h tab4/tab6) and
 * the impairment classifier (impair.c port_cfg.tab4) share: a table in a
 * published, never rewritten array value holding, per slot, the
 * best-ranked entry of a hash map whose key hashes to that slot
 * (inlineSlots in inline.go picks them), so a search ending on it costs
 * no hash lookup (~10 ns). Included by impair.c before its structs. */

/* The pre-check hash (aclHash in acl.go computes the same): a sum of a
 * key's 64-bit words times odd constants (independent multiplies); an
 * inline entry's slot is its top bits. */
#define ACL_C0 0x9E3779B97F4A7C15ULL
#define ACL_C1 0xBF58476D1CE4E5B9ULL
#define ACL_C2 0x94D049BB133111EBULL
#define ACL_C3 0xD6E8FEB86659FD93ULL
#define ACL_C4 0xA0761D6478BD642FULL
#define ACL_C5 0xE7037ED1A0B428DBULL

/* An inline entry: a hash entry's key words and value, in the slot its
 * hash names; rank 0xffffffff = empty. more: another entry of the hash
 * has this slot, so a key that is not this one must be looked up in the
 * hash; 0: a key that is not this one has no entry. idx and action are
 * the ACL rule's counter index and action; the impairment classifier
 * keeps the rule's slot in idx (action 0). */
struct acl_ent4 {
	__u64 k[3];
	__u32 rank;
	__u32 idx;
	__u32 action;
	__u32 more;
};

struct acl_ent6 {
	__u64 k[6];
	__u32 rank;
	__u32 idx;
	__u32 action;
	__u32 more;
};

#define INL_MISS 0   /* no entry has the key: skip the hash */
#define INL_HIT 1    /* the entry is the key's */
#define INL_LOOKUP 2 /* not this entry, but the slot is shared: look the key up */

/* inline_probe4 compares a 3-word key with its slot's entry e. */
static __always_inline int inline_probe4(struct acl_ent4 *e, __u64 k0, __u64 k1, __u64 k2)
{
	if (e->k[0] == k0 && e->k[1] == k1 && e->k[2] == k2)
		return INL_HIT;
	return e->more ? INL_LOOKUP : INL_MISS;
}

/* inline_probe6 compares a 6-word key with its slot's entry e. */
static __always_inline int inline_probe6(struct acl_ent6 *e, __u64 *k)
{
	if (e->k[0] == k[0] && e->k[1] == k[1] && e->k[2] == k[2] && e->k[3] == k[3] && e->k[4] == k[4] &&
	    e->k[5] == k[5])
		return INL_HIT;
	return e->more ? INL_LOOKUP : INL_MISS;
}
