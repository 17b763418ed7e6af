package trafficd

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sender hands prebuilt frames to the kernel. send transmits up to n
// frames of the pool starting at index first (wrapping) and returns how
// many the kernel took; dropped counts frames the device refused.
type sender interface {
	send(first, n int) (sent int, dropped int, err error)
	// flush sends what send queued but the kernel has not taken yet.
	flush()
	path() string
	close() error
}

// maxBatch is the most frames one send hands over.
const maxBatch = 256

// mmsghdr is struct mmsghdr (x/sys/unix has none).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// packetSender is an AF_PACKET socket bound to the port with
// PACKET_QDISC_BYPASS (frames go straight to the driver, as pktgen's do)
// and sendmmsg over a prebuilt message array: no allocation per frame.
type packetSender struct {
	fd   int
	iovs []unix.Iovec
	// msgs has len(pool)+maxBatch entries: message i is frame i mod
	// len(pool), so any batch is one contiguous slice.
	msgs []mmsghdr
	pool [][]byte
}

// openPacket opens the packet socket on ifindex. Equivalent to what
// pktgen does in the kernel; there is no iproute2 counterpart.
func openPacket(ifindex int, pool [][]byte) (*packetSender, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // protocol 0: send only
	if err != nil {
		return nil, fmt.Errorf("open packet socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set PACKET_QDISC_BYPASS: %w", err)
	}
	// A larger send buffer keeps sendmmsg from blocking on skb memory.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind packet socket to ifindex %d: %w", ifindex, err)
	}
	s := &packetSender{fd: fd, pool: pool}
	n := len(pool) + maxBatch
	s.iovs = make([]unix.Iovec, n)
	s.msgs = make([]mmsghdr, n)
	for i := range s.msgs {
		f := pool[i%len(pool)]
		s.iovs[i].Base = &f[0]
		s.iovs[i].SetLen(len(f))
		s.msgs[i].hdr.Iov = &s.iovs[i]
		s.msgs[i].hdr.SetIovlen(1)
	}
	return s, nil
}

func (s *packetSender) path() string { return "packet" }

func (s *packetSender) send(first, n int) (int, int, error) {
	if n > maxBatch {
		n = maxBatch
	}
	first %= len(s.pool)
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msgs[first])), uintptr(n), 0, 0, 0)
	if e != 0 {
		// ENOBUFS: the device dropped the first frame (veth: the peer's
		// backlog is full); the frame is gone, the pacer tries again.
		if errors.Is(e, unix.ENOBUFS) || errors.Is(e, unix.EAGAIN) {
			return 0, 1, nil
		}
		return 0, 0, fmt.Errorf("sendmmsg: %w", e)
	}
	return int(r), 0, nil
}

func (s *packetSender) flush() {}

func (s *packetSender) close() error { return unix.Close(s.fd) }
