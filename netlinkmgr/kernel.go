package netlinkmgr

import "context"

// Links manages network devices.
type Links interface {
	// Add creates a link. Equivalent to: ip link add NAME type KIND [...]
	Add(l LinkInfo) error
	// AddBatch is Add of every link in order; 802.1Q devices without an
	// alias or a master go as a few netlink messages instead of one
	// request each. The error of ls[i] is errs[i] (nil = created); one
	// failure does not stop the others.
	AddBatch(ls []LinkInfo) (errs []error)
	// Set changes the set fields of an existing link. Equivalent to:
	// ip link set NAME [mtu N] [address M] [up|down] [master B|nomaster] [alias A]
	// and, for bridges, ip link set NAME type bridge vlan_filtering 1 ...
	Set(l LinkInfo) error
	// Del deletes a link. Equivalent to: ip link del NAME
	Del(name string) error
	// Get returns one link. Equivalent to: ip -d -s link show NAME. ErrNotFound if absent.
	Get(name string) (LinkInfo, error)
	// Master returns the name of the link's master, "" when it has none.
	// Equivalent to: ip -j link show NAME (its "master"). ErrNotFound if
	// absent. The real kernel answers it from its ifindex cache when it
	// can (no request).
	Master(name string) (string, error)
	// List returns all links. Equivalent to: ip -d -s link show
	List() ([]LinkInfo, error)
}

// Addrs manages interface addresses.
type Addrs interface {
	// Add adds an address marked with a.Protocol (IFA_PROTO): replace
	// semantics (no error if present), or with a.Create EEXIST if present.
	// Equivalent to: ip addr {replace|add} PREFIX dev LINK [proto P]
	Add(a AddrInfo) error
	// AddBatch is Add of every address in order, sent as a few netlink
	// messages instead of one request per address; the error of as[i] is
	// errs[i] (nil = added). One address's failure does not stop the others.
	AddBatch(as []AddrInfo) (errs []error)
	// Del removes an address; ErrNotFound only when a read confirms it is
	// absent. Equivalent to: ip addr del PREFIX dev LINK
	Del(a AddrInfo) error
	// List lists addresses of link ("" = all links) with their protocol.
	// Equivalent to: ip addr show [dev LINK]
	List(link string) ([]AddrInfo, error)
}

// Routes manages routes.
type Routes interface {
	// Replace installs or replaces a route; with r.Create it only creates
	// (EEXIST when the table holds a route to DST with metric M, whoever
	// owns it). Equivalent to:
	// ip route {replace|add} DST [nexthop via GW dev L ...] proto P metric M table T
	Replace(r RouteInfo) error
	// ReplaceBatch is Replace of every route in order, sent as a few
	// netlink messages batches instead of one request per route; the error
	// of rs[i] is errs[i] (nil = installed). One route's failure does not
	// stop the others.
	ReplaceBatch(rs []RouteInfo) (errs []error)
	// Del deletes a route, whatever its scope; ErrNotFound only when a read
	// confirms it is absent. Equivalent to: ip route del DST proto P metric M table T
	Del(r RouteInfo) error
	// List lists routes matching f. Equivalent to: ip route show table T proto P
	List(f RouteFilter) ([]RouteInfo, error)
}

// RouteWalker is a Routes that hands over a dump route by route: a caller
// that keeps its own compact form of the routes (orchagent's view of 100k)
// holds no second, full copy of them while it reads.
type RouteWalker interface {
	// Walk calls fn with each route List(f) would return, in dump order
	// (the route is fn's only during the call). When the kernel
	// interrupts the dump (the table changed meanwhile) it is taken again
	// from the start: restart is called first, and what fn was given
	// before is to be dropped. Equivalent to: ip route show table T [proto P]
	Walk(f RouteFilter, fn func(*RouteInfo), restart func()) error
}

