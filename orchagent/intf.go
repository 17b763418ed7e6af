package orchagent

import (
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// intfApplier returns the apply function of INTERFACE or VLAN_INTERFACE:
// the address goes on the netdev once it exists (for a VLAN, once its VLAN
// key is ok). A bare key ("Ethernet0") only reports whether the interface
// is there.
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
		if in.IsBare() || o.view.hasAddr(in.Name, in.Addr) {
			return okOut(refs)
		}
		a := netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr}
		if err := o.act(table, key, "add address "+in.Addr.String()+" dev "+in.Name,
			func() error { return o.k.Addrs().Add(a) }); err != nil {
			return kernelOut(err, refs)
		}
		o.view.notedAddr(in.Name, in.Addr, true)
		// The echo will match the view: tell routes waiting for a
		// reachable gateway ourselves.
		o.enqueueRefs(resReach)
		return okOut(refs)
	}
}

// intfRemover returns the remove function: the address comes off the
// netdev if it is there.
func (o *Orch) intfRemover(table string) func(string) outcome {
	return func(key string) outcome {
		in, err := schema.ParseInterface(table, key, nil)
		if err != nil || in.IsBare() || !o.view.hasAddr(in.Name, in.Addr) {
			return okOut(nil)
		}
		a := netlinkmgr.AddrInfo{Link: in.Name, Prefix: in.Addr}
		if err := o.act(table, key, "delete address "+in.Addr.String()+" dev "+in.Name,
			func() error { return ignoreNotFound(o.k.Addrs().Del(a)) }); err != nil {
			return kernelOut(err, nil)
		}
		o.view.notedAddr(in.Name, in.Addr, false)
		return okOut(nil)
	}
}
