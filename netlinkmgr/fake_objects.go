package netlinkmgr

import (
	"bytes"
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

// --- bridge vlans ---

type fakeVlans struct{ f *Fake }

// checkVlan validates v against the kernel's rules; f.mu held.
func (f *Fake) checkVlan(v BridgeVlanInfo) error {
	if v.VID < 1 || v.VID > 4094 {
		return fmt.Errorf("vid %d out of range 1-4094: %w", v.VID, unix.EINVAL)
	}
	l := f.links[v.Link]
	if l == nil {
		return notFound(unix.ENODEV)
	}
	if v.Self && l.info.Kind != "bridge" {
		return fmt.Errorf("%s is not a bridge (self): %w", v.Link, unix.EOPNOTSUPP)
	}
	if !v.Self && *l.info.Master == "" {
		return fmt.Errorf("%s is not a bridge port: %w", v.Link, unix.EOPNOTSUPP)
	}
	if f.unsupported["vlan_filtering"] {
		return &FeatureError{Feature: FeatureVlanFiltering, Err: unix.EOPNOTSUPP}
	}
	return nil
}

// Add adds (or updates the flags of) a VLAN; see BridgeVlans.Add.
func (x fakeVlans) Add(v BridgeVlanInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "vlan add " + v.String()
	obj := fmt.Sprintf("vlan %d on %s", v.VID, v.Link)
	if err := f.begin(op); err != nil {
		return opErr("add", obj, err)
	}
	if err := f.checkVlan(v); err != nil {
		return opErr("add", obj, err)
	}
	f.ops = append(f.ops, op)
	found := false
	for i := range f.vlans {
		o := &f.vlans[i]
		if o.Link != v.Link || o.Self != v.Self {
			continue
		}
		if o.VID == v.VID {
			*o, found = v, true
		} else if v.PVID {
			o.PVID = false
		}
	}
	if !found {
		f.vlans = append(f.vlans, v)
	}
	return nil
}

// Del removes a VLAN; see BridgeVlans.Del.
func (x fakeVlans) Del(v BridgeVlanInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := fmt.Sprintf("vlan del dev %s vid %d", v.Link, v.VID)
	if v.Self {
		op += " self"
	}
	obj := fmt.Sprintf("vlan %d on %s", v.VID, v.Link)
	if err := f.begin(op); err != nil {
		return opErr("del", obj, err)
	}
	if err := f.checkVlan(v); err != nil {
		return opErr("del", obj, err)
	}
	f.ops = append(f.ops, op)
	for i, o := range f.vlans {
		if o.Link == v.Link && o.VID == v.VID && o.Self == v.Self {
			f.vlans = append(f.vlans[:i], f.vlans[i+1:]...)
			return nil
		}
	}
	return nil // the kernel ignores deleting an absent VLAN
}

// List lists VLANs by link index then VID; see BridgeVlans.List.
func (x fakeVlans) List(link string) ([]BridgeVlanInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if link != "" && f.links[link] == nil {
		return nil, opErr("list", "vlans of "+link, notFound(unix.ENODEV))
	}
	var out []BridgeVlanInfo
	for _, n := range f.sortedLinks() {
		if link != "" && n != link {
			continue
		}
		var vs []BridgeVlanInfo
		for _, v := range f.vlans {
			if v.Link == n {
				vs = append(vs, v)
			}
		}
		sortVlans(vs)
		out = append(out, vs...)
	}
	return out, nil
}

func sortVlans(vs []BridgeVlanInfo) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].VID < vs[j-1].VID; j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// --- fdb ---

type fakeFdbs struct{ f *Fake }

func sameFdb(a, b FdbInfo) bool {
	return a.Master == b.Master && a.Vlan == b.Vlan && bytes.Equal(a.MAC, b.MAC)
}

// AddBatch is Add of each entry in order; see Fdbs.AddBatch.
func (x fakeFdbs) AddBatch(es []FdbInfo) []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = x.Add(e)
	}
	return errs
}

// Add adds or replaces a static entry; see Fdbs.Add.
func (x fakeFdbs) Add(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb add " + e.String()
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("add", obj, err)
	}
	if err := f.learn(e, true); err != nil {
		return opErr("add", obj, err)
	}
	f.ops = append(f.ops, op)
	return nil
}

// learn stores e as a static (or dynamic) entry on its port's bridge.
func (f *Fake) learn(e FdbInfo, static bool) error {
	l := f.links[e.Link]
	if l == nil {
		return notFound(unix.ENODEV)
	}
	if len(e.MAC) != 6 {
		return fmt.Errorf("mac %s is not 6 bytes: %w", e.MAC, unix.EINVAL)
	}
	br := *l.info.Master
	if br == "" {
		return fmt.Errorf("%s is not a bridge port: %w", e.Link, unix.EOPNOTSUPP)
	}
	if e.Vlan != 0 {
		ok := false
		for _, v := range f.vlans {
			ok = ok || (v.Link == e.Link && v.VID == e.Vlan && !v.Self)
		}
		if !ok {
			return fmt.Errorf("vlan %d not configured on %s (bridge vlan add): %w", e.Vlan, e.Link, unix.EINVAL)
		}
	}
	e = cloneFdb(e)
	e.Master, e.Static, e.Local = br, static, false
	for _, vid := range f.fdbVids(e) {
		e := cloneFdb(e)
		e.Vlan = vid
		if err := f.putFdb(e); err != nil {
			return err
		}
	}
	return nil
}

