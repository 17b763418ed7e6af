// The Fake's Links: create, set, delete, read.

package netlinkmgr

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

type fakeLinks struct{ f *Fake }

// Add creates a link; see Links.Add.
func (x fakeLinks) Add(l LinkInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	obj := "link " + l.Name
	if err := f.begin(l.addString()); err != nil {
		return opErr("add", obj, err)
	}
	if l.Name == "" || len(l.Name) > 15 {
		return opErr("add", obj, fmt.Errorf("invalid link name %q: %w", l.Name, unix.EINVAL))
	}
	if f.links[l.Name] != nil {
		return opErr("add", obj, fmt.Errorf("link already exists: %w", unix.EEXIST))
	}
	var mac net.HardwareAddr
	switch l.Kind {
	case "bridge":
		if l.Bridge != nil && (l.Bridge.VlanFiltering != nil || l.Bridge.DefaultPVID != nil) && f.unsupported["vlan_filtering"] {
			return opErr("add", obj, &FeatureError{Feature: FeatureVlanFiltering, Err: unix.EOPNOTSUPP})
		}
	case "veth":
		if l.Veth == nil || l.Veth.PeerName == "" {
			return opErr("add", obj, fmt.Errorf("veth needs a peer name: %w", unix.EINVAL))
		}
		if f.links[l.Veth.PeerName] != nil || l.Veth.PeerName == l.Name {
			return opErr("add", obj, fmt.Errorf("peer %s already exists: %w", l.Veth.PeerName, unix.EEXIST))
		}
	case "vlan":
		if l.Vlan == nil || l.Vlan.ID < 1 || l.Vlan.ID > 4094 {
			return opErr("add", obj, fmt.Errorf("vlan needs an id 1-4094: %w", unix.EINVAL))
		}
		p := f.links[l.Vlan.Parent]
		if p == nil {
			return opErr("add", obj, fmt.Errorf("parent %s: %w", l.Vlan.Parent, notFound(unix.ENODEV)))
		}
		mac = append(net.HardwareAddr(nil), p.info.MAC...)
	case "vrf", "bond", "vxlan":
		if err := f.checkNewKind(l); err != nil {
			return opErr("add", obj, err)
		}
	case "":
		return opErr("add", obj, fmt.Errorf("link kind required: %w", unix.EINVAL))
	}
	if feat := kindFeature(l.Kind); feat != "" && f.unsupported[l.Kind] {
		return opErr("add", obj, &FeatureError{Feature: feat, Err: unix.EOPNOTSUPP})
	}
	if err := f.checkSet(l, false); err != nil {
		return opErr("add", obj, err)
	}
	n := f.newLink(l.Name, l.Kind, mac)
	switch l.Kind {
	case "bridge":
		vf, pvid := false, uint16(1)
		n.info.Bridge = &BridgeOptions{VlanFiltering: &vf, DefaultPVID: &pvid}
		if !f.unsupported["vlan_filtering"] {
			f.vlans = append(f.vlans, BridgeVlanInfo{Link: l.Name, VID: 1, PVID: true, Untagged: true, Self: true})
		}
	case "veth":
		n.peer = l.Veth.PeerName
		p := f.newLink(l.Veth.PeerName, "veth", nil)
		p.peer = l.Name
		if l.MTU != nil {
			*p.info.MTU = *l.MTU
		}
	case "vlan":
		v := *l.Vlan
		n.info.Vlan = &v
		*n.info.MTU = *f.links[v.Parent].info.MTU
	case "vrf", "bond", "vxlan":
		f.initKind(n, l)
	}
	f.applySet(l)
	f.ops = append(f.ops, l.addString())
	f.emitLink(l.Name, false)
	f.addDefaultRemote(n)
	if l.Kind == "veth" {
		f.emitLink(l.Veth.PeerName, false)
	}
	return nil
}

