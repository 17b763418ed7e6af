package netlinkmgr

import (
	"errors"
	"fmt"
	"net"
	"sort"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// --- bridge vlans ---

type realVlans struct{ k *kernel }

// vlanOp runs a bridge vlan add/del and classifies its failure: on a
// bridge (self) or a bridge port, EOPNOTSUPP/EINVAL mean the kernel lacks
// bridge VLAN filtering; elsewhere the link is simply not part of a bridge.
func (k *kernel) vlanOp(op string, v BridgeVlanInfo, do func(netlink.Link) error) error {
	k.writes.Add(1)
	obj := fmt.Sprintf("vlan %d on %s", v.VID, v.Link)
	if v.Self {
		obj += " (self)"
	}
	if v.VID < 1 || v.VID > 4094 {
		return opErr(op, obj, fmt.Errorf("vid %d out of range 1-4094: %w", v.VID, unix.EINVAL))
	}
	link, err := k.link(v.Link)
	if err != nil {
		return opErr(op, obj, err)
	}
	err = do(link)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
		_, isBridge := link.(*netlink.Bridge)
		switch {
		case v.Self && !isBridge:
			return opErr(op, obj, fmt.Errorf("%s is not a bridge (self): %w", v.Link, err))
		case !v.Self && link.Attrs().MasterIndex == 0:
			return opErr(op, obj, fmt.Errorf("%s is not a bridge port: %w", v.Link, err))
		}
		br := link
		if !v.Self {
			m, merr := k.h.LinkByIndex(link.Attrs().MasterIndex)
			if merr != nil {
				return opErr(op, obj, err)
			}
			br = m
		}
		return opErr(op, obj, vlanFilteringErr(err, lacksVlanFiltering(br)))
	}
	return opErr(op, obj, mapNotFound(err))
}

// Add adds a VLAN to a bridge port (or the bridge itself with Self), or
// updates its flags. Equivalent to:
// bridge vlan add dev LINK vid N [pvid] [untagged] [self|master]
//
// The request goes on the route socket with the link's index from the
// ifindex cache (one round trip); only a refused one is sent again the
// library's way, which looks the link up to say why.
func (x realVlans) Add(v BridgeVlanInfo) error {
	k := x.k
	if v.VID >= 1 && v.VID <= 4094 {
		err := k.withIfindex(v.Link, func(idx int) error { return k.rt.exec(vlanRequest(idx, v)) })
		if err == nil {
			k.writes.Add(1)
			return nil
		}
	}
	return x.k.vlanOp("add", v, func(l netlink.Link) error {
		return x.k.h.BridgeVlanAdd(l, v.VID, v.PVID, v.Untagged, v.Self, !v.Self)
	})
}

// maxVlanInfos bounds the VLANs of one request (8 bytes each).
const maxVlanInfos = 512

// vlanGroupRequest is vlanRequest with several VLANs of one link (all
// Self, or none) in one RTM_SETLINK: an IFLA_BRIDGE_VLAN_INFO each, in
// order. The kernel applies them in that order and then announces the
// link's VLAN list once (br_ifinfo_notify; for self also
// rtnl_bridge_notify) instead of once per VLAN. Building that
// announcement walks every VLAN of the link (br_get_link_af_size_filtered,
// br_fill_ifinfo), so one request per VLAN made a bulk of N VLANs on a
// port cost the kernel O(N²). Equivalent to bridge -batch of
// vlan add dev LINK vid N [pvid] [untagged] [self|master], one per VLAN.
func vlanGroupRequest(idx int, vs []BridgeVlanInfo) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_BRIDGE)
	msg.Index = int32(idx)
	req.AddData(msg)
	br := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	flags := uint16(nl.BRIDGE_FLAGS_MASTER)
	if len(vs) > 0 && vs[0].Self {
		flags = nl.BRIDGE_FLAGS_SELF
	}
	br.AddRtAttr(nl.IFLA_BRIDGE_FLAGS, nl.Uint16Attr(flags))
	for _, v := range vs {
		info := &nl.BridgeVlanInfo{Vid: v.VID}
		if v.PVID {
			info.Flags |= nl.BRIDGE_VLAN_INFO_PVID
		}
		if v.Untagged {
			info.Flags |= nl.BRIDGE_VLAN_INFO_UNTAGGED
		}
		br.AddRtAttr(nl.IFLA_BRIDGE_VLAN_INFO, info.Serialize())
	}
	req.AddData(br)
	return req
}

