package orchagent

import (
	"fmt"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// VXLAN follows vxlanmgrd's model: VXLAN_TUNNEL holds the VTEP's
// addresses (no kernel object of its own); each VXLAN_TUNNEL_MAP is a vxlan
// device "TUNNEL-VID" (id VNI, local src_ip, remote dst_ip when given,
// dstport 4789, learning on) bridged into Bridge as an untagged pvid
// member of the VLAN. The device is ours when it carries the alias
// switchyard.

// vxlanPort is the IANA VXLAN UDP port (the kernel's default is 8472).
const vxlanPort = 4789

// applyVxlanTunnel validates the tunnel; its maps, which build the
// devices from its addresses, are reconciled again.
func (o *Orch) applyVxlanTunnel(key string, f schema.Fields) outcome {
	o.enqueueTunnelMaps(key)
	if _, err := schema.ParseVxlanTunnel(key, f); err != nil {
		return errorOut(err, nil)
	}
	return okOut(nil)
}

// removeVxlanTunnel: the maps (waiting on the tunnel's result) remove
// their devices when they go.
func (o *Orch) removeVxlanTunnel(key string) outcome {
	o.enqueueTunnelMaps(key)
	return okOut(nil)
}

// enqueueTunnelMaps re-enqueues the VXLAN_TUNNEL_MAP keys of tunnel.
func (o *Orch) enqueueTunnelMaps(tunnel string) {
	for _, k := range o.cfg.Keys(schema.TableVxlanTunnelMap) {
		if strings.HasPrefix(k, tunnel+schema.ConfigSep) {
			o.enqueue(schema.ConfigKey(schema.TableVxlanTunnelMap, k))
		}
	}
}

// applyVxlanMap makes the map's vxlan device exist as its tunnel and map
// say, on Bridge with the VLAN as its untagged pvid, up. It waits for the
// tunnel key and the VLAN key to be ok. A device of the right name with
// other parameters is recreated (the kernel cannot change them); one we
// did not create is a conflict.
func (o *Orch) applyVxlanMap(key string, f schema.Fields) outcome {
	o.enqueueRemotes()
	m, err := schema.ParseVxlanTunnelMap(key, f)
	if err != nil {
		return errorOut(err, nil)
	}
	dev := m.DevName()
	tk, vk := schema.ConfigKey(schema.TableVxlanTunnel, m.Tunnel), schema.ConfigKey(schema.TableVlan, m.Vlan)
	refs := []string{tk, vk, resLink(dev), resLink(BridgeName), resBrVid(dev, uint16(m.VID))}
	tf, ok := o.config(schema.TableVxlanTunnel, m.Tunnel)
	if !ok || !o.resultOK(tk) {
		return pendingOut("waiting for "+tk, refs)
	}
	tun, err := schema.ParseVxlanTunnel(m.Tunnel, tf)
	if err != nil {
		return pendingOut("waiting for "+tk, refs)
	}
	if !o.resultOK(vk) {
		return pendingOut("waiting for "+vk, refs)
	}
	// A map moved to another VLAN: its previous device goes first (the
	// kernel allows one device per VNI).
	if prev := o.vxlanDevOf(key); prev != "" && prev != dev {
		if err := o.dropVxlanDev(key, prev); err != nil {
			return kernelOut(err, refs)
		}
	}
	want := netlinkmgr.VxlanOptions{VNI: m.VNI, Local: tun.SrcIP, Remote: tun.DstIP, Port: vxlanPort, Learning: true}
	cur, ok, err := o.getLink(dev)
	if err != nil {
		return kernelOut(err, refs)
	}
	if ok && !ownedDev(cur, "vxlan") {
		return errorOut(devConflict(schema.TableVxlanTunnelMap, key, cur, "vxlan"), refs)
	}
	if ok && (cur.Vxlan == nil || *cur.Vxlan != want) {
		if err := o.act(schema.TableVxlanTunnelMap, key, "delete vxlan device "+dev+" (parameters changed)",
			func() error { return o.delVxlanLink(dev) }); err != nil {
			return kernelOut(err, refs)
		}
		ok = false
	}
	if !ok {
		down, alias, master := false, ownerAlias, BridgeName
		l := netlinkmgr.LinkInfo{Name: dev, Kind: "vxlan", AdminUp: &down, Alias: &alias, Master: &master, Vxlan: &want}
		if err := o.act(schema.TableVxlanTunnelMap, key, describeVxlan(dev, want),
			func() error { return o.k.Links().Add(l) }); err != nil {
			return kernelOut(err, refs)
		}
		if cur, _, err = o.getLink(dev); err != nil {
			return kernelOut(err, refs)
		}
	}
	if cur.Master == nil || *cur.Master != BridgeName {
		master := BridgeName
		if err := o.act(schema.TableVxlanTunnelMap, key, "set "+dev+" master "+BridgeName,
			func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: dev, Master: &master}) }); err != nil {
			return kernelOut(err, refs)
		}
	}
	vl, err := o.listVids(dev)
	if err != nil {
		return kernelOut(err, refs)
	}
	vid, have := uint16(m.VID), false
	for _, v := range vl {
		if v.Link != dev {
			continue
		}
		if v.VID == vid && v.PVID && v.Untagged {
			have = true
			continue
		}
		if v.VID != vid {
			if err := o.delVid(schema.TableVxlanTunnelMap, key, fmt.Sprintf("delete vid %d from %s", v.VID, dev),
				netlinkmgr.BridgeVlanInfo{Link: dev, VID: v.VID}); err != nil {
				return kernelOut(err, refs)
			}
		}
	}
	if !have {
		if err := o.addVid(schema.TableVxlanTunnelMap, key, fmt.Sprintf("add vid %d pvid untagged on %s", vid, dev),
			netlinkmgr.BridgeVlanInfo{Link: dev, VID: vid, PVID: true, Untagged: true}); err != nil {
			return kernelOut(err, refs)
		}
	}
	if cur.AdminUp == nil || !*cur.AdminUp {
		up := true
		if err := o.act(schema.TableVxlanTunnelMap, key, "set "+dev+" up",
			func() error { return o.k.Links().Set(netlinkmgr.LinkInfo{Name: dev, AdminUp: &up}) }); err != nil {
			return kernelOut(err, refs)
		}
	}
	o.mu.Lock()
	o.vxdevs[key] = dev
	o.mu.Unlock()
	return okOut(refs)
}

