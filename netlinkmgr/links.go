package netlinkmgr

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

type realLinks struct{ k *kernel }

// Add creates a link with its set fields in one RTM_NEWLINK (the alias
// needs a second request). Equivalent to:
//
//	ip link add NAME [mtu N] [address M] [up] [master B] type bridge [vlan_filtering 0|1] [vlan_default_pvid N]
//	ip link add NAME type veth peer name PEER
//	ip link add link PARENT name NAME type vlan id ID
//	ip link add NAME type dummy
//	ip link add NAME type vrf table T
//	ip link add NAME type bond mode M [miimon N] [min_links N] [lacp_rate R]
//	ip link add NAME type vxlan id VNI [local L] [remote R] dstport P [no]learning
//
// A link is enslaved to a bridge, a vrf device or a bond alike with Master
// (ip link set NAME master M), at Add or by Set.
func (x realLinks) Add(l LinkInfo) error {
	k := x.k
	if plainVlan(&l) {
		return k.addVlans([]LinkInfo{l})[0] // one request, the parent's index cached
	}
	if plainBond(&l) {
		return k.addBond(l) // linkset.go: no lookups
	}
	k.writes.Add(1)
	obj := "link " + l.Name
	if l.Kind != "" {
		obj += " type " + l.Kind
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.Name
	if l.MTU != nil {
		attrs.MTU = *l.MTU
	}
	if l.MAC != nil {
		attrs.HardwareAddr = l.MAC
	}
	if l.AdminUp != nil && *l.AdminUp {
		attrs.Flags |= net.FlagUp
	}
	if l.Master != nil && *l.Master != "" {
		m, err := k.link(*l.Master)
		if err != nil {
			return opErr("add", obj, fmt.Errorf("master %s: %w", *l.Master, err))
		}
		attrs.MasterIndex = m.Attrs().Index
	}
	var link netlink.Link
	vlanOpts := false
	switch l.Kind {
	case "bridge":
		br := &netlink.Bridge{LinkAttrs: attrs}
		if l.Bridge != nil {
			br.VlanFiltering, br.VlanDefaultPVID = l.Bridge.VlanFiltering, l.Bridge.DefaultPVID
			vlanOpts = br.VlanFiltering != nil || br.VlanDefaultPVID != nil
		}
		link = br
	case "veth":
		if l.Veth == nil || l.Veth.PeerName == "" {
			return opErr("add", obj, fmt.Errorf("veth needs a peer name: %w", unix.EINVAL))
		}
		link = &netlink.Veth{LinkAttrs: attrs, PeerName: l.Veth.PeerName}
	case "vlan":
		if l.Vlan == nil || l.Vlan.ID < 1 || l.Vlan.ID > 4094 {
			return opErr("add", obj, fmt.Errorf("vlan needs an id 1-4094: %w", unix.EINVAL))
		}
		p, err := k.link(l.Vlan.Parent)
		if err != nil {
			return opErr("add", obj, fmt.Errorf("parent %s: %w", l.Vlan.Parent, err))
		}
		attrs.ParentIndex = p.Attrs().Index
		link = &netlink.Vlan{LinkAttrs: attrs, VlanId: l.Vlan.ID, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}
	case "dummy":
		link = &netlink.Dummy{LinkAttrs: attrs}
	case "vrf":
		if l.Vrf == nil || !validVrfTable(l.Vrf.Table) {
			return opErr("add", obj, fmt.Errorf("vrf needs a table other than 0, 253-255: %w", unix.EINVAL))
		}
		link = &netlink.Vrf{LinkAttrs: attrs, Table: l.Vrf.Table}
	case "bond":
		b, err := newBond(attrs, l.Bond)
		if err != nil {
			return opErr("add", obj, err)
		}
		link = b
	case "vxlan":
		v, err := newVxlan(attrs, l.Vxlan)
		if err != nil {
			return opErr("add", obj, err)
		}
		link = v
	case "":
		return opErr("add", obj, fmt.Errorf("link kind required: %w", unix.EINVAL))
	default:
		link = &netlink.GenericLink{LinkAttrs: attrs, LinkType: l.Kind}
	}
	if err := k.h.LinkAdd(link); err != nil {
		if vlanOpts {
			// No bridge to ask yet: EOPNOTSUPP here can only be the option.
			if errors.Is(err, unix.EOPNOTSUPP) {
				return opErr("add", obj, &FeatureError{Feature: FeatureVlanFiltering, Err: err})
			}
		}
		return opErr("add", obj, mapLinkAddErr(l.Kind, err))
	}
	if l.Alias != nil && *l.Alias != "" {
		if err := k.h.LinkSetAlias(link, *l.Alias); err != nil {
			return opErr("set", "link "+l.Name+" alias", err)
		}
	}
	return nil
}

// Set changes the set fields of an existing link, one request per field
// (down directly followed by a master is one: ip link set NAME down
// master M); admin down goes first and admin up last, so a link comes up
// configured. Equivalent to:
//
//	ip link set NAME [down] [mtu N] [address M] [master B|nomaster] [alias A] [up]
//	ip link set NAME type bridge [vlan_filtering 0|1] [vlan_default_pvid N]
//	ip link set NAME type bond [miimon N] [min_links N] [lacp_rate slow|fast]
//
// Bond options are sent after admin down and before admin up, so a
// lacp_rate change (which the kernel takes only while the bond is down)
// can be one Set with AdminUp false then another with AdminUp true.
func (x realLinks) Set(l LinkInfo) error {
	k := x.k
	if !l.hasSet() {
		return nil
	}
	k.writes.Add(1)
	if simpleSet(&l) {
		return k.setSimple(l) // linkset.go: no lookups
	}
	link, err := k.link(l.Name)
	if err != nil {
		return opErr("set", "link "+l.Name, err)
	}
	fail := func(what string, err error) error { return opErr("set", "link "+l.Name+" "+what, err) }
	if l.AdminUp != nil && !*l.AdminUp {
		if err := k.h.LinkSetDown(link); err != nil {
			return fail("down", err)
		}
	}
	if l.MTU != nil {
		if err := k.h.LinkSetMTU(link, *l.MTU); err != nil {
			return fail(fmt.Sprintf("mtu %d", *l.MTU), err)
		}
	}
	if l.MAC != nil {
		if err := k.h.LinkSetHardwareAddr(link, l.MAC); err != nil {
			return fail("address "+l.MAC.String(), err)
		}
	}
	if l.Master != nil {
		if *l.Master == "" {
			if err := k.h.LinkSetNoMaster(link); err != nil {
				return fail("nomaster", err)
			}
		} else {
			m, err := k.link(*l.Master)
			if err != nil {
				return fail("master "+*l.Master, err)
			}
			if err := k.h.LinkSetMasterByIndex(link, m.Attrs().Index); err != nil {
				return fail("master "+*l.Master, err)
			}
		}
	}
	if l.Alias != nil {
		if err := k.h.LinkSetAlias(link, *l.Alias); err != nil {
			return fail("alias", err)
		}
	}
	if b := l.Bridge; b != nil && (b.VlanFiltering != nil || b.DefaultPVID != nil) {
		what := "type bridge"
		if b.VlanFiltering != nil {
			what += " vlan_filtering " + boolDigit(*b.VlanFiltering)
		}
		if b.DefaultPVID != nil {
			what += fmt.Sprintf(" vlan_default_pvid %d", *b.DefaultPVID)
		}
		if _, ok := link.(*netlink.Bridge); !ok {
			return fail(what, fmt.Errorf("not a bridge (kind %s): %w", link.Type(), unix.EOPNOTSUPP))
		}
		if err := k.setBridgeOptions(link.Attrs().Index, b); err != nil {
			return fail(what, vlanFilteringErr(err, lacksVlanFiltering(link)))
		}
	}
	if b := l.Bond; b != nil && b.setString() != "" {
		if _, ok := link.(*netlink.Bond); !ok {
			return fail("type bond", fmt.Errorf("not a bond (kind %s): %w", link.Type(), unix.EOPNOTSUPP))
		}
		if err := k.setBondOptions(link.Attrs().Index, b); err != nil {
			return fail("type bond "+b.setString(), err)
		}
	}
	if l.AdminUp != nil && *l.AdminUp {
		if err := k.h.LinkSetUp(link); err != nil {
			return fail("up", err)
		}
	}
	return nil
}

// Del deletes a link (a veth takes its peer along); ErrNotFound when
// absent, confirmed by a read. Equivalent to: ip link del NAME
func (x realLinks) Del(name string) error {
	k := x.k
	k.writes.Add(1)
	link, err := k.link(name)
	if err != nil {
		return opErr("del", "link "+name, err)
	}
	if err := k.h.LinkDel(link); err != nil {
		return opErr("del", "link "+name, confirmAbsent(mapNotFound(err), func() (bool, error) {
			l, err := k.link(name)
			return err == nil && l.Attrs().Index == link.Attrs().Index, err
		}))
	}
	return nil
}

// Get returns one link. Equivalent to: ip -d -s link show NAME
func (x realLinks) Get(name string) (LinkInfo, error) {
	k := x.k
	link, err := k.linkLearned(name)
	if err != nil {
		return LinkInfo{}, opErr("get", "link "+name, err)
	}
	a := link.Attrs()
	names := map[int]string{a.Index: a.Name}
	idxs := []int{a.MasterIndex}
	if a.NetNsID < 0 { // a parent/peer in another namespace has no name here
		idxs = append(idxs, a.ParentIndex)
	}
	for _, idx := range idxs {
		if idx != 0 && names[idx] == "" {
			// The ifindex cache first (a bond master's RTM_GETLINK
			// answer is parsed in full by the library).
			if n := k.nameOf(idx); n != "" {
				names[idx] = n
			} else if o, err := k.h.LinkByIndex(idx); err == nil {
				names[idx] = o.Attrs().Name
			}
		}
	}
	return toLinkInfo(link, names), nil
}

// linkLearned is k.link(name) whose answer the ifindex cache learns, as
// ifindexOnce's lookup does: after a drain, under the cache's mutex, so a
// later change of the link is a later message. A port read before it is
// written (a member's enslave reads the port, then sets it by index)
// costs one RTM_GETLINK, not two.
func (k *kernel) linkLearned(name string) (netlink.Link, error) {
	c := &k.idx
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		return k.link(name)
	}
	c.drain()
	l, err := k.link(name)
	if err != nil {
		return nil, err
	}
	c.relearn(l.Attrs().Index, []byte(name), l.Attrs().MasterIndex)
	return l, nil
}

