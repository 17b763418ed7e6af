package netlinkmgr

import (
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// routeSock sends route writes on a socket of its own with a reused
// receive buffer. The library's Handle allocates a 64 KiB receive buffer
// per request, which under a bulk load of routes costs more in garbage
// collection than the request itself. The request bytes are the ones
// the library would send (routeRequest mirrors its RTM_NEWROUTE encoding
// for the fields toNetlinkRoute sets).
type routeSock struct {
	mu   sync.Mutex
	s    *nl.NetlinkSocket
	fd   int
	rbuf []byte
	sbuf []byte // the batch being sent, reused
	// maxReqs bounds the requests of one sendmsg (0: only batchBytes does).
	maxReqs int
}

func (r *routeSock) open(k *kernel) error {
	s, err := nl.GetNetlinkSocketAt(k.ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	r.s, r.fd, r.rbuf = s, s.GetFd(), make([]byte, 64<<10)
	r.maxReqs = batchReqsSmallBuf
	// Room for the acknowledgements of a whole 64 KiB batch (about a
	// thousand, each a socket buffer of its own): SO_RCVBUFFORCE needs
	// CAP_NET_ADMIN; without it batches stay small enough for the
	// default buffer.
	if unix.SetsockoptInt(r.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, batchRcvBuf) == nil {
		r.maxReqs = 0
	}
	// The kernel's reason (extended ack, "Nexthop has invalid gateway")
	// rides along with the errno; capped acks do not echo the request.
	// Both are best effort: an older kernel answers with the errno only.
	_ = unix.SetsockoptInt(r.fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(r.fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	return nil
}

// KernelError is an errno the kernel answered with the reason it gave in
// its extended acknowledgement: "Nexthop has invalid gateway: invalid
// argument". errors.Is matches the errno.
type KernelError struct {
	Errno syscall.Errno
	Msg   string // the kernel's NLMSGERR_ATTR_MSG
}

func (e *KernelError) Error() string { return e.Msg + ": " + e.Errno.Error() }

// Unwrap returns the errno.
func (e *KernelError) Unwrap() error { return e.Errno }

// ackError decodes an NLMSG_ERROR payload: nil for an ack, the errno, or
// a KernelError when the kernel said why.
func ackError(h syscall.NlMsghdr, data []byte) error {
	if len(data) < 4 {
		return nil
	}
	errno := int32(nl.NativeEndian().Uint32(data[0:4]))
	if errno == 0 {
		return nil
	}
	err := syscall.Errno(-errno)
	if h.Flags&unix.NLM_F_ACK_TLVS == 0 || len(data) < 4+unix.SizeofNlMsghdr {
		return err
	}
	off := 4 + unix.SizeofNlMsghdr
	if h.Flags&unix.NLM_F_CAPPED == 0 {
		// The request is echoed whole.
		l := int(nl.NativeEndian().Uint32(data[4:8]))
		off = 4 + (l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)
	}
	if off > len(data) {
		return err
	}
	attrs, perr := nl.ParseRouteAttr(data[off:])
	if perr != nil {
		return err
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.NLMSGERR_ATTR_MSG {
			if msg := strings.TrimRight(string(a.Value), "\x00"); msg != "" {
				return &KernelError{Errno: err, Msg: msg}
			}
		}
	}
	return err
}

func (r *routeSock) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s != nil {
		r.s.Close()
		r.s = nil
	}
}

// routeRequest encodes nr as the library's RouteReplace does (RTM_NEWROUTE,
// NLM_F_CREATE|NLM_F_REPLACE|NLM_F_ACK), or RouteAdd with create
// (NLM_F_EXCL instead of NLM_F_REPLACE), for the fields used here: Dst,
// Gw, LinkIndex, MultiPath (Gw, LinkIndex, Hops), Table, Priority,
// Protocol, Type, Scope, Family.
func routeRequest(nr *netlink.Route, create bool) *nl.NetlinkRequest {
	flags := unix.NLM_F_CREATE | unix.NLM_F_REPLACE | unix.NLM_F_ACK
	if create {
		flags = unix.NLM_F_CREATE | unix.NLM_F_EXCL | unix.NLM_F_ACK
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWROUTE, flags)
	msg := nl.NewRtMsg()
	native := nl.NativeEndian()
	u32 := func(v uint32) []byte {
		b := make([]byte, 4)
		native.PutUint32(b, v)
		return b
	}
	ipBytes := func(ip net.IP) []byte {
		if v4 := ip.To4(); v4 != nil {
			return v4
		}
		return ip.To16()
	}
	var attrs []*nl.RtAttr
	dstLen, _ := nr.Dst.Mask.Size()
	msg.Dst_len = uint8(dstLen)
	attrs = append(attrs, nl.NewRtAttr(unix.RTA_DST, ipBytes(nr.Dst.IP)))
	if nr.Gw != nil {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_GATEWAY, ipBytes(nr.Gw)))
	}
	if len(nr.MultiPath) > 0 {
		var buf []byte
		for _, h := range nr.MultiPath {
			rtnh := &nl.RtNexthop{RtNexthop: unix.RtNexthop{Hops: uint8(h.Hops), Ifindex: int32(h.LinkIndex), Flags: uint8(h.Flags)}}
			if h.Gw != nil {
				rtnh.Children = []nl.NetlinkRequestData{nl.NewRtAttr(unix.RTA_GATEWAY, ipBytes(h.Gw))}
			}
			buf = append(buf, rtnh.Serialize()...)
		}
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_MULTIPATH, buf))
	}
	if nr.Table > 0 {
		if nr.Table >= 256 {
			msg.Table = unix.RT_TABLE_UNSPEC
			attrs = append(attrs, nl.NewRtAttr(unix.RTA_TABLE, u32(uint32(nr.Table))))
		} else {
			msg.Table = uint8(nr.Table)
		}
	}
	if nr.Priority > 0 {
		attrs = append(attrs, nl.NewRtAttr(unix.RTA_PRIORITY, u32(uint32(nr.Priority))))
	}
	if nr.Protocol > 0 {
		msg.Protocol = uint8(nr.Protocol)
	}
	if nr.Type > 0 {
		msg.Type = uint8(nr.Type)
	}
	msg.Flags = uint32(nr.Flags)
	msg.Scope = uint8(nr.Scope)
	msg.Family = uint8(nr.Family)
	req.AddData(msg)
	for _, a := range attrs {
		req.AddData(a)
	}
	req.AddData(nl.NewRtAttr(unix.RTA_OIF, u32(uint32(nr.LinkIndex))))
	return req
}

// retry runs the non-blocking socket call f until it succeeds: EINTR
// runs it again, EAGAIN waits for ev first (until deadline); any other
// error is returned.
func (r *routeSock) retry(ev int16, deadline time.Time, f func() error) error {
	for {
		err := f()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			if err := r.wait(ev, deadline); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// wait polls the socket for ev until deadline (EAGAIN then, as the
// library's request timeout reports).
func (r *routeSock) wait(ev int16, deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return unix.EAGAIN
		}
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: ev}}
		_, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
