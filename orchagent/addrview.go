package orchagent

import (
	"net/netip"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// The kernel does not send us back the addresses we create in a batch
// (OmitOwnAddrWrites): addrWritten notes each in the view once its
// request is answered. A delete of one of them that the event reader
// hands over before that note (someone removed it right after the kernel
// added it) finds nothing to delete in the view. addrGone remembers
// such a delete so the note does not record an address the kernel no
// longer has: the key is retried instead (addrWritten).

// addrWrite names an address being created (normPrefix'd).
type addrWrite struct {
	link string
	p    netip.Prefix
}

// writingAddrs records the addresses a batch is about to create: the
// batch's own slice (not copied; as is not changed until addrsWritten),
// not a set: a map entry per address (and the map's growth to a pass's
// 1,024) for a look-up only the rare delete of an address the view does
// not hold makes (deletedWhileWritingLocked, a scan of the batch).
func (v *kernelView) writingAddrs(as []netlinkmgr.AddrInfo) {
	v.mu.Lock()
	v.addrWrites = as
	clear(v.addrGone)
	v.mu.Unlock()
}

// addrsWritten forgets what writingAddrs recorded, once the writes are
// noted.
func (v *kernelView) addrsWritten() {
	v.mu.Lock()
	v.addrWrites = nil
	clear(v.addrGone)
	v.mu.Unlock()
}

// deletedWhileWritingLocked handles the delete event of an address the
// view does not hold (p normPrefix'd): one being created is marked gone,
// and its dependants are told. v.mu held.
func (v *kernelView) deletedWhileWritingLocked(link string, p netip.Prefix) []string {
	if !v.isWritingLocked(link, p) {
		return nil
	}
	if v.addrGone == nil {
		v.addrGone = map[addrWrite]bool{}
	}
	v.addrGone[addrWrite{link, p}] = true
	return []string{resAddr(link, p.String()), resReach}
}

// isWritingLocked reports whether link's p (normPrefix'd) is among the
// addresses being created. v.mu held.
func (v *kernelView) isWritingLocked(link string, p netip.Prefix) bool {
	for i := range v.addrWrites {
		if a := &v.addrWrites[i]; a.Link == link && normPrefix(a.Prefix) == p {
			return true
		}
	}
	return false
}

// notedAddrWritten notes an address we created (proto 201), unless its
// delete was heard while it was being written: then it reports false.
func (v *kernelView) notedAddrWritten(link string, p netip.Prefix) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.addrGone) > 0 && v.addrGone[addrWrite{link, normPrefix(p)}] {
		return false
	}
	v.putAddrLocked(link, p, netlinkmgr.ProtoSwitchyard)
	return true
}

// rtprotKernel is RTPROT_KERNEL, the protocol of the routes the kernel
// makes with each address.
const rtprotKernel = 2

// The kernel's prefix route of an IPv4 address in table main (protocol
// kernel, scope link) brings no event (OmitKernelPrefixRoutes: one
// recvfrom, one decode and two goroutine hand-offs per address added, for
// a route nothing else reads). The view learns of such a route when a
// STATIC_ROUTE's create meets it (EEXIST, readForeignRoute), and of its
// removal from the address's delete event: prefixRouteGoneLocked.

// prefixRouteGoneLocked handles what the delete of the IPv4 address p
// (normPrefix'd) says of its prefix route: the view's routes of protocol
// kernel to p's subnet in table main are forgotten and the keys of that
// prefix re-enqueued (a STATIC_ROUTE in conflict with it applies).
// Forgetting one that is still there (another address of the subnet) is
// safe: a create meets it as EEXIST and notes it again. v.mu held.
func (v *kernelView) prefixRouteGoneLocked(res []string, p netip.Prefix) []string {
	if !p.Addr().Is4() {
		return res
	}
	d := rdstOf(netlinkmgr.MainTable, p.Masked())
	rs := v.foreign.at(d, &v.names)
	gone := false
	for i := range rs {
		if rs[i].Protocol == rtprotKernel && v.foreign.delAt(d, rs[i].Metric, rtprotKernel) {
			gone = true
		}
	}
	if !gone {
		return res
	}
	return append(res, resRoute(netlinkmgr.MainTable, p.Masked()))
}

// forgetKernelRoutesLocked forgets the view's routes of protocol kernel
// through link (its prefix routes, which move between main and a VRF's
// table with it, unheard) and returns their resources. v.mu held.
func (v *kernelView) forgetKernelRoutesLocked(res []string, link string) []string {
	id := v.names.lookup(link)
	return v.foreign.purge(res, &v.names,
		func(r *netlinkmgr.RouteInfo) bool { return r.Protocol == rtprotKernel && routeUsesLink(r, link) },
		func(c *vroute) bool { return c.proto == rtprotKernel && c.usesLink(id) })
}
