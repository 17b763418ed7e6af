package syncd

import (
	"net/netip"
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/internal/shrink"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// View is syncd's picture of the kernel: the objects it mirrors, as the
// kernel identifies them, plus the set of ports named in CONFIG_DB PORT.
// Every change records the STATE_DB keys it may have touched (Dirty); Want
// answers what a key should hold now. A View is not safe for concurrent use:
// the daemon loop owns it.
type View struct {
	ports    map[string]bool // names in CONFIG_DB PORT
	links    map[string]netlinkmgr.LinkInfo
	linkName map[int]string // ifindex -> name, to notice renames
	untagged uint16         // Bridge's default_pvid (FDB context without VLAN)

	fdb     map[fdbID]netlinkmgr.FdbInfo
	fdbKeys map[string]map[fdbID]struct{} // FDB_TABLE key -> entries filed there
	vteps   map[vtepID]netip.Addr         // vxlan devices' own entries: remote VTEP of a MAC

	neigh map[string]netlinkmgr.NeighInfo // NEIGH_TABLE key -> entry

	routes map[routeGroup]routeSet // table and prefix -> routes (view_routes.go)
	// routeFields are rendered ROUTE_TABLE fields of single routes, shared
	// by every route with the same tail (read only: Want's callers copy).
	routeFields map[fieldsKey]schema.Fields
	last        lastTail       // the last single-hop route's tail (view_routes.go)
	vrfTables   map[int]string // table -> vrf device
	vrfByName   map[string]int // vrf device -> table

	addrs map[string]netlinkmgr.AddrInfo // INTERFACE_TABLE key -> address (AddrMirrored only)

	dirty map[string]struct{} // full STATE_DB keys "TABLE|key"
	// dirtyRoutes are the main table's ROUTE_TABLE keys touched, kept as
	// groups: rendered once when taken, never parsed back (a 100k burst).
	dirtyRoutes map[routeGroup]struct{}
	// peaks are the high-water marks of the maps compact shrinks.
	peaks [5]int

	// Listing state: between BeginListing and EndListing every object
	// delivered is marked seen; EndListing drops the unseen ones.
	listing   bool
	seenLinks map[string]struct{}
	seenFdb   map[fdbID]struct{}
	seenVteps map[vtepID]struct{}
	seenNeigh map[string]struct{}
	seenAddrs map[string]struct{} // (routes carry their own mark: kroute.listed)
	relisting bool                // ReplaceRoutes is applying a relist (kroute.kept)

	// routesSuspect is set when a link went admin-down or away: the kernel
	// flushes IPv4 routes through it without RTM_DELROUTE, so the caller
	// must relist routes (ReplaceRoutes).
	routesSuspect bool
}

// NewView returns an empty View.
func NewView() *View {
	return &View{
		ports:       map[string]bool{},
		links:       map[string]netlinkmgr.LinkInfo{},
		linkName:    map[int]string{},
		untagged:    DefaultUntaggedVID,
		fdb:         map[fdbID]netlinkmgr.FdbInfo{},
		fdbKeys:     map[string]map[fdbID]struct{}{},
		vteps:       map[vtepID]netip.Addr{},
		neigh:       map[string]netlinkmgr.NeighInfo{},
		routes:      map[routeGroup]routeSet{},
		routeFields: map[fieldsKey]schema.Fields{},
		vrfTables:   map[int]string{},
		vrfByName:   map[string]int{},
		addrs:       map[string]netlinkmgr.AddrInfo{},
		dirty:       map[string]struct{}{},
		dirtyRoutes: map[routeGroup]struct{}{},
	}
}

func (v *View) touch(table, key string) { v.dirty[StateKey(table, key)] = struct{}{} }

// SetPort records whether CONFIG_DB PORT names port (configured) or not.
func (v *View) SetPort(name string, configured bool) {
	if v.ports[name] == configured {
		return
	}
	if configured {
		v.ports[name] = true
	} else {
		delete(v.ports, name)
	}
	v.touch(schema.StatePortTable, name)
}

// Ports returns the configured ports that exist in the kernel, sorted.
func (v *View) Ports() []string {
	var out []string
	for p := range v.ports {
		if _, ok := v.links[p]; ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// UntaggedVID is the VLAN FDB entries without one are filed under.
func (v *View) UntaggedVID() uint16 { return v.untagged }

// BeginListing starts a full listing of the kernel (initial, or after a
// netlink overflow): objects not delivered again before EndListing are gone.
func (v *View) BeginListing() {
	v.listing = true
	v.seenLinks = map[string]struct{}{}
	v.seenFdb = map[fdbID]struct{}{}
	v.seenVteps = map[vtepID]struct{}{}
	v.seenNeigh = map[string]struct{}{}
	v.seenAddrs = map[string]struct{}{}
	v.sweepRoutes(func(routeGroup, kroute) bool { return false }, unmarkListed) // a listing cut short by another
}

// Listing reports whether a listing is in progress.
func (v *View) Listing() bool { return v.listing }

// EndListing ends a listing, dropping every object it did not deliver.
func (v *View) EndListing() {
	if !v.listing {
		return
	}
	v.listing = false
	for name := range v.links {
		if _, ok := v.seenLinks[name]; !ok {
			v.removeLink(name)
		}
	}
	for id, f := range v.fdb {
		if _, ok := v.seenFdb[id]; !ok {
			v.removeFdb(id, f)
		}
	}
	for id := range v.vteps {
		if _, ok := v.seenVteps[id]; !ok {
			v.removeVtep(id)
		}
	}
	v.seenVteps = nil
	for k := range v.neigh {
		if _, ok := v.seenNeigh[k]; !ok {
			delete(v.neigh, k)
			v.touch(schema.StateNeighTable, k)
		}
	}
	v.sweepRoutes(func(_ routeGroup, k kroute) bool { return !k.listed }, unmarkListed)
	for k := range v.addrs {
		if _, ok := v.seenAddrs[k]; !ok {
			v.removeAddr(k)
		}
	}
	v.seenLinks, v.seenFdb, v.seenNeigh, v.seenAddrs = nil, nil, nil, nil
}

// Apply folds one kernel event into the View. EventResync and EventSynced
// are mapped to BeginListing and EndListing.
func (v *View) Apply(ev netlinkmgr.Event) {
	defer v.compact()
	switch ev.Kind {
	case netlinkmgr.EventResync:
		v.BeginListing()
	case netlinkmgr.EventSynced:
		v.EndListing()
	case netlinkmgr.EventLink:
		if ev.Link != nil {
			v.applyLink(*ev.Link, ev.Deleted)
		}
	case netlinkmgr.EventFdb:
		if ev.Fdb != nil {
			v.applyFdb(*ev.Fdb, ev.Deleted)
		}
	case netlinkmgr.EventNeigh:
		if ev.Neigh != nil {
			v.applyNeigh(*ev.Neigh, ev.Deleted)
		}
	case netlinkmgr.EventRoute:
		if ev.Route != nil {
			v.applyRoute(*ev.Route, ev.Deleted)
		}
	case netlinkmgr.EventAddr:
		if ev.Addr != nil {
			v.applyAddr(*ev.Addr, ev.Deleted)
		}
	}
}

func (v *View) touchLink(name string) {
	if v.ports[name] {
		v.touch(schema.StatePortTable, name)
	}
	if IsVlanName(name) {
		v.touch(schema.StateVlanTable, name)
	}
}

func (v *View) applyLink(l netlinkmgr.LinkInfo, deleted bool) {
	if l.Name == "" {
		if n, ok := v.linkName[l.Index]; ok && deleted {
			v.removeLink(n)
		}
		return
	}
	if deleted {
		v.removeLink(l.Name)
		return
	}
	if old, ok := v.linkName[l.Index]; ok && l.Index != 0 && old != l.Name {
		v.renameAddrs(old, l.Name) // before removeLink drops them
		v.removeLink(old)
		v.renamed(old, l.Name)
	}
	prev, had := v.links[l.Name]
	if had && prev.Index != l.Index && prev.Index != 0 {
		delete(v.linkName, prev.Index)
	}
	if had && adminUp(prev) && !adminUp(l) {
		v.routesSuspect = true
	}
	if had {
		v.touchLag(prev)
		v.unfileVrf(prev, l)
	}
	v.links[l.Name] = l
	v.touchLag(l)
	v.fileVrf(l)
	if l.Index != 0 {
		v.linkName[l.Index] = l.Name
	}
	if v.listing {
		v.seenLinks[l.Name] = struct{}{}
	}
	v.touchLink(l.Name)
	if l.Name == BridgeName {
		pvid := uint16(DefaultUntaggedVID)
		if l.Bridge != nil && l.Bridge.DefaultPVID != nil && *l.Bridge.DefaultPVID != 0 {
			pvid = *l.Bridge.DefaultPVID
		}
		v.setUntagged(pvid)
	}
}

func adminUp(l netlinkmgr.LinkInfo) bool { return l.AdminUp == nil || *l.AdminUp }

func (v *View) removeLink(name string) {
	l, ok := v.links[name]
	if !ok {
		return
	}
	v.touchLag(l)
	v.unfileVrf(l)
	v.dropVtepsOf(name)
	delete(v.links, name)
	if v.linkName[l.Index] == name {
		delete(v.linkName, l.Index)
	}
	v.routesSuspect = true
	v.touchLink(name)
	v.dropAddrsOf(name)
}

// renamed moves FDB entries and neighbours of a renamed link to its new
// name: the kernel sends no FDB or neighbour event for a rename. Routes
// name their devices too; removeLink already asked for a relist.
func (v *View) renamed(old, name string) {
	for id, f := range v.fdb {
		if f.Link == old {
			f.Link = name
			v.fdb[id] = f
			v.touch(schema.StateFDBTable, FdbKey(f, v.untagged))
		}
	}
	for k, n := range v.neigh {
		if n.Link == old {
			delete(v.neigh, k)
			v.touch(schema.StateNeighTable, k)
			n.Link = name
			nk := NeighKey(n)
			v.neigh[nk] = n
			if v.listing {
				v.seenNeigh[nk] = struct{}{}
			}
			v.touch(schema.StateNeighTable, nk)
		}
	}
}

// setUntagged refiles VLAN-less FDB entries when default_pvid changes.
func (v *View) setUntagged(pvid uint16) {
	if pvid == v.untagged {
		return
	}
	var moved []netlinkmgr.FdbInfo
	for id, f := range v.fdb {
		if id.vlan == 0 {
			v.removeFdb(id, f)
			moved = append(moved, f)
		}
	}
	v.untagged = pvid
	for _, f := range moved {
		v.addFdb(f)
	}
}

func idOfFdb(f netlinkmgr.FdbInfo) fdbID {
	return fdbID{mac: strings.ToLower(f.MAC.String()), vlan: f.Vlan}
}

func (v *View) applyFdb(f netlinkmgr.FdbInfo, deleted bool) {
	if f.Master != BridgeName {
		// Not the bridge's: a vxlan device's own entry (its remote
		// VTEP) or a port's "self" entry; never one of FDB_TABLE's.
		v.applyVtep(f, deleted)
		return
	}
	id := idOfFdb(f)
	if old, ok := v.fdb[id]; ok {
		v.removeFdb(id, old)
	}
	if deleted || !FdbMirrored(f) {
		return
	}
	v.addFdb(f)
	if v.listing {
		v.seenFdb[id] = struct{}{}
	}
}

func (v *View) addFdb(f netlinkmgr.FdbInfo) {
	id := idOfFdb(f)
	k := FdbKey(f, v.untagged)
	v.fdb[id] = f
	set := v.fdbKeys[k]
	if set == nil {
		set = map[fdbID]struct{}{}
		v.fdbKeys[k] = set
	}
	set[id] = struct{}{}
	v.touch(schema.StateFDBTable, k)
}

func (v *View) removeFdb(id fdbID, f netlinkmgr.FdbInfo) {
	k := FdbKey(f, v.untagged)
	delete(v.fdb, id)
	if set := v.fdbKeys[k]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(v.fdbKeys, k)
		}
	}
	v.touch(schema.StateFDBTable, k)
}

func (v *View) applyNeigh(n netlinkmgr.NeighInfo, deleted bool) {
	if n.Link == "" || !n.IP.IsValid() {
		return
	}
	k := NeighKey(n)
	if deleted || !NeighMirrored(n) {
		if _, ok := v.neigh[k]; ok {
			delete(v.neigh, k)
			v.touch(schema.StateNeighTable, k)
		}
		return
	}
	v.neigh[k] = n
	if v.listing {
		v.seenNeigh[k] = struct{}{}
	}
	v.touch(schema.StateNeighTable, k)
}

// compact gives back the memory of maps that shrank after a burst of
// deletes (internal/shrink).
func (v *View) compact() {
	v.routes = shrink.Map(v.routes, &v.peaks[0])
	v.fdb = shrink.Map(v.fdb, &v.peaks[1])
	v.fdbKeys = shrink.Map(v.fdbKeys, &v.peaks[2])
	v.neigh = shrink.Map(v.neigh, &v.peaks[3])
	v.addrs = shrink.Map(v.addrs, &v.peaks[4])
}

// TakeDirty returns the STATE_DB keys touched since the last call, sorted,
// and clears the set.
func (v *View) TakeDirty() []string { return v.TakeDirtyN(v.DirtyCount()) }

// TakeDirtyN returns at most n of the keys touched since the last call,
// sorted, and removes them from the set; the others stay for the next
// call.
func (v *View) TakeDirtyN(n int) []string {
	out := make([]string, 0, min(n, v.DirtyCount()))
	v.take(n, func(k string) { out = append(out, k) },
		func(g routeGroup) { out = append(out, mainRouteStateKey(g)) })
	sort.Strings(out)
	return out
}

// TakeWants removes at most n of the keys touched since the last call and
// calls emit with each and what it should hold now (ok=false: it should
// not exist), in no particular order: the flush's path, where a route's
// key is rendered from the View's own form and never parsed back. A flush
// takes its keys in slices so that what it has in flight (a rendered and
// copied hash per key, the Redis commands) stays a few MB during a
// 100k-route burst, not the burst's size.
func (v *View) TakeWants(n int, emit func(key string, f schema.Fields, ok bool)) {
	v.take(n, func(k string) {
		f, ok := v.Want(k)
		emit(k, f, ok)
	}, func(g routeGroup) {
		f, ok := v.wantGroup(g)
		emit(mainRouteStateKey(g), f, ok)
	})
}

// take removes at most n touched keys, handing each to key or, for the
// main table's routes, to group.
func (v *View) take(n int, key func(string), group func(routeGroup)) {
	n -= takeSet(&v.dirty, n, key)
	takeSet(&v.dirtyRoutes, n, group)
}

// takeSet removes at most n elements of *set, calls f with each and
// returns how many.
func takeSet[K comparable](set *map[K]struct{}, n int, f func(K)) int {
	if n <= 0 || len(*set) == 0 {
		return 0
	}
	taken := make([]K, 0, min(n, len(*set)))
	for k := range *set {
		if len(taken) == n {
			break
		}
		taken = append(taken, k)
	}
	if len(taken) < len(*set) {
		for _, k := range taken {
			delete(*set, k)
		}
	} else {
		// A new map, not clear: after a burst taken in slices the last
		// may be small while the map still has 100k keys' buckets.
		*set = map[K]struct{}{}
	}
	for _, k := range taken {
		f(k)
	}
	return len(taken)
}

// DirtyCount is the number of keys waiting for TakeDirty.
func (v *View) DirtyCount() int { return len(v.dirty) + len(v.dirtyRoutes) }

// Want returns the fields syncd's STATE_DB key k ("TABLE|key") should hold
// now, or ok=false when it should not exist. The fields may be shared with
// other keys: a caller must not modify them.
func (v *View) Want(k string) (schema.Fields, bool) {
	table, key := SplitStateKey(k)
	switch table {
	case schema.StatePortTable:
		if !v.ports[key] {
			return nil, false
		}
		l, ok := v.links[key]
		if !ok {
			return nil, false
		}
		return PortFields(l), true
	case schema.StateVlanTable:
		l, ok := v.links[key]
		if !ok || !IsVlanName(key) {
			return nil, false
		}
		return LinkFields(l), true
	case schema.StateFDBTable:
		set := v.fdbKeys[key]
		if len(set) == 0 {
			return nil, false
		}
		return v.fdbFields(v.fdb[minFdb(set)]), true
	case schema.StateNeighTable:
		n, ok := v.neigh[key]
		if !ok {
			return nil, false
		}
		return NeighFields(n), true
	case schema.StateRouteTable:
		return v.wantRoute(key)
	case StateLagTable, StateLagMemberTable:
		return v.wantLag(table, key)
	case StateInterfaceTable:
		if _, ok := v.addrs[key]; !ok {
			return nil, false
		}
		return schema.Fields{FieldInterfaceState: "ok"}, true
	}
	return nil, false
}

// minFdb picks one entry deterministically when two share a key: an entry
// of the untagged VLAN and one without VLAN; the explicit VLAN wins.
func minFdb(set map[fdbID]struct{}) fdbID {
	var best fdbID
	first := true
	for id := range set {
		if first || id.vlan > best.vlan {
			best, first = id, false
		}
	}
	return best
}

// Keys returns every STATE_DB key the mirror should hold now, sorted.
func (v *View) Keys() []string {
	var out []string
	for p := range v.ports {
		if _, ok := v.links[p]; ok {
			out = append(out, StateKey(schema.StatePortTable, p))
		}
	}
	for n := range v.links {
		if IsVlanName(n) {
			out = append(out, StateKey(schema.StateVlanTable, n))
		}
	}
	for k := range v.fdbKeys {
		out = append(out, StateKey(schema.StateFDBTable, k))
	}
	for k := range v.neigh {
		out = append(out, StateKey(schema.StateNeighTable, k))
	}
	out = append(out, v.routeStateKeys()...)
	out = append(out, v.lagKeys()...)
	for k := range v.addrs {
		out = append(out, StateKey(StateInterfaceTable, k))
	}
	sort.Strings(out)
	return out
}

// Link returns the View's copy of a link.
func (v *View) Link(name string) (netlinkmgr.LinkInfo, bool) {
	l, ok := v.links[name]
	return l, ok
}

// Configured returns the ports named in CONFIG_DB PORT, sorted.
func (v *View) Configured() []string {
	out := make([]string, 0, len(v.ports))
	for p := range v.ports {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// IsConfigured reports whether CONFIG_DB PORT names port.
func (v *View) IsConfigured(port string) bool { return v.ports[port] }
