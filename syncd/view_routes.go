package syncd

import (
	"net/netip"
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// routeID identifies a kernel route of the main table or a VRF's. Several routes may
// share a prefix: with different metrics (the mirror shows the lowest, the
// one the kernel uses) or with the same metric on different devices (IPv6
// fe80::/64 on every link; IPv4 "ip route append"), which the mirror shows
// together, as ECMP paths. The next hops are part of the identity because
// the kernel's RTM_DELROUTE names them.
type routeID struct {
	table  int // 0 = main
	dst    netip.Prefix
	metric int
	hops   string // canonical next hops, "blackhole" for a blackhole route
}

// routeGroup is the routes of one prefix in one table: one ROUTE_TABLE key
// (when the table is main or a mirrored VRF's).
type routeGroup struct {
	table int // 0 = main
	dst   netip.Prefix
}

func tableOf(r netlinkmgr.RouteInfo) int {
	if r.Table == netlinkmgr.MainTable {
		return 0
	}
	return r.Table
}

func groupOf(r netlinkmgr.RouteInfo) routeGroup {
	return routeGroup{table: tableOf(r), dst: r.Dst.Masked()}
}

func (id routeID) group() routeGroup { return routeGroup{table: id.table, dst: id.dst} }

// groupKey is a group's ROUTE_TABLE key: the prefix for the main table,
// "<vrf>:<prefix>" for the table of a mirrored VRF; ok=false otherwise.
func (v *View) groupKey(g routeGroup) (string, bool) {
	if g.table == 0 {
		return g.dst.String(), true
	}
	vrf, ok := v.vrfTables[g.table]
	if !ok {
		return "", false
	}
	return VrfRouteKey(vrf, g.dst)
}

// parseRouteKey is groupKey's inverse.
func (v *View) parseRouteKey(key string) (routeGroup, bool) {
	if vrf, p, ok := strings.Cut(key, ":"); ok && IsVrfName(vrf) {
		t, ok := v.vrfByName[vrf]
		pfx, err := netip.ParsePrefix(p)
		if !ok || err != nil {
			return routeGroup{}, false
		}
		return routeGroup{table: t, dst: pfx}, true
	}
	pfx, err := netip.ParsePrefix(key)
	if err != nil {
		return routeGroup{}, false
	}
	return routeGroup{dst: pfx}, true
}

func (v *View) touchGroup(g routeGroup) {
	if k, ok := v.groupKey(g); ok {
		v.touch(schema.StateRouteTable, k)
	}
}

// touchTable marks every route key of a table (its VRF came, went or was
// renamed).
func (v *View) touchTable(table int) {
	for g := range v.routeKeys {
		if g.table == table {
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
	out := make([]string, 0, len(v.routeKeys))
	for g := range v.routeKeys {
		if k, ok := v.groupKey(g); ok {
			out = append(out, StateKey(schema.StateRouteTable, k))
		}
	}
	return out
}

func idOfRoute(r netlinkmgr.RouteInfo) routeID {
	if r.Blackhole {
		return routeID{table: tableOf(r), dst: r.Dst.Masked(), metric: r.Metric, hops: "blackhole"}
	}
	parts := make([]string, len(r.NextHops))
	for i, h := range r.NextHops {
		parts[i] = h.Gateway.String() + "@" + h.Link
	}
	sort.Strings(parts)
	return routeID{table: tableOf(r), dst: r.Dst.Masked(), metric: r.Metric, hops: strings.Join(parts, ",")}
}

func (v *View) applyRoute(r netlinkmgr.RouteInfo, deleted bool) {
	if !RouteMirrored(r) {
		return
	}
	id := idOfRoute(r)
	if deleted {
		v.removeRoute(id)
		return
	}
	g := groupOf(r)
	set := v.routeKeys[g]
	if set == nil {
		set = map[routeID]struct{}{}
		v.routeKeys[g] = set
	}
	if _, known := set[id]; !known && !v.listing {
		// A new route next to one with the same prefix and metric is
		// either an append (both live) or a replace (the kernel sends no
		// delete for the old one): only a relist can tell.
		for o := range set {
			if o.metric == id.metric {
				v.routesSuspect = true
			}
		}
	}
	v.routes[id] = r
	set[id] = struct{}{}
	if v.listing {
		v.seenRoutes[id] = struct{}{}
	}
	v.touchGroup(g)
}

func (v *View) removeRoute(id routeID) {
	r, ok := v.routes[id]
	if !ok {
		return
	}
	delete(v.routes, id)
	g := groupOf(r)
	if set := v.routeKeys[g]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(v.routeKeys, g)
		}
	}
	v.touchGroup(g)
}

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
	listed := map[int]bool{}
	for _, t := range tables {
		listed[tableOf(netlinkmgr.RouteInfo{Table: t})] = true
	}
	if len(tables) == 0 {
		listed[0] = true
	}
	keep := map[routeID]struct{}{}
	listing := v.listing
	v.listing = false // a relist is the truth: no suspicion
	for _, r := range rs {
		if !RouteMirrored(r) {
			continue
		}
		keep[idOfRoute(r)] = struct{}{}
		v.applyRoute(r, false)
	}
	v.listing = listing
	for id := range v.routes {
		if _, ok := keep[id]; !ok && listed[id.table] {
			v.removeRoute(id)
		}
	}
	v.routesSuspect = false
}

// wantRoute merges the routes of prefix key with the lowest metric: their
// next hops in a stable order, the protocol of the first.
func (v *View) wantRoute(key string) (schema.Fields, bool) {
	g, ok := v.parseRouteKey(key)
	if !ok {
		return nil, false
	}
	if k, ok := v.groupKey(g); !ok || k != key {
		return nil, false // not canonical, or a VRF not mirrored
	}
	set := v.routeKeys[g]
	if len(set) == 0 {
		return nil, false
	}
	var best []routeID
	for id := range set {
		switch {
		case len(best) == 0 || id.metric < best[0].metric:
			best = []routeID{id}
		case id.metric == best[0].metric:
			best = append(best, id)
		}
	}
	sort.Slice(best, func(i, j int) bool { return best[i].hops < best[j].hops })
	r := v.routes[best[0]]
	if len(best) > 1 && !r.Blackhole {
		merged := r
		merged.NextHops = nil
		for _, id := range best {
			merged.NextHops = append(merged.NextHops, v.routes[id].NextHops...)
		}
		r = merged
	}
	return RouteFields(r), true
}
