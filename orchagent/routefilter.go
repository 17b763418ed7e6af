package orchagent

import "math/bits"

// routeFilter answers "is this place (table and destination) surely
// empty?" for a routeTable without a look-up in its maps. At 100k routes
// a look-up of a place that holds nothing — every route of a burst, in
// applyRoute's routesAt — is a cache and TLB miss in a map of several
// MB, ~0.4 µs on this VM, on the worker's path (docs/performance.md,
// routes5). The filter is one bit per hash of a place, 8 bits or more per
// place held: ~128 KiB at 100k routes, which stays in the CPU's cache. A
// clear bit means no route there; a set bit means maybe (the places that
// hash alike, or one emptied since: a delete leaves its bit, cleared by
// the next rebuild). Every insert into the table's maps sets its bit
// (routeTable.mark); the filter is rebuilt from the maps when it would
// hold more than one place per 8 bits, and when the table shrank
// (compact).
type routeFilter struct {
	bits  []uint64
	shift uint // 64 - log2(len(bits)*64): a hash's top bits index it
	n     int  // places marked since the last rebuild (those held, at most)
}

const minFilterWords = 64 // 4,096 bits: 512 places before the first rebuild

// slot is d's bit: a multiplicative hash of the place's three words.
func (f *routeFilter) slot(d rdst) uint64 {
	h := d.hi*0x9e3779b97f4a7c15 ^ d.lo*0xc2b2ae3d27d4eb4f ^ d.meta*0x165667b19e3779f9
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h >> f.shift
}

// mayHold reports whether d may hold a route (false: surely not).
func (f *routeFilter) mayHold(d rdst) bool {
	if f.bits == nil {
		return true // not built (a routeTable made without newRouteTable)
	}
	s := f.slot(d)
	return f.bits[s/64]&(1<<(s%64)) != 0
}

// set marks d; false when the filter is full (rebuild).
func (f *routeFilter) set(d rdst) bool {
	if f.bits == nil {
		return true
	}
	s := f.slot(d)
	f.bits[s/64] |= 1 << (s % 64)
	f.n++
	return f.n*8 <= len(f.bits)*64
}

// reset sizes the filter for n places, all bits clear.
func (f *routeFilter) reset(n int) {
	words := max(minFilterWords, 1<<bits.Len(uint((n*8+63)/64)))
	if cap(f.bits) >= words && cap(f.bits) <= 4*words {
		f.bits = f.bits[:words]
		clear(f.bits)
	} else {
		f.bits = make([]uint64, words)
	}
	f.shift = uint(64 - bits.TrailingZeros(uint(words*64)))
	f.n = 0
}

// mark records that d now holds a route (every insert into t.one or
// t.many); a full filter is rebuilt from the maps.
func (t *routeTable) mark(d rdst) {
	if !t.filter.set(d) {
		t.rebuildFilter()
	}
}

// rebuildFilter makes the filter again from the places t holds.
func (t *routeTable) rebuildFilter() {
	t.filter.reset(2 * t.len()) // room to grow before the next rebuild
	for d := range t.one {
		t.filter.set(d)
	}
	for d := range t.many {
		t.filter.set(d)
	}
}
