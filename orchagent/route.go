package orchagent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// applyRoute installs the static route in the main table (or, for
// "VrfNAME|prefix", in that VRF's table once its key is ok) with protocol
// 201 and metric = distance. It waits for every next-hop interface to
// exist, for the VRFs of leaking next hops (nexthop-vrf), and for a
// gateway the kernel cannot reach yet (no connected route) until an
// address or route event says it may be reachable.
func (o *Orch) applyRoute(key string, f schema.Fields) outcome {
	r, err := schema.ParseStaticRoute(key, f)
	return o.applyParsedRoute(key, r, err)
}

// applyRoutePacked is applyRoute of the hash packed as the cache keeps
// it (engine.Read.Packed): its route fields read off the string, no map
// filled per route (docs/performance.md, routes6).
func (o *Orch) applyRoutePacked(key, packed string) outcome {
	rf := routeFieldsPacked(packed)
	var arena *[]schema.NextHop
	if o.batch != nil {
		// The batch's: its routes are kept until flushBatch only.
		if cap(o.batch.hops) == 0 {
			o.batch.hops = make([]schema.NextHop, 0, maxBatch)
		}
		arena = &o.batch.hops
	}
	r, err := schema.ParseStaticRouteFieldsIn(key, &rf, arena)
	return o.applyParsedRoute(key, r, err)
}

// routeFieldsPacked reads a packed hash's route fields.
func routeFieldsPacked(packed string) schema.StaticRouteFields {
	var rf schema.StaticRouteFields
	for s := packed; s != ""; {
		k, v, rest, ok := shrink.Next(s)
		if !ok {
			break
		}
		rf.Set(k, v)
		s = rest
	}
	return rf
}