// vlanGroup is the VLANs of one link and direction (Self) that go in one
// request: their indexes in the batch, in order.
type vlanGroup struct {
	link int // ifindex
	self bool
	at   []int
}

// AddBatch adds every VLAN as Add does. The VLANs of one link go in one
// request (vlanGroupRequest, up to maxVlanInfos each), in their order;
// the requests go many per netlink message (execBatch). The links' own
// order is not kept: a link's VLANs do not depend on another link's. A
// request the kernel refuses is tried once more VLAN by VLAN (Add), which
// says which one and why (not a bridge port, no VLAN filtering...); a
// VLAN the refused request did add is added again, which changes
// nothing. Equivalent to bridge -batch of
// vlan add dev LINK vid N [pvid] [untagged] [self|master].
func (x realVlans) AddBatch(vs []BridgeVlanInfo) []error {
	k := x.k
	errs := make([]error, len(vs))
	var groups []vlanGroup
	type linkSelf struct {
		link int
		self bool
	}
	open := map[linkSelf]int{} // the group being filled of each link and direction
	drained := false           // one drain of the ifindex cache per batch
	for i, v := range vs {
		if v.VID < 1 || v.VID > 4094 {
			errs[i] = x.Add(v) // names the range
			continue
		}
		li, _, err := k.ifindexOnce(v.Link, &drained)
		k.writes.Add(1)
		if err != nil {
			errs[i] = opErr("add", fmt.Sprintf("vlan %d on %s", v.VID, v.Link), err)
			continue
		}
		key := linkSelf{li, v.Self}
		g, ok := open[key]
		if !ok || len(groups[g].at) == maxVlanInfos {
			g = len(groups)
			groups = append(groups, vlanGroup{link: li, self: v.Self})
			open[key] = g
		}
		groups[g].at = append(groups[g].at, i)
	}
	reqs := make([]*nl.NetlinkRequest, len(groups))
	buf := make([]BridgeVlanInfo, 0, maxVlanInfos)
	for g := range groups {
		buf = buf[:0]
		for _, i := range groups[g].at {
			buf = append(buf, vs[i])
		}
		reqs[g] = vlanGroupRequest(groups[g].link, buf)
	}
	for g, err := range k.rt.execBatch(reqs) {
		if err == nil {
			continue
		}
		if isNoDevice(err) {
			k.idx.forget(vs[groups[g].at[0]].Link)
		}
		for _, i := range groups[g].at {
			errs[i] = x.Add(vs[i])
		}
	}
	return errs
}

// Del removes a VLAN; ErrNotFound when absent, confirmed by listing the
// link's VLANs. Equivalent to: bridge vlan del dev LINK vid N [self|master]
func (x realVlans) Del(v BridgeVlanInfo) error {
	return confirmAbsent(x.k.vlanOp("del", v, func(l netlink.Link) error {
		return x.k.h.BridgeVlanDel(l, v.VID, false, false, v.Self, !v.Self)
	}), func() (bool, error) {
		vs, err := x.List(v.Link)
		for _, o := range vs {
			if o.VID == v.VID {
				return true, nil
			}
		}
		return false, err
	})
}

// List lists VLANs by link index then VID; entries of a bridge device are
// Self. Equivalent to: bridge vlan show [dev LINK]
func (x realVlans) List(link string) ([]BridgeVlanInfo, error) {
	k := x.k
	links, err := retryDump(func() ([]netlink.Link, error) { return k.h.LinkList() })
	if err != nil {
		return nil, opErr("list", "bridge vlans", err)
	}
	byIndex := map[int32]netlink.Link{}
	found := false
	for _, l := range links {
		byIndex[int32(l.Attrs().Index)] = l
		found = found || l.Attrs().Name == link
	}
	if link != "" && !found {
		return nil, opErr("list", "vlans of "+link, notFound(unix.ENODEV))
	}
	m, err := retryDump(func() (map[int32][]*nl.BridgeVlanInfo, error) { return k.h.BridgeVlanList() })
	if err != nil {
		return nil, opErr("list", "bridge vlans", err)
	}
	idxs := make([]int, 0, len(m))
	for idx := range m {
		idxs = append(idxs, int(idx))
	}
	sort.Ints(idxs)
	var out []BridgeVlanInfo
	for _, idx := range idxs {
		l := byIndex[int32(idx)]
		if l == nil || (link != "" && l.Attrs().Name != link) {
			continue
		}
		_, self := l.(*netlink.Bridge)
		var vs []BridgeVlanInfo
		for _, e := range m[int32(idx)] {
			vs = append(vs, BridgeVlanInfo{Link: l.Attrs().Name, VID: e.Vid, PVID: e.PortVID(), Untagged: e.EngressUntag(), Self: self})
		}
		sortVlans(vs)
		out = append(out, vs...)
	}
	return out, nil
}