// Master returns the name of link name's master ("" when it has none);
// ErrNotFound if the link is absent. Equivalent to:
// ip -j link show NAME (its "master"). The ifindex cache answers it
// without a request when it knows the link and its master (from their
// link messages, a lookup or a List); otherwise it is Get's read.
func (x realLinks) Master(name string) (string, error) {
	if m, ok := x.k.idx.masterOf(name); ok {
		return m, nil
	}
	l, err := x.Get(name)
	if err != nil {
		return "", err
	}
	return *l.Master, nil
}

// listLearned dumps the links and teaches the ifindex cache their names
// and masters (learnDump): the dump runs under the cache's mutex, so no
// drain comes between it and the learning. A member's enslave after
// orchagent's start (Prime lists the links) then reads no port.
func (k *kernel) listLearned() ([]netlink.Link, error) {
	c := &k.idx
	c.mu.Lock()
	defer c.mu.Unlock()
	links, err := retryDump(func() ([]netlink.Link, error) { return k.h.LinkList() })
	if err == nil && c.sock != nil {
		c.learnDump(links)
	}
	return links, err
}

// List returns all links by index. Equivalent to: ip -d -s link show
func (x realLinks) List() ([]LinkInfo, error) {
	links, err := x.k.listLearned()
	if err != nil {
		return nil, opErr("list", "links", err)
	}
	names := make(map[int]string, len(links))
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	out := make([]LinkInfo, 0, len(links))
	for _, l := range links {
		out = append(out, toLinkInfo(l, names))
	}
	return out, nil
}

