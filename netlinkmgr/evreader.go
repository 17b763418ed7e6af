package netlinkmgr

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The link and neighbour groups, read without the library's readers: a
// bulk load of VLANs hears an AF_BRIDGE RTM_NEWLINK per bridge vid it
// adds (about three per VLAN with two members), which no consumer wants
// (Watch never delivered them; the kernel's local FDB entries announce
// vids), yet the library's LinkSubscribe parsed each in full; a bulk FDB
// load hears an AF_BRIDGE RTM_NEWNEIGH per entry, which the library
// decodes into a netlink.Neigh with a copy of the datagram. Here a link
// message's family is checked in the raw bytes before any parsing, and
// neighbour messages are decoded by parseNeighMsg (its fuzz target checks
// it against the library's NeighDeserialize).

// openEvents opens a socket joined to groups of ns as routeSubscribe
// does: a non-blocking duplicate in the runtime's poller, so that closing
// it (when done closes) wakes the reader. Equivalent to: ip monitor.
func openEvents(ns netns.NsHandle, size int, force bool, name string, done <-chan struct{}, groups ...uint) (*eventReader, error) {
	s, err := subscribeGroups(ns, size, force, groups...)
	if err != nil {
		return nil, err
	}
	fd, err := unix.FcntlInt(uintptr(s.GetFd()), unix.F_DUPFD_CLOEXEC, 0)
	s.Close()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	r := &eventReader{f: os.NewFile(uintptr(fd), name), buf: make([]byte, 64<<10)}
	go func() {
		<-done
		r.f.Close()
	}()
	return r, nil
}

// each hands every message the kernel sends (type and payload, which is
// only valid during the call) to fn until the socket fails (errcb hears
// why, unless done is closed: then the close was on purpose).
func (r *eventReader) each(done <-chan struct{}, errcb func(error), fn func(t uint16, flags uint16, data []byte)) {
	rc, err := r.f.SyscallConn()
	if err != nil {
		errcb(fmt.Errorf("receive failed: %w", err))
		return
	}
	var n int
	var rerr error
	recv := func(fd uintptr) bool {
		n, rerr = r.recv(int(fd))
		return rerr != unix.EAGAIN
	}
	for {
		if err := rc.Read(recv); err != nil {
			rerr = err
		}
		if rerr == unix.EINTR {
			continue
		}
		if rerr != nil {
			select {
			case <-done:
			default:
				errcb(fmt.Errorf("receive failed: %w", rerr))
			}
			return
		}
		if r.sa.Pid != nl.PidKernel {
			continue
		}
		for m := r.buf[:n]; len(m) >= unix.SizeofNlMsghdr; {
			l := int(native.Uint32(m[0:4]))
			if l < unix.SizeofNlMsghdr || l > len(m) {
				break
			}
			fn(native.Uint16(m[4:6]), native.Uint16(m[6:8]), m[unix.SizeofNlMsghdr:l])
			m = m[min(nlmAlign(l), len(m)):]
		}
	}
}

// linkSubscribe reads the link group of ns into ch as the library's
// LinkSubscribeWithOptions does, less the AF_BRIDGE messages (bridge
// port and vid chatter), which are dropped unparsed. ch is closed when
// the socket fails (ENOBUFS above all; errcb hears why) or done closes.
// With direct set, each update goes to it on the reader's goroutine
// instead of into ch (which then only closes). Equivalent to: ip monitor
// link.
func linkSubscribe(ns netns.NsHandle, ch chan<- linkUpdate, done <-chan struct{}, errcb func(error), size int, force bool, direct func(linkUpdate)) error {
	r, err := openEvents(ns, size, force, "netlink-links", done, unix.RTNLGRP_LINK)
	if err != nil {
		return err
	}
	go func() {
		defer close(ch)
		r.each(done, errcb, func(t, flags uint16, data []byte) {
			if u, ok, err := decodeLink(t, flags, data); err != nil {
				errcb(err)
			} else if ok && direct != nil {
				direct(u)
			} else if ok {
				ch <- u
			}
		})
	}()
	return nil
}

// linkUpdate is one link event: decoded here (w), or by the library (lib)
// for the kinds parseLinkMsg leaves to it.
type linkUpdate struct {
	w       wireLink
	lib     netlink.Link
	deleted bool
}

// info converts u (toLinkInfo for the library's links); names resolves
// link indexes.
func (u *linkUpdate) info(names map[int]string) *LinkInfo {
	if u.lib != nil {
		l := toLinkInfo(u.lib, names)
		return &l
	}
	return u.w.linkInfo(names, new(linkBox))
}

// indexes are u's own, master and parent link indexes and its name. The
// parent is 0 when it is in another namespace (IFLA_LINK_NETNSID: a veth's
// peer): its index names nothing here, and info does not name it; asking
// the kernel was one RTM_GETLINK per port at its first event.
func (u *linkUpdate) indexes() (index, master, parent int, name string) {
	if u.lib != nil {
		a := u.lib.Attrs()
		if a.NetNsID >= 0 {
			return a.Index, a.MasterIndex, 0, a.Name
		}
		return a.Index, a.MasterIndex, a.ParentIndex, a.Name
	}
	if u.w.netnsid >= 0 {
		return u.w.index, u.w.master, 0, u.w.name
	}
	return u.w.index, u.w.master, u.w.parent, u.w.name
}

