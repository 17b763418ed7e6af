package netlinkmgr

import (
	"errors"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestMmsgBufs: recvDontWait reads the queued datagrams many per call, in
// order, at most one per buffer; with none queued it says EAGAIN; a
// datagram larger than its buffer is flagged truncated; a bad fd is
// reported. The datagrams are the kernel's answers to RTM_GETLINK of lo
// (ip link show dev lo), one per request. Needs no privilege.
func TestMmsgBufs(t *testing.T) {
	if _, err := newMmsgBufs(2, 64).recvDontWait(-1); !errors.Is(err, unix.EBADF) {
		t.Fatalf("recvDontWait on fd -1: %v, want EBADF", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Skipf("no NETLINK_ROUTE socket here: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	ask := func(seq uint32) {
		t.Helper()
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = 1 // lo, in every namespace
		req.AddData(msg)
		req.Seq = seq
		if err := sendRaw(fd, req.Serialize()); err != nil {
			t.Fatalf("RTM_GETLINK %d: %v", seq, err)
		}
	}
	m := newMmsgBufs(4, 16<<10)
	if _, err := m.recvDontWait(fd); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("nothing queued: %v, want EAGAIN", err)
	}
	const asked = 6
	for seq := uint32(1); seq <= asked; seq++ {
		ask(seq)
	}
	var seqs []uint32
	for _, want := range []int{4, 2} {
		n, err := m.recvDontWait(fd)
		if err != nil || n != want {
			t.Fatalf("read %d datagrams, %v; want %d", n, err, want)
		}
		for i := 0; i < n; i++ {
			b, trunc := m.datagram(i)
			msgs, err := syscall.ParseNetlinkMessage(b)
			if trunc || err != nil || len(msgs) != 1 || msgs[0].Header.Type != unix.RTM_NEWLINK {
				t.Fatalf("datagram %d: truncated %v, %v, %d messages", i, trunc, err, len(msgs))
			}
			seqs = append(seqs, msgs[0].Header.Seq)
		}
	}
	for i, s := range seqs {
		if s != uint32(i+1) {
			t.Fatalf("answers in order %v, want 1..%d", seqs, asked)
		}
	}
	if _, err := m.recvDontWait(fd); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("all read: %v, want EAGAIN", err)
	}

	ask(9)
	small := newMmsgBufs(2, 32) // lo's RTM_NEWLINK is far larger
	if n, err := small.recvDontWait(fd); err != nil || n != 1 {
		t.Fatalf("small buffers: %d, %v; want 1 datagram", n, err)
	}
	if b, trunc := small.datagram(0); !trunc || len(b) != 32 {
		t.Fatalf("small buffer: truncated %v, %d bytes; want true, 32", trunc, len(b))
	}
}
