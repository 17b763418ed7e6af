package orchagent

import (
	"bytes"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// kernelView caches the kernel objects orchagent reads per key in bulk
// (owned routes, addresses, FDB entries on Bridge) so a reconcile does not
// list the whole table, plus the last seen state of every link so events
// that change nothing we care about are dropped. It is filled by Prime,
// kept current by netlink events and by our own successful writes.
type kernelView struct {
	gen    atomic.Uint64 // bumped by every event that changed the view
	mu     sync.Mutex
	links  map[string]linkSnap
	routes routeTable // proto 201, main and VRF tables (viewroutes.go)
	// foreign are the main table's routes of every other protocol: a
	// STATIC_ROUTE whose table, prefix and metric one of them holds is a
	// conflict, never replaced.
	foreign routeTable
	names   linkNames // the routes' next-hop links
	// inflight are the routes being written (writingAll): their echoes
	// are not news, their deletes mark them gone (vrGone; gone counts
	// those).
	inflight map[rdst]vroute
	gone     int
	addrs    map[string]map[netip.Prefix]int // link → address → IFA_PROTO
	addrVer  uint64                          // bumped by every change of addrs (see addrIndex)
	aidx     addrIndex
	fdbs     map[fdbKey]netlinkmgr.FdbInfo // entries on Bridge
	remotes  map[remoteKey]bool            // vxlan devices' flood entries (vxlanremote.go)
	// vids caches "bridge vlan show dev L" per link, filled on first use
	// (a listing dumps every bridge VLAN of the namespace); absent = not
	// known. Kept by our writes and by the kernel's per-vid local FDB
	// entries, which come and go with each vid of a port or of Bridge.
	vids map[string]map[uint16]netlinkmgr.BridgeVlanInfo
	// vidsEpoch counts event-driven changes per link, so a listing that
	// raced an event is not cached.
	vidsEpoch map[string]uint64
	// peak is the high-water mark of fdbs (compact).
	peak int

	// addrWrites are the addresses being created, addrGone those of
	// them whose delete was heard meanwhile (addrview.go).
	addrWrites []netlinkmgr.AddrInfo
	addrGone   map[addrWrite]bool
	// fdbWriting are the static entries being written (fdbview.go).
	fdbWriting map[fdbKey]fdbWrite
}

// compact gives back the memory of maps that shrank after a burst of
// deletes (internal/shrink; v.mu held).
func (v *kernelView) compact() {
	v.routes.compact()
	v.foreign.compact()
	v.fdbs = shrink.Map(v.fdbs, &v.peak)
}

// linkSnap is what link events are compared on.
type linkSnap struct {
	index, mtu, masterIdx int
	admin                 bool
	mac, alias, kind      string
	table                 int // a vrf device's routing table
	// For the VLAN paths (vlanview.go): an 802.1Q device's id and parent,
	// a bridge's vlan_filtering.
	vlanID, parentIdx int
	filtering         bool
}

// fdbKey is an entry of Bridge's FDB: a bridge's entries have
// Ethernet (6-byte) addresses, kept as an array (no string per entry).
type fdbKey struct {
	vid uint16
	mac [6]byte
}

func fdbKeyOf(vid uint16, mac net.HardwareAddr) fdbKey {
	k := fdbKey{vid: vid}
	copy(k.mac[:], mac)
	return k
}

func newKernelView() *kernelView {
	v := &kernelView{}
	v.reset()
	return v
}

func (v *kernelView) reset() {
	v.addrVer++
	v.links = map[string]linkSnap{}
	v.routes = newRouteTable()
	v.foreign = newRouteTable()
	v.addrs = map[string]map[netip.Prefix]int{}
	v.fdbs = map[fdbKey]netlinkmgr.FdbInfo{}
	v.remotes = map[remoteKey]bool{}
	v.vids = map[string]map[uint16]netlinkmgr.BridgeVlanInfo{}
	v.vidsEpoch = map[string]uint64{}
}

func snapOf(l *netlinkmgr.LinkInfo) linkSnap {
	s := linkSnap{index: l.Index, masterIdx: l.MasterIdx, kind: l.Kind, mac: l.MAC.String()}
	if l.MTU != nil {
		s.mtu = *l.MTU
	}
	if l.AdminUp != nil {
		s.admin = *l.AdminUp
	}
	if l.Alias != nil {
		s.alias = *l.Alias
	}
	if l.Vrf != nil {
		s.table = int(l.Vrf.Table)
	}
	if l.Vlan != nil {
		s.vlanID, s.parentIdx = l.Vlan.ID, l.ParentIdx
	}
	if l.Bridge != nil && l.Bridge.VlanFiltering != nil {
		s.filtering = *l.Bridge.VlanFiltering
	}
	return s
}

func ownedRoute(r *netlinkmgr.RouteInfo) bool {
	return r.Protocol == netlinkmgr.ProtoSwitchyard && trackedTable(r)
}

func mainTable(r *netlinkmgr.RouteInfo) bool { return r.Table == 0 || r.Table == netlinkmgr.MainTable }

// trackedTable: the main table and the tables orchagent gives its VRFs.
func trackedTable(r *netlinkmgr.RouteInfo) bool {
	return mainTable(r) || (r.Table >= vrfTableMin && r.Table <= vrfTableMax)
}

func normPrefix(p netip.Prefix) netip.Prefix {
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-func() int {
		if p.Addr().Is4In6() {
			return 96
		}
		return 0
	}())
}