// checkSet validates the set fields of l against the current state.
func (f *Fake) checkSet(l LinkInfo, exists bool) error {
	if l.MTU != nil && (*l.MTU < 68 || *l.MTU > 65535) {
		return fmt.Errorf("mtu %d out of range: %w", *l.MTU, unix.EINVAL)
	}
	if l.MAC != nil && len(l.MAC) != 6 {
		return fmt.Errorf("mac %s is not 6 bytes: %w", l.MAC, unix.EINVAL)
	}
	if l.Master != nil && *l.Master != "" {
		m := f.links[*l.Master]
		if m == nil {
			return fmt.Errorf("master %s: %w", *l.Master, notFound(unix.ENODEV))
		}
		if (m.info.Kind != "bridge" && m.info.Kind != "vrf" && m.info.Kind != "bond") || *l.Master == l.Name {
			return fmt.Errorf("master %s is not a bridge, vrf or bond: %w", *l.Master, unix.EOPNOTSUPP)
		}
		if exists && f.links[l.Name].info.Kind == "vrf" {
			return fmt.Errorf("a vrf device cannot be enslaved: %w", unix.EINVAL)
		}
	}
	if err := f.checkBondSet(l, exists); err != nil {
		return err
	}
	if l.Bridge != nil && (l.Bridge.VlanFiltering != nil || l.Bridge.DefaultPVID != nil) {
		if exists && f.links[l.Name].info.Kind != "bridge" {
			return fmt.Errorf("bridge options on a non-bridge: %w", unix.EOPNOTSUPP)
		}
		if f.unsupported["vlan_filtering"] {
			return &FeatureError{Feature: FeatureVlanFiltering, Err: unix.EOPNOTSUPP}
		}
	}
	return nil
}

// applySet changes the set fields of l on the stored link.
func (f *Fake) applySet(l LinkInfo) {
	n := f.links[l.Name]
	if l.MTU != nil {
		*n.info.MTU = *l.MTU
	}
	if l.MAC != nil {
		n.info.MAC = append(net.HardwareAddr(nil), l.MAC...)
	}
	if l.AdminUp != nil {
		*n.info.AdminUp = *l.AdminUp
		if !*l.AdminUp {
			f.dropRoutesVia(l.Name)
		}
	}
	if l.Alias != nil {
		*n.info.Alias = *l.Alias
	}
	f.applyBondSet(n, l)
	if l.Bridge != nil && n.info.Bridge != nil {
		if l.Bridge.VlanFiltering != nil {
			*n.info.Bridge.VlanFiltering = *l.Bridge.VlanFiltering
		}
		if l.Bridge.DefaultPVID != nil {
			*n.info.Bridge.DefaultPVID = *l.Bridge.DefaultPVID
		}
	}
	if l.Master != nil && *l.Master != *n.info.Master {
		if old := *n.info.Master; old != "" {
			f.unenslave(l.Name)
			f.emitLink(old, false)
		}
		*n.info.Master = *l.Master
		if m := *l.Master; m != "" {
			switch f.links[m].info.Kind {
			case "bridge":
				f.enslave(l.Name, m)
			case "bond":
				*n.info.MTU = *f.links[m].info.MTU
			}
		}
	}
}

func (f *Fake) enslave(port, bridge string) {
	b := f.links[bridge]
	f.fdbs = append(f.fdbs, FdbInfo{MAC: append(net.HardwareAddr(nil), f.links[port].info.MAC...),
		Link: port, Master: bridge, Local: true})
	f.emitFdb(len(f.fdbs)-1, false)
	if pvid := *b.info.Bridge.DefaultPVID; pvid != 0 && !f.unsupported["vlan_filtering"] {
		f.vlans = append(f.vlans, BridgeVlanInfo{Link: port, VID: pvid, PVID: true, Untagged: true})
		f.fdbs = append(f.fdbs, FdbInfo{MAC: append(net.HardwareAddr(nil), f.links[port].info.MAC...),
			Link: port, Master: bridge, Vlan: pvid, Local: true})
		f.emitFdb(len(f.fdbs)-1, false)
	}
	f.emitLink(bridge, false)
}

