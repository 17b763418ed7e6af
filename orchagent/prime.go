package orchagent

import (
	"fmt"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// Prime fills the kernel view from full listings. The daemon calls it
// after subscribing to netlink events (so nothing falls between the
// listing and the first event) and after an event overflow.
func (o *Orch) Prime() error {
	links, err := o.k.Links().List()
	if err != nil {
		return fmt.Errorf("prime kernel view: %w", err)
	}
	addrs, err := o.k.Addrs().List("")
	if err != nil {
		return fmt.Errorf("prime kernel view: %w", err)
	}
	// Bridge's entries and the vxlan devices' own flood entries: one dump.
	fdbs, err := o.k.Fdbs().List("")
	if err != nil {
		return fmt.Errorf("prime kernel view: %w", err)
	}
	v := o.view
	v.mu.Lock()
	defer v.mu.Unlock()
	// The main table, and the tables of vrf devices in our range: our
	// VRFs' routes. Each route goes into new tables as the dump delivers
	// it (primeRoutes), under v.mu (v.names is shared); a failed dump
	// leaves the view as it was.
	routes, foreign := newRouteTable(), newRouteTable()
	tables := []int{netlinkmgr.MainTable}
	for i := range links {
		if l := links[i].Vrf; l != nil && l.Table >= vrfTableMin && l.Table <= vrfTableMax {
			tables = append(tables, int(l.Table))
		}
	}
	for _, t := range tables {
		if err := o.primeRoutes(t, &routes, &foreign); err != nil {
			return fmt.Errorf("prime kernel view: %w", err)
		}
	}
	v.reset()
	v.routes, v.foreign = routes, foreign
	for i := range links {
		v.links[links[i].Name] = snapOf(&links[i])
	}
	for _, a := range addrs {
		v.putAddrLocked(a.Link, a.Prefix, a.Protocol)
	}
	for _, f := range fdbs {
		switch {
		case f.Master == BridgeName:
			v.fdbs[fdbKeyOf(f.Vlan, f.MAC)] = f
		case isRemoteEntry(&f):
			v.remotes[remoteKey{f.Link, f.Dst.Unmap()}] = true
		}
	}
	return nil
}

// primeRoutes puts the routes of one table into routes (ours) and
// foreign (v.mu held). A kernel that hands over its dump route by route
// (netlinkmgr.RouteWalker) is read without a list of every route: after a
// restart over 100k routes that list was the first large part of the
// process's heap, whose peak sizes the runtime's memory for good
// (docs/performance.md).
func (o *Orch) primeRoutes(table int, routes, foreign *routeTable) error {
	names := &o.view.names
	put := func(r *netlinkmgr.RouteInfo) {
		if ownedRoute(r) {
			routes.put(r, names)
		} else if trackedTable(r) {
			foreign.put(r, names)
		}
	}
	f := netlinkmgr.RouteFilter{Table: table}
	if w, ok := o.k.Routes().(netlinkmgr.RouteWalker); ok {
		return w.Walk(f, put, func() {
			// An interrupted dump is taken again: forget this table's part.
			routes.dropTable(table)
			foreign.dropTable(table)
		})
	}
	rs, err := o.k.Routes().List(f)
	for i := range rs {
		put(&rs[i])
	}
	return err
}
