// Package netnsx is the one copy of "run this inside the daemon's network
// namespace" shared by the daemons that open sockets or attach programs
// in a named namespace (impaird, trafficd): a socket, a netlink handle
// or an XDP attachment belongs to the namespace of the thread that made
// it, so that thread must be inside the namespace at that moment.
package netnsx

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NS is a named network namespace, or the caller's own (Open("")).
type NS struct {
	h netns.NsHandle // -1 = the current namespace
}

// Open opens the namespace name ("" = the current one, nothing opened).
//
// Equivalent to: ip netns exec NAME ... (the handle of /run/netns/NAME)
func Open(name string) (*NS, error) {
	if name == "" {
		return &NS{h: -1}, nil
	}
	h, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %q (ip netns add %s?): %w", name, name, err)
	}
	return &NS{h: h}, nil
}

// Current reports whether n is the caller's own namespace.
func (n *NS) Current() bool { return n.h == -1 }

// Handle is the namespace's handle (-1 for the current namespace).
func (n *NS) Handle() netns.NsHandle { return n.h }

// Close releases the handle.
func (n *NS) Close() {
	if n.h != -1 {
		n.h.Close()
		n.h = -1
	}
}

// Do runs f on a locked OS thread inside the namespace and moves the
// thread back afterwards; a thread that cannot go back is not unlocked,
// so it dies with the goroutine instead of serving others in the wrong
// namespace.
func (n *NS) Do(f func() error) error {
	if n.h == -1 {
		return f()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(n.h); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace: %w", err)
	}
	ferr := f()
	if err := netns.Set(orig); err == nil {
		runtime.UnlockOSThread()
	}
	return ferr
}

// NetlinkHandle opens an rtnetlink handle whose socket lives in the
// namespace (the handle stays valid after Close).
func (n *NS) NetlinkHandle() (*netlink.Handle, error) {
	if n.h == -1 {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	return netlink.NewHandleAt(n.h, unix.NETLINK_ROUTE)
}