// applyParsedRoute is applyRoute once the hash is parsed (r, or err).
func (o *Orch) applyParsedRoute(key string, r schema.StaticRoute, err error) outcome {
	if err != nil {
		return errorOut(err, nil)
	}
	// A route's key is not in the index under its route resource, nor
	// (in a VRF) under its VRF's key and device: enqueueRefs derives it
	// from those (enqueueRouteKeys, enqueueVrfRouteKeys), so 100k applied
	// routes cost the index nothing, in main or in a VRF's table.
	table := netlinkmgr.MainTable
	if inVRF(r.VRF) {
		t, ok := o.vrfTableOf(r.VRF)
		if !ok {
			return pendingOut("waiting for "+schema.ConfigKey(schema.TableVRF, r.VRF), nil)
		}
		table = t
	}
	// An applied route does not wait on its links (refs[:applied]): the
	// view forgets the routes through a link that goes away or down
	// (purgeLinkLocked), which re-enqueues the route's key through its
	// route resource — and 100k routes via a port are not a 100k-key set
	// under "link:PORT", all re-enqueued by any change of the port.
	var refs []string
	applied := 0
	if len(r.NextHops) == 1 && r.NextHops[0].Ifname != "" && !inVRF(r.NextHops[0].VRF) {
		// The common route: its link's interned refs, shared by every
		// such route (resNames.one, read-only), no slice per route.
		refs = o.linkRes.one(r.NextHops[0].Ifname)
	} else if len(r.NextHops) > 0 {
		// The other VRFs (applied), then the links: sized once.
		refs = make([]string, 0, len(r.NextHops))
		for _, nh := range r.NextHops {
			if inVRF(nh.VRF) {
				refs = vrfRefs(refs, nh.VRF)
			}
		}
		applied = len(refs)
		for _, nh := range r.NextHops {
			if nh.Ifname != "" {
				refs = append(refs, o.linkRes.of(nh.Ifname))
			}
		}
	}
	if !inVRF(r.VRF) && o.otherRouteConfigured(key) {
		other := otherRouteKey(key)
		return errorOut(fmt.Errorf("STATIC_ROUTE|%s: the same route is configured as STATIC_ROUTE|%s: delete one", key, other),
			append(refs, schema.ConfigKey(schema.TableStaticRoute, other)))
	}
	for _, nh := range r.NextHops {
		if nh.Gateway.IsValid() {
			// Whether the gateway is an address of this switch is known
			// for the default VRF only (the VRFs may reuse addresses).
			local := !inVRF(r.VRF) && !inVRF(nh.VRF)
			if why := o.badGateway(nh.Gateway, nh.Ifname, local); why != "" {
				// Re-examined when addresses change (an address of ours
				// that goes away stops being a bad gateway).
				return errorOut(fmt.Errorf("STATIC_ROUTE|%s: %s", key, why), append(refs, resReach))
			}
		}
	}
	for _, nh := range r.NextHops {
		if inVRF(nh.VRF) {
			if vk := schema.ConfigKey(schema.TableVRF, nh.VRF); !o.resultOK(vk) {
				return pendingOut("waiting for "+vk+" (nexthop-vrf)", refs)
			}
		}
		if nh.Ifname == "" {
			continue
		}
		if !o.view.linkExists(nh.Ifname) {
			return pendingOut(waitingForLink(nh.Ifname), refs)
		}
	}
	want, reason := o.desiredRoute(r, table)
	if reason != "" {
		return pendingOut(reason, append(refs, resReach))
	}
	if inVRF(r.VRF) {
		o.notedRouteTable(r.VRF, table)
	}
	d := rdstOf(table, r.Prefix) // want's place, worked out once
	c, foreign, cur := o.view.routesAtD(d, want.Metric)
	if foreign {
		// Someone else's route: never replaced. Its deletion (a route
		// event on this prefix) re-enqueues the key.
		return errorOut(routeConflict(c), refs)
	}
	match, ours := false, false
	for _, c := range cur {
		if c.Metric == want.Metric {
			match, ours = routeMatches(&c, &want), true
			continue
		}
		// A changed distance leaves the old metric's route behind.
		if err := o.delRoute(key, c); err != nil {
			return kernelOut(err, refs)
		}
	}
	if match {
		return okOut(refs[:applied:applied])
	}
	// Create, unless our own route is there to replace: a route of
	// another protocol that the view has not seen yet makes the kernel
	// answer EEXIST instead of being overwritten.
	want.Create = !ours
	if o.deferring(schema.TableStaticRoute) {
		o.batch.items = append(o.batch.items, deferredRoute{deferred: o.batch.cur, r: r, want: want, d: d, refs: refs, applied: applied})
		return outcome{deferred: true}
	}
	err = o.act(schema.TableStaticRoute, key, "replace route "+describeRoute(&want), func() error {
		o.view.writingAll([]netlinkmgr.RouteInfo{want}) // after act's flush of a batch
		return o.k.Routes().Replace(want)
	})
	out := o.routeWritten(r, want, refs, applied, err)
	o.view.written()
	return out
}

// routeWritten is the outcome of the replace of want for r; refs[:applied]
// are what the route depends on once applied.
func (o *Orch) routeWritten(r schema.StaticRoute, want netlinkmgr.RouteInfo, refs []string, applied int, err error) outcome {
	if err != nil {
		if want.Create && errors.Is(err, unix.EEXIST) {
			c, ok := o.readForeignRoute(want)
			if ok && !ownedRoute(&c) {
				return errorOut(routeConflict(c), refs)
			}
			if ok {
				// Ours, and the view had lost it (a VRF table relisted
				// while its device was away): replace it.
				// A copy: the closure capturing want itself would move
				// every call's want to the heap.
				rep := want
				rep.Create = false
				err = o.act(schema.TableStaticRoute, r.Key(), "replace route "+describeRoute(&rep),
					func() error { return o.k.Routes().Replace(rep) })
				return o.routeWritten(r, rep, refs, applied, err)
			}
			return kernelOut(err, refs)
		}
		if gatewayError(err) {
			if e, ok := o.gatewayRefused(want.NextHops, err); ok {
				return errorOut(e, append(refs, resReach))
			}
		}
		if reason, ok := unreachable(err, r); ok {
			return pendingOut(reason, append(refs, resReach))
		}
		return kernelOut(err, refs)
	}
	return o.routeNoted(r, &want, refs, applied, o.view.notedRoute(&want))
}

