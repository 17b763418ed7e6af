package netlinkmgr

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Route messages on the wire, without the library: a bulk load writes
// and hears back every route once, and the library's encoding and
// decoding allocate per message and per attribute (a netlink.Route, a
// net.IPNet, a []byte per attribute, the request's parts) — more than
// the rest of a route's handling in orchagent. appendRouteMsg writes the
// bytes the library's RouteReplace/RouteAdd would send (routeRequest in
// rtwire_test.go is that reference, and the test compares them);
// parseRouteMsg reads the fields RouteInfo has out of an RTM_NEWROUTE or
// RTM_DELROUTE (its fuzz target checks it against the library's
// attribute parser).

var native = binary.NativeEndian

const rtaHdr = unix.SizeofRtAttr // 4

func rtaAlign(n int) int { return (n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }

// appendAttr appends one attribute (struct rtattr and payload), padded.
func appendAttr(b []byte, typ uint16, payload []byte) []byte {
	l := rtaHdr + len(payload)
	b = native.AppendUint16(b, uint16(l))
	b = native.AppendUint16(b, typ)
	b = append(b, payload...)
	for i := l; i < rtaAlign(l); i++ {
		b = append(b, 0)
	}
	return b
}

func appendU32Attr(b []byte, typ uint16, v uint32) []byte {
	b = native.AppendUint16(b, rtaHdr+4)
	b = native.AppendUint16(b, typ)
	return native.AppendUint32(b, v)
}

// ipWire is an address as the library puts it in a request: 4 bytes for
// IPv4 (and IPv4-mapped IPv6), else 16.
func ipWire(a netip.Addr, buf *[16]byte) []byte {
	if a.Is4() || a.Is4In6() {
		v := a.Unmap().As4()
		copy(buf[:], v[:])
		return buf[:4]
	}
	*buf = a.As16()
	return buf[:16]
}

// appendNewHdr appends the struct nlmsghdr of an RTM_NEW* request with
// sequence number seq: NLM_F_REQUEST|NLM_F_CREATE|NLM_F_ACK and, with
// create, NLM_F_EXCL (add), else NLM_F_REPLACE (replace). Its length is 0:
// the caller sets it once the message is complete.
func appendNewHdr(b []byte, typ uint16, seq uint32, create bool) []byte {
	flags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_CREATE | unix.NLM_F_ACK)
	if create {
		flags |= unix.NLM_F_EXCL
	} else {
		flags |= unix.NLM_F_REPLACE
	}
	// struct nlmsghdr: len, type, flags, seq, pid.
	b = native.AppendUint32(b, 0)
	b = native.AppendUint16(b, typ)
	b = native.AppendUint16(b, flags)
	b = native.AppendUint32(b, seq)
	return native.AppendUint32(b, 0)
}

