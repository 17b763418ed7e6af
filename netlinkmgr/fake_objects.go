package netlinkmgr

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// The Fake's addresses, routes, bridge VLANs, FDB entries and neighbours.

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func cloneRoute(r RouteInfo) RouteInfo {
	r.NextHops = append([]NextHop(nil), r.NextHops...)
	return r
}

func cloneFdb(e FdbInfo) FdbInfo {
	e.MAC = append(net.HardwareAddr(nil), e.MAC...)
	return e
}

// --- addrs ---

type fakeAddrs struct{ f *Fake }

// Add adds an address (replace semantics); see Addrs.Add.
func (x fakeAddrs) Add(a AddrInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "addr add " + a.String()
	if err := f.begin(op); err != nil {
		return opErr("add", "address "+a.String(), err)
	}
	if !a.Prefix.IsValid() {
		return opErr("add", "address "+a.String(), fmt.Errorf("invalid prefix: %w", unix.EINVAL))
	}
	if f.links[a.Link] == nil {
		return opErr("add", "address "+a.String(), notFound(unix.ENODEV))
	}
	create := a.Create
	a.Create = false
	for i, o := range f.addrs {
		if !sameAddr(o, a) {
			continue
		}
		if create {
			return opErr("add", "address "+a.String(), fmt.Errorf("address already exists: %w", unix.EEXIST))
		}
		f.ops = append(f.ops, op)
		if o.Protocol != a.Protocol {
			f.addrs[i].Protocol = a.Protocol
			f.emit(Event{Kind: EventAddr, Addr: &a})
		}
		return nil
	}
	f.ops = append(f.ops, op)
	f.addrs = append(f.addrs, a)
	f.emit(Event{Kind: EventAddr, Addr: &a})
	return nil
}

// sameAddr is the kernel's identity of an address: link, address and
// prefix length.
func sameAddr(a, b AddrInfo) bool {
	return a.Link == b.Link && a.Prefix.Addr().Unmap() == b.Prefix.Addr().Unmap() && a.Prefix.Bits() == b.Prefix.Bits()
}

// Del removes an address; see Addrs.Del.
func (x fakeAddrs) Del(a AddrInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "addr del " + a.String()
	if err := f.begin(op); err != nil {
		return opErr("del", "address "+a.String(), err)
	}
	if f.links[a.Link] == nil {
		return opErr("del", "address "+a.String(), notFound(unix.ENODEV))
	}
	for i, o := range f.addrs {
		if sameAddr(o, a) {
			f.addrs = append(f.addrs[:i], f.addrs[i+1:]...)
			f.ops = append(f.ops, op)
			f.emit(Event{Kind: EventAddr, Deleted: true, Addr: &o})
			return nil
		}
	}
	return opErr("del", "address "+a.String(), notFound(unix.EADDRNOTAVAIL))
}

