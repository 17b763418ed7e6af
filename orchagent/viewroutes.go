package orchagent

import (
	"encoding/binary"
	"math"
	"net/netip"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// The kernel view's routes, kept compact: at 100k routes a RouteInfo
// (112 bytes) and its next hop (48) per route, under a map keyed by a
// netip.Prefix, were the view's largest part, and every one of them held
// pointers the garbage collector followed. Here the common route — one
// per table and destination, one next hop or a blackhole, unicast — is a
// value in a map whose key and value hold no pointer (the collector skips
// the map's memory); link names are interned to small numbers. Anything
// else (several metrics at one destination, ECMP, weights, other route
// types, zoned gateways) stays a []RouteInfo in a second map. A route
// reads back exactly as it was put, except Create (a write option, never
// read back).

// rdst is a route's table (MainTable for 0) and destination (normPrefix),
// with no pointer and no padding in it (the map hashes and compares it as
// plain memory): the address's 16 bytes, then table<<32 | is4<<8 | bits.
type rdst struct {
	hi, lo uint64
	meta   uint64
}

const rdstBadBits = 255 // the invalid prefix

func rdstOf(table int, dst netip.Prefix) rdst {
	if table == 0 {
		table = netlinkmgr.MainTable
	}
	dst = normPrefix(dst)
	d := rdst{meta: uint64(uint32(table))<<32 | rdstBadBits}
	if dst.IsValid() {
		a := dst.Addr().As16()
		d.hi, d.lo = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
		d.meta = uint64(uint32(table))<<32 | uint64(dst.Bits())
		if dst.Addr().Is4() {
			d.meta |= 1 << 8
		}
	}
	return d
}

// table is d's routing table.
func (d rdst) table() int { return int(uint32(d.meta >> 32)) }

// dst is the destination d was made of (normalized).
func (d rdst) dst() netip.Prefix {
	bits := int(uint8(d.meta))
	if bits == rdstBadBits {
		return netip.Prefix{}
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], d.hi)
	binary.BigEndian.PutUint64(b[8:], d.lo)
	a := netip.AddrFrom16(b)
	if d.meta&(1<<8) != 0 {
		a = a.Unmap()
	}
	return netip.PrefixFrom(a, bits)
}

// vroute is the compact form of a route (see above): its destination and
// table are the map's key.
type vroute struct {
	gw     [16]byte
	metric uint32
	link   uint32 // interned link name (linkNames), 0 = none
	proto  uint8
	weight uint8
	flags  uint8
}

const (
	vrBlackhole = 1 << iota
	vrHop       // one next hop (else none)
	vrGw        // the hop has a gateway
	vrGw4       // an IPv4 gateway (gw holds its IPv4-mapped form)
	// Only in kernelView.inflight (never equal to a compact route's flags):
	vrLoose // the route written has no compact form: only its metric is kept
	vrGone  // its delete was heard while it was being written
)

// routeTable is one set of routes of the view (ours, or the foreign ones):
// one route per table, destination and metric.
type routeTable struct {
	one   map[rdst]vroute                 // the destination's only route, compact
	many  map[rdst][]netlinkmgr.RouteInfo // the others (never also in one)
	peaks [2]int                          // shrink's high-water marks
	// filter tells a place that holds nothing without a look-up
	// (routefilter.go)
	filter routeFilter
}

func newRouteTable() routeTable {
	t := routeTable{one: map[rdst]vroute{}, many: map[rdst][]netlinkmgr.RouteInfo{}}
	t.filter.reset(0)
	return t
}

// linkNames interns link names for vroute.link: ids are never reused
// (there are as many as link names ever seen, not links).
type linkNames struct {
	ids   map[string]uint32
	names []string // id-1 → name
}

func (n *linkNames) id(name string) uint32 {
	if name == "" {
		return 0
	}
	if id, ok := n.ids[name]; ok {
		return id
	}
	if n.ids == nil {
		n.ids = map[string]uint32{}
	}
	n.names = append(n.names, name)
	id := uint32(len(n.names))
	n.ids[name] = id
	return id
}

// lookup is name's id without interning it (0: never seen).
func (n *linkNames) lookup(name string) uint32 { return n.ids[name] }

