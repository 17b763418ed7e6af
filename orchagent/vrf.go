package orchagent

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// ownerAlias is the interface alias (IFLA_IFALIAS, "ip link show" prints
// "alias switchyard") orchagent gives the devices it creates that nothing
// else identifies as its own: LoopbackN dummies and VRF devices. Only a
// device of the right kind carrying it is changed or deleted.
const ownerAlias = "switchyard"

// VRF routing tables are taken from [vrfTableMin, vrfTableMax], the range
// SONiC's vrfmgrd uses (1001-2000).
const (
	vrfTableMin = 1001
	vrfTableMax = 2000
)

// ownedDev reports whether l is a device of kind that orchagent created.
func ownedDev(l netlinkmgr.LinkInfo, kind string) bool {
	return l.Kind == kind && l.Alias != nil && *l.Alias == ownerAlias
}

// applyVrf makes VRF|VrfNAME a vrf device of that name, up, with its own
// routing table (vrfTable says which), marked as ours. An existing device
// of that name that is not our vrf device is a conflict, left alone.
func (o *Orch) applyVrf(key string, f schema.Fields) outcome {
	refs := []string{resLink(key)}
	v, err := schema.ParseVRF(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	cur, ok, err := o.getLink(v.Name)
	if err != nil {
		return kernelOut(err, refs)
	}
	if ok {
		if !ownedDev(cur, "vrf") {
			return errorOut(devConflict(schema.TableVRF, key, cur, "vrf"), refs)
		}
		if cur.AdminUp == nil || !*cur.AdminUp {
			up := true
			if err := o.act(schema.TableVRF, key, "set "+v.Name+" up",
				func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: v.Name, AdminUp: &up}) }); err != nil {
				return kernelOut(err, refs)
			}
		}
		return okOut(refs)
	}
	table, err := o.vrfTable(v.Name)
	if err != nil {
		return errorOut(fmt.Errorf("VRF|%s: %w", key, err), refs)
	}
	up, alias := true, ownerAlias
	l := netlinkmgr.LinkInfo{Name: v.Name, Kind: "vrf", AdminUp: &up, Alias: &alias,
		Vrf: &netlinkmgr.VrfOptions{Table: table}}
	if err := o.act(schema.TableVRF, key, fmt.Sprintf("create vrf device %s table %d", v.Name, table),
		func() error { return o.k.Links().Add(l) }); err != nil {
		return kernelOut(err, refs)
	}
	return okOut(refs)
}