func (v *kernelView) putAddrLocked(link string, p netip.Prefix, proto int) bool {
	p = normPrefix(p)
	m := v.addrs[link]
	if m == nil {
		m = map[netip.Prefix]int{}
		v.addrs[link] = m
	}
	if old, ok := m[p]; ok && old == proto {
		return false
	}
	m[p] = proto
	v.addrVer++
	return true
}

func (v *kernelView) delAddrLocked(link string, p netip.Prefix) bool {
	p = normPrefix(p)
	if _, ok := v.addrs[link][p]; !ok {
		return false
	}
	delete(v.addrs[link], p)
	v.addrVer++
	return true
}

// routesFor returns copies of the owned routes to dst in table.
func (v *kernelView) routesFor(table int, dst netip.Prefix) []netlinkmgr.RouteInfo {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.routes.at(rdstOf(table, dst), &v.names)
}

// routeDsts returns the table and destination of every owned route.
func (v *kernelView) routeDsts() []rdst {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.routes.dsts(make([]rdst, 0, v.routes.len()))
}

// listVids returns the bridge VLANs of link, from the view when known.
func (o *Orch) listVids(link string) ([]netlinkmgr.BridgeVlanInfo, error) {
	v := o.view
	v.mu.Lock()
	if m, ok := v.vids[link]; ok {
		out := make([]netlinkmgr.BridgeVlanInfo, 0, len(m))
		for _, x := range m {
			out = append(out, x)
		}
		v.mu.Unlock()
		return out, nil
	}
	epoch := v.vidsEpoch[link]
	v.mu.Unlock()
	vl, err := o.k.BridgeVlans().List(link)
	if err != nil {
		return nil, err
	}
	m := map[uint16]netlinkmgr.BridgeVlanInfo{}
	for _, x := range vl {
		if x.Link == link {
			m[x.VID] = x
		}
	}
	v.mu.Lock()
	if v.vidsEpoch[link] == epoch { // no event about link raced the listing
		v.vids[link] = m
	}
	v.mu.Unlock()
	return vl, nil
}

// notedVid records our own bridge VLAN write.
func (v *kernelView) notedVid(x netlinkmgr.BridgeVlanInfo, present bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m, ok := v.vids[x.Link]
	if !ok {
		return
	}
	if present {
		m[x.VID] = x
	} else {
		delete(m, x.VID)
	}
}

