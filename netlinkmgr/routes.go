package netlinkmgr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// --- conversions ---

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// ipToAddr converts a net.IP, unmapping 16-byte IPv4 forms.
func ipToAddr(ip net.IP) netip.Addr {
	if v4 := ip.To4(); v4 != nil {
		a, _ := netip.AddrFromSlice(v4)
		return a
	}
	a, _ := netip.AddrFromSlice(ip)
	return a
}

func ipNetToPrefix(n *net.IPNet) netip.Prefix {
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ipToAddr(n.IP), ones)
}

// --- addrs ---

type realAddrs struct{ k *kernel }

// Add adds an address, replacing an equal one unless a.Create, marked
// with a.Protocol (IFA_PROTO). Equivalent to:
// ip addr {replace|add} PREFIX dev LINK [proto P]
func (x realAddrs) Add(a AddrInfo) error {
	k := x.k
	k.writes.Add(1)
	if !a.Prefix.IsValid() {
		return opErr("add", "address "+a.String(), fmt.Errorf("invalid prefix: %w", unix.EINVAL))
	}
	err := k.withIfindex(a.Link, func(idx int) error {
		return k.rt.exec(addrRequest(idx, a, a.Create))
	})
	if err != nil {
		if a.Create && errors.Is(err, unix.EEXIST) {
			err = fmt.Errorf("address already exists: %w", err)
		}
		return opErr("add", "address "+a.String(), err)
	}
	return nil
}

// Del removes an address; ErrNotFound when absent, confirmed by reading
// the link's addresses. Equivalent to: ip addr del PREFIX dev LINK
func (x realAddrs) Del(a AddrInfo) error {
	k := x.k
	k.writes.Add(1)
	obj := "address " + a.String()
	err := mapNotFound(k.withIfindex(a.Link, func(idx int) error {
		return k.rt.exec(addrDelRequest(idx, a))
	}))
	err = confirmAbsent(err, func() (bool, error) {
		as, err := x.List(a.Link)
		for _, o := range as {
			if o.Prefix.Addr().Unmap() == a.Prefix.Addr().Unmap() && o.Prefix.Bits() == a.Prefix.Bits() {
				return true, nil
			}
		}
		return false, err
	})
	return opErr("del", obj, err)
}

// List lists IPv4 and IPv6 addresses (including IPv6 link-local ones) of
// link, "" = all links, with their protocol. Equivalent to:
// ip addr show [dev LINK]
func (x realAddrs) List(link string) ([]AddrInfo, error) {
	k := x.k
	want := 0
	names, err := k.linkNames()
	if err != nil {
		return nil, opErr("list", "addresses", err)
	}
	if link != "" {
		for idx, n := range names {
			if n == link {
				want = idx
			}
		}
		if want == 0 {
			return nil, opErr("list", "addresses of "+link, notFound(unix.ENODEV))
		}
	}
	addrs, err := k.dumpAddrs()
	if err != nil {
		return nil, opErr("list", "addresses", err)
	}
	out := make([]AddrInfo, 0, len(addrs))
	for _, a := range addrs {
		if want != 0 && a.index != want {
			continue
		}
		out = append(out, AddrInfo{Link: names[a.index], Prefix: a.prefix, Protocol: a.protocol})
	}
	return out, nil
}

// --- routes ---

type realRoutes struct{ k *kernel }

// indexLink is a link known only by index and name, for requests that
// send nothing else of it.
func indexLink(idx int, name string) netlink.Link {
	return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx, Name: name}}
}

// routeOifs appends the ifindexes of r's next hops (0 for a hop without
// a link) to oifs; cached reports whether any came from the ifindex
// cache. drained is ifindexOnce's: a batch drains the cache once.
func (k *kernel) routeOifs(r *RouteInfo, oifs []int, drained *bool) (_ []int, cached bool, err error) {
	if r.Blackhole {
		return oifs, false, nil
	}
	for _, h := range r.NextHops {
		idx := 0
		if h.Link != "" {
			i, c, err := k.ifindexOnce(h.Link, drained)
			if err != nil {
				return oifs, false, fmt.Errorf("nexthop dev %s: %w", h.Link, err)
			}
			idx, cached = i, cached || c
		}
		oifs = append(oifs, idx)
	}
	return oifs, cached, nil
}

// Replace installs or replaces the route with the same table, destination
// and metric (several next hops = ECMP); with r.Create it only creates
// (EEXIST when such a route exists). Equivalent to:
//
//	ip route {replace|add} [blackhole] DST [via GW dev L | nexthop via GW dev L weight W ...] proto P metric M table T
func (x realRoutes) Replace(r RouteInfo) error {
	k := x.k
	k.writes.Add(1)
	if err := k.replaceRoute(r); err != nil {
		return opErr("replace", r.object(), err)
	}
	return nil
}

