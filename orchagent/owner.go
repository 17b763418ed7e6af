package orchagent

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// Ownership: orchagent changes or deletes only kernel objects it created
// and marked (docs/orchagent.md, "Ownership"). This file holds the reads
// of the kernel view that decide whose an object is and whether a next
// hop can ever work.

// foreignRoute returns table's route of another protocol to dst with
// metric, if any.
func (v *kernelView) foreignRoute(table int, dst netip.Prefix, metric int) (netlinkmgr.RouteInfo, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.foreign.withMetric(rdstOf(table, dst), metric, &v.names)
}

// notedForeign records a route of another protocol that a read found.
func (v *kernelView) notedForeign(r netlinkmgr.RouteInfo) {
	v.mu.Lock()
	v.foreign.put(&r, &v.names)
	v.mu.Unlock()
}

// routeConflict is the error of a route key whose table, prefix and metric
// hold a route of another protocol.
func routeConflict(r netlinkmgr.RouteInfo) error {
	return fmt.Errorf("route %s metric %d exists with protocol %s; not replacing it",
		normPrefix(r.Dst), r.Metric, netlinkmgr.ProtocolName(r.Protocol))
}

// addrConflict is the error of an address key whose address exists on the
// link without our mark.
func addrConflict(table, key string, a netlinkmgr.AddrInfo) error {
	return fmt.Errorf("%s|%s: address %s on %s exists with protocol %s (not added by switchyard); not replacing it",
		table, key, a.Prefix, a.Link, addrProtoName(a.Protocol))
}

// addrProtoName names an IFA_PROTO value.
func addrProtoName(p int) string {
	switch p {
	case 0:
		return "unspec (added by hand or by other software)"
	case 1:
		return "kernel_lo"
	case 2:
		return "kernel_ra"
	case 3:
		return "kernel_ll"
	case netlinkmgr.ProtoSwitchyard:
		return "switchyard (201)"
	}
	return fmt.Sprint(p)
}

// allAddrs returns every address of the view with its protocol.
func (v *kernelView) allAddrs() []netlinkmgr.AddrInfo {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []netlinkmgr.AddrInfo
	for link, m := range v.addrs {
		for p, proto := range m {
			out = append(out, netlinkmgr.AddrInfo{Link: link, Prefix: p, Protocol: proto})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Link != out[j].Link {
			return out[i].Link < out[j].Link
		}
		return out[i].Prefix.String() < out[j].Prefix.String()
	})
	return out
}

// addrIndex answers "is this an address of the switch / a subnet's
// broadcast" per route key without walking every address: rebuilt from
// addrs when addrVer moved.
type addrIndex struct {
	ver   uint64
	local map[netip.Addr][]string            // address → links holding it
	bcast map[netip.Addr]netlinkmgr.AddrInfo // IPv4 subnet broadcast → its address
}

// index returns the current addrIndex; v.mu held.
func (v *kernelView) indexLocked() *addrIndex {
	x := &v.aidx
	if x.local != nil && x.ver == v.addrVer {
		return x
	}
	x.ver = v.addrVer
	x.local = map[netip.Addr][]string{}
	x.bcast = map[netip.Addr]netlinkmgr.AddrInfo{}
	for l, m := range v.addrs {
		for p := range m {
			ip := p.Addr().Unmap()
			x.local[ip] = append(x.local[ip], l)
			if ip.Is4() && p.Bits() < 31 {
				x.bcast[broadcast4(p)] = netlinkmgr.AddrInfo{Link: l, Prefix: p}
			}
		}
	}
	return x
}

// localAddr returns a link holding ip as one of its addresses; a
// link-local ip counts only on link (another link may use it too).
func (v *kernelView) localAddr(ip netip.Addr, link string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	links := v.indexLocked().local[ip]
	if ip.IsLinkLocalUnicast() {
		for _, l := range links {
			if l == link {
				return l, true
			}
		}
		return "", false
	}
	if len(links) == 0 {
		return "", false
	}
	return links[0], true
}

// subnetOf returns an IPv4 or IPv6 address whose subnet holds ip (on link
// when link is set): the gateway is on a connected subnet.
func (v *kernelView) subnetOf(ip netip.Addr, link string) (netlinkmgr.AddrInfo, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for l, m := range v.addrs {
		if link != "" && l != link {
			continue
		}
		if snap, ok := v.links[l]; !ok || !snap.admin {
			continue // its connected routes are gone until it is up
		}
		for p := range m {
			if p.Bits() < p.Addr().BitLen() && p.Masked().Contains(ip) {
				return netlinkmgr.AddrInfo{Link: l, Prefix: p}, true
			}
		}
	}
	return netlinkmgr.AddrInfo{}, false
}

// broadcastOf returns the IPv4 address whose subnet's broadcast address
// is ip.
func (v *kernelView) broadcastOf(ip netip.Addr) (netlinkmgr.AddrInfo, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	a, ok := v.indexLocked().bcast[ip]
	return a, ok
}

func broadcast4(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// badGateway says why gw (through ifname, "" = any) can never be a next
// hop ("" when it may be): loopback, multicast, unspecified, broadcast,
// or an address of this switch. Such a route is an error, not pending:
// nothing can appear that makes it work (until that address goes, which
// re-examines it).
//
// local says whether to check for an address of this switch and a subnet
// broadcast (the default VRF only: VRFs may reuse each other's addresses).
func (o *Orch) badGateway(gw netip.Addr, ifname string, local bool) string {
	g := gw.Unmap()
	switch {
	case g.IsUnspecified():
		return fmt.Sprintf("next hop %s is the unspecified address", g)
	case g.IsLoopback():
		return fmt.Sprintf("next hop %s is a loopback address", g)
	case g.IsMulticast():
		return fmt.Sprintf("next hop %s is a multicast address", g)
	case g == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Sprintf("next hop %s is the limited broadcast address", g)
	}
	if !local {
		return ""
	}
	if link, ok := o.view.localAddr(g, ifname); ok {
		return fmt.Sprintf("next hop %s is an address of this switch (on %s)", g, link)
	}
	if a, ok := o.view.broadcastOf(g); ok {
		return fmt.Sprintf("next hop %s is the broadcast address of %s on %s", g, a.Prefix.Masked(), a.Link)
	}
	return ""
}

// gatewayRefused describes the kernel refusing next hops that are on a
// connected subnet: the kernel's own reason, as an error (retried on
// address and route events, not shown as pending: nothing is missing).
func (o *Orch) gatewayRefused(hops []netlinkmgr.NextHop, err error) (error, bool) {
	var on []string
	for _, nh := range hops {
		if !nh.Gateway.IsValid() {
			continue
		}
		if a, ok := o.view.subnetOf(nh.Gateway.Unmap(), nh.Link); ok {
			on = append(on, fmt.Sprintf("%s (on %s, subnet %s)", nh.Gateway.Unmap(), a.Link, a.Prefix.Masked()))
		}
	}
	if len(on) == 0 {
		return nil, false
	}
	return fmt.Errorf("the kernel refuses next hop %s: %w", strings.Join(on, ", "), err), true
}