func (n *linkNames) name(id uint32) string {
	if id == 0 {
		return ""
	}
	return n.names[id-1]
}

// readsBack reports whether d.dst() is dst, d being rdstOf(_, dst).
func readsBack(d rdst, dst netip.Prefix) bool {
	if !dst.IsValid() {
		return uint8(d.meta) == rdstBadBits
	}
	return !dst.Addr().Is4In6() && int(uint8(d.meta)) == dst.Bits()
}

// compactRoute is r's compact form at d (rdstOf(r.Table, r.Dst)), when
// it has one: r must read back exactly from d, so its table is not 0
// (rdstOf's MainTable) and its destination not IPv4-mapped (normPrefix)
// — asked of r (readsBack), not by making d's prefix again (2% of a
// 100k-route burst).
func compactRoute(d rdst, r *netlinkmgr.RouteInfo, names *linkNames) (vroute, bool) {
	if r.Type != "" || len(r.NextHops) > 1 || r.Blackhole == (len(r.NextHops) == 1) ||
		r.Protocol < 0 || r.Protocol > math.MaxUint8 || r.Metric < 0 || r.Metric > math.MaxUint32 ||
		r.Table != d.table() || !readsBack(d, r.Dst) {
		return vroute{}, false
	}
	c := vroute{metric: uint32(r.Metric), proto: uint8(r.Protocol)}
	if r.Blackhole {
		c.flags = vrBlackhole
		return c, true
	}
	h := &r.NextHops[0]
	if h.Weight < 0 || h.Weight > math.MaxUint8 || h.Gateway.Zone() != "" {
		return vroute{}, false
	}
	c.flags, c.weight, c.link = vrHop, uint8(h.Weight), names.id(h.Link)
	if h.Gateway.IsValid() {
		c.flags |= vrGw
		if h.Gateway.Is4() {
			c.flags |= vrGw4
		}
		c.gw = h.Gateway.As16()
	}
	return c, true
}

// route is c at d as a RouteInfo.
func (c *vroute) route(d rdst, names *linkNames) netlinkmgr.RouteInfo {
	r := netlinkmgr.RouteInfo{Dst: d.dst(), Table: d.table(), Protocol: int(c.proto), Metric: int(c.metric),
		Blackhole: c.flags&vrBlackhole != 0}
	if c.flags&vrHop != 0 {
		h := netlinkmgr.NextHop{Link: names.name(c.link), Weight: int(c.weight)}
		if c.flags&vrGw != 0 {
			h.Gateway = netip.AddrFrom16(c.gw)
			if c.flags&vrGw4 != 0 {
				h.Gateway = h.Gateway.Unmap()
			}
		}
		r.NextHops = []netlinkmgr.NextHop{h}
	}
	return r
}

// same is routeSame of two compact routes at one destination (weight 0
// is 1).
func (c *vroute) same(o *vroute) bool {
	return c.flags == o.flags && c.link == o.link && c.gw == o.gw && weight(int(c.weight)) == weight(int(o.weight))
}

// usesLink reports whether c's next hop goes out of link id.
func (c *vroute) usesLink(id uint32) bool { return id != 0 && c.flags&vrHop != 0 && c.link == id }

// put records r (one route per table, destination and metric); changed
// is false when the same route was there.
func (t *routeTable) put(r *netlinkmgr.RouteInfo, names *linkNames) (changed bool) {
	return t.putKeep(r, names, false)
}

// putKeep is put, except that a route at the same metric for which keep
// is true stays (see notedRoute).
func (t *routeTable) putKeep(r *netlinkmgr.RouteInfo, names *linkNames, keep bool) (changed bool) {
	return t.putKeepAt(rdstOf(r.Table, r.Dst), r, names, keep)
}

