package schema

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ParseStaticRoute parses a STATIC_ROUTE entry. Key: "prefix" or
// "vrf|prefix", host bits clear, canonical text form. vrf is "default"
// (both spellings name one route, whose canonical Key is the bare prefix)
// or a VRF name ("Vrf_blue|prefix": the route goes in that VRF's table).
//
// Fields, as SONiC's `config route add` writes them: nexthop, ifname,
// distance, blackhole and nexthop-vrf are parallel comma lists, one entry
// per next hop (an empty entry means "not given"; a list of one entry
// applies to every next hop). distance is 0-255, blackhole true or false,
// nexthop-vrf empty (the route's own VRF), "default" or a VRF name: the
// VRF the next hop is reached in (route leaking). A blackhole next hop has no gateway and
// an empty or "null" ifname. As FRR does with SONiC's per-next-hop
// distances, the route is the next hops of the lowest distance (ECMP when
// several): the others are backups, validated but not installed. advertise
// and bfd are accepted and not acted on; unknown fields are ignored.
func ParseStaticRoute(key string, f Fields) (StaticRoute, error) {
	rf := StaticRouteFields{Nexthop: f[FieldNexthop], Ifname: f[FieldIfname], Blackhole: f[FieldBlackhole],
		NexthopVRF: f[FieldNexthopVRF]}
	rf.Distance, rf.HasDistance = f[FieldDistance]
	return ParseStaticRouteFields(key, &rf)
}

// StaticRouteFields are the fields of a STATIC_ROUTE hash that
// ParseStaticRoute reads (it ignores the others): a reader that holds the
// hash in another form than Fields (orchagent: the cache's packed string)
// fills them without a map.
type StaticRouteFields struct {
	Nexthop, Ifname, Distance, Blackhole, NexthopVRF string
	HasDistance                                      bool // the hash has a distance field
}

// Set fills the field named name (one ParseStaticRoute reads; any other
// is ignored).
func (rf *StaticRouteFields) Set(name, value string) {
	switch name {
	case FieldNexthop:
		rf.Nexthop = value
	case FieldIfname:
		rf.Ifname = value
	case FieldDistance:
		rf.Distance, rf.HasDistance = value, true
	case FieldBlackhole:
		rf.Blackhole = value
	case FieldNexthopVRF:
		rf.NexthopVRF = value
	}
}

// get is the value of field name ("" when absent or not a route field).
func (rf *StaticRouteFields) get(name string) string {
	switch name {
	case FieldNexthop:
		return rf.Nexthop
	case FieldIfname:
		return rf.Ifname
	case FieldDistance:
		return rf.Distance
	case FieldBlackhole:
		return rf.Blackhole
	case FieldNexthopVRF:
		return rf.NexthopVRF
	}
	return ""
}

// ParseStaticRouteFields is ParseStaticRoute of a hash whose route
// fields are rf.
func ParseStaticRouteFields(key string, rf *StaticRouteFields) (StaticRoute, error) {
	return ParseStaticRouteFieldsIn(key, rf, nil)
}