// removeVrf deletes our routes in the VRF's table and our vrf device; the
// kernel releases its interfaces (their keys, and the VRF's route keys,
// waiting on the VRF key, see it go).
func (o *Orch) removeVrf(key string) outcome {
	cur, ok, err := o.getLink(key)
	if err != nil {
		return kernelOut(err, nil)
	}
	if !ok || !ownedDev(cur, "vrf") {
		return okOut(nil)
	}
	// Our routes in its table would outlive the device (those through
	// interfaces of other VRFs, blackholes): they go first.
	if cur.Vrf != nil {
		for _, d := range o.view.routeDsts() {
			if d.table() != int(cur.Vrf.Table) {
				continue
			}
			for _, r := range o.view.routesFor(d.table(), d.dst()) {
				if err := o.delRoute(key, r); err != nil {
					return kernelOut(err, nil)
				}
			}
		}
	}
	if err := o.act(schema.TableVRF, key, "delete vrf device "+key,
		func() error { return ignoreNotFound(o.k.Links().Del(key)) }); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// vrfTable chooses the routing table of a new vrf device: a hash of the
// name (FNV-1a) into [vrfTableMin, vrfTableMax], probing upwards (and
// wrapping) past tables other vrf devices already use. A VRF keeps its
// table for the life of its device, which outlives orchagent restarts
// (applyVrf never recreates an existing device), so the table is stable;
// the hash makes a VRF created again after a reboot usually get the same
// table too.
func (o *Orch) vrfTable(name string) (uint32, error) {
	links, err := o.k.Links().List()
	if err != nil {
		return 0, err
	}
	used := map[uint32]bool{}
	for _, l := range links {
		if l.Vrf != nil {
			used[l.Vrf.Table] = true
		}
	}
	return pickVrfTable(name, used)
}

// pickVrfTable is vrfTable's choice given the tables in use.
func pickVrfTable(name string, used map[uint32]bool) (uint32, error) {
	h := fnv.New32a()
	h.Write([]byte(name))
	n := uint32(vrfTableMax - vrfTableMin + 1)
	start := h.Sum32() % n
	for i := uint32(0); i < n; i++ {
		t := vrfTableMin + (start+i)%n
		if !used[t] {
			return t, nil
		}
	}
	return 0, fmt.Errorf("every VRF table %d-%d is in use", vrfTableMin, vrfTableMax)
}

// devConflict is the error of a key whose device name is taken by a
// device orchagent did not create.
func devConflict(table, key string, cur netlinkmgr.LinkInfo, kind string) error {
	k := cur.Kind
	if k == "" {
		k = "device"
	}
	return fmt.Errorf("%s|%s: netdev %s exists (kind %s) and is not a %s device created by switchyard (alias %q): not touching it; delete it or rename the key",
		table, key, cur.Name, k, kind, ownerAlias)
}

// bindVrf puts link (an interface a bare INTERFACE, VLAN_INTERFACE or
// LOOPBACK_INTERFACE key configures) into vrf, or out of our VRFs when vrf
// is "" (the default VRF). A link whose master is anything but one of our
// vrf devices (a bridge port, someone else's VRF) is not moved: that is a
// conflict. It returns nil, or the outcome to report instead of ok.
func (o *Orch) bindVrf(table, key string, cur netlinkmgr.LinkInfo, vrf string, refs []string) *outcome {
	master := ""
	if cur.Master != nil {
		master = *cur.Master
	}
	if master == vrf {
		return nil
	}
	if master != "" {
		m, ok, err := o.getLink(master)
		if err != nil {
			out := kernelOut(err, refs)
			return &out
		}
		if !ok || !ownedDev(m, "vrf") {
			if vrf == "" {
				return nil // not in a VRF of ours: nothing to undo (a VLAN member, a bond port)
			}
			out := errorOut(fmt.Errorf("%s|%s: %s has master %s, which is not a VRF of switchyard: not moving it", table, key, cur.Name, master), refs)
			return &out
		}
	}
	var action string
	if vrf == "" {
		action = "set " + cur.Name + " nomaster (leave " + master + ")"
	} else {
		action = "set " + cur.Name + " master " + vrf
	}
	want := vrf
	if err := o.act(table, key, action,
		func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: cur.Name, Master: &want}) }); err != nil {
		out := kernelOut(err, refs)
		return &out
	}
	return nil
}

// vrfRefs adds what a binding to vrf waits for: the VRF key's result and
// the device itself.
func vrfRefs(refs []string, vrf string) []string {
	if vrf == "" {
		return refs
	}
	return append(refs, schema.ConfigKey(schema.TableVRF, vrf), resLink(vrf))
}

// bareBinding returns the VRF the bare key of an interface binds it to
// ("" = default), and whether an address key of it must wait for that
// bare key: it binds a VRF and is not ok yet.
func (o *Orch) bareBinding(table, name string) (vrf string, wait bool) {
	f, ok := o.config(table, name)
	if !ok {
		return "", false
	}
	in, err := schema.ParseInterface(table, name, f)
	if err != nil {
		return "", false // the bare key's own error says why
	}
	return in.VRF, in.VRF != "" && !o.resultOK(schema.ConfigKey(table, name))
}

// isOurDevName reports whether name is a device orchagent creates from a
// key of its own table (not a port).
func isOurDevName(name string) bool {
	return name == BridgeName || isVlanName(name) || schema.IsLoopbackName(name) || schema.IsPortChannelName(name) ||
		strings.HasPrefix(name, "Vrf") && schema.IsVRFName(name)
}