// linkExists answers from the view: every appearance and disappearance of
// a link is an event that re-enqueues the keys that asked.
func (v *kernelView) linkExists(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.links[name]
	return ok
}

// addr returns the protocol (IFA_PROTO) of the address on link.
func (v *kernelView) addr(link string, p netip.Prefix) (proto int, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	proto, ok = v.addrs[link][normPrefix(p)]
	return proto, ok
}

func (v *kernelView) fdb(vid uint16, mac string) (netlinkmgr.FdbInfo, bool) {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return netlinkmgr.FdbInfo{}, false
	}
	return v.fdbAt(vid, hw)
}

func (v *kernelView) fdbAt(vid uint16, mac net.HardwareAddr) (netlinkmgr.FdbInfo, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, ok := v.fdbs[fdbKeyOf(vid, mac)]
	return f, ok
}

func (v *kernelView) allFdbs() []netlinkmgr.FdbInfo {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]netlinkmgr.FdbInfo, 0, len(v.fdbs))
	for _, f := range v.fdbs {
		out = append(out, f)
	}
	return out
}

// The noted* methods record our own successful writes, so the echo event
// changes nothing and re-enqueues nobody (routes: notedRoute, viewroutes.go).
func (v *kernelView) notedRouteDel(r *netlinkmgr.RouteInfo) {
	v.mu.Lock()
	v.routes.del(r.Table, r.Dst, r.Metric, -1)
	v.mu.Unlock()
}
func (v *kernelView) notedAddr(link string, p netip.Prefix, present bool) {
	v.mu.Lock()
	if present {
		v.putAddrLocked(link, p, netlinkmgr.ProtoSwitchyard)
	} else {
		v.delAddrLocked(link, p)
	}
	v.mu.Unlock()
}
func (v *kernelView) notedFdb(f netlinkmgr.FdbInfo, present bool) {
	v.mu.Lock()
	k := fdbKeyOf(f.Vlan, f.MAC)
	if present {
		v.fdbs[k] = f
	} else {
		delete(v.fdbs, k)
	}
	v.mu.Unlock()
}

// HandleEvent updates the kernel view from one netlink event and
// re-enqueues the keys owning what changed (drift is reverted by the
// ordinary reconcile of those keys). Events that change nothing in the
// view, such as the echo of our own write, enqueue nothing.
func (o *Orch) HandleEvent(ev netlinkmgr.Event) {
	defer func() {
		o.view.mu.Lock()
		o.view.compact()
		o.view.mu.Unlock()
	}()
	var res []string
	switch ev.Kind {
	case netlinkmgr.EventLink:
		if ev.Link != nil {
			res = o.view.onLink(ev.Link, ev.Deleted)
		}
	case netlinkmgr.EventAddr:
		if ev.Addr != nil {
			res = o.view.onAddr(ev.Addr, ev.Deleted)
		}
	case netlinkmgr.EventRoute:
		if ev.Route != nil {
			res = o.view.onRoute(ev.Route, ev.Deleted)
		}
	case netlinkmgr.EventFdb:
		if ev.Fdb != nil {
			res = o.view.onFdb(ev.Fdb, ev.Deleted)
		}
	case netlinkmgr.EventResync:
		o.log.Warn("netlink events overflowed: relisting the kernel and reconciling every key")
		if err := o.Prime(); err != nil {
			o.log.WithError(err).Warn("relist after netlink overflow failed")
		}
		o.view.gen.Add(1)
		for _, k := range o.ConfigKeys() {
			o.enqueue(k)
		}
		return
	}
	if len(res) > 0 {
		// After the view changed and before the dependants are looked
		// up: see Reconcile.
		o.view.gen.Add(1)
	}
	if ev.Kind == netlinkmgr.EventFdb {
		o.enqueueFdbRefs(res) // fdb.go
		return
	}
	if ev.Kind == netlinkmgr.EventLink {
		o.enqueueLinkRefs(ev.Deleted, res) // pcecho.go
		return
	}
	o.enqueueRefs(res...)
}