// ParseStaticRouteFieldsIn is ParseStaticRouteFields with the route's
// NextHops carved from *arena (appended after its length, which grows by
// them) when it has room, not a new array: a caller that parses many
// routes and keeps none of them past a point (orchagent: a batch) saves
// an allocation per route. nil arena: a new array.
func ParseStaticRouteFieldsIn(key string, rf *StaticRouteFields, arena *[]NextHop) (StaticRoute, error) {
	const t = TableStaticRoute
	vrf, pfx, two := strings.Cut(key, ConfigSep)
	switch {
	case !two:
		vrf, pfx = DefaultVRF, key
	case strings.Contains(pfx, ConfigSep):
		return StaticRoute{}, keyError(t, key, "", "prefix or default|prefix, e.g. 10.2.0.0/16")
	}
	if vrf != DefaultVRF {
		if p := vrfNameProblem(vrf); p != "" {
			return StaticRoute{}, keyError(t, key, p, "prefix, default|prefix or VrfNAME|prefix")
		}
	}
	p, problem, allowed := parseRoutePrefix(pfx)
	if problem != "" || allowed != "" {
		if problem == "" {
			problem = strconv.Quote(pfx) + " is not a prefix"
		}
		return StaticRoute{}, keyError(t, key, problem, allowed)
	}
	var buf [2]hop // most routes have one or two next hops: no heap
	hops, err := parseHops(key, vrf, p, rf, buf[:0])
	if err != nil {
		return StaticRoute{}, err
	}
	r := StaticRoute{VRF: vrf, Prefix: p}
	best := bestHops(hops)
	if len(best) == 0 {
		return StaticRoute{}, fieldError(t, key, FieldNexthop, rf.Nexthop,
			"the route has no next hop", "a nexthop, an ifname, or blackhole true")
	}
	if rf.HasDistance {
		d := best[0].distance
		r.Distance = &d
	}
	if !best[0].blackhole {
		if a := arena; a != nil && cap(*a)-len(*a) >= len(best) {
			n := len(*a)
			r.NextHops = (*a)[n : n : n+len(best)]
			*a = (*a)[:n+len(best)]
		} else {
			r.NextHops = make([]NextHop, 0, len(best))
		}
	}
	for _, h := range best {
		if h.blackhole != best[0].blackhole {
			return StaticRoute{}, fieldError(t, key, FieldBlackhole, rf.Blackhole,
				fmt.Sprintf("next hops %d and %d have the same distance but only one is a blackhole", best[0].index+1, h.index+1),
				"a blackhole next hop at its own distance")
		}
		if !h.blackhole {
			r.NextHops = append(r.NextHops, h.NextHop)
		}
	}
	r.Blackhole = best[0].blackhole
	return r, nil
}

// hop is one entry of the parallel next-hop lists.
type hop struct {
	NextHop
	index     int // 0-based position in the lists
	distance  int
	blackhole bool
}

// bestHops returns the hops of the lowest distance, in list order.
func bestHops(hops []hop) []hop {
	if len(hops) == 1 {
		return hops
	}
	var best []hop
	for _, h := range hops {
		switch {
		case len(best) == 0 || h.distance < best[0].distance:
			best = []hop{h}
		case h.distance == best[0].distance:
			best = append(best, h)
		}
	}
	return best
}

// splitList splits a comma list, trimming blanks around entries. An empty
// or all-blank value is no list at all. A single entry (no comma, the
// common case) is returned in one, the caller's array: no allocation.
func splitList(v string, one *[1]string) []string {
	t := strings.TrimSpace(v)
	if t == "" {
		return nil
	}
	if strings.IndexByte(t, ',') < 0 {
		one[0] = t
		return one[:]
	}
	l := strings.Split(v, ",")
	for i := range l {
		l[i] = strings.TrimSpace(l[i])
	}
	return l
}

// nullIfname is the ifname SONiC's CLI writes for a blackhole next hop
// (`config route add … nexthop dev null`).
const nullIfname = "null"