// decodeLink decodes one link message: with parseLinkMsg, or through the
// library (a copy of data: the library's Link keeps slices of it) for
// the kinds parseLinkMsg leaves to it. A message that is not
// RTM_NEWLINK/RTM_DELLINK, or is of family AF_BRIDGE, is skipped
// unparsed (ok false).
func decodeLink(t, flags uint16, data []byte) (u linkUpdate, ok bool, err error) {
	if t != unix.RTM_NEWLINK && t != unix.RTM_DELLINK || len(data) > 0 && data[0] == unix.AF_BRIDGE {
		return u, false, nil
	}
	u.deleted = t == unix.RTM_DELLINK
	w, verdict := parseLinkMsg(data)
	switch verdict {
	case linkOwn:
		u.w = w
		return u, true, nil
	case linkBad:
		return u, false, fmt.Errorf("link message of %d bytes: malformed", len(data))
	}
	data = append([]byte(nil), data...)
	hdr := unix.NlMsghdr{Len: uint32(unix.SizeofNlMsghdr + len(data)), Type: t, Flags: flags}
	if u.lib, err = netlink.LinkDeserialize(&hdr, data); err != nil {
		return u, false, fmt.Errorf("link message: %w", err)
	}
	return u, true, nil
}

// wireNeigh is one neighbour message decoded: what NeighInfo and FdbInfo
// carry, with link indexes instead of names.
type wireNeigh struct {
	family, index, state, typ int
	master, vlan              int
	ip                        netip.Addr // NDA_DST, unmapped as ipToAddr does
	hasIP                     bool
	mac                       net.HardwareAddr // NDA_LLADDR; nil when absent
	deleted                   bool
}

// parseNeighMsg decodes an ndmsg and the attributes the watcher needs
// (NDA_DST, NDA_LLADDR, NDA_VLAN, NDA_MASTER) as the library's
// NeighDeserialize reads them, except that a 16-byte NDA_LLADDR is always
// a hardware address (the library asks the current namespace whether the
// link is an IPv6 tunnel) and a 4-byte one, an IPv4 tunnel's remote, is
// none. The MAC is copied out of b. ok is false for a truncated message.
func parseNeighMsg(b []byte) (w wireNeigh, ok bool) {
	if len(b) < unix.SizeofNdMsg {
		return w, false
	}
	// struct ndmsg: family, pad1, pad2, ifindex (s32), state (u16),
	// flags, type.
	w.family, w.index = int(b[0]), int(native.Uint32(b[4:8]))
	w.state, w.typ = int(native.Uint16(b[8:10])), int(b[11])
	ok = eachAttr(b[unix.SizeofNdMsg:], func(typ uint16, v []byte) bool {
		switch typ {
		case unix.NDA_DST:
			w.ip, _ = netip.AddrFromSlice(v)
			w.ip, w.hasIP = w.ip.Unmap(), true
		case unix.NDA_LLADDR:
			if len(v) != 4 {
				w.mac = append(net.HardwareAddr{}, v...)
			}
		case unix.NDA_VLAN:
			if len(v) < 2 {
				return false
			}
			w.vlan = int(native.Uint16(v))
		case unix.NDA_MASTER:
			if len(v) < 4 {
				return false
			}
			w.master = int(native.Uint32(v))
		}
		return true
	})
	return w, ok
}

// neighSubscribe reads the neighbour group of ns (IPv4/IPv6 neighbours
// and AF_BRIDGE FDB entries) into ch, decoded by parseNeighMsg: the
// library's NeighSubscribeWithOptions, less RTM_GETNEIGH (the kernel's
// requests to a user-space resolver, not a change). ch is closed when the
// socket fails (ENOBUFS above all; errcb hears why) or done closes. With
// direct set, each message goes to it on the reader's goroutine instead
// of into ch (which then only closes). With own (OmitOwnFdbWrites), the
// echoes of own's recorded FDB adds are dropped first, before they cost
// anything more (fdbecho.go). Equivalent to: ip monitor neigh; bridge
// monitor fdb.
func neighSubscribe(ns netns.NsHandle, ch chan<- wireNeigh, done <-chan struct{}, errcb func(error), size int, force bool, direct func(wireNeigh), own *fdbEchoes) error {
	r, err := openEvents(ns, size, force, "netlink-neighs", done, unix.RTNLGRP_NEIGH)
	if err != nil {
		return err
	}
	go func() {
		defer close(ch)
		r.each(done, errcb, func(t, _ uint16, data []byte) {
			if t != unix.RTM_NEWNEIGH && t != unix.RTM_DELNEIGH {
				return
			}
			if w, ok := parseNeighMsg(data); ok {
				w.deleted = t == unix.RTM_DELNEIGH
				if own != nil && own.take(&w) {
					return
				}
				if direct != nil {
					direct(w)
				} else {
					ch <- w
				}
			} else {
				errcb(fmt.Errorf("neighbour message of %d bytes: truncated", len(data)))
			}
		})
	}()
	return nil
}

// eventReader reads netlink groups of a namespace (openEvents) with a
// reused buffer and hands each message to a decoder of our own (each):
// the library's readers allocate a copy of every datagram and a full
// object per message.
type eventReader struct {
	f   *os.File // non-blocking, in the runtime's poller: Close wakes Read
	buf []byte
	sa  unix.RawSockaddrNetlink
}

// attachFilter attaches the classic BPF socket filter prog to the
// reader's socket (SO_ATTACH_FILTER): the kernel drops what it rejects
// before it is queued.
func (r *eventReader) attachFilter(prog []unix.SockFilter) error {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	}); err != nil {
		return err
	}
	return serr
}

// recv is recvfrom(fd, buf, MSG_DONTWAIT) with the sender in r.sa.
func (r *eventReader) recv(fd int) (int, error) {
	sl := uint32(unix.SizeofSockaddrNetlink)
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&r.sa)), uintptr(unsafe.Pointer(&sl)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
