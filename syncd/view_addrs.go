package syncd

import (
	"sort"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// applyAddr records or drops an address: only AddrMirrored ones (routed
// addresses on VlanN links) are kept, keyed as in INTERFACE_TABLE.
func (v *View) applyAddr(a netlinkmgr.AddrInfo, deleted bool) {
	if a.Link == "" || !a.Prefix.IsValid() {
		return
	}
	k := AddrKey(a)
	if deleted || !AddrMirrored(a) {
		v.removeAddr(k)
		return
	}
	v.addrs[k] = a
	if v.listing {
		v.seenAddrs[k] = struct{}{}
	}
	v.touch(StateInterfaceTable, k)
}

func (v *View) removeAddr(k string) {
	if _, ok := v.addrs[k]; ok {
		delete(v.addrs, k)
		v.touch(StateInterfaceTable, k)
	}
}

// dropAddrsOf removes the addresses of a link that is gone (the kernel
// sends RTM_DELADDR for them too; this does not depend on it).
func (v *View) dropAddrsOf(link string) {
	for k, a := range v.addrs {
		if a.Link == link {
			v.removeAddr(k)
		}
	}
}

// renameAddrs refiles a renamed link's addresses: the kernel sends no
// address event for a rename. Under a name that is not VlanN they are no
// longer mirrored.
func (v *View) renameAddrs(old, name string) {
	for k, a := range v.addrs {
		if a.Link != old {
			continue
		}
		v.removeAddr(k)
		a.Link = name
		if AddrMirrored(a) {
			nk := AddrKey(a)
			v.addrs[nk] = a
			if v.listing {
				v.seenAddrs[nk] = struct{}{}
			}
			v.touch(StateInterfaceTable, nk)
		}
	}
}

// AddrKeys returns the INTERFACE_TABLE keys ("INTERFACE_TABLE|if|prefix")
// the mirror should hold now.
func (v *View) AddrKeys() []string {
	out := make([]string, 0, len(v.addrs))
	for k := range v.addrs {
		out = append(out, StateKey(StateInterfaceTable, k))
	}
	sort.Strings(out)
	return out
}
