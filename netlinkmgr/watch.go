package netlinkmgr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Watch subscribes to the namespace's link, IPv4/IPv6 address, route and
// neighbour groups (the last carries AF_BRIDGE FDB entries too). Equivalent
// to: ip monitor link address route neigh; bridge monitor fdb.
//
// Delivery: one channel, kernel order within each object kind (links,
// addresses, routes and neighbours come from separate sockets, so there is
// no order across kinds). Every event carries the whole object; Deleted
// marks RTM_DEL*. FDB entries arrive as EventFdb, never as EventNeigh;
// NOARP neighbours and AF_BRIDGE link messages (port state and vid
// chatter, dropped unparsed) are left out; routes of every table are
// delivered.
//
// Overflow: when a socket reports ENOBUFS (the consumer or this goroutine
// fell behind and the kernel dropped messages) all sockets are reopened,
// EventResync is sent, then the complete current state as non-deleted
// events, then EventSynced. A consumer should drop (or mark) its view on
// EventResync and sweep what was not re-listed on EventSynced. Events read
// from the new sockets while listing follow the listing, so replaying them
// in order converges on the kernel's state.
func (k *kernel) Watch(ctx context.Context, opts WatchOptions) (<-chan Event, error) {
	w := &watcher{k: k, opts: opts, out: make(chan Event, 128), names: map[int]string{}, force: true}
	subs, err := w.subscribe()
	if err != nil {
		return nil, opErr("watch", "network namespace "+k.nsName, err)
	}
	go w.run(ctx, subs)
	return w.out, nil
}

type watcher struct {
	k     *kernel
	opts  WatchOptions
	out   chan Event
	names map[int]string // ifindex → name; entries are kept after deletion
	force bool           // SO_RCVBUFFORCE allowed (CAP_NET_ADMIN)

	// With opts.Handler, mu is held across every call of it: the link and
	// neighbour readers call it on their own goroutines (deliverLink,
	// deliverNeigh), run for addresses and routes and across a listing.
	// names is then under mu too.
	// stopped: run has ended, no call follows.
	mu      sync.Mutex
	stopped bool
}

// subscription is one set of sockets; closing done closes them.
type subscription struct {
	once   sync.Once
	done   chan struct{}
	links  chan linkUpdate
	addrs  chan addrUpdate
	routes chan routeUpdate
	neighs chan wireNeigh
}

// subBuffer is how many parsed messages each socket's reader may queue
// while the consumer is busy, before the socket itself starts filling.
const subBuffer = 1024

func (w *watcher) subscribe() (*subscription, error) {
	s, err := w.trySubscribe()
	if err != nil && w.force && errors.Is(err, unix.EPERM) {
		w.force = false // no CAP_NET_ADMIN: the size is capped at net.core.rmem_max
		s, err = w.trySubscribe()
	}
	return s, err
}

