package schema

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ParseStaticRoute parses a STATIC_ROUTE entry. Key: "prefix" or
// "vrf|prefix" (only vrf "default"; both spellings name one route, whose
// canonical Key is the bare prefix), host bits clear, canonical text form.
// Fields: nexthop and ifname (parallel comma lists, one entry per ECMP next
// hop; an entry may be empty in one list when the other has it), distance
// 0-255, blackhole true|false (true excludes next hops; otherwise at least
// one is required) and SONiC's nexthop-vrf, accepted only when it names
// the default VRF.
func ParseStaticRoute(key string, f Fields) (StaticRoute, error) {
	const t = TableStaticRoute
	parts := SplitKey(key)
	var vrf, pfx string
	switch len(parts) {
	case 1:
		vrf, pfx = DefaultVRF, parts[0]
	case 2:
		vrf, pfx = parts[0], parts[1]
	default:
		return StaticRoute{}, keyError(t, key, "", "prefix or default|prefix, e.g. 10.2.0.0/16")
	}
	if vrf != DefaultVRF {
		return StaticRoute{}, keyError(t, key, fmt.Sprintf("VRF %q: only the default VRF is supported", vrf), "prefix or default|prefix")
	}
	p, problem, allowed := parseRoutePrefix(pfx)
	if problem != "" || allowed != "" {
		if problem == "" {
			problem = strconv.Quote(pfx) + " is not a prefix"
		}
		return StaticRoute{}, keyError(t, key, problem, allowed)
	}
	if err := checkFields(t, key, f, FieldBlackhole, FieldDistance, FieldIfname, FieldNexthop, FieldNexthopVRF); err != nil {
		return StaticRoute{}, err
	}
	r := StaticRoute{VRF: DefaultVRF, Prefix: p}
	if v, ok := f[FieldBlackhole]; ok {
		switch v {
		case ValueTrue:
			r.Blackhole = true
		case ValueFalse:
		default:
			return StaticRoute{}, valueError(t, key, FieldBlackhole, v, "true or false")
		}
	}
	var err error
	if r.Distance, err = optInt(t, key, f, FieldDistance, 0, 255); err != nil {
		return StaticRoute{}, err
	}
	if v, ok := f[FieldNexthopVRF]; ok {
		for _, e := range splitList(v) {
			if e != "" && e != DefaultVRF {
				return StaticRoute{}, fieldError(t, key, FieldNexthopVRF, v,
					fmt.Sprintf("VRF %q: only the default VRF is supported", e), "empty or default")
			}
		}
	}
	if r.NextHops, err = parseNextHops(key, p, f); err != nil {
		return StaticRoute{}, err
	}
	switch {
	case r.Blackhole && len(r.NextHops) > 0:
		field := FieldNexthop
		if strings.TrimSpace(f[FieldNexthop]) == "" {
			field = FieldIfname
		}
		return StaticRoute{}, fieldError(t, key, field, f[field],
			"a blackhole route has no next hops: remove nexthop and ifname, or set blackhole false", "")
	case !r.Blackhole && len(r.NextHops) == 0:
		return StaticRoute{}, fieldError(t, key, FieldNexthop, f[FieldNexthop],
			"the route has no next hop", "a nexthop, an ifname, or blackhole true")
	}
	return r, nil
}

// splitList splits a comma list, trimming blanks around entries. An empty
// or all-blank value is no list at all.
func splitList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	l := strings.Split(v, ",")
	for i := range l {
		l[i] = strings.TrimSpace(l[i])
	}
	return l
}

// parseNextHops zips the nexthop and ifname lists of route key into
// validated next hops.
func parseNextHops(key string, p netip.Prefix, f Fields) ([]NextHop, error) {
	const t = TableStaticRoute
	gws, ifs := splitList(f[FieldNexthop]), splitList(f[FieldIfname])
	if gws != nil && ifs != nil && len(gws) != len(ifs) {
		return nil, fieldError(t, key, FieldIfname, f[FieldIfname],
			fmt.Sprintf("nexthop lists %d entries but ifname %d: the lists are parallel, one entry per next hop", len(gws), len(ifs)),
			"as many ifname entries as nexthop entries (an entry may be empty)")
	}
	n := max(len(gws), len(ifs))
	hops := make([]NextHop, 0, n)
	for i := 0; i < n; i++ {
		var gw, ifn string
		if gws != nil {
			gw = gws[i]
		}
		if ifs != nil {
			ifn = ifs[i]
		}
		nh, err := parseNextHop(key, p, i, gw, ifn, f)
		if err != nil {
			return nil, err
		}
		for _, prev := range hops {
			if prev == nh {
				return nil, fieldError(t, key, FieldNexthop, f[FieldNexthop],
					fmt.Sprintf("next hop %d repeats an earlier one (%s)", i+1, nh), "each next hop once")
			}
		}
		hops = append(hops, nh)
	}
	return hops, nil
}

// parseNextHop validates entry i (0-based) of the parallel lists.
func parseNextHop(key string, p netip.Prefix, i int, gw, ifn string, f Fields) (NextHop, error) {
	const t = TableStaticRoute
	if gw == "" && ifn == "" {
		return NextHop{}, fieldError(t, key, FieldNexthop, f[FieldNexthop],
			fmt.Sprintf("next hop %d is empty in both nexthop and ifname", i+1), "a gateway, an interface or both per entry")
	}
	var nh NextHop
	if ifn != "" {
		if problem := ifnameProblem(ifn); problem != "" {
			return NextHop{}, fieldError(t, key, FieldIfname, f[FieldIfname],
				fmt.Sprintf("entry %d: %s", i+1, problem), ifnameAllowed)
		}
		nh.Ifname = ifn
	}
	if gw == "" {
		return nh, nil
	}
	bad := func(reason string) (NextHop, error) {
		return NextHop{}, fieldError(t, key, FieldNexthop, f[FieldNexthop], fmt.Sprintf("entry %d: %s", i+1, reason), "")
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

// String renders a next hop as "via GW dev IF" (either part may be absent).
func (nh NextHop) String() string {
	var s []string
	if nh.Gateway.IsValid() {
		s = append(s, "via "+nh.Gateway.String())
	}
	if nh.Ifname != "" {
		s = append(s, "dev "+nh.Ifname)
	}
	return strings.Join(s, " ")
}

// Table returns "STATIC_ROUTE".
func (r StaticRoute) Table() string { return TableStaticRoute }

// Key returns the prefix: the default VRF is implied, so "default|p" and
// "p" have the same canonical Key.
func (r StaticRoute) Key() string { return r.Prefix.String() }

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
	gws, ifs := make([]string, len(r.NextHops)), make([]string, len(r.NextHops))
	var anyGW, anyIf bool
	for i, nh := range r.NextHops {
		if nh.Gateway.IsValid() {
			gws[i], anyGW = nh.Gateway.String(), true
		}
		if nh.Ifname != "" {
			ifs[i], anyIf = nh.Ifname, true
		}
	}
	if anyGW {
		f[FieldNexthop] = strings.Join(gws, ",")
	}
	if anyIf {
		f[FieldIfname] = strings.Join(ifs, ",")
	}
	return orNull(f)
}
