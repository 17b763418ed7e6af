package orchagent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// intfApplier returns the apply function of INTERFACE, VLAN_INTERFACE or
// LOOPBACK_INTERFACE: the address goes on the netdev once it exists (for a
// VLAN, once its VLAN key is ok; a loopback is created by its first key,
// see ensureLoopback), marked with protocol 201 (IFA_PROTO). An equal
// address without our mark (added by hand) is a conflict: left alone, the
// key is an error until that address goes. A bare key ("Ethernet0")
// binds the interface to its vrf_name's VRF (or out of ours), and for a
// loopback sets its admin state; an address key of an interface whose
// bare key binds a VRF waits for that binding.
func (o *Orch) intfApplier(table string) func(string, schema.Fields) outcome {
	return func(key string, f schema.Fields) outcome {
		in, err := schema.ParseInterface(table, key, f)
		if err != nil {
			return errorOut(err, nil)
		}
		// The link's ref, interned and shared by every key on the link
		// (read-only: its capacity is its length, so an append below
		// copies). An address key's own address is no ref: an event
		// about it finds the key by name (enqueueAddrKeys), not
		// through an index entry per address.
		refs := o.linkRes.one(in.Name)
		if table == schema.TableVlanInterface {
			vk := schema.ConfigKey(schema.TableVlan, in.Name)
			refs = append(refs, vk)
			if !o.resultOK(vk) {
				return pendingOut("waiting for "+vk, refs)
			}
		}
		if table == schema.TablePortChannelInterface {
			pk := schema.ConfigKey(schema.TablePortChannel, in.Name)
			refs = append(refs, pk)
			if !o.resultOK(pk) {
				return pendingOut("waiting for "+pk, refs)
			}
		}
		if table == schema.TableLoopback {
			if out := o.ensureLoopback(key, in.Name, refs); out != nil {
				return *out
			}
		} else if !o.view.linkExists(in.Name) {
			return pendingOut(waitingForLink(in.Name), refs)
		}
		if in.IsBare() {
			return o.applyBare(table, key, in, refs)
		}
		if _, wait := o.bareBinding(table, in.Name); wait {
			bk := schema.ConfigKey(table, in.Name)
			return pendingOut("waiting for "+bk+" (its VRF binding)", append(refs, bk))
		}
		if proto, ok := o.view.addr(in.Name, in.Addr); ok {
			if proto == netlinkmgr.ProtoSwitchyard {
				return okOut(refs)
			}
			return errorOut(addrConflict(table, key, netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr, Protocol: proto}), refs)
		}
		a := netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr, Protocol: netlinkmgr.ProtoSwitchyard, Create: true}
		if o.deferring(table) {
			o.batch.addrs = append(o.batch.addrs, deferredAddr{deferred: o.batch.cur, want: a, refs: refs})
			return outcome{deferred: true}
		}
		o.flushBatch() // as act does: earlier deferred writes go first
		out, noted := o.addrWritten(table, key, a, refs, o.k.Addrs().Add(a))
		if noted {
			// Its echo is not heard: tell routes waiting for a reachable
			// gateway ourselves (flushAddrs: once per batch).
			o.enqueueRefs(resReach)
		}
		return out
	}
}

// enqueueAddrKeys enqueues the configured key of an address resource
// ("addr:LINK|P", P normPrefix'd), which is not in the index
// (intfApplier): LINK|P in LINK's interface table. A key's address is in
// canonical form (schema.ParseInterface), the resource's P too; a key in
// another table than intfTable(LINK) is an error that waits for nothing.
func (o *Orch) enqueueAddrKeys(res string) {
	k, ok := strings.CutPrefix(res, "addr:")
	if !ok {
		return
	}
	link, _, _ := strings.Cut(k, schema.ConfigSep)
	if t := intfTable(link); o.cfg.Has(t, k) {
		o.enqueue(schema.ConfigKey(t, k))
	}
}

// addrWritten is the outcome of the create-only add of a (proto 201) for
// table|key, and logs it: an equal address someone else added is a
// conflict; one of ours the view had not seen yet (EEXIST, then read) is
// ok, logged as such rather than as a failed change. A new address is
// noted in the view (noted); the caller then tells the routes waiting
// for a reachable gateway (resReach), once for all it wrote.
func (o *Orch) addrWritten(table, key string, a netlinkmgr.AddrInfo, refs []string, err error) (out outcome, noted bool) {
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			if c, ok := o.readAddr(a.Link, a); ok {
				if c.Protocol != netlinkmgr.ProtoSwitchyard {
					o.logAct(table, key, func() string { return describeAddr(&a) }, err)
					return errorOut(addrConflict(table, key, c), refs), false
				}
				if c.Prefix == a.Prefix {
					// ours already: the view had forgotten it
					o.logAct(table, key, func() string { return describeAddr(&a) + " (there already, ours)" }, nil)
					return okOut(refs), false
				}
			}
		}
		o.logAct(table, key, func() string { return describeAddr(&a) }, err)
		return kernelOut(err, refs), false
	}
	o.logAct(table, key, func() string { return describeAddr(&a) }, nil)
	if !o.view.notedAddrWritten(a.Link, a.Prefix) {
		// Removed by someone right after the kernel added it (its echo
		// is not heard, its delete was): add it again.
		return kernelOut(fmt.Errorf("%s|%s: address %s on %s was deleted while being added", table, key, a.Prefix, a.Link), refs), false
	}
	return okOut(refs), true
}