// routeNoted is the outcome of a successful replace of want for r, noted
// in the view (notedRoute's answer: false when the route's delete was
// heard while it was being written).
func (o *Orch) routeNoted(r schema.StaticRoute, want *netlinkmgr.RouteInfo, refs []string, applied int, noted bool) outcome {
	if !noted {
		// Removed by someone right after the kernel wrote it (its
		// delete was heard before this note): write it again.
		return kernelOut(fmt.Errorf("STATIC_ROUTE|%s: route %s was deleted while being written", r.Key(), describeRoute(want)), refs)
	}
	return okOut(refs[:applied:applied])
}

// removeRoute deletes our routes to the key's prefix in its table, unless
// the other spelling of the same route ("default|P" for "P") is still
// configured. A VRF route's table is its VRF device's, or (the device gone)
// each table the VRF applied routes in that no vrf device of ours holds
// now; else the sweep finds the route.
func (o *Orch) removeRoute(key string) outcome {
	vrf, p, ok := routeKeyParts(key)
	if !ok {
		return okOut(nil)
	}
	table := netlinkmgr.MainTable
	if inVRF(vrf) {
		t, ok := o.vrfTableOf(vrf)
		if !ok {
			return o.removeGoneVrfRoute(key, vrf, p)
		}
		table = t
	} else if other := otherRouteKey(key); o.configuredLocal(schema.TableStaticRoute, other) {
		o.enqueue(schema.ConfigKey(schema.TableStaticRoute, other))
		return okOut(nil)
	}
	for _, c := range o.view.routesFor(table, p) {
		if err := o.delRoute(key, c); err != nil {
			return kernelOut(err, nil)
		}
	}
	return okOut(nil)
}

func (o *Orch) delRoute(key string, r netlinkmgr.RouteInfo) error {
	if err := o.act(schema.TableStaticRoute, key, "delete route "+describeRoute(&r),
		func() error { return ignoreNotFound(o.k.Routes().Del(r)) }); err != nil {
		return err
	}
	o.view.notedRouteDel(&r)
	return nil
}

func (o *Orch) configuredLocal(table, key string) bool {
	return o.cfg.Has(table, key)
}

// otherRouteConfigured reports whether the other spelling of route key
// (otherRouteKey) is configured too and sorts first (it then owns the
// route). The other key is spelled in a buffer on the stack: this runs
// for every route, and a lookup keeps no reference to its key.
func (o *Orch) otherRouteConfigured(key string) bool {
	var buf [128]byte
	b := buf[:0]
	if _, rest, ok := strings.Cut(key, schema.ConfigSep); ok {
		b = append(b, rest...)
	} else {
		b = append(append(append(b, schema.DefaultVRF...), schema.ConfigSep...), key...)
	}
	other := unsafe.String(unsafe.SliceData(b), len(b))
	return other < key && o.cfg.Has(schema.TableStaticRoute, other)
}

