package netlinkmgr

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// routeSock sends route writes on a socket of its own with a reused
// receive buffer. The library's Handle allocates a 64 KiB receive buffer
// per request, which under a bulk load of routes costs more in garbage
// collection than the request itself. Route requests are encoded by
// appendRouteMsg (rtwire.go) straight into the send buffer, the bytes the
// library would send.
type routeSock struct {
	mu    sync.Mutex
	s     *nl.NetlinkSocket
	fd    int
	rbuf  []byte
	sbuf  []byte // the batch being sent, reused
	acked []bool // sendChunk's, reused
	seq   uint32 // the last sequence number sent (execEncoded)
	pid   uint32 // the socket's port id: the sender of our writes' events
	// maxReqs bounds the requests of one sendmsg (0: only batchBytes does).
	maxReqs int
}

func (r *routeSock) open(k *kernel) error {
	s, err := nl.GetNetlinkSocketAt(k.ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	r.s, r.fd, r.rbuf = s, s.GetFd(), make([]byte, 64<<10)
	if sa, err := unix.Getsockname(r.fd); err == nil {
		if nsa, ok := sa.(*unix.SockaddrNetlink); ok {
			r.pid = nsa.Pid
		}
	}
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
