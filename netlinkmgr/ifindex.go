package netlinkmgr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ifindexCache maps link names to ifindexes for the writes that only need
// the index (routes, addresses, FDB entries), saving the RTM_GETLINK round
// trip that resolving a name costs on every call.
//
// It is kept correct by construction: a socket subscribed to RTNLGRP_LINK
// (opened before the first lookup) receives a message for every change of
// any link — rename, delete, re-create, made by us or anyone else. The
// kernel queues that message before the changing request returns, so
// draining the socket (non-blocking) before each use forgets every entry
// whose link changed before this call: a cached index is never older than
// what a fresh RTM_GETLINK would return at that moment. An overflowed or
// unreadable socket clears the whole cache. Callers still retry once with a
// fresh lookup when the kernel answers a cached index with ENODEV.
type ifindexCache struct {
	mu      sync.Mutex
	sock    *nl.NetlinkSocket // nil: caching off, every call looks up
	byName  map[string]int
	byIndex map[int]string
	// masters is the master's ifindex (0: none) of the cached links whose
	// master is known: learned with the link from an RTM_NEWLINK of family
	// AF_UNSPEC, a lookup or a dump (List), and kept by every later
	// AF_UNSPEC RTM_NEWLINK of the link (a master change is one:
	// NETDEV_CHANGEUPPER). A port's master is then known without an
	// RTM_GETLINK (Links.Master).
	masters map[int]int
	buf     []byte
}

// ifindexCacheBuffer is the subscription's receive buffer: link messages
// are rare next to route writes, and an overflow only clears the cache.
const ifindexCacheBuffer = 1 << 20

func (c *ifindexCache) open(k *kernel) {
	s, err := nl.SubscribeAt(k.ns, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_LINK)
	if err != nil {
		return // no cache: correct, only slower
	}
	_ = s.SetReceiveBufferSize(ifindexCacheBuffer, false)
	c.sock = s
	c.byName = map[string]int{}
	c.byIndex = map[int]string{}
	c.masters = map[int]int{}
	c.buf = make([]byte, 64<<10)
}

func (c *ifindexCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock != nil {
		c.sock.Close()
		c.sock = nil
	}
}

func (c *ifindexCache) clear() {
	clear(c.byName)
	clear(c.byIndex)
	clear(c.masters)
}

func (c *ifindexCache) forgetIndex(idx int) {
	if name, ok := c.byIndex[idx]; ok {
		delete(c.byName, name)
		delete(c.byIndex, idx)
	}
	delete(c.masters, idx)
}

// forget drops name (after the kernel said its cached index is gone).
func (c *ifindexCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if idx, ok := c.byName[name]; ok {
		delete(c.byName, name)
		delete(c.byIndex, idx)
		delete(c.masters, idx)
	}
}

// drain applies every queued link message; c.mu is held.
func (c *ifindexCache) drain() {
	fd := c.sock.GetFd()
	for {
		n, err := recvDontWait(fd, c.buf)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EWOULDBLOCK) {
				return
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// ENOBUFS (messages lost) or anything else: forget all.
			c.clear()
			if !errors.Is(err, unix.ENOBUFS) {
				return
			}
			continue
		}
		msgs, err := syscall.ParseNetlinkMessage(c.buf[:n])
		if err != nil {
			c.clear()
			continue
		}
		for _, m := range msgs {
			// struct ifinfomsg: family u8, pad u8, type u16, index s32.
			if (m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK) || len(m.Data) < 8 {
				c.clear()
				continue
			}
			idx := int(int32(binary.NativeEndian.Uint32(m.Data[4:8])))
			if m.Header.Type != unix.RTM_NEWLINK {
				c.forgetIndex(idx)
				continue
			}
			name, master := linkMsgNameMaster(m.Data)
			// An AF_BRIDGE message is a bridge's view of a port (or of
			// itself: its IFLA_MASTER is then its own index); the
			// link's master comes from its AF_UNSPEC messages only.
			family := m.Data[0]
			if c.byIndex[idx] != "" && string(name) == c.byIndex[idx] {
				// A change of the link that keeps its name (state,
				// an upper device, a port joining): the index stands.
				// Every VLAN device made on a bridge is one for the
				// bridge.
				if family != unix.AF_BRIDGE {
					c.masters[idx] = master
				}
				continue
			}
			if family == unix.AF_BRIDGE {
				master = -1
			}
			c.relearn(idx, name, master)
		}
	}
}

// learn records name → idx from an RTM_NEWLINK drained in order: what
// a lookup would have answered at that point of the stream, and every
// later change of the index or the name is a later message. A link made
// by us (a bond, a VLAN device) is then known without an RTM_GETLINK of
// its own: its first use as a master or a port needs none. c.mu is held.
func (c *ifindexCache) learn(idx int, name []byte) {
	if idx <= 0 || len(name) == 0 {
		return
	}
	if old, ok := c.byName[string(name)]; ok && old != idx {
		delete(c.byIndex, old)
		delete(c.masters, old)
	}
	n := string(name)
	c.byName[n], c.byIndex[idx] = idx, n
}