// parseHops zips the parallel lists of route key into validated hops,
// appended to hops (the caller's array when it holds them).
func parseHops(key, vrf string, p netip.Prefix, rf *StaticRouteFields, hops []hop) ([]hop, error) {
	const t = TableStaticRoute
	var one [5][1]string // splitList's single entries
	gws, ifs := splitList(rf.Nexthop, &one[0]), splitList(rf.Ifname, &one[1])
	if gws != nil && ifs != nil && len(gws) != len(ifs) {
		return nil, fieldError(t, key, FieldIfname, rf.Ifname,
			fmt.Sprintf("nexthop lists %d entries but ifname %d: the lists are parallel, one entry per next hop", len(gws), len(ifs)),
			"as many ifname entries as nexthop entries (an entry may be empty)")
	}
	bhs, dists, vrfs := splitList(rf.Blackhole, &one[2]), splitList(rf.Distance, &one[3]), splitList(rf.NexthopVRF, &one[4])
	n := max(len(gws), len(ifs))
	if n == 0 && slices.Contains(bhs, ValueTrue) {
		n = len(bhs) // a blackhole route names no gateway or interface
	}
	// Names and lengths apart: a struct holding both would move the
	// lists (and splitList's arrays) to the heap with the name.
	names := [...]string{FieldBlackhole, FieldDistance, FieldNexthopVRF}
	for i, ln := range [...]int{len(bhs), len(dists), len(vrfs)} {
		if ln > 1 && ln != n {
			field := names[i]
			return nil, fieldError(t, key, field, rf.get(field),
				fmt.Sprintf("%s lists %d entries but the route has %d next hops: the lists are parallel", field, ln, n),
				"one entry per next hop, or a single value for all")
		}
	}
	at := func(l []string, i int) string {
		switch len(l) {
		case 0:
			return ""
		case 1:
			return l[0]
		}
		return l[i]
	}
	if cap(hops) < n {
		hops = make([]hop, 0, n)
	}
	for i := 0; i < n; i++ {
		h := hop{index: i}
		switch v := at(bhs, i); v {
		case ValueTrue:
			h.blackhole = true
		case ValueFalse, "":
		default:
			return nil, valueError(t, key, FieldBlackhole, rf.Blackhole, "true or false (per next hop)")
		}
		if v := at(dists, i); v != "" {
			d, ok := parseDigits(v)
			if !ok || d > 255 {
				return nil, valueError(t, key, FieldDistance, rf.Distance, "an integer 0-255 (per next hop)")
			}
			h.distance = d
		}
		hopVRF := ""
		if v := at(vrfs, i); v != "" && v != vrf {
			if v != DefaultVRF {
				if problem := vrfNameProblem(v); problem != "" {
					return nil, fieldError(t, key, FieldNexthopVRF, rf.NexthopVRF,
						fmt.Sprintf("entry %d: %s", i+1, problem), "empty, default or "+vrfAllowed)
				}
			}
			hopVRF = v
		}
		gw, ifn := at(gws, i), at(ifs, i)
		if h.blackhole {
			hopVRF = "" // a blackhole is reached nowhere
			if gw != "" || (ifn != "" && ifn != nullIfname) {
				field := FieldNexthop
				if gw == "" {
					field = FieldIfname
				}
				return nil, fieldError(t, key, field, rf.get(field), fmt.Sprintf(
					"next hop %d: a blackhole route has no next hops: remove nexthop and ifname (or set ifname null), or set blackhole false", i+1), "")
			}
			hops = append(hops, h)
			continue
		}
		nh, err := parseNextHop(key, p, i, gw, ifn, rf)
		if err != nil {
			return nil, err
		}
		nh.VRF = hopVRF
		for _, prev := range hops {
			if !prev.blackhole && prev.NextHop == nh {
				return nil, fieldError(t, key, FieldNexthop, rf.Nexthop,
					fmt.Sprintf("next hop %d repeats an earlier one (%s)", i+1, nh), "each next hop once")
			}
		}
		h.NextHop = nh
		hops = append(hops, h)
	}
	return hops, nil
}

