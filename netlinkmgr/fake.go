package netlinkmgr

import (
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Fake is an in-memory Kernel for unit tests of callers. It follows the
// real kernel's rules where callers can observe them (the contract suite in
// contract_test.go runs the same scenarios against both):
//
//   - absent objects → ErrNotFound; link add of an existing name → EEXIST;
//     address add and route replace never fail because the object exists,
//     unless Create is set (EEXIST); addresses keep their Protocol;
//   - veth pairs are created and deleted together; deleting a link removes
//     its addresses, routes, FDB entries and bridge VLANs; a bridge port
//     gets the bridge's default PVID and a local FDB entry when enslaved;
//   - IPv6 routes with metric 0 get metric 1024; IPv4 gateways must be
//     inside a prefix on an up link (else ENETUNREACH), next-hop links must
//     be up (else ENETDOWN);
//   - Unsupported("vlan", "vlan_filtering", ...) makes those fail with
//     FeatureError, as on the CI host kernel (HostKernel() sets them all).
//
// It does not synthesize proto-kernel (connected) or local-table routes,
// link-local IPv6 addresses, or multicast "self" FDB entries.
//
// Ops() records each successful mutation in a fixed text form, e.g.
// "link set Ethernet0 mtu=9100 up", "route replace 10.2.0.0/16 proto 201
// metric 0 table 254 nexthop via 10.0.0.2 dev Ethernet0". Seeding helpers
// (AddPort, LearnFdb, AddNeigh, ...) change state and emit events but are
// neither recorded nor counted by Writes().
type Fake struct {
	mu          sync.Mutex
	nextIndex   int
	links       map[string]*fakeLink
	addrs       []AddrInfo
	routes      []RouteInfo
	vlans       []BridgeVlanInfo
	fdbs        []FdbInfo
	neighs      []NeighInfo
	unsupported map[string]bool
	failures    []injected
	ops         []string
	writes      atomic.Uint64
	watchers    map[*fakeWatcher]bool
}

type fakeLink struct {
	info    LinkInfo // every optional field set
	peer    string   // veth peer
	carrier bool
	stats   LinkStats
}

type injected struct {
	prefix string
	err    error
}

var _ Kernel = (*Fake)(nil)

// NewFake returns an empty Fake holding only "lo" (index 1, up, with
// 127.0.0.1/8 and ::1/128), like a fresh network namespace.
func NewFake() *Fake {
	f := &Fake{
		nextIndex:   1,
		links:       map[string]*fakeLink{},
		unsupported: map[string]bool{},
		watchers:    map[*fakeWatcher]bool{},
	}
	lo := f.newLink("lo", "", net.HardwareAddr{0, 0, 0, 0, 0, 0})
	*lo.info.MTU = 65536
	*lo.info.AdminUp = true
	f.addrs = append(f.addrs, AddrInfo{Link: "lo", Prefix: mustPrefix("127.0.0.1/8"), Protocol: ifaProtoKernelLo},
		AddrInfo{Link: "lo", Prefix: mustPrefix("::1/128"), Protocol: ifaProtoKernelLo})
	return f
}

// Unsupported makes the Fake behave like a kernel without the named
// features: link kinds ("vlan", "dummy", "vrf", ...) fail to add with a
// FeatureError, and "vlan_filtering" makes bridge vlan_filtering /
// default_pvid settings and bridge VLAN operations fail.
func (f *Fake) Unsupported(names ...string) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.unsupported[n] = true
	}
	return f
}

// HostKernel makes the Fake lack what the CI host kernel lacks: 802.1Q
// VLAN devices, bridge VLAN filtering, dummy, VRF and bond devices.
func (f *Fake) HostKernel() *Fake {
	return f.Unsupported("vlan", "vlan_filtering", "dummy", "vrf", "bond")
}

// FailNext makes the next mutation whose op-log line starts with prefix
// (e.g. "link set Ethernet0", "route replace 10.2.") fail with err.
func (f *Fake) FailNext(prefix string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, injected{prefix, err})
}

// Ops returns the recorded successful mutations, oldest first.
func (f *Fake) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

// ClearOps empties the op log (Writes() keeps counting).
func (f *Fake) ClearOps() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = nil
}

// Writes counts mutating calls (Add/Set/Del/Replace), failed ones included.
func (f *Fake) Writes() uint64 { return f.writes.Load() }

// Close does nothing; Watch channels close with their contexts.
func (f *Fake) Close() error { return nil }

func (f *Fake) Links() Links             { return fakeLinks{f} }
func (f *Fake) Addrs() Addrs             { return fakeAddrs{f} }
func (f *Fake) Routes() Routes           { return fakeRoutes{f} }
func (f *Fake) BridgeVlans() BridgeVlans { return fakeVlans{f} }
func (f *Fake) Fdbs() Fdbs               { return fakeFdbs{f} }
func (f *Fake) Neighs() Neighs           { return fakeNeighs{f} }

// begin counts a write and applies an injected failure; called with f.mu held.
func (f *Fake) begin(op string) error {
	f.writes.Add(1)
	for i, in := range f.failures {
		if strings.HasPrefix(op, in.prefix) {
			f.failures = append(f.failures[:i], f.failures[i+1:]...)
			return in.err
		}
	}
	return nil
}

