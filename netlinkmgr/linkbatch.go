package netlinkmgr

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// 802.1Q devices without the library: the request is built here and sent
// on the route socket (batch.go), the parent's index comes from the
// ifindex cache. The library's LinkAdd costs three round trips for one
// device — the parent looked up by name, the RTM_NEWLINK, then a lookup of
// the new device's own name (ensureIndex) — each answer parsed in full;
// on a bulk of VLANs the lookups were most of the daemon's time.

// vlanLinkRequest encodes l (kind vlan on the link with index parent) as
// the library's LinkAdd does: RTM_NEWLINK NLM_F_CREATE|NLM_F_EXCL with
// IFLA_IFNAME, [IFLA_MTU], [IFLA_ADDRESS], IFLA_LINK and IFLA_LINKINFO
// (kind "vlan", IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL 802.1Q); admin up is
// IFF_UP in the ifinfomsg.
func vlanLinkRequest(l LinkInfo, parent int) *nl.NetlinkRequest {
	req := newLinkRequest(&l)
	req.AddData(nl.NewRtAttr(unix.IFLA_LINK, nl.Uint32Attr(uint32(parent))))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("vlan"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_VLAN_ID, nl.Uint16Attr(uint16(l.Vlan.ID)))
	proto := make([]byte, 2)
	binary.BigEndian.PutUint16(proto, unix.ETH_P_8021Q)
	data.AddRtAttr(nl.IFLA_VLAN_PROTOCOL, proto)
	req.AddData(info)
	return req
}

// newLinkRequest starts the create of l as the library's LinkAdd does:
// RTM_NEWLINK NLM_F_CREATE|NLM_F_EXCL with IFLA_IFNAME, [IFLA_MTU] and
// [IFLA_ADDRESS]; admin up is IFF_UP in the ifinfomsg. The caller adds
// its kind's attributes.
func newLinkRequest(l *LinkInfo) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	if l.AdminUp != nil && *l.AdminUp {
		msg.Flags |= unix.IFF_UP
		msg.Change |= unix.IFF_UP
	}
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(l.Name)))
	if l.MTU != nil {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(*l.MTU))))
	}
	if l.MAC != nil {
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(l.MAC)))
	}
	return req
}

// plainVlan reports whether l is an 802.1Q device Add can create in one
// request of its own (an alias or a master needs more).
func plainVlan(l *LinkInfo) bool {
	return l.Kind == "vlan" && l.Vlan != nil && l.Vlan.ID >= 1 && l.Vlan.ID <= 4094 && l.Vlan.Parent != "" &&
		(l.Alias == nil || *l.Alias == "") && (l.Master == nil || *l.Master == "")
}

// addVlans creates the plain 802.1Q devices ls (plainVlan), many
// requests per netlink message; errs[i] is ls[i]'s error, as Add says it.
func (k *kernel) addVlans(ls []LinkInfo) []error {
	errs := make([]error, len(ls))
	reqs := make([]*nl.NetlinkRequest, 0, len(ls))
	idx := make([]int, 0, len(ls))
	cached := make([]bool, len(ls))
	drained := false // one drain of the ifindex cache per batch
	for i := range ls {
		k.writes.Add(1)
		p, c, err := k.ifindexOnce(ls[i].Vlan.Parent, &drained)
		if err != nil {
			errs[i] = opErr("add", "link "+ls[i].Name+" type vlan", fmt.Errorf("parent %s: %w", ls[i].Vlan.Parent, err))
			continue
		}
		cached[i] = c
		reqs = append(reqs, vlanLinkRequest(ls[i], p))
		idx = append(idx, i)
	}
	for j, err := range k.rt.execBatch(reqs) {
		i := idx[j]
		l := ls[i]
		if err != nil && cached[i] && isNoDevice(err) {
			// The cached parent is gone: once more with a fresh lookup.
			k.idx.forget(l.Vlan.Parent)
			p, _, lerr := k.ifindex(l.Vlan.Parent)
			if lerr != nil {
				errs[i] = opErr("add", "link "+l.Name+" type vlan", fmt.Errorf("parent %s: %w", l.Vlan.Parent, lerr))
				continue
			}
			err = k.rt.exec(vlanLinkRequest(l, p))
		}
		if err != nil {
			errs[i] = opErr("add", "link "+l.Name+" type vlan", mapLinkAddErr("vlan", err))
		}
	}
	return errs
}

// AddBatch adds every link as Add does; plain 802.1Q devices (no alias,
// no master) go many per netlink message, the others one Add each, in
// order. Equivalent to ip -batch of
// link add link PARENT name NAME [mtu N] [address M] [up] type vlan id ID.
func (x realLinks) AddBatch(ls []LinkInfo) []error {
	errs := make([]error, len(ls))
	for start := 0; start < len(ls); {
		end := start
		for end < len(ls) && plainVlan(&ls[end]) {
			end++
		}
		if end > start {
			copy(errs[start:end], x.k.addVlans(ls[start:end]))
			start = end
			continue
		}
		errs[start] = x.Add(ls[start])
		start++
	}
	return errs
}

// AddBatch is Add of each link in order; see Links.AddBatch.
func (x fakeLinks) AddBatch(ls []LinkInfo) []error {
	errs := make([]error, len(ls))
	for i, l := range ls {
		errs[i] = x.Add(l)
	}
	return errs
}