// routeKeyParts returns the VRF ("default" when the key has none) and
// prefix of a STATIC_ROUTE key ("P", "default|P" or "VrfNAME|P") when the
// prefix is canonical.
func routeKeyParts(key string) (string, netip.Prefix, bool) {
	vrf, s := schema.DefaultVRF, key
	if v, rest, ok := strings.Cut(key, schema.ConfigSep); ok {
		if v != schema.DefaultVRF && !schema.IsVRFName(v) {
			return "", netip.Prefix{}, false
		}
		vrf, s = v, rest
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Masked() != p {
		return "", netip.Prefix{}, false
	}
	return vrf, p, true
}

// inVRF reports whether vrf names a VRF other than the default one.
func inVRF(vrf string) bool { return vrf != "" && vrf != schema.DefaultVRF }

// otherRouteKey is the other spelling of the same route key.
func otherRouteKey(key string) string {
	if _, rest, ok := strings.Cut(key, schema.ConfigSep); ok {
		return rest
	}
	return schema.DefaultVRF + schema.ConfigSep + key
}

// desiredRoute is the kernel form of r in table. IPv6 metric 0 is stored
// by the kernel as 1024, so that is what we ask for and compare with. A
// next hop reached in another VRF (nexthop-vrf) goes out of that VRF's
// interface: given by ifname, or the one whose subnet holds the gateway
// (as zebra resolves it); reason says what is missing when there is none.
func (o *Orch) desiredRoute(r schema.StaticRoute, table int) (out netlinkmgr.RouteInfo, reason string) {
	out = netlinkmgr.RouteInfo{Dst: r.Prefix, Table: table,
		Protocol: netlinkmgr.ProtoSwitchyard, Blackhole: r.Blackhole}
	if r.Distance != nil {
		out.Metric = *r.Distance
	}
	if r.Prefix.Addr().Is6() && out.Metric == 0 {
		out.Metric = 1024
	}
	for _, nh := range r.NextHops {
		link := nh.Ifname
		if nh.VRF != "" && link == "" {
			l, ok := o.view.subnetInVRF(nh.Gateway.Unmap(), nh.VRF)
			if !ok {
				return out, fmt.Sprintf("waiting for a connected route to next hop %s in VRF %s", nh.Gateway, nh.VRF)
			}
			link = l
		}
		out.NextHops = append(out.NextHops, netlinkmgr.NextHop{Gateway: nh.Gateway, Link: link})
	}
	return out, ""
}

// routeMatches reports whether kernel route cur already is want: same
// kind and the same set of next hops, where a next hop given only by its
// gateway matches whichever link the kernel resolved it to.
func routeMatches(cur, want *netlinkmgr.RouteInfo) bool {
	if cur.Blackhole != want.Blackhole || len(cur.NextHops) != len(want.NextHops) {
		return false
	}
	used := make([]bool, len(cur.NextHops))
	for _, w := range want.NextHops {
		found := false
		for i, c := range cur.NextHops {
			if used[i] || c.Gateway.Unmap() != w.Gateway.Unmap() || (w.Link != "" && c.Link != w.Link) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			return false
		}
	}
	return true
}

// unreachable classifies a route error caused by a next hop the kernel
// cannot use yet: that is pending, not an error.
func unreachable(err error, r schema.StaticRoute) (string, bool) {
	var gws []string
	var links []string
	for _, nh := range r.NextHops {
		if nh.Gateway.IsValid() {
			gws = append(gws, nh.Gateway.String())
		}
		if nh.Ifname != "" {
			links = append(links, nh.Ifname)
		}
	}
	switch {
	case errors.Is(err, unix.ENETDOWN):
		if len(links) > 0 {
			return "waiting for netdev " + strings.Join(links, ", ") + " to be up", true
		}
		return "waiting for the next-hop link to be up", true
	case len(gws) > 0 && gatewayError(err):
		return "waiting for a connected route to next hop " + strings.Join(gws, ", "), true
	}
	return "", false
}

// gatewayError says whether a route write failed on its gateway.
func gatewayError(err error) bool {
	return errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.EINVAL)
}

// readForeignRoute asks the kernel for the route (of another protocol, or
// our own the view did not know) that made the creation of want fail
// with EEXIST, and notes a foreign one in the view.
func (o *Orch) readForeignRoute(want netlinkmgr.RouteInfo) (netlinkmgr.RouteInfo, bool) {
	fam := unix.AF_INET
	if want.Dst.Addr().Is6() {
		fam = unix.AF_INET6
	}
	rs, err := o.k.Routes().List(netlinkmgr.RouteFilter{Table: rdstOf(want.Table, want.Dst).table(), Family: fam})
	if err != nil {
		return netlinkmgr.RouteInfo{}, false
	}
	for _, c := range rs {
		if rdstOf(c.Table, c.Dst) == rdstOf(want.Table, want.Dst) && c.Metric == want.Metric {
			if !ownedRoute(&c) {
				o.view.notedForeign(c)
			}
			return c, true
		}
	}
	return netlinkmgr.RouteInfo{}, false
}

func describeRoute(r *netlinkmgr.RouteInfo) string {
	var b strings.Builder
	if r.Blackhole {
		b.WriteString("blackhole ")
	}
	b.WriteString(r.Dst.String())
	for _, nh := range r.NextHops {
		if nh.Gateway.IsValid() {
			b.WriteString(" via " + nh.Gateway.String())
		}
		if nh.Link != "" {
			b.WriteString(" dev " + nh.Link)
		}
	}
	fmt.Fprintf(&b, " proto %d metric %d", r.Protocol, r.Metric)
	if !mainTable(r) {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	return b.String()
}
