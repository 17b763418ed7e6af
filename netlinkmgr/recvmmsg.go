package netlinkmgr

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsgBufs reads the datagrams queued on a netlink socket many per
// system call (recvmmsg(2)), where recvfrom takes one: the ifindex cache
// drains its link socket before every write, and in a PortChannel burst
// ~7 link messages wait there per request (a port's down, master, up,
// carrier, the bond's MAC and state): one recvfrom each plus the EAGAIN,
// ~14 system calls on the worker's path per request under a TCG guest,
// where every system call is dear. Equivalent to no iproute2 command
// (ip monitor reads one message per recvmsg).
type mmsgBufs struct {
	hdrs []mmsghdr
	iovs []unix.Iovec
	bufs [][]byte
}

// mmsghdr is struct mmsghdr: a msghdr and the length the kernel wrote.
// (Go's alignment pads it as C does: 64 bytes on 64-bit, 32 on 32-bit.)
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// newMmsgBufs makes n buffers of size bytes.
func newMmsgBufs(n, size int) *mmsgBufs {
	m := &mmsgBufs{hdrs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n)}
	for i := range m.bufs {
		m.bufs[i] = make([]byte, size)
		m.iovs[i].Base = &m.bufs[i][0]
		m.iovs[i].SetLen(size)
		m.hdrs[i].hdr.Iov = &m.iovs[i]
		m.hdrs[i].hdr.Iovlen = 1
	}
	return m
}

// recvDontWait reads up to len(m.bufs) queued datagrams without waiting:
// their number (≥ 1), or the error of the first read (EAGAIN: none
// queued; ENOBUFS: messages were lost). An error after the first
// datagram is kept by the kernel for the next call (do_recvmmsg).
func (m *mmsgBufs) recvDontWait(fd int) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(len(m.hdrs)),
		unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// datagram is the i-th datagram of the last read; truncated when it did
// not fit its buffer (its tail is lost).
func (m *mmsgBufs) datagram(i int) (b []byte, truncated bool) {
	h := &m.hdrs[i]
	return m.bufs[i][:min(int(h.n), len(m.bufs[i]))], h.hdr.Flags&unix.MSG_TRUNC != 0
}