// relearn replaces what is cached of ifindex idx by name and, when
// master is not negative, the link's master (0: none). c.mu is held.
func (c *ifindexCache) relearn(idx int, name []byte, master int) {
	c.forgetIndex(idx)
	c.learn(idx, name)
	if master >= 0 && c.byIndex[idx] != "" {
		c.masters[idx] = master
	}
}

// nameOf is the cached name of ifindex idx ("" when not cached), after
// draining the queued link messages.
func (k *kernel) nameOf(idx int) string {
	c := &k.idx
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil || idx == 0 {
		return ""
	}
	c.drain()
	return c.byIndex[idx]
}

// ifindex resolves name; cached reports whether the index came from the
// cache (so an ENODEV from the kernel warrants one fresh retry).
func (k *kernel) ifindex(name string) (idx int, cached bool, err error) {
	drained := false
	return k.ifindexOnce(name, &drained)
}

// ifindexOnce is ifindex for one of the links of a batch being built: the
// cache's socket is drained only when *drained is false (then set). A
// link change after that first drain is as if it came after the batch's
// requests were built: the ENODEV retry covers both alike.
func (k *kernel) ifindexOnce(name string, drained *bool) (idx int, cached bool, err error) {
	c := &k.idx
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		l, err := k.link(name)
		if err != nil {
			return 0, false, err
		}
		return l.Attrs().Index, false, nil
	}
	if !*drained {
		c.drain()
		*drained = true
	}
	if idx, ok := c.byName[name]; ok {
		return idx, true, nil
	}
	// The lookup runs under c.mu, after the drain: any change to the link
	// after it queues a message that the next drain applies.
	l, err := k.link(name)
	if err != nil {
		return 0, false, err
	}
	idx = l.Attrs().Index
	c.forgetIndex(idx)
	c.byName[name], c.byIndex[idx] = idx, name
	c.masters[idx] = l.Attrs().MasterIndex
	return idx, false, nil
}

// withIfindex runs do with name's ifindex; when a cached index is refused
// with ENODEV (the link went away), the entry is dropped and do runs once
// more with a fresh lookup.
func (k *kernel) withIfindex(name string, do func(idx int) error) error {
	idx, cached, err := k.ifindex(name)
	if err != nil {
		return err
	}
	err = do(idx)
	if cached && isNoDevice(err) {
		k.idx.forget(name)
		if idx, _, err = k.ifindex(name); err != nil {
			return err
		}
		err = do(idx)
	}
	return err
}

func isNoDevice(err error) bool {
	if err == nil {
		return false // before lnf: its address escapes, one allocation per call
	}
	var lnf netlink.LinkNotFoundError
	return errors.Is(err, unix.ENODEV) || errors.As(err, &lnf)
}

// linkMsgName is the IFLA_IFNAME of an RTM_NEWLINK/DELLINK payload
// (ifinfomsg, then attributes), nil when it has none or is malformed.
func linkMsgName(data []byte) []byte {
	name, _ := linkMsgNameMaster(data)
	return name
}

// linkMsgNameMaster is linkMsgName and the message's IFLA_MASTER (0 when
// absent: the link has no master; the last one, as parseLinkMsg reads it).
func linkMsgNameMaster(data []byte) (name []byte, master int) {
	const ifinfomsgLen = 16
	if len(data) < ifinfomsgLen {
		return nil, 0
	}
	eachAttr(data[ifinfomsgLen:], func(typ uint16, v []byte) bool {
		switch typ {
		case unix.IFLA_IFNAME:
			if name != nil {
				break // the first one, as before
			}
			if i := bytes.IndexByte(v, 0); i >= 0 {
				v = v[:i]
			}
			name = v
		case unix.IFLA_MASTER:
			if len(v) >= 4 {
				master = int(native.Uint32(v[:4]))
			}
		}
		return true
	})
	return name, master
}

// masterOf is the cached master of link name after a drain: its name (""
// for none) and known true, or known false when the cache cannot tell
// (the link or its master's name not cached, the master not known).
func (c *ifindexCache) masterOf(name string) (master string, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sock == nil {
		return "", false
	}
	c.drain()
	idx, ok := c.byName[name]
	if !ok {
		return "", false
	}
	m, ok := c.masters[idx]
	switch {
	case !ok:
		return "", false
	case m == 0:
		return "", true
	}
	master = c.byIndex[m]
	return master, master != ""
}

// learnDump records the links of a dump (List) taken while c.mu was held,
// without a drain first: a message queued before or during the dump is
// applied after it by the next drain, and the last message of a link is
// its latest state, so what stays is never older than the dump. (A drain
// between the dump and this would let the dump's state of a link
// overwrite a newer message's.) A link cached under its name with its
// master known is left as it is (exact already): a List every counters
// interval (syncd) costs a look-up per link.
func (c *ifindexCache) learnDump(links []netlink.Link) {
	for _, l := range links {
		a := l.Attrs()
		if c.byIndex[a.Index] == a.Name {
			if _, ok := c.masters[a.Index]; ok {
				continue
			}
		}
		c.relearn(a.Index, []byte(a.Name), a.MasterIndex)
	}
}