// ReplaceBatch installs every route as Replace does, sending the requests
// many per netlink message (execEncoded, batch.go: the kernel handles and
// acknowledges each in turn). Equivalent to ip -batch of route replace.
func (x realRoutes) ReplaceBatch(rs []RouteInfo) []error {
	k := x.k
	errs := make([]error, len(rs))
	idx := make([]int, 0, len(rs))     // the requests' routes
	offs := make([]int, 1, len(rs)+1)  // request j's ifindexes: oifs[offs[j]:offs[j+1]]
	oifs := make([]int, 0, len(rs))    // next hops' ifindexes
	cached := make([]bool, 0, len(rs)) // request j's came from the cache
	drained := false
	for i := range rs {
		k.writes.Add(1)
		err := routeCheck(&rs[i])
		if err == nil {
			var c bool
			n := len(oifs)
			if oifs, c, err = k.routeOifs(&rs[i], oifs, &drained); err == nil {
				idx, cached = append(idx, i), append(cached, c)
				offs = append(offs, len(oifs))
				continue
			}
			oifs = oifs[:n]
		}
		errs[i] = opErr("replace", rs[i].object(), err)
	}
	res := k.rt.execEncoded(len(idx), func(j int, b []byte, seq uint32) []byte {
		r := &rs[idx[j]]
		return appendRouteMsg(b, seq, r, oifs[offs[j]:offs[j+1]], r.Create)
	}, func(j int) bool { return storedAsAsked(&rs[idx[j]]) })
	for j, err := range res {
		i := idx[j]
		if cached[j] && isNoDevice(err) {
			err = k.replaceRoute(rs[i]) // looks the links up afresh
		}
		if err != nil {
			errs[i] = opErr("replace", rs[i].object(), err)
		}
	}
	return errs
}

// routeCheck validates r before its request is built.
func routeCheck(r *RouteInfo) error {
	if !r.Dst.IsValid() {
		return fmt.Errorf("invalid destination: %w", unix.EINVAL)
	}
	if r.Dst.Addr().Is4() && r.Dst.Masked() != r.Dst {
		return fmt.Errorf("invalid prefix for given prefix length (use %s): %w", r.Dst.Masked(), unix.EINVAL)
	}
	if r.Blackhole && len(r.NextHops) > 0 {
		return fmt.Errorf("need next hops or blackhole (not both): %w", unix.EINVAL)
	}
	if !r.Blackhole && len(r.NextHops) == 0 {
		return fmt.Errorf("need next hops or blackhole: %w", unix.EINVAL)
	}
	return nil
}

// sendRoute sends r's request alone and waits for its answer.
func (k *kernel) sendRoute(r *RouteInfo, oifs []int) error {
	return k.rt.execEncoded(1, func(_ int, b []byte, seq uint32) []byte {
		return appendRouteMsg(b, seq, r, oifs, r.Create)
	}, func(int) bool { return storedAsAsked(r) })[0]
}

// storedAsAsked reports whether the kernel stores r as it is written, so
// its event tells its writer nothing (OmitOwnRouteWrites): a blackhole,
// or every next hop naming its link.
func storedAsAsked(r *RouteInfo) bool {
	if r.Blackhole {
		return true
	}
	for _, h := range r.NextHops {
		if h.Link == "" {
			return false
		}
	}
	return len(r.NextHops) > 0
}

func (k *kernel) replaceRoute(r RouteInfo) error {
	if err := routeCheck(&r); err != nil {
		return err
	}
	var oifs [4]int
	drained := false
	hops, cached, err := k.routeOifs(&r, oifs[:0], &drained)
	if err != nil {
		return err
	}
	err = k.sendRoute(&r, hops)
	if cached && isNoDevice(err) {
		// A cached next-hop link went away: look every hop up afresh.
		for _, h := range r.NextHops {
			if h.Link != "" {
				k.idx.forget(h.Link)
			}
		}
		drained = false
		if hops, _, err = k.routeOifs(&r, oifs[:0], &drained); err != nil {
			return err
		}
		err = k.sendRoute(&r, hops)
	}
	return err
}

