package netlinkmgr

import (
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Link changes and bond creation without the library's lookups. The
// library's LinkSet* take a netlink.Link, so every Set began with a
// LinkByName (an RTM_GETLINK whose answer, for a bond or a bond's port,
// is parsed in full) and a second one for a master; its LinkAdd of a bond
// costs a lookup of the new device's own name afterwards (ensureIndex)
// and its alias a request of its own. Here the link's index comes from
// the ifindex cache and each change is one RTM_SETLINK on the route
// socket, as ip link set sends it; a bond is one RTM_NEWLINK plus, when
// it has an alias, one RTM_SETLINK by name once the create succeeded.

// simpleSet reports whether Set can send l without reading the link
// first: no bridge or bond options (those check the link's kind).
func simpleSet(l *LinkInfo) bool {
	return (l.Bridge == nil || (l.Bridge.VlanFiltering == nil && l.Bridge.DefaultPVID == nil)) &&
		(l.Bond == nil || l.Bond.setString() == "")
}

// setLinkRequest is an RTM_SETLINK of ifindex idx; fill adds to the
// ifinfomsg and the request's attributes.
func setLinkRequest(idx int, fill func(msg *nl.IfInfomsg, req *nl.NetlinkRequest)) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(idx)
	req.AddData(msg)
	fill(msg, req)
	return req
}

// setSimple is Set of a simpleSet l: one request per field, in Set's
// order (down, mtu, address, master, alias, up), stopping at the first
// error; down directly followed by a master is one request. A cached
// index the kernel refuses (ENODEV: the link, or the master, went away)
// is looked up once more.
func (k *kernel) setSimple(l LinkInfo) error {
	fail := func(what string, err error) error { return opErr("set", "link "+l.Name+" "+what, err) }
	idx, cached, err := k.ifindex(l.Name)
	if err != nil {
		return opErr("set", "link "+l.Name, err)
	}
	// send runs one change of the link; on ENODEV from a cached index
	// it retries with a fresh one.
	send := func(fill func(msg *nl.IfInfomsg, req *nl.NetlinkRequest)) error {
		err := k.rt.exec(setLinkRequest(idx, fill))
		if cached && isNoDevice(err) {
			k.idx.forget(l.Name)
			if idx, _, err = k.ifindex(l.Name); err != nil {
				return err
			}
			cached = false
			err = k.rt.exec(setLinkRequest(idx, fill))
		}
		return err
	}
	flags := func(up bool) func(msg *nl.IfInfomsg, _ *nl.NetlinkRequest) {
		return func(msg *nl.IfInfomsg, _ *nl.NetlinkRequest) {
			msg.Change = unix.IFF_UP
			if up {
				msg.Flags = unix.IFF_UP
			}
		}
	}
	// down and master with nothing between them are one request: the
	// kernel applies the flags before IFLA_MASTER (do_setlink), as ip
	// link set NAME down master M does.
	downMaster := l.AdminUp != nil && !*l.AdminUp && l.MTU == nil && l.MAC == nil && l.Master != nil && *l.Master != ""
	if l.AdminUp != nil && !*l.AdminUp && !downMaster {
		if err := send(flags(false)); err != nil {
			return fail("down", err)
		}
	}
	if l.MTU != nil {
		mtu := uint32(*l.MTU)
		if err := send(func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(mtu)))
		}); err != nil {
			return fail(fmt.Sprintf("mtu %d", *l.MTU), err)
		}
	}
	if l.MAC != nil {
		mac := l.MAC
		if err := send(func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(mac)))
		}); err != nil {
			return fail("address "+l.MAC.String(), err)
		}
	}
	if l.Master != nil {
		masterSend := send
		if downMaster {
			masterSend = func(fill func(*nl.IfInfomsg, *nl.NetlinkRequest)) error {
				return send(func(msg *nl.IfInfomsg, req *nl.NetlinkRequest) {
					flags(false)(msg, req)
					fill(msg, req)
				})
			}
		}
		if err := k.setMaster(l.Name, *l.Master, masterSend); err != nil {
			switch {
			case *l.Master == "":
				return fail("nomaster", err)
			case downMaster:
				return fail("down master "+*l.Master, err)
			}
			return fail("master "+*l.Master, err)
		}
	}
	if l.Alias != nil {
		alias := *l.Alias
		if err := send(func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_IFALIAS, []byte(alias)))
		}); err != nil {
			return fail("alias", err)
		}
	}
	if l.AdminUp != nil && *l.AdminUp {
		if err := send(flags(true)); err != nil {
			return fail("up", err)
		}
	}
	return nil
}

