package orchagent

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// intfApplier returns the apply function of INTERFACE or VLAN_INTERFACE:
// the address goes on the netdev once it exists (for a VLAN, once its VLAN
// key is ok), marked with protocol 201 (IFA_PROTO). An equal address
// without our mark (added by hand) is a conflict: left alone, the key is
// an error until that address goes. A bare key ("Ethernet0") only reports
// whether the interface is there.
func (o *Orch) intfApplier(table string) func(string, schema.Fields) outcome {
	return func(key string, f schema.Fields) outcome {
		in, err := schema.ParseInterface(table, key, f)
		if err != nil {
			return errorOut(err, nil)
		}
		refs := []string{resLink(in.Name)}
		if !in.IsBare() {
			refs = append(refs, resAddr(in.Name, normPrefix(in.Addr).String()))
		}
		if table == schema.TableVlanInterface {
			vk := schema.ConfigKey(schema.TableVlan, in.Name)
			refs = append(refs, vk)
			if !o.resultOK(vk) {
				return pendingOut("waiting for "+vk, refs)
			}
		}
		if !o.view.linkExists(in.Name) {
			return pendingOut(waitingForLink(in.Name), refs)
		}
		if in.IsBare() {
			return okOut(refs)
		}
		if proto, ok := o.view.addr(in.Name, in.Addr); ok {
			if proto == netlinkmgr.ProtoSwitchyard {
				return okOut(refs)
			}
			return errorOut(addrConflict(table, key, netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr, Protocol: proto}), refs)
		}
		a := netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr, Protocol: netlinkmgr.ProtoSwitchyard, Create: true}
		if err := o.act(table, key, fmt.Sprintf("add address %s dev %s proto %d", in.Addr, in.Name, netlinkmgr.ProtoSwitchyard),
			func() error { return o.k.Addrs().Add(a) }); err != nil {
			if errors.Is(err, unix.EEXIST) {
				if c, ok := o.readAddr(in.Name, a); ok && c.Protocol != netlinkmgr.ProtoSwitchyard {
					return errorOut(addrConflict(table, key, c), refs)
				}
			}
			return kernelOut(err, refs)
		}
		o.view.notedAddr(in.Name, in.Addr, true)
		// The echo will match the view: tell routes waiting for a
		// reachable gateway ourselves.
		o.enqueueRefs(resReach)
		return okOut(refs)
	}
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
// (even one a key once asked for and reported as a conflict) stays.
func (o *Orch) intfRemover(table string) func(string) outcome {
	return func(key string) outcome {
		in, err := schema.ParseInterface(table, key, nil)
		if err != nil || in.IsBare() {
			return okOut(nil)
		}
		if proto, ok := o.view.addr(in.Name, in.Addr); !ok || proto != netlinkmgr.ProtoSwitchyard {
			return okOut(nil)
		}
		if err := o.delAddr(table, key, "delete address "+in.Addr.String()+" dev "+in.Name, in.Name, in.Addr); err != nil {
			return kernelOut(err, nil)
		}
		return okOut(nil)
	}
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