// BridgeVlans manages VLANs on bridge ports.
type BridgeVlans interface {
	// Add adds a VLAN. Equivalent to: bridge vlan add dev LINK vid N [pvid] [untagged] [self]
	Add(v BridgeVlanInfo) error
	// AddBatch is Add of every VLAN in order, sent as a few netlink
	// messages instead of one request per VLAN; the error of vs[i] is
	// errs[i] (nil = added). One VLAN's failure does not stop the others.
	AddBatch(vs []BridgeVlanInfo) (errs []error)
	// Del removes a VLAN. Equivalent to: bridge vlan del dev LINK vid N [self]
	Del(v BridgeVlanInfo) error
	// List lists the VLANs of link ("" = all). Equivalent to: bridge vlan show [dev LINK]
	List(link string) ([]BridgeVlanInfo, error)
}

// Fdbs manages bridge forwarding entries.
type Fdbs interface {
	// Add adds or replaces an entry. Equivalent to:
	// bridge fdb replace MAC dev LINK master static [vlan N]
	Add(f FdbInfo) error
	// AddBatch is Add of every entry in order, sent as a few netlink
	// messages instead of one request per entry; the error of fs[i] is
	// errs[i] (nil = added). One entry's failure does not stop the others.
	AddBatch(fs []FdbInfo) (errs []error)
	// Del removes an entry. Equivalent to: bridge fdb del MAC dev LINK master [vlan N]
	Del(f FdbInfo) error
	// List lists entries whose master is bridge ("" = all). Equivalent to: bridge fdb show [br B]
	List(bridge string) ([]FdbInfo, error)
	// AddRemote adds remote VTEP f.Dst to vxlan device f.Link's own
	// entry for f.MAC, keeping the remotes it has (the all-zeros MAC:
	// flood to every remote, head-end replication); no error when the
	// remote is there. Equivalent to:
	// bridge fdb append MAC dev LINK dst DST self permanent
	AddRemote(f FdbInfo) error
	// DelRemote removes remote VTEP f.Dst from f.Link's entry for f.MAC,
	// leaving its other remotes; no error when the remote is not there,
	// ErrNotFound when the device is absent. Equivalent to:
	// bridge fdb del MAC dev LINK dst DST self
	DelRemote(f FdbInfo) error
}

// Neighs manages IP neighbours.
type Neighs interface {
	// List lists neighbours of link ("" = all). Equivalent to: ip neigh show [dev LINK]
	List(link string) ([]NeighInfo, error)
}

// Kernel is one network namespace's netlink boundary. The real one is
// built by Open; NewFake returns the in-memory one.
type Kernel interface {
	Links() Links
	Addrs() Addrs
	Routes() Routes
	BridgeVlans() BridgeVlans
	Fdbs() Fdbs
	Neighs() Neighs
	// Watch subscribes to link, IPv4/IPv6 address, route, neighbour and
	// AF_BRIDGE FDB multicast groups. With opts.ListExisting the current
	// objects are sent first (as non-deleted events) followed by an
	// EventSynced marker. On socket overflow (ENOBUFS) an EventResync is
	// sent and the full listing is sent again, then EventSynced. The channel
	// closes when ctx is done.
	Watch(ctx context.Context, opts WatchOptions) (<-chan Event, error)
	// Writes counts netlink write requests (add/set/del) made through this
	// Kernel since it was opened; tests use it to prove "no writes when
	// already right".
	Writes() uint64
	Close() error
}