// putKeepAt is putKeep of r at d, rdstOf(r.Table, r.Dst) worked out by
// the caller.
func (t *routeTable) putKeepAt(d rdst, r *netlinkmgr.RouteInfo, names *linkNames, keep bool) (changed bool) {
	if r.Create {
		c := *r
		c.Create = false
		r = &c
	}
	if !t.filter.mayHold(d) {
		t.insertNew(d, r, names)
		return true
	}
	if old, ok := t.one[d]; ok {
		if old.metric == uint32(r.Metric) && r.Metric >= 0 {
			c, compact := compactRoute(d, r, names)
			if compact {
				if old.same(&c) {
					return false // the echo of our own write, most often
				}
				if keep {
					if cur := old.route(d, names); routeMatches(&cur, r) {
						return false
					}
				}
				t.one[d] = c
				return true
			}
			if cur := old.route(d, names); routeSame(&cur, r) || (keep && routeMatches(&cur, r)) {
				return false
			}
			t.many[d] = []netlinkmgr.RouteInfo{*r}
		} else {
			t.many[d] = []netlinkmgr.RouteInfo{old.route(d, names), *r}
		}
		delete(t.one, d) // (d's bit is set already)
		shrink.Grew(t.many, &t.peaks[1])
		return true
	}
	if rs, ok := t.manyAt(d); ok {
		for i := range rs {
			if rs[i].Metric == r.Metric {
				if routeSame(&rs[i], r) || (keep && routeMatches(&rs[i], r)) {
					return false
				}
				rs[i] = *r
				return true
			}
		}
		t.many[d] = append(rs, *r)
		return true
	}
	t.insertNew(d, r, names)
	return true
}

// insertNew puts r at d, which holds nothing.
func (t *routeTable) insertNew(d rdst, r *netlinkmgr.RouteInfo, names *linkNames) {
	if c, ok := compactRoute(d, r, names); ok {
		t.one[d] = c
		shrink.Grew(t.one, &t.peaks[0])
	} else {
		t.many[d] = []netlinkmgr.RouteInfo{*r}
		shrink.Grew(t.many, &t.peaks[1])
	}
	t.mark(d)
}

// del forgets the route to dst in table with metric; proto, when not
// -1, must be its protocol too.
func (t *routeTable) del(table int, dst netip.Prefix, metric, proto int) bool {
	return t.delAt(rdstOf(table, dst), metric, proto)
}

func (t *routeTable) delAt(d rdst, metric, proto int) bool {
	if c, ok := t.one[d]; ok {
		if int(c.metric) != metric || (proto != -1 && int(c.proto) != proto) {
			return false
		}
		delete(t.one, d)
		return true
	}
	rs, _ := t.manyAt(d)
	for i := range rs {
		if rs[i].Metric == metric && (proto == -1 || rs[i].Protocol == proto) {
			rs = append(rs[:i:i], rs[i+1:]...)
			if len(rs) == 0 {
				delete(t.many, d)
			} else {
				t.many[d] = rs
			}
			return true
		}
	}
	return false
}

// at returns copies of the routes to d.
func (t *routeTable) at(d rdst, names *linkNames) []netlinkmgr.RouteInfo {
	if !t.filter.mayHold(d) {
		return nil
	}
	if c, ok := t.one[d]; ok {
		return []netlinkmgr.RouteInfo{c.route(d, names)}
	}
	rs, _ := t.manyAt(d)
	if len(rs) == 0 {
		return nil
	}
	return append([]netlinkmgr.RouteInfo(nil), rs...)
}

// withMetric returns the route to d with metric, if any.
func (t *routeTable) withMetric(d rdst, metric int, names *linkNames) (netlinkmgr.RouteInfo, bool) {
	if !t.filter.mayHold(d) {
		return netlinkmgr.RouteInfo{}, false
	}
	if c, ok := t.one[d]; ok {
		if int(c.metric) == metric {
			return c.route(d, names), true
		}
		return netlinkmgr.RouteInfo{}, false
	}
	rs, _ := t.manyAt(d)
	for _, r := range rs {
		if r.Metric == metric {
			return r, true
		}
	}
	return netlinkmgr.RouteInfo{}, false
}

// all appends every route to out.
func (t *routeTable) all(out []netlinkmgr.RouteInfo, names *linkNames) []netlinkmgr.RouteInfo {
	for d, c := range t.one {
		out = append(out, c.route(d, names))
	}
	for _, rs := range t.many {
		out = append(out, rs...)
	}
	return out
}

// dsts appends the table and destination of every route to out.
func (t *routeTable) dsts(out []rdst) []rdst {
	for d := range t.one {
		out = append(out, d)
	}
	for d := range t.many {
		out = append(out, d)
	}
	return out
}

