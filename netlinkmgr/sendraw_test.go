package netlinkmgr

import (
	"errors"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestSendRaw: sendRaw delivers a request to the kernel's address (the
// kernel answers it, as it answers unix.Sendto's) and reports a failed
// call's errno. Equivalent to: ip link show dev lo. Needs no privilege.
func TestSendRaw(t *testing.T) {
	if err := sendRaw(-1, []byte{0}); !errors.Is(err, unix.EBADF) {
		t.Fatalf("sendRaw on fd -1: %v, want EBADF", err)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		t.Skipf("no NETLINK_ROUTE socket here: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 5} // a request the kernel never got: no answer
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = 1 // lo, in every namespace
	req.AddData(msg)
	req.Seq = 7
	if err := sendRaw(fd, req.Serialize()); err != nil {
		t.Fatalf("sendRaw RTM_GETLINK: %v", err)
	}
	buf := make([]byte, 1<<16)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		t.Fatalf("answer: %v, %d messages", err, len(msgs))
	}
	if h := msgs[0].Header; h.Type != unix.RTM_NEWLINK || h.Seq != 7 {
		t.Fatalf("answer type %d seq %d, want RTM_NEWLINK (%d) seq 7", h.Type, h.Seq, unix.RTM_NEWLINK)
	}
}