// setMaster sends IFLA_MASTER (0 = nomaster) through send. The master's
// index comes from the cache; if the kernel refuses it with ENODEV while
// the link itself is there, the master is looked up once more.
func (k *kernel) setMaster(link, master string, send func(func(*nl.IfInfomsg, *nl.NetlinkRequest)) error) error {
	if master == "" {
		return send(func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(0)))
		})
	}
	m, cached, err := k.ifindex(master)
	if err != nil {
		return err
	}
	to := func(m int) func(*nl.IfInfomsg, *nl.NetlinkRequest) {
		return func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(uint32(m))))
		}
	}
	err = send(to(m))
	if cached && isNoDevice(err) {
		if _, _, lerr := k.ifindex(link); lerr != nil {
			return err // the link is gone, not (only) the master
		}
		k.idx.forget(master)
		if m, _, err = k.ifindex(master); err != nil {
			return err
		}
		err = send(to(m))
	}
	return err
}

// plainBond reports whether Add can create l with addBond: a bond with
// no master.
func plainBond(l *LinkInfo) bool {
	return l.Kind == "bond" && (l.Master == nil || *l.Master == "")
}

// bondLinkRequest encodes the create of bond l as the library's LinkAdd
// does: RTM_NEWLINK NLM_F_CREATE|NLM_F_EXCL with IFLA_IFNAME, [IFLA_MTU],
// [IFLA_ADDRESS] and IFLA_LINKINFO (kind "bond", with IFLA_BOND_MODE,
// IFLA_BOND_MIIMON, IFLA_BOND_MIN_LINKS, IFLA_BOND_AD_LACP_RATE for the
// options set); admin up is IFF_UP in the ifinfomsg.
func bondLinkRequest(l *LinkInfo) (*nl.NetlinkRequest, error) {
	req := newLinkRequest(l)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bond"))
	if o := l.Bond; o != nil {
		data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
		if o.Mode != "" {
			m, ok := bondModes[o.Mode]
			if !ok {
				return nil, fmt.Errorf("bond mode %q: %w", o.Mode, unix.EINVAL)
			}
			data.AddRtAttr(nl.IFLA_BOND_MODE, nl.Uint8Attr(m))
		}
		if o.Miimon != nil {
			data.AddRtAttr(nl.IFLA_BOND_MIIMON, nl.Uint32Attr(uint32(*o.Miimon)))
		}
		if o.MinLinks != nil {
			data.AddRtAttr(nl.IFLA_BOND_MIN_LINKS, nl.Uint32Attr(uint32(*o.MinLinks)))
		}
		if o.LacpRate != nil {
			r, ok := lacpRates[*o.LacpRate]
			if !ok {
				return nil, fmt.Errorf("lacp_rate %q: %w", *o.LacpRate, unix.EINVAL)
			}
			data.AddRtAttr(nl.IFLA_BOND_AD_LACP_RATE, nl.Uint8Attr(r))
		}
	}
	req.AddData(info)
	return req, nil
}

// The kernel's bond modes and LACP rates (include/uapi/linux/if_bonding.h),
// by the names ip link and the library use.
var (
	bondModes = map[string]uint8{"balance-rr": 0, "active-backup": 1, "balance-xor": 2, "broadcast": 3,
		"802.3ad": 4, "balance-tlb": 5, "balance-alb": 6}
	lacpRates = map[string]uint8{"slow": 0, "fast": 1}
)

// addBond is Add of a plainBond l: its create, then its alias (by name,
// only once the create succeeded: a name that already exists is someone
// else's link, never to be marked ours).
func (k *kernel) addBond(l LinkInfo) error {
	k.writes.Add(1)
	obj := "link " + l.Name + " type bond"
	req, err := bondLinkRequest(&l)
	if err != nil {
		return opErr("add", obj, err)
	}
	if err := k.rt.exec(req); err != nil {
		return opErr("add", obj, mapLinkAddErr("bond", err))
	}
	if l.Alias != nil && *l.Alias != "" {
		alias := setLinkRequest(0, func(_ *nl.IfInfomsg, req *nl.NetlinkRequest) {
			req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(l.Name)))
			req.AddData(nl.NewRtAttr(unix.IFLA_IFALIAS, []byte(*l.Alias)))
		})
		if err := k.rt.exec(alias); err != nil {
			return opErr("set", "link "+l.Name+" alias", err)
		}
	}
	return nil
}