// vxlanDevOf is the device key was last applied with ("" = not known:
// after a restart the sweep finds a device no map names).
func (o *Orch) vxlanDevOf(key string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.vxdevs[key]
}

// dropVxlanDev deletes dev when it is our vxlan device and no configured
// map names it.
func (o *Orch) dropVxlanDev(key, dev string) error {
	if o.vxlanDevWanted(dev) {
		return nil
	}
	cur, ok, err := o.getLink(dev)
	if err != nil || !ok || !ownedDev(cur, "vxlan") {
		return err
	}
	return o.act(schema.TableVxlanTunnelMap, key, "delete vxlan device "+dev,
		func() error { return o.delVxlanLink(dev) })
}

// removeVxlanMap deletes the device the map made, when it is ours (its
// vid and FDB entries go with it). After a restart the device a deleted
// map made is not known: the sweep removes it.
func (o *Orch) removeVxlanMap(key string) outcome {
	o.enqueueRemotes()
	dev := o.vxlanDevOf(key)
	if dev == "" {
		return okOut(nil)
	}
	if err := o.dropVxlanDev(key, dev); err != nil {
		return kernelOut(err, nil)
	}
	o.mu.Lock()
	delete(o.vxdevs, key)
	o.mu.Unlock()
	return okOut(nil)
}

// vxlanDevWanted reports whether a configured VXLAN_TUNNEL_MAP key names
// device dev.
func (o *Orch) vxlanDevWanted(dev string) bool {
	for _, k := range o.cfg.Keys(schema.TableVxlanTunnelMap) {
		f, _ := o.config(schema.TableVxlanTunnelMap, k)
		if m, err := schema.ParseVxlanTunnelMap(k, f); err == nil && m.DevName() == dev {
			return true
		}
	}
	return false
}

// sweepVxlan deletes our vxlan devices no configured map names.
func (o *Orch) sweepVxlan(links []netlinkmgr.LinkInfo) []error {
	var errs []error
	for _, l := range links {
		if !ownedDev(l, "vxlan") || o.vxlanDevWanted(l.Name) {
			continue
		}
		errs = append(errs, o.act(schema.TableVxlanTunnelMap, l.Name, "sweep: delete vxlan device "+l.Name,
			func() error { return o.delVxlanLink(l.Name) }))
	}
	return errs
}

func describeVxlan(dev string, v netlinkmgr.VxlanOptions) string {
	s := fmt.Sprintf("create vxlan device %s id %d", dev, v.VNI)
	if v.Local.IsValid() {
		s += " local " + v.Local.String()
	}
	if v.Remote.IsValid() {
		s += " remote " + v.Remote.String()
	}
	return s + fmt.Sprintf(" dstport %d learning master %s", v.Port, BridgeName)
}