// --- seeding helpers ---

// AddPort creates plain devices (kind "", admin down, carrier on, MTU 1500),
// as front-panel ports appear to a control plane.
func (f *Fake) AddPort(names ...string) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		if f.links[n] != nil {
			panic("fake: AddPort: link " + n + " exists")
		}
		f.newLink(n, "", nil)
		f.emitLink(n, false)
	}
	return f
}

// SetCarrier changes a device's carrier (a cable pulled or plugged).
func (f *Fake) SetCarrier(name string, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	if l == nil {
		return opErr("set carrier", "link "+name, notFound(unix.ENODEV))
	}
	l.carrier = on
	f.emitLink(name, false)
	return nil
}

// SetStats sets a device's counters as Get/List report them.
func (f *Fake) SetStats(name string, s LinkStats) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[name]
	if l == nil {
		return opErr("set stats", "link "+name, notFound(unix.ENODEV))
	}
	l.stats = s
	return nil
}

// Overflow simulates a socket overflow on every watcher: EventResync, the
// full listing, EventSynced — what the real Watch does after ENOBUFS.
func (f *Fake) Overflow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for w := range f.watchers {
		w.push(append(append([]Event{{Kind: EventResync}}, f.snapshot()...), Event{Kind: EventSynced})...)
	}
}

// --- links ---

func (f *Fake) newLink(name, kind string, mac net.HardwareAddr) *fakeLink {
	idx := f.nextIndex
	f.nextIndex++
	if mac == nil {
		mac = net.HardwareAddr{0x02, 0xfa, 0, 0, byte(idx >> 8), byte(idx)}
	}
	mtu, up, master, alias := 1500, false, "", ""
	l := &fakeLink{carrier: true, info: LinkInfo{
		Name: name, Index: idx, Kind: kind, MTU: &mtu, MAC: mac,
		AdminUp: &up, Master: &master, Alias: &alias,
	}}
	f.links[name] = l
	return l
}

// view returns a deep copy of link name with read-only state filled.
func (f *Fake) view(name string) LinkInfo {
	l := f.links[name]
	in := l.info
	mtu, up, master, alias := *in.MTU, *in.AdminUp, *in.Master, *in.Alias
	out := LinkInfo{Name: in.Name, Index: in.Index, Kind: in.Kind, MTU: &mtu,
		MAC: append(net.HardwareAddr(nil), in.MAC...), AdminUp: &up, Master: &master, Alias: &alias}
	if in.Bridge != nil {
		vf, pvid := *in.Bridge.VlanFiltering, *in.Bridge.DefaultPVID
		out.Bridge = &BridgeOptions{VlanFiltering: &vf, DefaultPVID: &pvid}
		if f.unsupported["vlan_filtering"] {
			out.Bridge.DefaultPVID = nil // not reported without CONFIG_BRIDGE_VLAN_FILTERING
		}
	}
	if p := f.links[l.peer]; p != nil {
		out.Veth = &VethOptions{PeerName: l.peer}
		out.ParentIdx = p.info.Index
	}
	if in.Vrf != nil {
		v := *in.Vrf
		out.Vrf = &v
	}
	if in.Bond != nil {
		out.Bond = f.bondView(name)
	}
	if in.Vxlan != nil {
		v := *in.Vxlan
		out.Vxlan = &v
	}
	if m := f.links[master]; m != nil && m.info.Kind == "bond" {
		out.BondSlave = f.bondSlaveView(name)
	}
	if in.Vlan != nil {
		v := *in.Vlan
		out.Vlan = &v
		if p := f.links[v.Parent]; p != nil {
			out.ParentIdx = p.info.Index
		}
	}
	if m := f.links[master]; m != nil {
		out.MasterIdx = m.info.Index
	}
	out.OperState = f.operState(name)
	out.OperUp = out.OperState == "up" || (out.OperState == "unknown" && up)
	st := l.stats
	out.Stats = &st
	return out
}

func (f *Fake) operState(name string) string {
	l := f.links[name]
	if !*l.info.AdminUp {
		return "down"
	}
	switch {
	case name == "lo" || l.info.Kind == "dummy":
		return "unknown"
	case l.info.Kind == "veth":
		if p := f.links[l.peer]; p == nil || !*p.info.AdminUp {
			return "lowerlayerdown"
		}
	case l.info.Kind == "vlan":
		if f.operState(l.info.Vlan.Parent) != "up" {
			return "lowerlayerdown"
		}
	case l.info.Kind == "bridge":
		for n, p := range f.links {
			if *p.info.Master == name && f.operState(n) == "up" {
				return "up"
			}
		}
		return "down"
	case l.info.Kind == "bond":
		if f.bondUpPorts(name) < max(1, *l.info.Bond.MinLinks) {
			return "down"
		}
		return "up"
	}
	if !l.carrier {
		return "down"
	}
	return "up"
}

// sortedLinks returns link names by index.
func (f *Fake) sortedLinks() []string {
	names := make([]string, 0, len(f.links))
	for n := range f.links {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return f.links[names[i]].info.Index < f.links[names[j]].info.Index })
	return names
}
