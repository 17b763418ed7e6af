package orchagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// Sweep removes kernel objects orchagent owns that no config key names any
// more (config deleted while orchagent was down): routes with protocol
// 201 (main table, and VRF tables by their VRF's keys), addresses with protocol 201 (IFA_PROTO), our LoopbackN dummies and
// vrf devices and bonds (alias switchyard), bindings to our VRFs, ports of
// our bonds, VlanN devices on Bridge,
// Bridge's own vids, vids of ports on Bridge and the membership of ports
// that had such a vid, static FDB entries on Bridge, our vxlan devices and
// the remotes of their flood entries. Bridge itself, ports,
// unmarked addresses and ports on Bridge without a vid (enslaved by hand)
// are never swept. The engine runs it only once
// CONFIG_DB_INITIALIZED is "1"; every object is checked against Redis
// itself (Options.ConfigExists) before it goes.
func (o *Orch) Sweep(ctx context.Context) error {
	var errs []error
	vrfs := o.view.ourVrfTables()
	// Destinations only (no pointer, 24 bytes each), and a destination's
	// routes copied only when stale: after a restart over 100k routes, a
	// copy of every route here was the largest part of the process's peak
	// heap, which sizes the runtime's memory for good (docs/performance.md).
	for _, d := range o.view.routeDsts() {
		p := d.dst().String()
		key := p
		if d.table() != netlinkmgr.MainTable {
			// A VRF's route: stale when its VRF is gone or no key names it.
			if vrf, ok := vrfs[d.table()]; ok {
				key = vrf + schema.ConfigSep + p
				if o.configured(schema.TableStaticRoute, key) {
					continue
				}
			}
		} else if o.configured(schema.TableStaticRoute, p) || o.configured(schema.TableStaticRoute, schema.DefaultVRF+schema.ConfigSep+p) {
			continue
		}
		for _, r := range o.view.routesFor(d.table(), d.dst()) {
			errs = append(errs, o.delRoute(key, r))
		}
	}
	errs = append(errs, o.sweepAddrs()...)
	errs = append(errs, o.sweepTuning()...)
	for _, f := range o.view.allFdbs() {
		if !f.Static || f.Local || f.Vlan == 0 {
			continue
		}
		key := schema.VlanName(int(f.Vlan)) + schema.ConfigSep + f.MAC.String()
		if !o.configured(schema.TableFDB, key) {
			errs = append(errs, o.delFdb(key, f))
		}
	}
	links, err := o.k.Links().List()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, o.sweepDevices(links)...)
	errs = append(errs, o.sweepBonds(links)...)
	errs = append(errs, o.sweepVxlan(links)...)
	errs = append(errs, o.sweepVxlanRemotes(links)...)
	br, ok, err := o.getLink(BridgeName)
	if err != nil || !ok {
		return errors.Join(append(errs, err)...)
	}
	for _, l := range links {
		switch {
		case isVlanName(l.Name) && isOurVlanDev(l, br.Index):
			if !o.configured(schema.TableVlan, l.Name) {
				errs = append(errs, o.act(schema.TableVlan, l.Name, "sweep: delete 802.1Q device "+l.Name,
					func() error { return ignoreNotFound(o.k.Links().Del(l.Name)) }))
			}
		case ownedDev(l, "vxlan"):
			// A map's device: sweepVxlan's.
		case l.MasterIdx == br.Index && l.Name != BridgeName:
			errs = append(errs, o.sweepPort(l.Name))
		}
	}
	self, err := o.bridgeSelfVids()
	if err != nil {
		if _, missing := netlinkmgr.MissingFeature(err); !missing {
			errs = append(errs, err)
		}
	}
	for vid := range self {
		name := schema.VlanName(int(vid))
		if !o.configured(schema.TableVlan, name) {
			errs = append(errs, o.delBridgeVid(name, vid))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sweep stale kernel objects: %w", err)
	}
	return nil
}