// dropTable forgets every route of one table.
func (t *routeTable) dropTable(table int) {
	if table == 0 {
		table = netlinkmgr.MainTable
	}
	for d := range t.one {
		if d.table() == table {
			delete(t.one, d)
		}
	}
	for d := range t.many {
		if d.table() == table {
			delete(t.many, d)
		}
	}
}

// purge forgets the routes drop selects and returns their resources.
func (t *routeTable) purge(res []string, names *linkNames, drop func(*netlinkmgr.RouteInfo) bool, dropOne func(*vroute) bool) []string {
	for d, c := range t.one {
		if dropOne(&c) {
			res = append(res, resRoute(d.table(), d.dst()))
			delete(t.one, d)
		}
	}
	for d, rs := range t.many {
		for _, r := range rs {
			if drop(&r) {
				res = append(res, resRoute(d.table(), d.dst()))
				t.delAt(d, r.Metric, r.Protocol)
			}
		}
	}
	return res
}

// manyAt is t.many[d], without hashing d when many is empty (most often:
// routes of one metric and one next hop).
func (t *routeTable) manyAt(d rdst) ([]netlinkmgr.RouteInfo, bool) {
	if len(t.many) == 0 {
		return nil, false
	}
	rs, ok := t.many[d]
	return rs, ok
}

func (t *routeTable) len() int { return len(t.one) + len(t.many) }

// compact gives back the memory of maps that shrank (internal/shrink).
func (t *routeTable) compact() {
	t.one = shrink.Map(t.one, &t.peaks[0])
	t.many = shrink.Map(t.many, &t.peaks[1])
	if t.filter.bits != nil && len(t.filter.bits) > max(minFilterWords, t.len()*8*4/64) {
		t.rebuildFilter() // shrank: a smaller filter, the deleted places' bits cleared
	}
}

// routesAt is applyRoute's look-up of a route's place, under one lock:
// the foreign route at table, dst and metric (foreignRoute) or, when there
// is none, copies of our routes to dst (routesFor).
func (v *kernelView) routesAt(table int, dst netip.Prefix, metric int) (c netlinkmgr.RouteInfo, foreign bool, ours []netlinkmgr.RouteInfo) {
	return v.routesAtD(rdstOf(table, dst), metric)
}

// routesAtD is routesAt of the place d (rdstOf of the table and
// destination: a route's is worked out once, for routesAt, writingAll
// and its note).
func (v *kernelView) routesAtD(d rdst, metric int) (c netlinkmgr.RouteInfo, foreign bool, ours []netlinkmgr.RouteInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.foreign.withMetric(d, metric, &v.names); ok {
		return c, true, nil
	}
	return netlinkmgr.RouteInfo{}, false, v.routes.at(d, &v.names)
}

// writingAll records the routes about to be written (a batch, or one
// Replace): the echo of one that beats our note of the write (notedRoute,
// after the kernel's answer) changes the view but is no news — the key is
// being applied — so it must not re-enqueue the key (a burst of routes
// was reconciled half again over). A route without a compact form is
// recorded by its metric only (vrLoose: its echo is news, its delete is
// heard as below).
//
// A delete of one of them heard before that note — someone removed it
// right after the kernel wrote it; with OmitOwnRouteWrites its add is
// never heard — finds nothing in the view (a new route) or removes the
// version being replaced; the note would then record a route the kernel
// no longer has. writeGoneLocked marks it gone instead, and notedRoute
// leaves it out: the key is retried (routeWritten).
func (v *kernelView) writingAll(rs []netlinkmgr.RouteInfo) { v.writingAllAt(rs, nil) }

// writingAllAt is writingAll with ds[i] = rdstOf of rs[i] (nil: worked
// out here).
func (v *kernelView) writingAllAt(rs []netlinkmgr.RouteInfo, ds []rdst) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.inflight == nil {
		v.inflight = map[rdst]vroute{}
	}
	for i := range rs {
		d := placeOf(&rs[i], ds, i)
		c, ok := compactRoute(d, &rs[i], &v.names)
		if !ok {
			c = vroute{metric: uint32(rs[i].Metric), flags: vrLoose}
		}
		v.inflight[d] = c
	}
}