// appendRouteMsg appends the RTM_NEWROUTE request for r with sequence
// number seq (NLM_F_CREATE|NLM_F_REPLACE, or with create NLM_F_EXCL
// instead of NLM_F_REPLACE; NLM_F_ACK). oifs[i] is the ifindex of
// r.NextHops[i] (0 = none). r is valid (routeCheck). Equivalent to:
// ip route {replace|add} ... (the library's RouteReplace/RouteAdd bytes).
func appendRouteMsg(b []byte, seq uint32, r *RouteInfo, oifs []int, create bool) []byte {
	start := len(b)
	b = appendNewHdr(b, unix.RTM_NEWROUTE, seq, create)

	fam := uint8(unix.AF_INET)
	if r.Dst.Addr().Is6() {
		fam = unix.AF_INET6
	}
	table := tableOf(r.Table)
	msgTable := uint8(table)
	if table >= 256 {
		msgTable = unix.RT_TABLE_UNSPEC
	}
	proto := uint8(unix.RTPROT_BOOT)
	if r.Protocol > 0 {
		proto = uint8(r.Protocol)
	}
	typ, scope := uint8(unix.RTN_UNICAST), uint8(unix.RT_SCOPE_UNIVERSE)
	oif := 0
	single := !r.Blackhole && len(r.NextHops) == 1
	if r.Blackhole {
		typ = unix.RTN_BLACKHOLE
	} else if single {
		oif = oifs[0]
		if !r.NextHops[0].Gateway.IsValid() && fam == unix.AF_INET {
			scope = unix.RT_SCOPE_LINK // as ip(8) does for a device route
		}
	}
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol,
	// scope, type, flags (u32).
	b = append(b, fam, uint8(r.Dst.Bits()), 0, 0, msgTable, proto, scope, typ)
	b = native.AppendUint32(b, 0)

	var ab [16]byte
	b = appendAttr(b, unix.RTA_DST, ipWire(r.Dst.Addr(), &ab))
	if single && r.NextHops[0].Gateway.IsValid() {
		b = appendAttr(b, unix.RTA_GATEWAY, ipWire(r.NextHops[0].Gateway, &ab))
	}
	if !r.Blackhole && len(r.NextHops) > 1 {
		at := len(b)
		b = native.AppendUint16(b, 0) // set below
		b = native.AppendUint16(b, unix.RTA_MULTIPATH)
		for i, h := range r.NextHops {
			// struct rtnexthop: len, flags, hops, ifindex; then its
			// RTA_GATEWAY.
			nl := unix.SizeofRtNexthop
			var gw []byte
			if h.Gateway.IsValid() {
				gw = ipWire(h.Gateway, &ab)
				nl = rtaAlign(nl + rtaAlign(rtaHdr+len(gw)))
			}
			hops := 0
			if h.Weight > 1 {
				hops = h.Weight - 1
			}
			b = native.AppendUint16(b, uint16(nl))
			b = append(b, 0, uint8(hops))
			b = native.AppendUint32(b, uint32(int32(oifs[i])))
			if gw != nil {
				b = appendAttr(b, unix.RTA_GATEWAY, gw)
			}
		}
		native.PutUint16(b[at:], uint16(len(b)-at))
		for len(b)-start != rtaAlign(len(b)-start) {
			b = append(b, 0)
		}
	}
	if table >= 256 {
		b = appendU32Attr(b, unix.RTA_TABLE, uint32(table))
	}
	if r.Metric > 0 {
		b = appendU32Attr(b, unix.RTA_PRIORITY, uint32(r.Metric))
	}
	b = appendU32Attr(b, unix.RTA_OIF, uint32(oif))
	native.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

// wireRoute is one route message decoded: what RouteInfo carries, with
// link indexes instead of names. hops holds a multipath route's next hops
// (nil for one next hop: gw and oif).
type wireRoute struct {
	family, dstLen, table, protocol, typ int
	flags, metric                        int
	dst, gw                              netip.Addr
	hasDst                               bool
	oif                                  int
	hops                                 []wireHop
}

type wireHop struct {
	gw     netip.Addr
	oif    int
	weight int
}

// parseRouteMsg decodes an rtmsg and the attributes RouteInfo needs
// (RTA_DST, RTA_GATEWAY, RTA_OIF, RTA_PRIORITY, RTA_TABLE, RTA_MULTIPATH
// with its hops' RTA_GATEWAY), as the library's deserializeRoute reads
// them; hops is reused for a multipath route's next hops. ok is false
// for a truncated message.
func parseRouteMsg(b []byte, hops []wireHop) (w wireRoute, ok bool) {
	if len(b) < unix.SizeofRtMsg {
		return w, false
	}
	w.family, w.dstLen, w.table = int(b[0]), int(b[1]), int(b[4])
	w.protocol, w.typ = int(b[5]), int(b[7])
	w.flags = int(native.Uint32(b[8:12]))
	w.hops = hops[:0]
	ok = eachAttr(b[unix.SizeofRtMsg:], func(typ uint16, v []byte) bool {
		switch typ {
		case unix.RTA_DST:
			w.dst, _ = netip.AddrFromSlice(v)
			w.hasDst = true
		case unix.RTA_GATEWAY:
			w.gw, _ = netip.AddrFromSlice(v)
		case unix.RTA_OIF, unix.RTA_PRIORITY, unix.RTA_TABLE:
			if len(v) < 4 {
				return false
			}
			x := int(native.Uint32(v))
			switch typ {
			case unix.RTA_OIF:
				w.oif = x
			case unix.RTA_PRIORITY:
				w.metric = x
			default:
				w.table = x
			}
		case unix.RTA_MULTIPATH:
			return w.parseMultipath(v)
		}
		return true
	})
	return w, ok
}

// parseMultipath appends the next hops of an RTA_MULTIPATH payload (struct
// rtnexthop each, then its attributes) to w.hops; false if truncated.
func (w *wireRoute) parseMultipath(v []byte) bool {
	for len(v) > 0 {
		if len(v) < unix.SizeofRtNexthop {
			return false
		}
		nl := int(native.Uint16(v[0:2]))
		if nl < unix.SizeofRtNexthop || nl > len(v) {
			return false
		}
		h := wireHop{oif: int(int32(native.Uint32(v[4:8]))), weight: int(v[3]) + 1}
		if !eachAttr(v[unix.SizeofRtNexthop:nl], func(typ uint16, c []byte) bool {
			if typ == unix.RTA_GATEWAY {
				h.gw, _ = netip.AddrFromSlice(c)
			}
			return true
		}) {
			return false
		}
		w.hops = append(w.hops, h)
		v = v[min(rtaAlign(nl), len(v)):]
	}
	return true
}

// routeInfo converts w; name resolves link indexes (as toRouteInfo does
// for the library's routes). one, when not nil, holds a single next hop
// (the caller allocates it with the RouteInfo: one allocation per event).
func (w *wireRoute) routeInfo(name func(int) string, one *[1]NextHop) RouteInfo {
	ri := RouteInfo{Table: w.table, Protocol: w.protocol, Metric: w.metric,
		Blackhole: w.typ == unix.RTN_BLACKHOLE, Type: routeTypeName(w.typ)}
	switch {
	case w.hasDst:
		// As the library's net.IPNet reads: a mask longer than the
		// address is none, an IPv4-mapped address is unmapped with the
		// mask's ones kept, an address of another length is invalid.
		bits := w.dstLen
		if bits > w.dst.BitLen() {
			bits = 0
		}
		if w.dst.IsValid() {
			ri.Dst = netip.PrefixFrom(w.dst.Unmap(), bits)
		}
	case w.family == unix.AF_INET6:
		ri.Dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	default:
		ri.Dst = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	if ri.Blackhole {
		return ri
	}
	if len(w.hops) > 0 {
		ri.NextHops = make([]NextHop, len(w.hops))
		for i, h := range w.hops {
			ri.NextHops[i] = NextHop{Gateway: h.gw.Unmap(), Link: name(h.oif), Weight: h.weight}
		}
	} else if w.gw.IsValid() || w.oif != 0 {
		if one == nil {
			one = new([1]NextHop)
		}
		one[0] = NextHop{Gateway: w.gw.Unmap(), Link: name(w.oif), Weight: 1}
		ri.NextHops = one[:]
	}
	return ri
}

// routeUpdate is one route event as the reader hands it on.
type routeUpdate struct {
	w       wireRoute
	deleted bool
}

// routeSubscribe reads the route groups of ns into ch as the library's
// RouteSubscribeWithOptions does (messages from the kernel only). ch is
// closed when the socket fails (ENOBUFS above all; errcb hears why) or
// done closes. quietPid, when not 0, is the port id of our route-write
// socket: the events of its writes whose sequence number lacks seqHeard
// are dropped by the kernel (ownEchoFilter). omitLocal drops those of the
// kernel's own routes in table local too (OmitKernelLocalRoutes,
// eventFilter), omitPrefix the kernel's IPv4 prefix routes in table main
// (OmitKernelPrefixRoutes). Equivalent to: ip monitor route.
func routeSubscribe(ns netns.NsHandle, ch chan<- routeUpdate, done <-chan struct{}, errcb func(error), size int, force bool, quietPid uint32, omitLocal, omitPrefix bool) error {
	r, err := openEvents(ns, size, force, "netlink-routes", done, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE)
	if err != nil {
		return err
	}
	if prog := eventFilter(quietPid, omitLocal, omitPrefix); prog != nil {
		if err := r.attachFilter(prog); err != nil {
			r.f.Close()
			return fmt.Errorf("attach the route events filter: %w", err)
		}
	}
	go func() {
		defer close(ch)
		r.each(done, errcb, func(t, _ uint16, data []byte) {
			if t != unix.RTM_NEWROUTE && t != unix.RTM_DELROUTE {
				return
			}
			if w, ok := parseRouteMsg(data, nil); ok {
				ch <- routeUpdate{w: w, deleted: t == unix.RTM_DELROUTE}
			}
		})
	}()
	return nil
}

// ownEchoFilter is the socket filter that drops the events of our own
// quiet writes (eventFilter).
func ownEchoFilter(pid uint32) []unix.SockFilter { return eventFilter(pid, false, false) }

// appendAddrMsg appends the RTM_NEWADDR request of a on link idx with
// sequence number seq: the bytes addrRequest builds through the library's
// types (IFA_LOCAL, IFA_ADDRESS, the IPv4 broadcast of prefixes shorter
// than /31, IFA_PROTO when set; create: NLM_F_EXCL, else NLM_F_REPLACE).
// Equivalent to: ip address {add|replace} PREFIX dev LINK [proto P]
func appendAddrMsg(b []byte, seq uint32, idx int, a *AddrInfo, create bool) []byte {
	start := len(b)
	b = appendNewHdr(b, unix.RTM_NEWADDR, seq, create)
	ip := a.Prefix.Addr().Unmap()
	fam := uint8(unix.AF_INET6)
	if ip.Is4() {
		fam = unix.AF_INET
	}
	plen := uint8(a.Prefix.Bits())
	if a.Prefix.Addr().Is4In6() {
		plen -= 96
	}
	// struct ifaddrmsg: family, prefixlen, flags, scope, index (u32).
	b = append(b, fam, plen, 0, 0)
	b = native.AppendUint32(b, uint32(idx))
	var raw [16]byte
	r := raw[:copy(raw[:], ip.AsSlice())]
	b = appendAttr(b, unix.IFA_LOCAL, r)
	b = appendAttr(b, unix.IFA_ADDRESS, r)
	if fam == unix.AF_INET && plen < 31 {
		var brd [4]byte
		m := ^uint32(0) << (32 - plen)
		v := binary.BigEndian.Uint32(r) | ^m
		binary.BigEndian.PutUint32(brd[:], v)
		b = appendAttr(b, unix.IFA_BROADCAST, brd[:])
	}
	if a.Protocol > 0 {
		b = appendAttr(b, ifaProto, []byte{uint8(a.Protocol)})
	}
	native.PutUint32(b[start:], uint32(len(b)-start))
	return b
}