func (v *kernelView) onLink(l *netlinkmgr.LinkInfo, deleted bool) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, had := v.links[l.Name]
	brIdx := v.links[BridgeName].index
	var res []string
	if deleted {
		if !had || (l.Index != 0 && old.index != l.Index) {
			return nil
		}
		delete(v.links, l.Name)
		delete(v.vids, l.Name)
		v.vidsEpoch[l.Name]++
		res = append(res, resLink(l.Name), resBrPort(l.Name), resReach)
		res = append(res, v.purgeLinkLocked(l.Name)...)
		v.purgeRemotesLocked(l.Name)
		return res
	}
	now := snapOf(l)
	v.links[l.Name] = now
	existence := !had || old.index != now.index
	if existence || old.masterIdx != now.masterIdx {
		delete(v.vids, l.Name) // joining or leaving a bridge changes vids
		v.vidsEpoch[l.Name]++
	}
	switch {
	case existence:
		res = append(res, resLink(l.Name), resReach)
	case l.Name == BridgeName:
		// The bridge's MAC and MTU follow its ports; only its admin
		// state is ours to keep.
		if old.admin != now.admin {
			res = append(res, resLink(l.Name))
		}
	case old != now:
		res = append(res, resLink(l.Name))
	}
	if had && old.masterIdx != now.masterIdx {
		// Joining or leaving a VRF moves the link's connected routes to
		// another table: next hops resolved per VRF may change.
		res = append(res, resReach)
		// Its IPv4 prefix routes leave main, or come to it, without
		// events (OmitKernelPrefixRoutes): forget the kernel's routes
		// through it (a create meets any still there as EEXIST).
		res = v.forgetKernelRoutesLocked(res, l.Name)
	}
	if had && !old.admin && now.admin {
		// Set up, the link gets the prefix routes of its IPv4 addresses
		// back, whose events the kernel drops (OmitKernelPrefixRoutes):
		// a gateway on one of them may now be reachable.
		res = append(res, resReach)
	}
	if had && old.admin && !now.admin {
		// The kernel drops IPv4 routes through a link set down without
		// telling anyone: forget them so their keys re-add them.
		res = append(res, v.purgeLinkLocked(l.Name)...)
	}
	if brIdx != 0 && (now.masterIdx == brIdx || old.masterIdx == brIdx) {
		// Bridge VLAN changes of a port arrive as link events that look
		// the same otherwise: let its members check.
		res = append(res, resBrPort(l.Name))
	}
	return res
}

// purgeLinkLocked forgets the routes through link (ours and foreign
// ones: the kernel drops IPv4 routes silently) and its addresses.
func (v *kernelView) purgeLinkLocked(link string) []string {
	var res []string
	id := v.names.lookup(link)
	uses := func(r *netlinkmgr.RouteInfo) bool { return routeUsesLink(r, link) }
	usesOne := func(c *vroute) bool { return c.usesLink(id) }
	res = v.routes.purge(res, &v.names, uses, usesOne)
	res = v.foreign.purge(res, &v.names, uses, usesOne)
	for p := range v.addrs[link] {
		res = append(res, resAddr(link, p.String()))
	}
	delete(v.addrs, link)
	v.addrVer++
	return res
}

func routeUsesLink(r *netlinkmgr.RouteInfo, link string) bool {
	for _, nh := range r.NextHops {
		if nh.Link == link {
			return true
		}
	}
	return false
}

