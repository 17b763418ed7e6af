package netlinkmgr

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ifaProto is IFA_PROTO (Linux 6.1, include/uapi/linux/if_addr.h): the
// u8 "who added this address" of an interface address. vishvananda/netlink
// v1.3.1 neither sends nor parses it, so address requests, dumps and
// events are encoded and decoded here.
const ifaProto = 11

// ifaProtoKernelLo is IFAPROTO_KERNEL_LO, the protocol of the loopback
// addresses the kernel adds itself.
const ifaProtoKernelLo = 1

// addrRequest builds RTM_NEWADDR for a as the library's AddrReplace does
// (IFA_LOCAL, IFA_ADDRESS, the IPv4 broadcast of prefixes shorter than
// /31) plus IFA_PROTO when a.Protocol is set. create asks for
// NLM_F_EXCL (ip address add) instead of NLM_F_REPLACE (ip address replace).
func addrRequest(idx int, a AddrInfo, create bool) *nl.NetlinkRequest {
	flags := unix.NLM_F_CREATE | unix.NLM_F_ACK
	if create {
		flags |= unix.NLM_F_EXCL
	} else {
		flags |= unix.NLM_F_REPLACE
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWADDR, flags)
	msg, raw := addAddrmsg(req, idx, a)
	if msg.Family == unix.AF_INET && msg.Prefixlen < 31 {
		mask := net.CIDRMask(int(msg.Prefixlen), 32)
		brd := make([]byte, 4)
		for i := range brd {
			brd[i] = raw[i] | ^mask[i]
		}
		req.AddData(nl.NewRtAttr(unix.IFA_BROADCAST, brd))
	}
	if a.Protocol > 0 {
		req.AddData(nl.NewRtAttr(ifaProto, []byte{uint8(a.Protocol)}))
	}
	return req
}

// addAddrmsg adds the ifaddrmsg of a on link idx and its IFA_LOCAL and
// IFA_ADDRESS to req (both add and delete name the address this way); it
// returns the message and the address bytes.
func addAddrmsg(req *nl.NetlinkRequest, idx int, a AddrInfo) (*nl.IfAddrmsg, []byte) {
	fam := unix.AF_INET6
	ip := a.Prefix.Addr().Unmap()
	if ip.Is4() {
		fam = unix.AF_INET
	}
	msg := nl.NewIfAddrmsg(fam)
	msg.Index = uint32(idx)
	msg.Prefixlen = uint8(a.Prefix.Bits())
	if a.Prefix.Addr().Is4In6() {
		msg.Prefixlen -= 96
	}
	req.AddData(msg)
	raw := ip.AsSlice()
	req.AddData(nl.NewRtAttr(unix.IFA_LOCAL, raw))
	req.AddData(nl.NewRtAttr(unix.IFA_ADDRESS, raw))
	return msg, raw
}

// addrDelRequest builds RTM_DELADDR for a (ip address del PREFIX dev LINK).
func addrDelRequest(idx int, a AddrInfo) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_DELADDR, unix.NLM_F_ACK)
	addAddrmsg(req, idx, a)
	return req
}

// rawAddr is one decoded RTM_NEWADDR/RTM_DELADDR.
type rawAddr struct {
	index    int
	prefix   netip.Prefix
	protocol int
}

// parseAddrMsg decodes an ifaddrmsg and its attributes: the local address
// (IFA_LOCAL, else IFA_ADDRESS, as the library and iproute2 do) and
// IFA_PROTO. Attributes are walked by eachAttr: the library's
// ParseRouteAttr panics on a truncated one (FuzzParseAddrMsg).
func parseAddrMsg(b []byte) (rawAddr, bool) {
	if len(b) < unix.SizeofIfAddrmsg {
		return rawAddr{}, false
	}
	// struct ifaddrmsg: family, prefixlen, flags, scope, index (u32).
	out := rawAddr{index: int(native.Uint32(b[4:8]))}
	var local, addr []byte
	ok := eachAttr(b[unix.SizeofIfAddrmsg:], func(typ uint16, v []byte) bool {
		switch typ {
		case unix.IFA_LOCAL:
			local = v
		case unix.IFA_ADDRESS:
			addr = v
		case ifaProto:
			if len(v) > 0 {
				out.protocol = int(v[0])
			}
		}
		return true
	})
	if !ok {
		return rawAddr{}, false
	}
	if local == nil {
		local = addr
	}
	ip, ok := netip.AddrFromSlice(local)
	if !ok {
		return rawAddr{}, false
	}
	out.prefix = netip.PrefixFrom(ip.Unmap(), int(b[1]))
	return out, true
}