// toLinkInfo converts a netlink link; names resolves master/parent indexes.
func toLinkInfo(link netlink.Link, names map[int]string) LinkInfo {
	a := link.Attrs()
	mtu, up, master, alias := a.MTU, a.Flags&net.FlagUp != 0, names[a.MasterIndex], a.Alias
	l := LinkInfo{
		Name: a.Name, Index: a.Index, Kind: link.Type(),
		MTU: &mtu, MAC: append(net.HardwareAddr(nil), a.HardwareAddr...), AdminUp: &up,
		Master: &master, Alias: &alias,
		OperState: operStateName(a.OperState), MasterIdx: a.MasterIndex, ParentIdx: a.ParentIndex,
	}
	if l.Kind == "device" {
		l.Kind = ""
	}
	l.OperUp = a.OperState == netlink.OperUp ||
		(a.OperState == netlink.OperUnknown && a.RawFlags&unix.IFF_RUNNING != 0)
	switch t := link.(type) {
	case *netlink.Bridge:
		vf := t.VlanFiltering != nil && *t.VlanFiltering
		l.Bridge = &BridgeOptions{VlanFiltering: &vf}
		if t.VlanDefaultPVID != nil {
			pvid := *t.VlanDefaultPVID
			l.Bridge.DefaultPVID = &pvid
		}
	case *netlink.Vlan:
		l.Vlan = &VlanOptions{ID: t.VlanId}
		if a.NetNsID < 0 {
			l.Vlan.Parent = names[a.ParentIndex]
		}
	case *netlink.Vrf:
		l.Vrf = &VrfOptions{Table: t.Table}
	case *netlink.Bond:
		l.Bond = bondInfo(t)
	case *netlink.Vxlan:
		l.Vxlan = vxlanInfo(t)
	case *netlink.Veth:
		if p := names[a.ParentIndex]; p != "" && a.NetNsID < 0 {
			l.Veth = &VethOptions{PeerName: p}
		}
	}
	if bs, ok := a.Slave.(*netlink.BondSlave); ok {
		l.BondSlave = bondSlaveInfo(bs)
	}
	if s := a.Statistics; s != nil {
		l.Stats = &LinkStats{
			RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			RxErrors: s.RxErrors, TxErrors: s.TxErrors, RxDropped: s.RxDropped, TxDropped: s.TxDropped,
			Multicast: s.Multicast,
		}
	}
	return l
}