// sweepPort removes the vids of a Bridge port that no VLAN_MEMBER key
// names, and releases the port when none does.
func (o *Orch) sweepPort(port string) error {
	vl, err := o.listVids(port)
	if err != nil {
		if _, missing := netlinkmgr.MissingFeature(err); !missing {
			return err
		}
	}
	member, hadVid := false, false
	for _, v := range vl {
		if v.Link != port {
			continue
		}
		hadVid = true
		key := schema.VlanName(int(v.VID)) + schema.ConfigSep + port
		if o.configured(schema.TableVlanMember, key) {
			member = true
			continue
		}
		vid := v.VID
		if err := o.delVid(schema.TableVlanMember, key, fmt.Sprintf("sweep: delete vid %d from %s", vid, port),
			netlinkmgr.BridgeVlanInfo{Link: port, VID: vid}); err != nil {
			return err
		}
	}
	if member || !hadVid || len(o.cfg.ByIndex(schema.TableVlanMember, port)) > 0 {
		// Without a vid it never carried a VLAN of ours: enslaved by
		// hand (Bridge's vlan_default_pvid 0 gives a port no vid).
		return nil
	}
	none := ""
	return o.act(schema.TableVlanMember, port, "sweep: release "+port+" from "+BridgeName, func() error {
		return o.k.Links().Set(netlinkmgr.LinkInfo{Name: port, Master: &none})
	})
}

// sweepAddrs removes our addresses (protocol 201) that no INTERFACE or
// VLAN_INTERFACE key names.
func (o *Orch) sweepAddrs() []error {
	named := map[string]bool{}
	for _, table := range []string{schema.TableInterface, schema.TableVlanInterface, schema.TableLoopback, schema.TablePortChannelInterface} {
		for _, key := range o.cfg.Keys(table) {
			if in, err := schema.ParseInterface(table, key, nil); err == nil && !in.IsBare() {
				named[in.Name+"|"+normPrefix(in.Addr).String()] = true
			}
		}
	}
	var errs []error
	for _, a := range o.view.allAddrs() {
		if a.Protocol != netlinkmgr.ProtoSwitchyard || named[a.Link+"|"+a.Prefix.String()] {
			continue
		}
		key := a.Link + schema.ConfigSep + a.Prefix.String()
		table := intfTable(a.Link)
		if o.configured(table, key) {
			continue
		}
		errs = append(errs, o.delAddr(table, key, "sweep: delete address "+a.Prefix.String()+" dev "+a.Link, a.Link, a.Prefix))
	}
	return errs
}

// intfTable is the table whose keys configure interface name.
func intfTable(name string) string {
	switch {
	case isVlanName(name):
		return schema.TableVlanInterface
	case schema.IsLoopbackName(name):
		return schema.TableLoopback
	case schema.IsPortChannelName(name):
		return schema.TablePortChannelInterface
	}
	return schema.TableInterface
}

// sweepDevices deletes our vrf devices no VRF key names and our loopback
// dummies no LOOPBACK_INTERFACE key names, and takes out of our VRFs the
// interfaces whose bare key no longer binds them there.
func (o *Orch) sweepDevices(links []netlinkmgr.LinkInfo) []error {
	var errs []error
	ours := map[int]string{} // index → name of our vrf devices that stay
	for _, l := range links {
		switch {
		case ownedDev(l, "vrf"):
			if o.configured(schema.TableVRF, l.Name) {
				ours[l.Index] = l.Name
				continue
			}
			errs = append(errs, o.act(schema.TableVRF, l.Name, "sweep: delete vrf device "+l.Name,
				func() error { return ignoreNotFound(o.k.Links().Del(l.Name)) }))
		case ownedDev(l, "dummy") && schema.IsLoopbackName(l.Name):
			if !o.loopbackNamed(l.Name) {
				errs = append(errs, o.act(schema.TableLoopback, l.Name, "sweep: delete dummy device "+l.Name,
					func() error { return ignoreNotFound(o.k.Links().Del(l.Name)) }))
			}
		}
	}
	for _, l := range links {
		vrf, ok := ours[l.MasterIdx]
		if !ok {
			continue
		}
		table := intfTable(l.Name)
		if f, ok := o.config(table, l.Name); ok {
			if in, err := schema.ParseInterface(table, l.Name, f); err == nil && in.VRF == vrf {
				continue
			}
		}
		if o.exists != nil && o.exists(table, l.Name) {
			continue // config not read yet: its own reconcile decides
		}
		none := ""
		errs = append(errs, o.act(table, l.Name, "sweep: set "+l.Name+" nomaster (leave "+vrf+")",
			func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: l.Name, Master: &none}) }))
	}
	return errs
}