// dumpAddrs lists every address of the namespace (RTM_GETADDR dump).
func (k *kernel) dumpAddrs() ([]rawAddr, error) {
	return retryDump(func() ([]rawAddr, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETADDR, unix.NLM_F_DUMP)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: k.raw}
		req.AddData(nl.NewIfAddrmsg(unix.AF_UNSPEC))
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWADDR)
		out := make([]rawAddr, 0, len(msgs))
		for _, m := range msgs {
			if a, ok := parseAddrMsg(m); ok {
				out = append(out, a)
			}
		}
		return out, err
	})
}

// addrUpdate is one address event.
type addrUpdate struct {
	rawAddr
	deleted bool
}

// subscribeGroups opens a NETLINK_ROUTE socket in ns joined to groups,
// with a receive buffer of size bytes (0: the default; force: beyond
// net.core.rmem_max, SO_RCVBUFFORCE). Equivalent to: ip monitor.
func subscribeGroups(ns netns.NsHandle, size int, force bool, groups ...uint) (*nl.NetlinkSocket, error) {
	s, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_ROUTE, groups...)
	if err != nil {
		return nil, err
	}
	if size != 0 {
		if err := s.SetReceiveBufferSize(size, force); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// addrSubscribe reads the IPv4 and IPv6 address groups of ns into ch as
// the library's AddrSubscribeWithOptions does (messages from the kernel
// only), keeping IFA_PROTO. ch is closed when the socket fails (ENOBUFS
// above all; errcb hears why) or done closes. quietPid, when not 0, is
// the port id of our write socket: the events of its quiet address
// writes (AddBatch's creates, OmitOwnAddrWrites) are dropped by the
// kernel, as routeSubscribe does for routes (ownEchoFilter).
// Equivalent to: ip monitor address.
func addrSubscribe(ns netns.NsHandle, ch chan<- addrUpdate, done <-chan struct{}, errcb func(error), size int, force bool, quietPid uint32) error {
	r, err := openEvents(ns, size, force, "netlink-addrs", done, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR)
	if err != nil {
		return err
	}
	if quietPid != 0 {
		if err := r.attachFilter(ownEchoFilter(quietPid)); err != nil {
			r.f.Close()
			return fmt.Errorf("attach the own-writes filter: %w", err)
		}
	}
	go func() {
		defer close(ch)
		r.each(done, errcb, func(t, _ uint16, data []byte) {
			if t != unix.RTM_NEWADDR && t != unix.RTM_DELADDR {
				return
			}
			if a, ok := parseAddrMsg(data); ok {
				ch <- addrUpdate{rawAddr: a, deleted: t == unix.RTM_DELADDR}
			}
		})
	}()
	return nil
}

// errStillThere is the error of a delete the kernel answered "not found"
// for while a read shows the object is still there (a request that did
// not match it, e.g. the wrong scope): never success, never ErrNotFound.
func errStillThere(err error) error {
	return fmt.Errorf("the kernel answered %q but it is still there", err.Error())
}

// confirmAbsent keeps a delete's ErrNotFound only when present shows the
// object really is absent.
func confirmAbsent(err error, present func() (bool, error)) error {
	if err == nil || !IsNotFound(err) {
		return err
	}
	there, rerr := present()
	switch {
	case rerr != nil && !IsNotFound(rerr):
		return fmt.Errorf("%s, and reading it back failed: %w", err.Error(), rerr)
	case there:
		return errStillThere(err)
	}
	return err
}