// unenslave forgets the port's bridge state (FDB entries and VLANs).
func (f *Fake) unenslave(port string) {
	f.removeFdbs(func(e FdbInfo) bool { return e.Link == port && e.Master != "" })
	f.vlans = filter(f.vlans, func(v BridgeVlanInfo) bool { return v.Link != port })
}

// Set changes the set fields of an existing link; see Links.Set.
func (x fakeLinks) Set(l LinkInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	set := l.setString()
	if set == "" {
		return nil
	}
	op := "link set " + l.Name + " " + set
	obj := "link " + l.Name
	if err := f.begin(op); err != nil {
		return opErr("set", obj, err)
	}
	if f.links[l.Name] == nil {
		return opErr("set", obj, notFound(unix.ENODEV))
	}
	if err := f.checkSet(l, true); err != nil {
		return opErr("set", obj, err)
	}
	f.applySet(l)
	f.ops = append(f.ops, op)
	f.emitLink(l.Name, false)
	if p := f.links[l.Name].peer; p != "" {
		f.emitLink(p, false)
	}
	if m := *f.links[l.Name].info.Master; m != "" {
		f.emitLink(m, false)
	}
	return nil
}

// Del deletes a link (and its veth peer); see Links.Del.
func (x fakeLinks) Del(name string) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "link del " + name
	if err := f.begin(op); err != nil {
		return opErr("del", "link "+name, err)
	}
	l := f.links[name]
	if l == nil {
		return opErr("del", "link "+name, notFound(unix.ENODEV))
	}
	f.removeLink(name)
	if l.peer != "" && f.links[l.peer] != nil {
		f.removeLink(l.peer)
	}
	f.ops = append(f.ops, op)
	return nil
}

// removeLink drops name and everything that lives on it.
func (f *Fake) removeLink(name string) {
	for n, o := range f.links {
		if *o.info.Master == name {
			f.unenslave(n)
			*o.info.Master = ""
			f.emitLink(n, false)
		}
		if o.info.Vlan != nil && o.info.Vlan.Parent == name {
			f.removeLink(n)
		}
	}
	f.unenslave(name)
	f.removeFdbs(func(e FdbInfo) bool { return e.Master == name || e.Link == name })
	f.vlans = filter(f.vlans, func(v BridgeVlanInfo) bool { return v.Link != name })
	f.dropRoutesVia(name)
	keep := f.addrs[:0]
	for _, a := range f.addrs {
		if a.Link == name {
			a := a
			f.emit(Event{Kind: EventAddr, Deleted: true, Addr: &a})
			continue
		}
		keep = append(keep, a)
	}
	f.addrs = keep
	f.neighs = filter(f.neighs, func(n NeighInfo) bool { return n.Link != name })
	ev := f.view(name)
	delete(f.links, name)
	f.emit(Event{Kind: EventLink, Deleted: true, Link: &ev})
}

// Get returns one link; see Links.Get.
func (x fakeLinks) Get(name string) (LinkInfo, error) {
	x.f.mu.Lock()
	defer x.f.mu.Unlock()
	if x.f.links[name] == nil {
		return LinkInfo{}, opErr("get", "link "+name, notFound(unix.ENODEV))
	}
	return x.f.view(name), nil
}

// Master returns the link's master's name; see Links.Master.
func (x fakeLinks) Master(name string) (string, error) {
	l, err := x.Get(name)
	if err != nil {
		return "", err
	}
	return *l.Master, nil
}

// List returns all links by index; see Links.List.
func (x fakeLinks) List() ([]LinkInfo, error) {
	x.f.mu.Lock()
	defer x.f.mu.Unlock()
	var out []LinkInfo
	for _, n := range x.f.sortedLinks() {
		out = append(out, x.f.view(n))
	}
	return out, nil
}