// Del deletes the first route matching destination, table, and (when
// non-zero) protocol and metric, whatever its scope; ErrNotFound when
// none, confirmed by reading the table. Next hops are not compared. Equivalent to: ip route del DST [proto P] [metric M] table T
func (x realRoutes) Del(r RouteInfo) error {
	k := x.k
	k.writes.Add(1)
	// Scope RT_SCOPE_NOWHERE matches any scope, as ip(8) sends it: the
	// library would send 0 (universe), which an IPv4 device route (scope
	// link) does not match.
	nr := &netlink.Route{
		Dst: prefixToIPNet(r.Dst.Masked()), Table: tableOf(r.Table),
		Protocol: netlink.RouteProtocol(r.Protocol), Priority: r.Metric,
		Scope: netlink.SCOPE_NOWHERE,
	}
	err := confirmAbsent(mapNotFound(k.h.RouteDel(nr)), func() (bool, error) {
		fam := unix.AF_INET
		if r.Dst.Addr().Is6() {
			fam = unix.AF_INET6
		}
		rs, err := x.List(RouteFilter{Table: r.Table, Protocol: r.Protocol, Family: fam})
		for _, o := range rs {
			if o.Dst == r.Dst.Masked() && (r.Metric == 0 || o.Metric == r.Metric) {
				return true, nil
			}
		}
		return false, err
	})
	return opErr("del", r.object(), err)
}

// List lists the routes of one table (0 = main), optionally of one
// protocol and family, kernel (proto kernel) routes included. Equivalent
// to: ip [-4|-6] route show table T [proto P]
func (x realRoutes) List(f RouteFilter) ([]RouteInfo, error) {
	var out []RouteInfo
	err := x.Walk(f, func(r *RouteInfo) { out = append(out, *r) }, func() { out = out[:0] })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Walk is List route by route (RouteWalker). Equivalent to:
// ip [-4|-6] route show table T [proto P]
func (x realRoutes) Walk(f RouteFilter, fn func(*RouteInfo), restart func()) error {
	k := x.k
	names, err := k.linkNames()
	if err != nil {
		return opErr("list", "routes", err)
	}
	fam := netlink.FAMILY_ALL
	if f.Family != 0 {
		fam = f.Family
	}
	filter := &netlink.Route{Table: tableOf(f.Table), Protocol: netlink.RouteProtocol(f.Protocol)}
	mask := netlink.RT_FILTER_TABLE
	if f.Protocol != 0 {
		mask |= netlink.RT_FILTER_PROTOCOL
	}
	// Each route is converted as the dump delivers it: 100k routes as a
	// []netlink.Route (grown by append) were the peak of a restart's heap,
	// which sizes the runtime's memory for good (docs/performance.md).
	// An interrupted dump is taken again, as retryDump does.
	for i := 0; ; i++ {
		if i > 0 {
			time.Sleep(time.Duration(i-1) * time.Millisecond)
			restart()
		}
		err = k.h.RouteListFilteredIter(fam, filter, mask, func(r netlink.Route) bool {
			ri := toRouteInfo(r, names)
			fn(&ri)
			return true
		})
		if i == 9 || !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return opErr("list", fmt.Sprintf("routes of table %d", tableOf(f.Table)), err)
	}
	return nil
}

// toRouteInfo converts a netlink route; names resolves link indexes.
func toRouteInfo(r netlink.Route, names map[int]string) RouteInfo {
	ri := RouteInfo{
		Table: r.Table, Protocol: int(r.Protocol), Metric: r.Priority,
		Blackhole: r.Type == unix.RTN_BLACKHOLE, Type: routeTypeName(r.Type),
	}
	if r.Dst != nil {
		ri.Dst = ipNetToPrefix(r.Dst)
	} else if r.Family == unix.AF_INET6 {
		ri.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	} else {
		ri.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	if ri.Blackhole {
		return ri
	}
	if len(r.MultiPath) > 0 {
		for _, h := range r.MultiPath {
			ri.NextHops = append(ri.NextHops, NextHop{Gateway: ipToAddr(h.Gw), Link: names[h.LinkIndex], Weight: h.Hops + 1})
		}
	} else if r.Gw != nil || r.LinkIndex != 0 {
		ri.NextHops = []NextHop{{Gateway: ipToAddr(r.Gw), Link: names[r.LinkIndex], Weight: 1}}
	}
	return ri
}

// routeTypeName names a route type as iproute2 does; "" for unicast and
// blackhole (Blackhole says which).
func routeTypeName(t int) string {
	switch t {
	case 0, unix.RTN_UNICAST, unix.RTN_BLACKHOLE:
		return ""
	case unix.RTN_LOCAL:
		return "local"
	case unix.RTN_BROADCAST:
		return "broadcast"
	case unix.RTN_ANYCAST:
		return "anycast"
	case unix.RTN_MULTICAST:
		return "multicast"
	case unix.RTN_UNREACHABLE:
		return "unreachable"
	case unix.RTN_PROHIBIT:
		return "prohibit"
	case unix.RTN_THROW:
		return "throw"
	case unix.RTN_NAT:
		return "nat"
	}
	return strconv.Itoa(t)
}
