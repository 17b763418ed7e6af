package orchagent

import (
	"net"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// The VLAN and VLAN_MEMBER paths read links and bridge VLANs from the
// kernel view instead of the kernel: a Links().Get is a netlink round trip
// (two when the link has a master or a parent) whose answer is parsed in
// full, and a bulk of VLANs made those reads most of the daemon's time.
// The view follows the kernel's link events, so it can lag behind: it is
// a hint that decides which write to try, and the kernel has the last
// word — a VLAN device the view does not know yet fails its create with
// EEXIST and is then read from the kernel; one the view shows as not ours
// is read from the kernel before the key says so.

// viewLink returns what the view knows of link name, as a LinkInfo with
// Name, Index, Kind, MTU, MAC, AdminUp, MasterIdx, ParentIdx, Vlan.ID
// and Bridge.VlanFiltering set.
func (v *kernelView) viewLink(name string) (netlinkmgr.LinkInfo, bool) {
	v.mu.Lock()
	s, ok := v.links[name]
	v.mu.Unlock()
	if !ok {
		return netlinkmgr.LinkInfo{}, false
	}
	mtu, up, filtering := s.mtu, s.admin, s.filtering
	l := netlinkmgr.LinkInfo{Name: name, Index: s.index, Kind: s.kind, MTU: &mtu, AdminUp: &up,
		MasterIdx: s.masterIdx, ParentIdx: s.parentIdx}
	l.MAC, _ = net.ParseMAC(s.mac)
	if s.kind == "vlan" {
		l.Vlan = &netlinkmgr.VlanOptions{ID: s.vlanID}
	}
	if s.kind == "bridge" {
		l.Bridge = &netlinkmgr.BridgeOptions{VlanFiltering: &filtering}
	}
	return l, true
}

// notedMaster records our own enslavement of link to the link with index
// master (0: released), so the next member key of the port in the same
// pass does not enslave it again. Its bridge VLANs are forgotten, as a
// link event with a new master does.
func (v *kernelView) notedMaster(link string, master int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.links[link]
	if !ok || s.masterIdx == master {
		return
	}
	s.masterIdx = master
	v.links[link] = s
	delete(v.vids, link)
	v.vidsEpoch[link]++
}

// vidOf returns vid on link (its flags) from the view, listing link's
// bridge VLANs first when the view does not know them yet.
func (o *Orch) vidOf(link string, vid uint16) (netlinkmgr.BridgeVlanInfo, bool, error) {
	v := o.view
	v.mu.Lock()
	if m, ok := v.vids[link]; ok {
		x, has := m[vid]
		v.mu.Unlock()
		return x, has, nil
	}
	v.mu.Unlock()
	vl, err := o.listVids(link)
	if err != nil {
		return netlinkmgr.BridgeVlanInfo{}, false, err
	}
	for _, x := range vl {
		if x.Link == link && x.VID == vid {
			return x, true, nil
		}
	}
	return netlinkmgr.BridgeVlanInfo{}, false, nil
}

// linkOf is a link from the view, else from the kernel (getLink): a link
// the view does not show may be one whose event is still on its way.
func (o *Orch) linkOf(name string) (netlinkmgr.LinkInfo, bool, error) {
	if l, ok := o.view.viewLink(name); ok {
		return l, true, nil
	}
	return o.getLink(name)
}
