package syncd

import (
	"net/netip"
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// routeID identifies a kernel route of the main table. Several routes may
// share a prefix: with different metrics (the mirror shows the lowest, the
// one the kernel uses) or with the same metric on different devices (IPv6
// fe80::/64 on every link; IPv4 "ip route append"), which the mirror shows
// together, as ECMP paths. The next hops are part of the identity because
// the kernel's RTM_DELROUTE names them.
type routeID struct {
	dst    netip.Prefix
	metric int
	hops   string // canonical next hops, "blackhole" for a blackhole route
}

func idOfRoute(r netlinkmgr.RouteInfo) routeID {
	if r.Blackhole {
		return routeID{dst: r.Dst.Masked(), metric: r.Metric, hops: "blackhole"}
	}
	parts := make([]string, len(r.NextHops))
	for i, h := range r.NextHops {
		parts[i] = h.Gateway.String() + "@" + h.Link
	}
	sort.Strings(parts)
	return routeID{dst: r.Dst.Masked(), metric: r.Metric, hops: strings.Join(parts, ",")}
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
	k := RouteKey(r)
	set := v.routeKeys[k]
	if set == nil {
		set = map[routeID]struct{}{}
		v.routeKeys[k] = set
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
	v.touch(schema.StateRouteTable, k)
}

func (v *View) removeRoute(id routeID) {
	r, ok := v.routes[id]
	if !ok {
		return
	}
	delete(v.routes, id)
	k := RouteKey(r)
	if set := v.routeKeys[k]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(v.routeKeys, k)
		}
	}
	v.touch(schema.StateRouteTable, k)
}

// RoutesSuspect reports (and clears) whether routes must be relisted: a
// link went admin-down or away (the kernel flushes its IPv4 routes without
// RTM_DELROUTE), or a route may have replaced another silently.
func (v *View) RoutesSuspect() bool {
	s := v.routesSuspect
	v.routesSuspect = false
	return s
}

// ReplaceRoutes replaces the main-table routes with a fresh listing.
func (v *View) ReplaceRoutes(rs []netlinkmgr.RouteInfo) {
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
		if _, ok := keep[id]; !ok {
			v.removeRoute(id)
		}
	}
	v.routesSuspect = false
}

// wantRoute merges the routes of prefix key with the lowest metric: their
// next hops in a stable order, the protocol of the first.
func (v *View) wantRoute(key string) (schema.Fields, bool) {
	set := v.routeKeys[key]
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
