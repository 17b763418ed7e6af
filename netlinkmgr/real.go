package netlinkmgr

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// kernel is the real Kernel: one rtnetlink socket (netlink.Handle) opened
// inside the namespace and reused by every call. The handle serializes
// requests on its socket, so a kernel may be shared by goroutines.
type kernel struct {
	h      *netlink.Handle
	raw    *nl.SocketHandle // second socket for requests the library cannot shape
	ns     netns.NsHandle   // kept open for Watch subscriptions
	nsName string           // for messages
	writes atomic.Uint64
	idx    ifindexCache // name → ifindex for routes, addresses, FDB
	rt     routeSock    // route writes
	echoes fdbEchoes    // AddBatch's FDB entries whose echo is not to be heard (fdbecho.go)
}

var _ Kernel = (*kernel)(nil)

// requestTimeout bounds one netlink request, so a wedged kernel call
// surfaces as an error (EAGAIN) instead of hanging a daemon.
const requestTimeout = 30 * time.Second

// Open returns the real Kernel for opts' namespace: opts.NetNSPath, else
// /run/netns/opts.NetNS, else the caller's current namespace. No ip(8)
// equivalent; like "ip -n NAME ..." it binds every later call to NAME.
func Open(opts Options) (Kernel, error) {
	path, label := opts.NetNSPath, opts.NetNSPath
	if path == "" && opts.NetNS != "" {
		path, label = "/run/netns/"+opts.NetNS, opts.NetNS
	}
	var ns netns.NsHandle
	var err error
	if path == "" {
		ns, err = netns.Get()
		label = "(current)"
	} else {
		ns, err = netns.GetFromPath(path)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			hint := fmt.Sprintf("network namespace %s not found (ip netns add %s)", opts.NetNS, opts.NetNS)
			if opts.NetNSPath != "" {
				hint = fmt.Sprintf("network namespace file %s not found", opts.NetNSPath)
			}
			return nil, &OpError{Op: "open", Object: "netlink", Err: &notFoundError{msg: hint, errno: err}}
		}
		return nil, opErr("open", "network namespace "+label, err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, opErr("open", "netlink socket in network namespace "+label, err)
	}
	if err := h.SetSocketTimeout(requestTimeout); err != nil {
		h.Close()
		ns.Close()
		return nil, opErr("open", "netlink socket in network namespace "+label, err)
	}
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		ns.Close()
		return nil, opErr("open", "netlink socket in network namespace "+label, err)
	}
	tv := unix.NsecToTimeval(requestTimeout.Nanoseconds())
	s.SetSendTimeout(&tv)
	s.SetReceiveTimeout(&tv)
	k := &kernel{h: h, raw: &nl.SocketHandle{Socket: s}, ns: ns, nsName: label}
	k.idx.open(k)
	if err := k.rt.open(k); err != nil {
		k.Close()
		return nil, opErr("open", "netlink socket in network namespace "+label, err)
	}
	return k, nil
}

func (k *kernel) Links() Links             { return realLinks{k} }
func (k *kernel) Addrs() Addrs             { return realAddrs{k} }
func (k *kernel) Routes() Routes           { return realRoutes{k} }
func (k *kernel) BridgeVlans() BridgeVlans { return realVlans{k} }
func (k *kernel) Fdbs() Fdbs               { return realFdbs{k} }
func (k *kernel) Neighs() Neighs           { return realNeighs{k} }

// Writes counts mutating calls (Add/Set/Del/Replace), failed ones included.
func (k *kernel) Writes() uint64 { return k.writes.Load() }

// Close releases the netlink socket and the namespace handle. Watch
// channels close with their own contexts.
func (k *kernel) Close() error {
	k.h.Close()
	k.raw.Close()
	k.idx.close()
	k.rt.close()
	return k.ns.Close()
}

// link resolves a name, mapping absence to ErrNotFound.
func (k *kernel) link(name string) (netlink.Link, error) {
	l, err := k.h.LinkByName(name)
	if err != nil {
		return nil, mapNotFound(err)
	}
	return l, nil
}

// linkNames maps ifindex → name for the namespace.
func (k *kernel) linkNames() (map[int]string, error) {
	links, err := retryDump(func() ([]netlink.Link, error) { return k.h.LinkList() })
	if err != nil {
		return nil, err
	}
	m := make(map[int]string, len(links))
	for _, l := range links {
		m[l.Attrs().Index] = l.Attrs().Name
	}
	return m, nil
}

// retryDump repeats a dump the kernel interrupted (NLM_F_DUMP_INTR: the
// table changed while it was being read), so callers never see half a
// table.
func retryDump[T any](dump func() (T, error)) (T, error) {
	var v T
	var err error
	for i := 0; i < 10; i++ {
		v, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
		time.Sleep(time.Duration(i) * time.Millisecond)
	}
	return v, err
}
