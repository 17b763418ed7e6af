package syncd

import (
	"net/netip"
	"sort"
	"strings"
	"unique"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// The route mirror holds 100k routes on a big switch, so a route costs
// one map slot of values (64 bytes) and no allocation of its
// own: the group (table and prefix) is the key, and what the mirror shows
// of a route besides its prefix — protocol, blackhole, next hops — is a
// routeTail interned with package unique, shared by every route with the
// same next hops (100k routes via one gateway: one string). Before, a
// route was a netlinkmgr.RouteInfo, a canonical next-hop string and a
// one-entry map of its own: 1.5 KiB of RSS per route.

// routeGroup is the routes of one prefix in one table: one ROUTE_TABLE key
// (when the table is main or a mirrored VRF's). A value type of 24 bytes
// without pointers (netip.Prefix is 32 with one).
type routeGroup struct {
	addr  [16]byte // the prefix's address, host bits clear (As16)
	table uint32   // 0 = main
	bits  uint8
	v4    bool
}

// routeTail is a route less its prefix and metric, as the mirror shows it.
type routeTail struct {
	protocol  int
	blackhole bool
	// hops are the next hops in the kernel's order, each "gateway link"
	// (gateway "" when directly connected), joined by "/": neither an
	// address nor an interface name holds a space or a slash.
	hops string
}

// kroute is one kernel route of a group. Several routes may share a
// prefix: with different metrics (the mirror shows the lowest, the one
// the kernel uses) or with the same metric on different devices (IPv6
// fe80::/64 on every link; IPv4 "ip route append"), which the mirror shows
// together, as ECMP paths. A route's identity in its group is its metric
// and next hops (the kernel's RTM_DELROUTE names them): sameRoute.
type kroute struct {
	tail   unique.Handle[routeTail]
	metric uint32
	listed bool // delivered by the listing in progress (BeginListing)
	kept   bool // delivered by the relist in progress (ReplaceRoutes)
}

// fieldsKey names the rendering of a single route's tail (the family of
// its prefix decides how a direct next hop is written): View.routeFields.
type fieldsKey struct {
	tail unique.Handle[routeTail]
	v6   bool
}

// maxRouteFields bounds View.routeFields; past it the cache starts over.
const maxRouteFields = 4096

// routeSet is a group's routes: nearly always one, held inline.
type routeSet struct {
	first kroute
	more  []kroute
}

func (s *routeSet) len() int { return 1 + len(s.more) }

func (s *routeSet) at(i int) *kroute {
	if i == 0 {
		return &s.first
	}
	return &s.more[i-1]
}

// remove drops route i; false when the set is then empty.
func (s *routeSet) remove(i int) bool {
	if len(s.more) == 0 {
		return false
	}
	if i == 0 {
		s.first = s.more[0]
		i = 1
	}
	s.more = append(s.more[:i-1], s.more[i:]...)
	if len(s.more) == 0 {
		s.more = nil
	}
	return true
}

func tableOf(r netlinkmgr.RouteInfo) uint32 {
	if r.Table == netlinkmgr.MainTable {
		return 0
	}
	return uint32(r.Table)
}

func groupOf(r netlinkmgr.RouteInfo) routeGroup {
	return groupFor(tableOf(r), r.Dst)
}

func groupFor(table uint32, dst netip.Prefix) routeGroup {
	m := dst.Masked()
	return routeGroup{addr: m.Addr().As16(), table: table, bits: uint8(m.Bits()), v4: m.Addr().Is4()}
}

// prefix is the group's destination.
func (g routeGroup) prefix() netip.Prefix {
	a := netip.AddrFrom16(g.addr)
	if g.v4 {
		a = a.Unmap()
	}
	return netip.PrefixFrom(a, int(g.bits))
}

// lastTail is the tail of the last single-hop route the View saw: a burst
// is mostly routes via the same next hop, which then cost no string.
type lastTail struct {
	protocol int
	gw       netip.Addr
	link     string
	handle   unique.Handle[routeTail]
	ok       bool
}

// tail is tailOf(r), reusing the last single-hop route's.
func (v *View) tail(r netlinkmgr.RouteInfo) unique.Handle[routeTail] {
	if r.Blackhole || len(r.NextHops) != 1 {
		return tailOf(r)
	}
	h, l := r.NextHops[0], &v.last
	if l.ok && l.protocol == r.Protocol && l.gw == h.Gateway && l.link == h.Link {
		return l.handle
	}
	*l = lastTail{protocol: r.Protocol, gw: h.Gateway, link: h.Link, handle: tailOf(r), ok: true}
	return l.handle
}

// tailOf is r's routeTail, interned.
func tailOf(r netlinkmgr.RouteInfo) unique.Handle[routeTail] {
	t := routeTail{protocol: r.Protocol, blackhole: r.Blackhole}
	if !r.Blackhole && len(r.NextHops) > 0 {
		var b strings.Builder
		for i, h := range r.NextHops {
			if i > 0 {
				b.WriteByte('/')
			}
			if h.Gateway.IsValid() {
				b.WriteString(h.Gateway.Unmap().String())
			}
			b.WriteByte(' ')
			b.WriteString(h.Link)
		}
		t.hops = b.String()
	}
	return unique.Make(t)
}

// canonHops is hops in a stable order (sorted), the next hops' identity.
func canonHops(hops string) string {
	if !strings.Contains(hops, "/") {
		return hops
	}
	parts := strings.Split(hops, "/")
	sort.Strings(parts)
	return strings.Join(parts, "/")
}

// sameRoute reports whether two routes of a group are the same kernel
// route: same metric, both blackhole or neither, same next hops in any
// order (the protocol may change under a replace).
func sameRoute(a kroute, metric uint32, t unique.Handle[routeTail]) bool {
	if a.metric != metric {
		return false
	}
	if a.tail == t {
		return true
	}
	x, y := a.tail.Value(), t.Value()
	return x.blackhole == y.blackhole && canonHops(x.hops) == canonHops(y.hops)
}

// nextHops decodes a tail's next hops.
func (t routeTail) nextHops() []netlinkmgr.NextHop {
	if t.hops == "" {
		return nil
	}
	var out []netlinkmgr.NextHop
	for h := range strings.SplitSeq(t.hops, "/") {
		gw, link, _ := strings.Cut(h, " ")
		nh := netlinkmgr.NextHop{Link: link}
		if gw != "" {
			nh.Gateway, _ = netip.ParseAddr(gw)
		}
		out = append(out, nh)
	}
	return out
}

// groupKey is a group's ROUTE_TABLE key: the prefix for the main table,
// "<vrf>:<prefix>" for the table of a mirrored VRF; ok=false otherwise.
func (v *View) groupKey(g routeGroup) (string, bool) {
	if g.table == 0 {
		var buf [64]byte
		return string(g.prefix().AppendTo(buf[:0])), true
	}
	vrf, ok := v.vrfTables[int(g.table)]
	if !ok {
		return "", false
	}
	return VrfRouteKey(vrf, g.prefix())
}

// parseRouteKey is groupKey's inverse.
func (v *View) parseRouteKey(key string) (routeGroup, bool) {
	if vrf, p, ok := strings.Cut(key, ":"); ok && IsVrfName(vrf) {
		t, ok := v.vrfByName[vrf]
		pfx, err := netip.ParsePrefix(p)
		if !ok || err != nil {
			return routeGroup{}, false
		}
		return groupFor(uint32(t), pfx), true
	}
	pfx, err := netip.ParsePrefix(key)
	if err != nil {
		return routeGroup{}, false
	}
	return groupFor(0, pfx), true
}

// touchGroup marks g's key. A VRF's key is rendered now: the VRF may be
// gone (its key with it) by the time the key is written.
func (v *View) touchGroup(g routeGroup) {
	if g.table == 0 {
		v.dirtyRoutes[g] = struct{}{}
		return
	}
	if k, ok := v.groupKey(g); ok {
		v.touch(schema.StateRouteTable, k)
	}
}

// mainRouteStateKey is "ROUTE_TABLE|<prefix>" of a main-table group, in
// one allocation.
func mainRouteStateKey(g routeGroup) string {
	var buf [80]byte
	b := append(append(buf[:0], schema.StateRouteTable...), schema.StateSep...)
	return string(g.prefix().AppendTo(b))
}

// touchTable marks every route key of a table (its VRF came, went or was
// renamed).
func (v *View) touchTable(table int) {
	for g := range v.routes {
		if int(g.table) == table {
			v.touchGroup(g)
		}
	}
}

// fileVrf records a vrf device's table: its routes appear as
// "<vrf>:<prefix>".
func (v *View) fileVrf(l netlinkmgr.LinkInfo) {
	if l.Kind != "vrf" || l.Vrf == nil || l.Vrf.Table == 0 {
		return
	}
	t := int(l.Vrf.Table)
	if v.vrfTables[t] == l.Name && v.vrfByName[l.Name] == t {
		return // unchanged (an up/down or counters event)
	}
	v.vrfTables[t] = l.Name
	v.vrfByName[l.Name] = t
	v.touchTable(t)
}

// unfileVrf forgets a vrf device's table (before its removal, or before
// a change when next is its new state: an unchanged table is kept).
func (v *View) unfileVrf(l netlinkmgr.LinkInfo, next ...netlinkmgr.LinkInfo) {
	t, ok := v.vrfByName[l.Name]
	if !ok {
		return
	}
	if len(next) == 1 && next[0].Name == l.Name && next[0].Kind == "vrf" && next[0].Vrf != nil && int(next[0].Vrf.Table) == t {
		return
	}
	v.touchTable(t)
	delete(v.vrfByName, l.Name)
	if v.vrfTables[t] == l.Name {
		delete(v.vrfTables, t)
	}
}

// VrfTables returns the tables of the vrf devices the View knows, sorted.
func (v *View) VrfTables() []int {
	out := make([]int, 0, len(v.vrfTables))
	for t := range v.vrfTables {
		out = append(out, t)
	}
	sort.Ints(out)
	return out
}

// routeStateKeys lists the ROUTE_TABLE keys the mirror should hold.
func (v *View) routeStateKeys() []string {
	out := make([]string, 0, len(v.routes))
	for g := range v.routes {
		if k, ok := v.groupKey(g); ok {
			out = append(out, StateKey(schema.StateRouteTable, k))
		}
	}
	return out
}

func (v *View) applyRoute(r netlinkmgr.RouteInfo, deleted bool) {
	if !RouteMirrored(r) {
		return
	}
	g, metric, t := groupOf(r), uint32(r.Metric), v.tail(r)
	if deleted {
		v.removeRoute(g, metric, t)
		return
	}
	set, ok := v.routes[g]
	if !ok {
		v.routes[g] = routeSet{first: kroute{tail: t, metric: metric, listed: v.listing, kept: v.relisting}}
		v.touchGroup(g)
		return
	}
	found := -1
	for i := range set.len() {
		if sameRoute(*set.at(i), metric, t) {
			found = i
			break
		}
	}
	if found < 0 {
		if !v.listing && !v.relisting {
			// A new route next to one with the same prefix and metric is
			// either an append (both live) or a replace (the kernel sends
			// no delete for the old one): only a relist can tell.
			for i := range set.len() {
				if set.at(i).metric == metric {
					v.routesSuspect = true
				}
			}
		}
		set.more = append(set.more, kroute{tail: t, metric: metric, listed: v.listing, kept: v.relisting})
	} else {
		k := set.at(found)
		k.tail = t
		k.listed = k.listed || v.listing
		k.kept = k.kept || v.relisting
	}
	v.routes[g] = set
	v.touchGroup(g)
}

// removeRoute drops the route of group g with metric and next hops of t.
func (v *View) removeRoute(g routeGroup, metric uint32, t unique.Handle[routeTail]) {
	set, ok := v.routes[g]
	if !ok {
		return
	}
	for i := range set.len() {
		if sameRoute(*set.at(i), metric, t) {
			v.removeAt(g, set, i)
			return
		}
	}
}

// removeAt drops route i of group g (set is v.routes[g]).
func (v *View) removeAt(g routeGroup, set routeSet, i int) {
	if set.remove(i) {
		v.routes[g] = set
	} else {
		delete(v.routes, g)
	}
	v.touchGroup(g)
}

// sweepRoutes drops, in every group, the routes gone reports, and calls
// unmark on the others (true when it changed the route).
func (v *View) sweepRoutes(gone func(routeGroup, kroute) bool, unmark func(*kroute) bool) {
	for g, set := range v.routes {
		changed, empty := false, false
		for i := set.len() - 1; i >= 0; i-- { // down: remove(i) moves only later routes
			if gone(g, *set.at(i)) {
				v.touchGroup(g)
				if !set.remove(i) {
					empty = true
					break
				}
				changed = true
			} else if unmark(set.at(i)) {
				changed = true
			}
		}
		switch {
		case empty:
			delete(v.routes, g)
		case changed:
			v.routes[g] = set
		}
	}
}

func unmarkListed(k *kroute) bool { was := k.listed; k.listed = false; return was }
func unmarkKept(k *kroute) bool   { was := k.kept; k.kept = false; return was }

// RoutesSuspect reports (and clears) whether routes must be relisted: a
// link went admin-down or away (the kernel flushes its IPv4 routes without
// RTM_DELROUTE), or a route may have replaced another silently.
func (v *View) RoutesSuspect() bool {
	s := v.routesSuspect
	v.routesSuspect = false
	return s
}

// ReplaceRoutes replaces the routes of tables (none: the main table) with
// a fresh listing of them.
func (v *View) ReplaceRoutes(rs []netlinkmgr.RouteInfo, tables ...int) {
	listed := map[uint32]bool{}
	for _, t := range tables {
		listed[tableOf(netlinkmgr.RouteInfo{Table: t})] = true
	}
	if len(tables) == 0 {
		listed[0] = true
	}
	v.relisting = true // a relist is the truth: no suspicion
	for _, r := range rs {
		v.applyRoute(r, false)
	}
	v.relisting = false
	v.sweepRoutes(func(g routeGroup, k kroute) bool { return listed[g.table] && !k.kept }, unmarkKept)
	v.routesSuspect = false
}

// wantRoute merges the routes of prefix key with the lowest metric: their
// next hops in a stable order, the protocol of the first.
func (v *View) wantRoute(key string) (schema.Fields, bool) {
	g, ok := v.parseRouteKey(key)
	if !ok {
		return nil, false
	}
	if g.table == 0 {
		var buf [64]byte
		if string(g.prefix().AppendTo(buf[:0])) != key {
			return nil, false // not canonical
		}
	} else if k, ok := v.groupKey(g); !ok || k != key {
		return nil, false // not canonical, or a VRF not mirrored
	}
	return v.wantGroup(g)
}

// wantGroup is wantRoute of a group whose key is mirrored.
func (v *View) wantGroup(g routeGroup) (schema.Fields, bool) {
	set, ok := v.routes[g]
	if !ok {
		return nil, false
	}
	r := netlinkmgr.RouteInfo{Dst: g.prefix()}
	if set.len() == 1 {
		// 100k routes share a handful of tails: render each once.
		fk := fieldsKey{set.first.tail, !g.v4}
		if f, ok := v.routeFields[fk]; ok {
			return f, true
		}
		t := set.first.tail.Value()
		r.Protocol, r.Blackhole, r.NextHops = t.protocol, t.blackhole, t.nextHops()
		f := RouteFields(r)
		if len(v.routeFields) >= maxRouteFields {
			clear(v.routeFields)
		}
		v.routeFields[fk] = f
		return f, true
	}
	var best []routeTail
	var low uint32
	for i := range set.len() {
		k := set.at(i)
		switch {
		case len(best) == 0 || k.metric < low:
			best, low = []routeTail{k.tail.Value()}, k.metric
		case k.metric == low:
			best = append(best, k.tail.Value())
		}
	}
	sort.Slice(best, func(i, j int) bool { return idText(best[i]) < idText(best[j]) })
	r.Protocol, r.Blackhole = best[0].protocol, best[0].blackhole
	if r.Blackhole {
		return RouteFields(r), true
	}
	for _, t := range best {
		r.NextHops = append(r.NextHops, t.nextHops()...)
	}
	return RouteFields(r), true
}

// idText orders routes of the same metric: blackhole ones by that word,
// others by their sorted next hops.
func idText(t routeTail) string {
	if t.blackhole {
		return "blackhole"
	}
	return canonHops(t.hops)
}