// fdbVids is the VLANs an entry applies to: its own, or with VLAN 0 on a
// kernel with VLAN support, 0 and every VLAN of the port (as br_fdb_add
// and br_fdb_delete do).
func (f *Fake) fdbVids(e FdbInfo) []uint16 {
	vids := []uint16{e.Vlan}
	if e.Vlan == 0 && !f.unsupported["vlan_filtering"] {
		for _, v := range f.vlans {
			if v.Link == e.Link && !v.Self {
				vids = append(vids, v.VID)
			}
		}
	}
	return vids
}

func (f *Fake) putFdb(e FdbInfo) error {
	for i, o := range f.fdbs {
		if sameFdb(o, e) {
			if o.Local {
				return fmt.Errorf("%s is a local address: %w", e.MAC, unix.EEXIST)
			}
			f.fdbs[i] = e
			f.emitFdb(i, false)
			return nil
		}
	}
	f.fdbs = append(f.fdbs, e)
	f.emitFdb(len(f.fdbs)-1, false)
	return nil
}

// Del removes an entry; see Fdbs.Del.
func (x fakeFdbs) Del(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb del " + e.String()
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("del", obj, err)
	}
	l := f.links[e.Link]
	if l == nil {
		return opErr("del", obj, notFound(unix.ENODEV))
	}
	vids := map[uint16]bool{}
	for _, v := range f.fdbVids(e) {
		vids[v] = true
	}
	n := len(f.fdbs)
	f.removeFdbs(func(o FdbInfo) bool {
		return o.Link == e.Link && o.Master == *l.info.Master && vids[o.Vlan] && bytes.Equal(o.MAC, e.MAC) && !o.Local
	})
	if len(f.fdbs) == n {
		return opErr("del", obj, notFound(unix.ENOENT))
	}
	f.ops = append(f.ops, op)
	return nil
}

// List lists entries of bridge ("" = all); see Fdbs.List.
func (x fakeFdbs) List(bridge string) ([]FdbInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if bridge != "" && f.links[bridge] == nil {
		return nil, opErr("list", "fdb of "+bridge, notFound(unix.ENODEV))
	}
	var out []FdbInfo
	for _, e := range f.fdbs {
		if bridge == "" || e.Master == bridge {
			out = append(out, cloneFdb(e))
		}
	}
	return out, nil
}

func (f *Fake) removeFdbs(drop func(FdbInfo) bool) {
	keep := f.fdbs[:0]
	for _, e := range f.fdbs {
		if drop(e) {
			e := cloneFdb(e)
			f.emit(Event{Kind: EventFdb, Deleted: true, Fdb: &e})
			continue
		}
		keep = append(keep, e)
	}
	f.fdbs = keep
}

// LearnFdb seeds a dynamic (learned) entry on a bridge port.
func (f *Fake) LearnFdb(e FdbInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return opErr("learn", "fdb "+e.String(), f.learn(e, false))
}

// ForgetFdb removes an entry as ageing would (emits a deleted EventFdb).
func (f *Fake) ForgetFdb(e FdbInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeFdbs(func(o FdbInfo) bool { return o.Link == e.Link && o.Vlan == e.Vlan && bytes.Equal(o.MAC, e.MAC) })
}

// --- neighbours ---

type fakeNeighs struct{ f *Fake }

// List lists neighbours; see Neighs.List.
func (x fakeNeighs) List(link string) ([]NeighInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if link != "" && f.links[link] == nil {
		return nil, opErr("list", "neighbours of "+link, notFound(unix.ENODEV))
	}
	var out []NeighInfo
	for _, n := range f.neighs {
		if link == "" || n.Link == link {
			n.MAC = append(net.HardwareAddr(nil), n.MAC...)
			out = append(out, n)
		}
	}
	return out, nil
}

// AddNeigh seeds (or replaces) a neighbour entry, emitting EventNeigh.
func (f *Fake) AddNeigh(n NeighInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.links[n.Link] == nil {
		return opErr("add", "neighbour "+n.IP.String()+" dev "+n.Link, notFound(unix.ENODEV))
	}
	n.MAC = append(net.HardwareAddr(nil), n.MAC...)
	f.neighs = filter(f.neighs, func(o NeighInfo) bool { return o.Link != n.Link || o.IP != n.IP })
	f.neighs = append(f.neighs, n)
	f.emit(Event{Kind: EventNeigh, Neigh: &n})
	return nil
}

// DelNeigh removes a neighbour entry, emitting a deleted EventNeigh.
func (f *Fake) DelNeigh(link string, ip netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.neighs = filter(f.neighs, func(o NeighInfo) bool {
		if o.Link == link && o.IP == ip {
			o := o
			f.emit(Event{Kind: EventNeigh, Deleted: true, Neigh: &o})
			return false
		}
		return true
	})
}