// applyBare applies a bare interface key: a loopback's admin state, then
// the VRF binding (waiting for the VRF key to be ok).
func (o *Orch) applyBare(table, key string, in schema.Interface, refs []string) outcome {
	refs = vrfRefs(refs, in.VRF)
	cur, ok, err := o.getLink(in.Name)
	if err != nil {
		return kernelOut(err, refs)
	}
	if !ok {
		return pendingOut(waitingForLink(in.Name), refs)
	}
	if table == schema.TableLoopback {
		up := in.AdminUp == nil || *in.AdminUp
		if want, changes := linkDiff(cur, &up, nil, nil, nil); len(changes) > 0 {
			if err := o.act(table, key, "set "+in.Name+" "+strings.Join(changes, " "),
				func() error { return o.k.Links().Set(want) }); err != nil {
				return kernelOut(err, refs)
			}
		}
	}
	if in.VRF != "" {
		if vk := schema.ConfigKey(schema.TableVRF, in.VRF); !o.resultOK(vk) {
			return pendingOut("waiting for "+vk, refs)
		}
	}
	if out := o.bindVrf(table, key, cur, in.VRF, refs); out != nil {
		return *out
	}
	return okOut(refs)
}

// readAddr asks the kernel for the address on link equal to a (for IPv6,
// the same address with any prefix length: the kernel keys IPv6
// addresses by address alone) and notes it in the view.
func (o *Orch) readAddr(link string, a netlinkmgr.AddrInfo) (netlinkmgr.AddrInfo, bool) {
	as, err := o.k.Addrs().List(link)
	if err != nil {
		return netlinkmgr.AddrInfo{}, false
	}
	for _, c := range as {
		ip := c.Prefix.Addr().Unmap()
		if ip == a.Prefix.Addr().Unmap() && (c.Prefix.Bits() == a.Prefix.Bits() || ip.Is6()) {
			o.view.mu.Lock()
			o.view.putAddrLocked(link, c.Prefix, c.Protocol)
			o.view.mu.Unlock()
			return c, true
		}
	}
	return netlinkmgr.AddrInfo{}, false
}

// intfRemover returns the remove function: the address comes off the
// netdev only if it is there with our mark. An address added by hand
// (even one a key once asked for and reported as a conflict) stays. A
// bare key's removal takes the interface out of our VRF. A loopback goes
// with the last key naming it.
func (o *Orch) intfRemover(table string) func(string) outcome {
	return func(key string) outcome {
		in, err := schema.ParseInterface(table, key, nil)
		if err != nil {
			return okOut(nil)
		}
		if in.IsBare() {
			if out := o.unbindVrf(table, key, in.Name); out != nil {
				return *out
			}
		} else if proto, ok := o.view.addr(in.Name, in.Addr); ok && proto == netlinkmgr.ProtoSwitchyard {
			if err := o.delAddr(table, key, "delete address "+in.Addr.String()+" dev "+in.Name, in.Name, in.Addr); err != nil {
				return kernelOut(err, nil)
			}
		}
		if table == schema.TableLoopback {
			return o.dropLoopback(key, in.Name)
		}
		return okOut(nil)
	}
}

// unbindVrf takes link out of the VRF its deleted bare key put it in,
// only when its master is one of our vrf devices.
func (o *Orch) unbindVrf(table, key, link string) *outcome {
	cur, ok, err := o.getLink(link)
	if err != nil {
		out := kernelOut(err, nil)
		return &out
	}
	if !ok || cur.Master == nil || *cur.Master == "" {
		return nil
	}
	m, ok, err := o.getLink(*cur.Master)
	if err != nil {
		out := kernelOut(err, nil)
		return &out
	}
	if !ok || !ownedDev(m, "vrf") {
		return nil
	}
	return o.bindVrf(table, key, cur, "", nil)
}

// delAddr deletes one of our addresses; "not found" counts only when a
// read confirms it (netlinkmgr does).
func (o *Orch) delAddr(table, key, action, link string, p netip.Prefix) error {
	a := netlinkmgr.AddrInfo{Link: link, Prefix: p}
	if err := o.act(table, key, action, func() error { return ignoreNotFound(o.k.Addrs().Del(a)) }); err != nil {
		return err
	}
	o.view.notedAddr(link, p, false)
	return nil
}