// --- fdb ---

type realFdbs struct{ k *kernel }

func fdbNeigh(idx int, e FdbInfo) *netlink.Neigh {
	return &netlink.Neigh{
		LinkIndex: idx, Family: unix.AF_BRIDGE, Flags: netlink.NTF_MASTER,
		State: netlink.NUD_NOARP, HardwareAddr: e.MAC, Vlan: int(e.Vlan),
	}
}

// Add adds or replaces a static entry on a bridge port. Equivalent to:
// bridge fdb replace MAC dev LINK master static [vlan N]
func (x realFdbs) Add(e FdbInfo) error {
	k := x.k
	k.writes.Add(1)
	return fdbAddErr(e, k.withIfindex(e.Link, func(idx int) error { return k.h.NeighSet(fdbNeigh(idx, e)) }))
}

// fdbRequest encodes e as the library's NeighSet of fdbNeigh does
// (RTM_NEWNEIGH, NLM_F_CREATE|NLM_F_REPLACE|NLM_F_ACK).
func fdbRequest(idx int, e FdbInfo) *nl.NetlinkRequest {
	n := fdbNeigh(idx, e)
	req := nl.NewNetlinkRequest(unix.RTM_NEWNEIGH, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
	req.AddData(&netlink.Ndmsg{
		Family: uint8(n.Family), Index: uint32(n.LinkIndex), State: uint16(n.State), Flags: uint8(n.Flags),
	})
	req.AddData(nl.NewRtAttr(unix.NDA_DST, nil))
	req.AddData(nl.NewRtAttr(unix.NDA_LLADDR, []byte(n.HardwareAddr)))
	if n.Vlan != 0 {
		req.AddData(nl.NewRtAttr(unix.NDA_VLAN, nl.Uint16Attr(uint16(n.Vlan))))
	}
	return req
}

func fdbAddErr(e FdbInfo, err error) error {
	if err == nil {
		return nil // no message built for the entries that went in
	}
	if e.Vlan != 0 && errors.Is(err, unix.EINVAL) {
		err = fmt.Errorf("vlan %d not configured on %s (bridge vlan add): %w", e.Vlan, e.Link, err)
	}
	return opErr("add", "fdb "+e.String(), err)
}

// AddBatch adds every entry as Add does, sending the requests many per
// netlink message on the route socket, encoded straight into the send
// buffer (appendFdbMsg, execEncoded in batch.go). A watch with
// OmitOwnFdbWrites does not hear the entries' echoes (fdbecho.go).
// Equivalent to bridge -batch of fdb replace.
func (x realFdbs) AddBatch(es []FdbInfo) []error {
	k := x.k
	errs := make([]error, len(es))
	idx := make([]int, 0, len(es)) // the requests' entries
	lis := make([]int, 0, len(es)) // their ports' ifindexes
	cached := make([]bool, len(es))
	drained := false // one drain of the ifindex cache per batch
	for i, e := range es {
		k.writes.Add(1)
		li, c, err := k.ifindexOnce(e.Link, &drained)
		if err != nil {
			errs[i] = fdbAddErr(e, err)
			continue
		}
		cached[i] = c
		idx, lis = append(idx, i), append(lis, li)
	}
	k.echoes.expect(es, idx, lis) // OmitOwnFdbWrites
	res := k.rt.execEncoded(len(idx), func(j int, b []byte, seq uint32) []byte {
		return appendFdbMsg(b, seq, lis[j], &es[idx[j]])
	}, nil)
	for j, err := range res {
		i := idx[j]
		if err != nil {
			k.echoes.failed(lis[j], &es[i])
		}
		if cached[i] && isNoDevice(err) {
			e := es[i]
			k.idx.forget(e.Link)
			err = k.withIfindex(e.Link, func(li int) error { return k.rt.exec(fdbRequest(li, e)) })
		}
		errs[i] = fdbAddErr(es[i], err)
	}
	return errs
}

// Del removes an entry; ErrNotFound when absent, confirmed by listing the
// entries. Equivalent to: bridge fdb del MAC dev LINK master [vlan N]
func (x realFdbs) Del(e FdbInfo) error {
	k := x.k
	k.writes.Add(1)
	obj := "fdb " + e.String()
	err := mapNotFound(k.withIfindex(e.Link, func(idx int) error {
		n := fdbNeigh(idx, e)
		n.State = 0
		return k.h.NeighDel(n)
	}))
	return opErr("del", obj, confirmAbsent(err, func() (bool, error) {
		fs, err := x.List("")
		for _, o := range fs {
			if o.Link == e.Link && o.Vlan == e.Vlan && macEq(o.MAC, e.MAC) && o.Master != "" {
				return true, nil
			}
		}
		return false, err
	}))
}

func macEq(a, b net.HardwareAddr) bool { return a.String() == b.String() }

// List lists AF_BRIDGE entries whose master is bridge ("" = all, including
// ports' own "self" entries, whose Master is ""). Equivalent to:
// bridge fdb show [br B]
func (x realFdbs) List(bridge string) ([]FdbInfo, error) {
	k := x.k
	names, err := k.linkNames()
	if err != nil {
		return nil, opErr("list", "fdb", err)
	}
	if bridge != "" && !hasName(names, bridge) {
		return nil, opErr("list", "fdb of "+bridge, notFound(unix.ENODEV))
	}
	ns, err := retryDump(func() ([]netlink.Neigh, error) { return k.h.NeighList(0, unix.AF_BRIDGE) })
	if err != nil {
		return nil, opErr("list", "fdb", err)
	}
	var out []FdbInfo
	for _, n := range ns {
		e := toFdbInfo(n, names)
		if bridge == "" || e.Master == bridge {
			out = append(out, e)
		}
	}
	return out, nil
}

func hasName(names map[int]string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func toFdbInfo(n netlink.Neigh, names map[int]string) FdbInfo {
	return FdbInfo{
		MAC: n.HardwareAddr, Link: names[n.LinkIndex], Master: names[n.MasterIndex], Vlan: uint16(n.Vlan),
		Static: n.State&netlink.NUD_NOARP != 0, Local: n.State&netlink.NUD_PERMANENT != 0,
		Dst: ipToAddr(n.IP),
	}
}

// --- neighbours ---

type realNeighs struct{ k *kernel }

// List lists IPv4 and IPv6 neighbours of link ("" = all), leaving out
// NOARP entries as ip(8) does. Equivalent to: ip neigh show [dev LINK]
func (x realNeighs) List(link string) ([]NeighInfo, error) {
	k := x.k
	names, err := k.linkNames()
	if err != nil {
		return nil, opErr("list", "neighbours", err)
	}
	idx := 0
	if link != "" {
		for i, n := range names {
			if n == link {
				idx = i
			}
		}
		if idx == 0 {
			return nil, opErr("list", "neighbours of "+link, notFound(unix.ENODEV))
		}
	}
	var out []NeighInfo
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		ns, err := retryDump(func() ([]netlink.Neigh, error) { return k.h.NeighList(idx, fam) })
		if err != nil {
			return nil, opErr("list", "neighbours", err)
		}
		for _, n := range ns {
			if n.State&netlink.NUD_NOARP != 0 || n.IP == nil {
				continue
			}
			out = append(out, toNeighInfo(n, names))
		}
	}
	return out, nil
}

func toNeighInfo(n netlink.Neigh, names map[int]string) NeighInfo {
	return NeighInfo{Link: names[n.LinkIndex], IP: ipToAddr(n.IP), MAC: n.HardwareAddr, State: nudName(n.State)}
}

// nudName is ip(8)'s word for a neighbour state, lowercased.
func nudName(s int) string {
	switch {
	case s&netlink.NUD_PERMANENT != 0:
		return "permanent"
	case s&netlink.NUD_NOARP != 0:
		return "noarp"
	case s&netlink.NUD_REACHABLE != 0:
		return "reachable"
	case s&netlink.NUD_STALE != 0:
		return "stale"
	case s&netlink.NUD_DELAY != 0:
		return "delay"
	case s&netlink.NUD_PROBE != 0:
		return "probe"
	case s&netlink.NUD_FAILED != 0:
		return "failed"
	case s&netlink.NUD_INCOMPLETE != 0:
		return "incomplete"
	}
	return "none"
}