// WatchOptions configures Kernel.Watch.
type WatchOptions struct {
	ListExisting bool
	RecvBuffer   int // socket receive buffer in bytes; 0 = default
	// ErrorCallback is told about every receive error (ENOBUFS: events
	// were lost, a relist follows), failed resubscription and failed
	// relist; the watch keeps recovering by itself. nil = not told.
	ErrorCallback func(error)
	// OmitOwnRouteWrites leaves out the route events of this Kernel's own
	// successful route writes (Routes().Replace/ReplaceBatch) whose route
	// the kernel stores as asked: every next hop names its link, or a
	// blackhole. The kernel drops them before they reach the socket (a
	// socket filter on the sender's port id and a mark in the request's
	// sequence number), so a bulk load does not hear back every route it
	// wrote. A caller setting it records its successful writes itself.
	// Writes of a next hop by gateway only (the kernel picks the link),
	// deletions, and everyone else's changes are delivered as always. The
	// Fake ignores it (delivers every event: a superset).
	OmitOwnRouteWrites bool
	// OmitOwnAddrWrites leaves out the address events of this Kernel's
	// own successful address creates in Addrs().AddBatch (ip address
	// add: NLM_F_EXCL, so success means the address is there exactly as
	// asked), the same way. Replaces, single Adds, deletions and
	// everyone else's changes are delivered as always; so are the
	// kernel's own routes that come with an address (local and prefix
	// routes). A caller setting it records its successful creates itself.
	// The Fake ignores it.
	OmitOwnAddrWrites bool
	// OmitOwnFdbWrites leaves out the echo of this Kernel's own static
	// FDB adds in Fdbs().AddBatch: the RTM_NEWNEIGH the bridge sends for
	// an entry it added or changed as asked. The bridge sends those with
	// port id 0, so no socket filter can tell them from anyone else's:
	// the watch's reader drops the first matching static entry (port,
	// VLAN, MAC) after each write, within 5 s of it (fdbecho.go); someone
	// else's add of the identical entry in that window may be dropped in
	// its place. Single Adds, deletions, entries moved to another port,
	// learned and local entries and everyone else's changes are delivered
	// as always; so are the copies the kernel adds on each of a port's
	// VLANs for an entry written without one. A caller setting it records
	// its successful adds itself. The Fake ignores it.
	OmitOwnFdbWrites bool
	// OmitKernelLocalRoutes leaves out the route events of table local
	// (255) whose protocol is kernel: the local and broadcast routes the
	// kernel adds and removes with every address of a port outside a VRF
	// (two of the three route events of an IPv4 address), and IPv6's
	// local and multicast routes. The kernel drops them before they reach
	// the socket (socket filter). A caller setting it learns of those
	// addresses from their address events. Routes of table local with
	// another protocol (added by hand), the prefix routes in main and
	// the local routes of a VRF's ports (in the VRF's table) are
	// delivered as always; so is a relist. The Fake ignores it.
	OmitKernelLocalRoutes bool
	// OmitKernelPrefixRoutes leaves out the route events of table main
	// (254) that are IPv4, protocol kernel, scope link and type unicast:
	// the prefix route the kernel adds and removes with every IPv4
	// address of a port outside a VRF (the third route event of an
	// address), dropped by the socket filter. A caller setting it learns
	// of those routes otherwise: a create that meets one fails with
	// EEXIST (ip route add: NLM_F_EXCL), and the address's delete event
	// says the route is gone. Such a route added by hand (ip route add
	// ... proto kernel scope link) is left out too. IPv6 prefix routes,
	// those of a VRF's table and a relist are delivered as always. The
	// Fake ignores it.
	OmitKernelPrefixRoutes bool
	// Handler, when set, is called with every event instead of the
	// event being sent on Watch's channel (which then only closes when
	// the watch ends, after the last call). Calls are never concurrent
	// and keep the order the channel would have; a link, neighbour or
	// FDB event is handed over on its socket's own goroutine, decoded
	// there, with no channel between (each hand-over wakes a goroutine:
	// ~12 link events per PortChannel, 3 local FDB entries per VLAN in a
	// bulk). While a call runs, events queue in the
	// sockets: a handler that blocks long makes them overflow
	// (EventResync follows).
	Handler func(Event)
}

// EventKind says which field of an Event is set.
type EventKind int

// Event kinds.
const (
	EventLink EventKind = iota + 1
	EventAddr
	EventRoute
	EventNeigh
	EventFdb
	EventResync // the socket overflowed: state was lost, a relist follows
	EventSynced // the initial (or post-overflow) listing is complete
)

// Event is one kernel change.
type Event struct {
	Kind    EventKind
	Deleted bool
	Link    *LinkInfo
	Addr    *AddrInfo
	Route   *RouteInfo
	Neigh   *NeighInfo
	Fdb     *FdbInfo
}

// Options configures Open.
type Options struct {
	// NetNS is a named network namespace (/run/netns/NAME, as made by
	// "ip netns add"); empty = the caller's current namespace.
	NetNS string
	// NetNSPath is an explicit namespace file (e.g. /proc/PID/ns/net); wins over NetNS.
	NetNSPath string
}

// Open returns the real Kernel for opts' namespace (implemented in real.go):
//
//	func Open(opts Options) (Kernel, error)
//
// NewFake returns the in-memory Kernel (fake.go):
//
//	func NewFake() *Fake