// parseNextHop validates entry i (0-based) of the parallel lists.
func parseNextHop(key string, p netip.Prefix, i int, gw, ifn string, rf *StaticRouteFields) (NextHop, error) {
	const t = TableStaticRoute
	if gw == "" && ifn == "" {
		return NextHop{}, fieldError(t, key, FieldNexthop, rf.Nexthop,
			fmt.Sprintf("next hop %d is empty in both nexthop and ifname", i+1), "a gateway, an interface or both per entry")
	}
	var nh NextHop
	if ifn != "" {
		if problem := ifnameProblem(ifn); problem != "" {
			return NextHop{}, fieldError(t, key, FieldIfname, rf.Ifname,
				fmt.Sprintf("entry %d: %s", i+1, problem), ifnameAllowed)
		}
		nh.Ifname = ifn
	}
	if gw == "" {
		return nh, nil
	}
	bad := func(reason string) (NextHop, error) {
		return NextHop{}, fieldError(t, key, FieldNexthop, rf.Nexthop, fmt.Sprintf("entry %d: %s", i+1, reason), "")
	}
	a, err := netip.ParseAddr(gw)
	switch {
	case err != nil:
		return bad(fmt.Sprintf("%q is not an IP address", gw))
	case a.Zone() != "":
		return bad(fmt.Sprintf("gateway %s has a zone: put the interface in ifname instead", gw))
	case a.Is4In6():
		return bad(fmt.Sprintf("gateway %s is IPv4-mapped IPv6: use %s", gw, a.Unmap()))
	case a.Is4() != p.Addr().Is4():
		return bad(fmt.Sprintf("gateway %s is not of the prefix's address family", gw))
	case a.IsMulticast():
		return bad(fmt.Sprintf("gateway %s is a multicast address", gw))
	case a.IsUnspecified():
		// SONiC writes 0.0.0.0 / :: for "no gateway, just the interface".
		if ifn == "" {
			return bad(fmt.Sprintf("gateway %s is the unspecified address and the entry has no ifname", gw))
		}
		return nh, nil
	case a.IsLinkLocalUnicast() && a.Is6() && ifn == "":
		return bad(fmt.Sprintf("link-local gateway %s needs an interface: set the matching ifname entry", gw))
	}
	nh.Gateway = a
	return nh, nil
}

// String renders a next hop as "via GW dev IF nexthop-vrf V" (any part
// may be absent).
func (nh NextHop) String() string {
	var s []string
	if nh.Gateway.IsValid() {
		s = append(s, "via "+nh.Gateway.String())
	}
	if nh.Ifname != "" {
		s = append(s, "dev "+nh.Ifname)
	}
	if nh.VRF != "" {
		s = append(s, "nexthop-vrf "+nh.VRF)
	}
	return strings.Join(s, " ")
}

// Table returns "STATIC_ROUTE".
func (r StaticRoute) Table() string { return TableStaticRoute }

// Key returns the prefix, or "VrfNAME|prefix" for a route in a VRF: the
// default VRF is implied, so "default|p" and "p" have the same canonical
// Key.
func (r StaticRoute) Key() string {
	if r.VRF != "" && r.VRF != DefaultVRF {
		return r.VRF + ConfigSep + r.Prefix.String()
	}
	return r.Prefix.String()
}

// Fields renders the route: nexthop and ifname as parallel lists (each
// omitted when all its entries are empty), distance when set, blackhole
// only when true.
func (r StaticRoute) Fields() Fields {
	f := Fields{}
	putInt(f, FieldDistance, r.Distance)
	if r.Blackhole {
		f[FieldBlackhole] = ValueTrue
		return f
	}
	gws, ifs, vrfs := make([]string, len(r.NextHops)), make([]string, len(r.NextHops)), make([]string, len(r.NextHops))
	var anyGW, anyIf, anyVRF bool
	for i, nh := range r.NextHops {
		if nh.Gateway.IsValid() {
			gws[i], anyGW = nh.Gateway.String(), true
		}
		if nh.Ifname != "" {
			ifs[i], anyIf = nh.Ifname, true
		}
		if nh.VRF != "" {
			vrfs[i], anyVRF = nh.VRF, true
		}
	}
	if anyVRF {
		f[FieldNexthopVRF] = strings.Join(vrfs, ",")
	}
	if anyGW {
		f[FieldNexthop] = strings.Join(gws, ",")
	}
	if anyIf {
		f[FieldIfname] = strings.Join(ifs, ",")
	}
	return orNull(f)
}