// written forgets what writingAll recorded, once the writes are noted.
func (v *kernelView) written() {
	v.mu.Lock()
	clear(v.inflight)
	v.gone = 0
	v.mu.Unlock()
}

// echoOfWriteLocked reports whether r (just put in the view) is a route being
// written (writingAll); v.mu held.
func (v *kernelView) echoOfWriteLocked(r *netlinkmgr.RouteInfo) bool {
	d, w, ok := v.inflightLocked(r)
	if !ok {
		return false
	}
	c, ok := compactRoute(d, r, &v.names)
	return ok && c.same(&w)
}

// inflightLocked finds the route being written (writingAll) to r's table,
// destination and metric; v.mu held.
func (v *kernelView) inflightLocked(r *netlinkmgr.RouteInfo) (rdst, vroute, bool) {
	if len(v.inflight) == 0 {
		return rdst{}, vroute{}, false
	}
	d := rdstOf(r.Table, r.Dst)
	w, ok := v.inflight[d]
	return d, w, ok && int(w.metric) == r.Metric
}

// writeGoneLocked handles the delete event of our route r: when a route
// to its table, destination and metric is being written (writingAll), it
// is marked gone and writeGoneLocked reports true (the key is to be told,
// whether or not the view held a version of it). Our own delete of the
// old metric's route in the same reconcile does not match (another
// metric). v.mu held.
func (v *kernelView) writeGoneLocked(r *netlinkmgr.RouteInfo) bool {
	d, w, ok := v.inflightLocked(r)
	if !ok {
		return false
	}
	if w.flags&vrGone == 0 {
		w.flags |= vrGone
		v.inflight[d] = w
		v.gone++
	}
	return true
}

// notedRoute records our own successful write of r, so its echo changes
// nothing and re-enqueues nobody — unless its delete was heard while it
// was being written (writeGoneLocked): then it reports false and the view
// stays without it.
func (v *kernelView) notedRoute(r *netlinkmgr.RouteInfo) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.notedRouteLocked(r)
}

// notedRoutes is notedRoute for each rs[i] the kernel wrote (errs[i] ==
// nil), under one lock for a batch (a lock per route, handed to and from
// the event goroutine, was a tenth of the worker's time in a 100k burst):
// noted[i] (appended to noted[:0] and returned) is notedRoute's answer,
// false where errs[i] != nil.
func (v *kernelView) notedRoutes(rs []netlinkmgr.RouteInfo, errs []error, noted []bool) []bool {
	return v.notedRoutesAt(rs, nil, errs, noted)
}

// notedRoutesAt is notedRoutes with ds[i] = rdstOf of rs[i] (nil: worked
// out here).
func (v *kernelView) notedRoutesAt(rs []netlinkmgr.RouteInfo, ds []rdst, errs []error, noted []bool) []bool {
	noted = noted[:0]
	v.mu.Lock()
	defer v.mu.Unlock()
	for i := range rs {
		noted = append(noted, errs[i] == nil && v.notedRouteAtLocked(placeOf(&rs[i], ds, i), &rs[i]))
	}
	return noted
}

// placeOf is ds[i], or rdstOf of r when ds is nil.
func placeOf(r *netlinkmgr.RouteInfo, ds []rdst, i int) rdst {
	if ds == nil {
		return rdstOf(r.Table, r.Dst)
	}
	return ds[i]
}

// notedRouteLocked is notedRoute; v.mu held.
func (v *kernelView) notedRouteLocked(r *netlinkmgr.RouteInfo) bool {
	return v.notedRouteAtLocked(rdstOf(r.Table, r.Dst), r)
}

// notedRouteAtLocked is notedRouteLocked of r at d (rdstOf of r).
func (v *kernelView) notedRouteAtLocked(d rdst, r *netlinkmgr.RouteInfo) bool {
	if v.gone > 0 { // most often none: no look-up per route
		if w, ok := v.inflight[d]; ok && w.flags&vrGone != 0 && int(w.metric) == r.Metric {
			return false
		}
	}
	// The echo that came first says more than what we asked for (the
	// link a gateway-only next hop resolved to, which purgeLinkLocked
	// needs): kept when it is what we asked for.
	v.routes.putKeepAt(d, r, &v.names, true)
	return true
}