func (v *kernelView) onAddr(a *netlinkmgr.AddrInfo, deleted bool) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := normPrefix(a.Prefix)
	if deleted {
		// Whoever removed the address (we note our own deletes before
		// their event), its prefix route went with it.
		if !v.delAddrLocked(a.Link, p) {
			return v.prefixRouteGoneLocked(v.deletedWhileWritingLocked(a.Link, p), p)
		}
		res := v.prefixRouteGoneLocked([]string{resAddr(a.Link, p.String()), resReach}, p)
		// IPv4 routes via a gateway in the removed subnet vanish silently.
		subnet := p.Masked()
		in := func(r *netlinkmgr.RouteInfo) bool {
			for _, nh := range r.NextHops {
				if nh.Gateway.IsValid() && subnet.Contains(nh.Gateway.Unmap()) {
					return true
				}
			}
			return false
		}
		inOne := func(c *vroute) bool {
			if c.flags&vrGw == 0 {
				return false
			}
			gw := netip.AddrFrom16(c.gw)
			if c.flags&vrGw4 != 0 {
				gw = gw.Unmap()
			}
			return subnet.Contains(gw.Unmap())
		}
		res = v.routes.purge(res, &v.names, in, inOne)
		return v.foreign.purge(res, &v.names, in, inOne)
	}
	if !v.putAddrLocked(a.Link, p, a.Protocol) {
		return nil
	}
	return []string{resAddr(a.Link, p.String()), resReach}
}

func (v *kernelView) onRoute(r *netlinkmgr.RouteInfo, deleted bool) []string {
	if !ownedRoute(r) && !trackedTable(r) {
		return []string{resReach}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	m := &v.routes
	if !ownedRoute(r) {
		m = &v.foreign
	}
	var changed bool
	if deleted {
		// A delete names the route it removed: only that protocol's.
		changed = m.del(r.Table, r.Dst, r.Metric, r.Protocol)
		if ownedRoute(r) && v.writeGoneLocked(r) {
			changed = true // news even when the view did not hold it
		}
	} else {
		changed = m.put(r, &v.names)
	}
	if !changed || (!deleted && ownedRoute(r) && v.echoOfWriteLocked(r)) {
		if !ownedRoute(r) {
			return []string{resReach}
		}
		return nil
	}
	res := []string{resRoute(r.Table, normPrefix(r.Dst))}
	if !ownedRoute(r) {
		res = append(res, resReach)
	}
	return res
}

func (v *kernelView) onFdb(f *netlinkmgr.FdbInfo, deleted bool) []string {
	if f.Master != "" && f.Master != BridgeName {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if isRemoteEntry(f) {
		return v.onRemoteLocked(f, deleted)
	}
	if f.Local && f.Vlan != 0 {
		// The kernel adds and removes a permanent entry for the port's
		// (or Bridge's) MAC with each of its vids, and netlinkmgr drops
		// the AF_BRIDGE link messages that announce vid changes: this is
		// how a vid removed behind our back is noticed.
		m, known := v.vids[f.Link]
		_, has := m[f.Vlan]
		switch {
		case deleted && known && has:
			delete(m, f.Vlan)
		case !deleted && known && !has:
			// There now (maybe our own write, not noted yet). Its flags
			// are not in the event: assume tagged; our note, or the
			// member's reconcile, puts the right ones.
			m[f.Vlan] = netlinkmgr.BridgeVlanInfo{Link: f.Link, VID: f.Vlan, Self: f.Link == BridgeName}
		case known:
			return nil // the echo of our own write
		}
		v.vidsEpoch[f.Link]++
		return []string{resBrVid(f.Link, f.Vlan)}
	}
	k := fdbKeyOf(f.Vlan, f.MAC)
	old, had := v.fdbs[k]
	if deleted {
		gone := v.fdbGoneLocked(k, f) // fdbview.go
		if (!had || old.Link != f.Link) && !gone {
			return nil
		}
		if had && old.Link == f.Link {
			delete(v.fdbs, k)
		}
	} else {
		if had && old.Link == f.Link && old.Static == f.Static && old.Local == f.Local {
			return nil
		}
		v.fdbs[k] = *f
		if v.fdbEchoLocked(k, f) { // fdbview.go
			return nil
		}
	}
	return []string{resFdb(f.Vlan, f.MAC.String())}
}

func itoa(n int) string { return strconv.Itoa(n) }

func macEqual(a, b []byte) bool { return bytes.Equal(a, b) }