// List lists addresses; see Addrs.List.
func (x fakeAddrs) List(link string) ([]AddrInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if link != "" && f.links[link] == nil {
		return nil, opErr("list", "addresses of "+link, notFound(unix.ENODEV))
	}
	var out []AddrInfo
	for _, n := range f.sortedLinks() {
		if link != "" && n != link {
			continue
		}
		for _, a := range f.addrs {
			if a.Link == n {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// --- routes ---

type fakeRoutes struct{ f *Fake }

// normRoute fills defaults as the kernel does (table, IPv6 metric, weights).
func normRoute(r RouteInfo) RouteInfo {
	r = cloneRoute(r)
	r.Table = tableOf(r.Table)
	if r.Dst.Addr().Is6() {
		r.Dst = r.Dst.Masked()
		if r.Metric == 0 {
			r.Metric = 1024
		}
	}
	for i := range r.NextHops {
		if r.NextHops[i].Weight == 0 {
			r.NextHops[i].Weight = 1
		}
	}
	return r
}

// ReplaceBatch is Replace of each route in order; see Routes.ReplaceBatch.
func (x fakeRoutes) ReplaceBatch(rs []RouteInfo) []error {
	errs := make([]error, len(rs))
	for i, r := range rs {
		errs[i] = x.Replace(r)
	}
	return errs
}

// Replace installs or replaces a route; see Routes.Replace.
func (x fakeRoutes) Replace(r RouteInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "route replace " + r.String()
	obj := r.object()
	if err := f.begin(op); err != nil {
		return opErr("replace", obj, err)
	}
	if !r.Dst.IsValid() {
		return opErr("replace", obj, fmt.Errorf("invalid destination: %w", unix.EINVAL))
	}
	if r.Dst.Addr().Is4() && r.Dst.Masked() != r.Dst {
		return opErr("replace", obj, fmt.Errorf("invalid prefix for given prefix length (use %s): %w", r.Dst.Masked(), unix.EINVAL))
	}
	if r.Blackhole != (len(r.NextHops) == 0) {
		return opErr("replace", obj, fmt.Errorf("need next hops or blackhole (not both): %w", unix.EINVAL))
	}
	create := r.Create
	r = normRoute(r)
	r.Create = false
	for i, h := range r.NextHops {
		if err := f.resolveHop(r.Dst.Addr().Is6(), &r.NextHops[i]); err != nil {
			return opErr("replace", obj, fmt.Errorf("nexthop %v dev %s: %w", h.Gateway, h.Link, err))
		}
	}
	for i, o := range f.routes {
		if o.Table == r.Table && o.Dst == r.Dst && o.Metric == r.Metric {
			if create {
				return opErr("replace", obj, fmt.Errorf("route already exists: %w", unix.EEXIST))
			}
			f.ops = append(f.ops, op)
			f.routes[i] = r
			f.emitRoute(r, false)
			return nil
		}
	}
	f.ops = append(f.ops, op)
	f.routes = append(f.routes, r)
	f.emitRoute(r, false)
	return nil
}

// resolveHop checks a next hop as the kernel does and fills its link.
func (f *Fake) resolveHop(v6 bool, h *NextHop) error {
	if h.Link != "" {
		l := f.links[h.Link]
		if l == nil {
			return notFound(unix.ENODEV)
		}
		if !*l.info.AdminUp {
			return fmt.Errorf("nexthop device is not up: %w", unix.ENETDOWN)
		}
	}
	if !h.Gateway.IsValid() {
		if h.Link == "" {
			return fmt.Errorf("next hop needs a gateway or a link: %w", unix.EINVAL)
		}
		return nil
	}
	if h.Gateway.Is6() != v6 && !v6 {
		return fmt.Errorf("gateway family differs: %w", unix.EINVAL)
	}
	if v6 && h.Gateway.IsLinkLocalUnicast() && h.Link != "" {
		return nil
	}
	for _, a := range f.addrs {
		if (h.Link == "" || a.Link == h.Link) && a.Prefix.Masked().Contains(h.Gateway) &&
			a.Prefix.Bits() < a.Prefix.Addr().BitLen() && *f.links[a.Link].info.AdminUp {
			h.Link = a.Link
			return nil
		}
	}
	return fmt.Errorf("nexthop has invalid gateway: %w", unix.ENETUNREACH)
}

func (f *Fake) emitRoute(r RouteInfo, deleted bool) {
	r = cloneRoute(r)
	f.emit(Event{Kind: EventRoute, Deleted: deleted, Route: &r})
}

// routeMatches is the kernel's delete match: zero protocol/metric match any.
func routeMatches(o, r RouteInfo) bool {
	return o.Table == tableOf(r.Table) && o.Dst == r.Dst.Masked() &&
		(r.Metric == 0 || o.Metric == r.Metric) && (r.Protocol == 0 || o.Protocol == r.Protocol)
}

// Del deletes a route; see Routes.Del.
func (x fakeRoutes) Del(r RouteInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := fmt.Sprintf("route del %s proto %d metric %d table %d", r.Dst, r.Protocol, r.Metric, tableOf(r.Table))
	if err := f.begin(op); err != nil {
		return opErr("del", r.object(), err)
	}
	for i, o := range f.routes {
		if routeMatches(o, r) {
			f.routes = append(f.routes[:i], f.routes[i+1:]...)
			f.ops = append(f.ops, op)
			f.emitRoute(o, true)
			return nil
		}
	}
	return opErr("del", r.object(), notFound(unix.ESRCH))
}

// List lists routes matching flt; see Routes.List.
func (x fakeRoutes) List(flt RouteFilter) ([]RouteInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []RouteInfo
	for _, r := range f.routes {
		if r.Table != tableOf(flt.Table) || (flt.Protocol != 0 && r.Protocol != flt.Protocol) {
			continue
		}
		if (flt.Family == unix.AF_INET && !r.Dst.Addr().Is4()) || (flt.Family == unix.AF_INET6 && !r.Dst.Addr().Is6()) {
			continue
		}
		out = append(out, cloneRoute(r))
	}
	return out, nil
}

// Walk is List route by route; see RouteWalker. The fake's dumps are
// never interrupted.
func (x fakeRoutes) Walk(flt RouteFilter, fn func(*RouteInfo), restart func()) error {
	rs, err := x.List(flt)
	for i := range rs {
		fn(&rs[i])
	}
	return err
}

// dropRoutesVia removes routes whose every next hop uses link.
func (f *Fake) dropRoutesVia(link string) {
	keep := f.routes[:0]
	for _, r := range f.routes {
		dead := len(r.NextHops) > 0
		for _, h := range r.NextHops {
			dead = dead && h.Link == link
		}
		if dead {
			f.emitRoute(r, true)
			continue
		}
		keep = append(keep, r)
	}
	f.routes = keep
}