// validVrfTable: a vrf device may not use RT_TABLE_UNSPEC, nor the
// default (253), main (254) or local (255) tables.
func validVrfTable(t uint32) bool { return t != 0 && (t < 253 || t > 255) }

// operStateName is iproute2's operstate word, lowercased (RFC 2863).
func operStateName(s netlink.LinkOperState) string {
	switch s {
	case netlink.OperNotPresent:
		return "notpresent"
	case netlink.OperDown:
		return "down"
	case netlink.OperLowerLayerDown:
		return "lowerlayerdown"
	case netlink.OperTesting:
		return "testing"
	case netlink.OperDormant:
		return "dormant"
	case netlink.OperUp:
		return "up"
	}
	return "unknown"
}

// linkOptionsRequest starts an RTM_NEWLINK for ifindex index that carries
// only IFLA_LINKINFO with kind and an empty IFLA_INFO_DATA, for the caller
// to fill with the options to set and then add info to req.
func (k *kernel) linkOptionsRequest(index int, kind string) (*nl.NetlinkRequest, *nl.RtAttr, *nl.RtAttr) {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: k.raw}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
	return req, info, info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
}

// setBridgeOptions sends one RTM_NEWLINK carrying only the ifindex and the
// bridge options, as "ip link set NAME type bridge ..." does. The library
// cannot: BridgeSetVlanFiltering resends every attribute read back, and
// even LinkModify always adds IFLA_IFNAME, which 6.1 treats as a rename of
// an up device (EBUSY) before noticing the name is unchanged.
func (k *kernel) setBridgeOptions(index int, b *BridgeOptions) error {
	req, info, data := k.linkOptionsRequest(index, "bridge")
	if b.VlanFiltering != nil {
		v := byte(0)
		if *b.VlanFiltering {
			v = 1
		}
		data.AddRtAttr(nl.IFLA_BR_VLAN_FILTERING, []byte{v})
	}
	if b.DefaultPVID != nil {
		data.AddRtAttr(nl.IFLA_BR_VLAN_DEFAULT_PVID, nl.Uint16Attr(*b.DefaultPVID))
	}
	req.AddData(info)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