func (w *watcher) trySubscribe() (*subscription, error) {
	s := &subscription{
		done:   make(chan struct{}),
		links:  make(chan linkUpdate, subBuffer),
		addrs:  make(chan addrUpdate, subBuffer),
		routes: make(chan routeUpdate, subBuffer),
		neighs: make(chan wireNeigh, subBuffer),
	}
	ns := &w.k.ns
	size, force := w.opts.RecvBuffer, w.force && w.opts.RecvBuffer > 0
	// Receive errors (ENOBUFS above all) end the library's reader, which
	// closes its channel: run notices the close and resyncs.
	// A reader whose socket was closed by stop (done closed) reports
	// the library's last EAGAIN: that is the end of the subscription,
	// not a receive error, so it is not reported.
	ignore := func(err error) {
		select {
		case <-s.done:
		default:
			w.report(fmt.Errorf("netlink receive: %w", err))
		}
	}
	// Our own reader: it drops AF_BRIDGE messages before parsing and
	// decodes the common kinds itself (evreader.go, linkwire.go).
	// With a Handler, link events are delivered on the reader's
	// goroutine (one hand-over fewer per event: no channel, no run).
	var direct func(linkUpdate)
	if w.opts.Handler != nil {
		direct = func(u linkUpdate) { w.deliverLink(s, u) }
	}
	err := linkSubscribe(*ns, s.links, s.done, ignore, size, force, direct)
	if err == nil {
		// Our own reader: the library's drops IFA_PROTO.
		var quiet uint32
		if w.opts.OmitOwnAddrWrites {
			quiet = w.k.rt.pid
		}
		err = addrSubscribe(*ns, s.addrs, s.done, ignore, size, force, quiet)
	}
	if err == nil {
		// Our own reader too: the library's allocates per message and
		// attribute, and a bulk load hears every route it wrote.
		var quiet uint32
		if w.opts.OmitOwnRouteWrites {
			quiet = w.k.rt.pid
		}
		err = routeSubscribe(*ns, s.routes, s.done, ignore, size, force, quiet, w.opts.OmitKernelLocalRoutes, w.opts.OmitKernelPrefixRoutes)
	}
	if err == nil {
		// Our own reader and decoder (evreader.go).
		// With a Handler, on the reader's goroutine as links.
		var direct func(wireNeigh)
		if w.opts.Handler != nil {
			direct = func(u wireNeigh) { w.deliverNeigh(s, u) }
		}
		var own *fdbEchoes
		if w.opts.OmitOwnFdbWrites {
			own = &w.k.echoes
			own.on.Store(true)
		}
		err = neighSubscribe(*ns, s.neighs, s.done, ignore, size, force, direct, own)
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return s, nil
}

// close stops the readers and drains their channels so none stays blocked.
func (s *subscription) close() {
	if s == nil {
		return
	}
	s.once.Do(func() { s.stop() })
}

func (s *subscription) stop() {
	close(s.done)
	go func() {
		for range s.links {
		}
	}()
	go func() {
		for range s.addrs {
		}
	}()
	go func() {
		for range s.routes {
		}
	}()
	go func() {
		for range s.neighs {
		}
	}()
}

func (w *watcher) run(ctx context.Context, s *subscription) {
	defer close(w.out)
	defer func() { s.close() }()
	// With a Handler, every call is made under mu (see watcher.mu); the
	// link reader's wait for mu while a listing runs keeps its events
	// after the listing, as the channel's queue did.
	lock, unlock := func() {}, func() {}
	if w.opts.Handler != nil {
		lock, unlock = w.mu.Lock, w.mu.Unlock
	}
	defer func() { lock(); w.stopped = true; unlock() }()
	if w.opts.ListExisting {
		lock()
		ok := w.relist(ctx) && w.send(ctx, Event{Kind: EventSynced})
		unlock()
		if !ok {
			return
		}
	}
	for {
		ok := true
		select {
		case <-ctx.Done():
			return
		case u, open := <-s.links: // with a Handler: only the close
			if ok = open; open {
				ok = w.linkEvent(ctx, u)
			}
		case u, open := <-s.addrs:
			if ok = open; open {
				lock()
				a := AddrInfo{Link: w.name(u.index), Prefix: u.prefix, Protocol: u.protocol}
				ok = w.send(ctx, Event{Kind: EventAddr, Deleted: u.deleted, Addr: &a})
				unlock()
			}
		case u, open := <-s.routes:
			if ok = open; open && u.w.flags&unix.RTM_F_CLONED == 0 {
				lock()
				ev := new(routeEvent) // the route and one next hop: one allocation
				ev.r = u.w.routeInfo(w.name, &ev.hop)
				ok = w.send(ctx, Event{Kind: EventRoute, Deleted: u.deleted, Route: &ev.r})
				unlock()
			} else if open {
				continue
			}
		case u, open := <-s.neighs: // with a Handler: only the close
			if ok = open; open {
				lock()
				ok = w.neighEvent(ctx, u)
				unlock()
			}
		}
		if ok {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// A reader ended: the kernel dropped messages (ENOBUFS) or the
		// socket failed. Start over on fresh sockets; a Handler hears
		// nothing from the new ones before the listing is complete.
		lock()
		s.close()
		if s = w.resubscribe(ctx); s == nil {
			unlock()
			return
		}
		ok = w.send(ctx, Event{Kind: EventResync}) && w.relist(ctx) && w.send(ctx, Event{Kind: EventSynced})
		unlock()
		if !ok {
			return
		}
	}
}

// deliverLink hands a link event of subscription s to the Handler, on
// the link reader's goroutine.
func (w *watcher) deliverLink(s *subscription, u linkUpdate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.liveLocked(s) {
		w.linkEvent(context.Background(), u)
	}
}

// deliverNeigh is deliverLink for a neighbour or FDB message.
func (w *watcher) deliverNeigh(s *subscription, u wireNeigh) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.liveLocked(s) {
		w.neighEvent(context.Background(), u)
	}
}

// liveLocked reports whether a message of subscription s still goes to
// the Handler: not when s was closed since (an overflow's relist covers
// it) or the watch ended; w.mu held.
func (w *watcher) liveLocked(s *subscription) bool {
	select {
	case <-s.done:
		return false
	default:
		return !w.stopped
	}
}

// resubscribe retries until it has sockets again or ctx is done.
func (w *watcher) resubscribe(ctx context.Context) *subscription {
	for delay := time.Millisecond; ; delay = min(2*delay, time.Second) {
		s, err := w.subscribe()
		if err == nil {
			return s
		}
		w.report(fmt.Errorf("resubscribe to netlink events: %w", err))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// report hands err to WatchOptions.ErrorCallback.
func (w *watcher) report(err error) {
	if w.opts.ErrorCallback != nil {
		w.opts.ErrorCallback(err)
	}
}

// send delivers ev: to the Handler (under mu), else on the channel; false
// when ctx ended.
func (w *watcher) send(ctx context.Context, ev Event) bool {
	if h := w.opts.Handler; h != nil {
		h(ev)
		return ctx.Err() == nil
	}
	select {
	case w.out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// name resolves an ifindex, asking the kernel for indexes not seen yet.
// An index the kernel does not have is remembered as "" (a veth's
// IFLA_LINK is its peer's index in the peer's namespace: every event of
// the port asked again, a round trip each); a link made with that index
// later announces itself with its own event, which names it.
func (w *watcher) name(idx int) string {
	if idx == 0 {
		return ""
	}
	if n, ok := w.names[idx]; ok {
		return n
	}
	// A link made since (a bond whose route event beat its link event
	// here) is in the ifindex cache, which learns from its own messages.
	if n := w.k.nameOf(idx); n != "" {
		w.names[idx] = n
		return n
	}
	l, err := w.k.h.LinkByIndex(idx)
	if err == nil {
		w.names[idx] = l.Attrs().Name
		return l.Attrs().Name
	}
	if IsNotFound(mapNotFound(err)) {
		w.names[idx] = ""
	}
	return ""
}

// routeEvent is an event's route with room for its next hop.
type routeEvent struct {
	r   RouteInfo
	hop [1]NextHop
}

func (w *watcher) linkEvent(ctx context.Context, u linkUpdate) bool {
	index, master, parent, name := u.indexes()
	w.names[index] = name
	w.name(master)
	w.name(parent)
	return w.send(ctx, Event{Kind: EventLink, Deleted: u.deleted, Link: u.info(w.names)})
}

func (w *watcher) neighEvent(ctx context.Context, u wireNeigh) bool {
	del := u.deleted
	link, master := w.name(u.index), w.name(u.master)
	if u.family == unix.AF_BRIDGE {
		e := &FdbInfo{MAC: u.mac, Link: link, Master: master, Vlan: uint16(u.vlan),
			Static: u.state&netlink.NUD_NOARP != 0, Local: u.state&netlink.NUD_PERMANENT != 0, Dst: u.ip}
		return w.send(ctx, Event{Kind: EventFdb, Deleted: del, Fdb: e})
	}
	if !u.hasIP || (u.state&netlink.NUD_NOARP != 0 && !del) {
		return true
	}
	n := &NeighInfo{Link: link, IP: u.ip, MAC: u.mac, State: nudName(u.state)}
	return w.send(ctx, Event{Kind: EventNeigh, Deleted: del, Neigh: n})
}

// relist sends the namespace's whole state as non-deleted events.
func (w *watcher) relist(ctx context.Context) bool {
	evs, err := w.snapshot()
	for err != nil {
		// Dumps only fail on a broken socket; keep trying until ctx ends.
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		w.report(fmt.Errorf("relist the kernel after a netlink overflow: %w", err))
		evs, err = w.snapshot()
	}
	for _, ev := range evs {
		if !w.send(ctx, ev) {
			return false
		}
	}
	return true
}

func (w *watcher) snapshot() ([]Event, error) {
	h := w.k.h
	links, err := retryDump(func() ([]netlink.Link, error) { return h.LinkList() })
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		w.names[l.Attrs().Index] = l.Attrs().Name
	}
	var evs []Event
	for _, l := range links {
		li := toLinkInfo(l, w.names)
		evs = append(evs, Event{Kind: EventLink, Link: &li})
	}
	addrs, err := w.k.dumpAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		ai := AddrInfo{Link: w.names[a.index], Prefix: a.prefix, Protocol: a.protocol}
		evs = append(evs, Event{Kind: EventAddr, Addr: &ai})
	}
	// Routes are converted as the dump delivers them (no []netlink.Route
	// of every route: see realRoutes.List).
	routes, err := retryDump(func() ([]Event, error) {
		var out []Event
		err := h.RouteListFilteredIter(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE,
			func(r netlink.Route) bool {
				ri := toRouteInfo(r, w.names)
				out = append(out, Event{Kind: EventRoute, Route: &ri})
				return true
			})
		return out, err
	})
	if err != nil {
		return nil, err
	}
	evs = append(evs, routes...)
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6, unix.AF_BRIDGE} {
		ns, err := retryDump(func() ([]netlink.Neigh, error) { return h.NeighList(0, fam) })
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if fam == unix.AF_BRIDGE {
				e := toFdbInfo(n, w.names)
				evs = append(evs, Event{Kind: EventFdb, Fdb: &e})
			} else if n.IP != nil && n.State&netlink.NUD_NOARP == 0 {
				ni := toNeighInfo(n, w.names)
				evs = append(evs, Event{Kind: EventNeigh, Neigh: &ni})
			}
		}
	}
	return evs, nil
}
