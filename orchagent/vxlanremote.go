package orchagent

import (
	"net"
	"net/netip"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// VXLAN_REMOTE_VNI is head-end replication: each key "VlanN|remote" adds
// the remote VTEP to the flood list of the VLAN's vxlan device, the
// device's own all-zeros FDB entry, so broadcast, unknown-unicast and
// multicast frames go to every remote (Fdbs().AddRemote):
//
//	bridge fdb append 00:00:00:00:00:00 dev TUNNEL-VID dst REMOTE self permanent
//
// The device is the one of the VXLAN_TUNNEL_MAP that maps the VLAN to the
// key's vni. The vxlan device is ours, and so are the remotes of its flood
// entry, except the tunnel's own dst_ip (the kernel's entry of the
// device's remote): a key naming it is ok and never removes it.

// remoteKey is one remote VTEP of a vxlan device's flood entry.
type remoteKey struct {
	link string
	dst  netip.Addr
}

// zeroMAC is the MAC of a vxlan device's flood (all-zeros) entry.
var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// resRemote names a remote of a vxlan device's flood entry.
func resRemote(link string, dst netip.Addr) string { return "remote:" + link + "|" + dst.String() }

// applyVxlanRemote puts the key's remote in the flood list of its VLAN's
// vxlan device. It waits for a VXLAN_TUNNEL_MAP mapping the VLAN to the
// vni, for that map to be ok and for its device; a remote of another
// address family than the tunnel's src_ip is an error.
func (o *Orch) applyVxlanRemote(key string, f schema.Fields) outcome {
	r, err := schema.ParseVxlanRemoteVNI(key, f)
	if err != nil {
		return errorOut(err, nil)
	}
	refs := []string{schema.ConfigKey(schema.TableVlan, r.Vlan)}
	mk, m, reason := o.mapOfVlan(r)
	if mk == "" {
		if err := o.dropRemote(key, ""); err != nil {
			return kernelOut(err, refs)
		}
		return pendingOut(reason, refs)
	}
	dev := m.DevName()
	refs = append(refs, schema.ConfigKey(schema.TableVxlanTunnelMap, mk), resLink(dev), resRemote(dev, r.Remote))
	if err := o.dropRemote(key, dev); err != nil {
		return kernelOut(err, refs)
	}
	if !o.resultOK(schema.ConfigKey(schema.TableVxlanTunnelMap, mk)) {
		return pendingOut("waiting for "+schema.ConfigKey(schema.TableVxlanTunnelMap, mk), refs)
	}
	tf, _ := o.config(schema.TableVxlanTunnel, m.Tunnel)
	tun, err := schema.ParseVxlanTunnel(m.Tunnel, tf)
	if err != nil {
		return pendingOut("waiting for "+schema.ConfigKey(schema.TableVxlanTunnel, m.Tunnel), refs)
	}
	switch {
	case r.Remote.Is4() != tun.SrcIP.Is4():
		return errorOut(remoteError(key, r.Remote.String()+" is not of the address family of "+
			schema.ConfigKey(schema.TableVxlanTunnel, m.Tunnel)+"'s src_ip "+tun.SrcIP.String()), refs)
	case r.Remote == tun.SrcIP:
		return errorOut(remoteError(key, r.Remote.String()+" is "+
			schema.ConfigKey(schema.TableVxlanTunnel, m.Tunnel)+"'s own src_ip"), refs)
	}
	if !o.view.linkExists(dev) {
		return pendingOut("waiting for netdev "+dev, refs)
	}
	o.noteRemoteDev(key, dev)
	if r.Remote == tun.DstIP || o.view.hasRemote(dev, r.Remote) {
		// The tunnel's dst_ip is the device's own remote: already there.
		return okOut(refs)
	}
	want := netlinkmgr.FdbInfo{MAC: zeroMAC, Link: dev, Dst: r.Remote}
	if err := o.act(schema.TableVxlanRemoteVNI, key, "append fdb 00:00:00:00:00:00 dev "+dev+" dst "+r.Remote.String()+" self permanent",
		func() error { return o.k.Fdbs().AddRemote(want) }); err != nil {
		return kernelOut(err, refs)
	}
	o.view.notedRemote(dev, r.Remote, true)
	return okOut(refs)
}

func remoteError(key, why string) error {
	return &schema.FieldError{Table: schema.TableVxlanRemoteVNI, Key: key, Value: key, Reason: why}
}

// mapOfVlan finds the VXLAN_TUNNEL_MAP that maps r's VLAN to r's vni (the
// first by key when several do); without one, reason says what the key
// waits for.
func (o *Orch) mapOfVlan(r schema.VxlanRemoteVNI) (key string, m schema.VxlanTunnelMap, reason string) {
	reason = "waiting for a " + schema.TableVxlanTunnelMap + " mapping " + r.Vlan + " to vni " + itoa(r.VNI)
	other := ""
	for _, k := range o.cfg.Keys(schema.TableVxlanTunnelMap) {
		f, _ := o.config(schema.TableVxlanTunnelMap, k)
		c, err := schema.ParseVxlanTunnelMap(k, f)
		if err != nil || c.Vlan != r.Vlan {
			continue
		}
		if c.VNI == r.VNI && (key == "" || k < key) {
			key, m = k, c
		}
		if c.VNI != r.VNI && other == "" {
			other = " (" + schema.ConfigKey(schema.TableVxlanTunnelMap, k) + " maps it to vni " + itoa(c.VNI) + ")"
		}
	}
	return key, m, reason + other
}

// noteRemoteDev records the device key's remote is on.
func (o *Orch) noteRemoteDev(key, dev string) {
	o.mu.Lock()
	o.vxremotes[key] = dev
	o.mu.Unlock()
}

// dropRemote removes key's remote from the device it was last put on,
// unless that is keep. After a restart that device is not known: the
// sweep removes what no key names.
func (o *Orch) dropRemote(key, keep string) error {
	o.mu.Lock()
	dev := o.vxremotes[key]
	o.mu.Unlock()
	if dev == "" || dev == keep {
		return nil
	}
	if err := o.delRemote(key, dev); err != nil {
		return err
	}
	o.mu.Lock()
	delete(o.vxremotes, key)
	o.mu.Unlock()
	return nil
}

// delRemote removes key's remote from dev's flood entry when dev is our
// vxlan device and the remote is not the device's own (dst_ip).
func (o *Orch) delRemote(key, dev string) error {
	_, addr, ok := splitRemoteKey(key)
	if !ok || !o.view.hasRemote(dev, addr) {
		return nil
	}
	cur, there, err := o.getLink(dev)
	if err != nil || !there || !ownedDev(cur, "vxlan") || (cur.Vxlan != nil && cur.Vxlan.Remote == addr) {
		return err
	}
	return o.delRemoteEntry(key, dev, addr, "")
}

func (o *Orch) delRemoteEntry(key, dev string, addr netip.Addr, why string) error {
	if err := o.act(schema.TableVxlanRemoteVNI, key, why+"delete fdb 00:00:00:00:00:00 dev "+dev+" dst "+addr.String()+" self",
		func() error {
			return ignoreNotFound(o.k.Fdbs().DelRemote(netlinkmgr.FdbInfo{MAC: zeroMAC, Link: dev, Dst: addr}))
		}); err != nil {
		return err
	}
	o.view.notedRemote(dev, addr, false)
	return nil
}

// splitRemoteKey splits "VlanN|addr".
func splitRemoteKey(key string) (vlan string, addr netip.Addr, ok bool) {
	parts := schema.SplitKey(key)
	if len(parts) != 2 {
		return "", netip.Addr{}, false
	}
	a, err := netip.ParseAddr(parts[1])
	return parts[0], a, err == nil
}

// removeVxlanRemote takes a deleted key's remote off its device: only
// that remote, the device's other remotes stay.
func (o *Orch) removeVxlanRemote(key string) outcome {
	if err := o.dropRemote(key, ""); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// enqueueRemotes re-enqueues every VXLAN_REMOTE_VNI key: a map changed,
// so which device a VLAN's remotes belong on may have.
func (o *Orch) enqueueRemotes() {
	for _, k := range o.cfg.Keys(schema.TableVxlanRemoteVNI) {
		o.enqueue(schema.ConfigKey(schema.TableVxlanRemoteVNI, k))
	}
}

// sweepVxlanRemotes removes the remotes of our vxlan devices' flood
// entries that no VXLAN_REMOTE_VNI key names (the device's own dst_ip
// stays). A device no map names goes whole (sweepVxlan).
func (o *Orch) sweepVxlanRemotes(links []netlinkmgr.LinkInfo) []error {
	vlanOf := map[string]string{} // device → VLAN, of the configured maps
	for _, k := range o.cfg.Keys(schema.TableVxlanTunnelMap) {
		f, _ := o.config(schema.TableVxlanTunnelMap, k)
		if m, err := schema.ParseVxlanTunnelMap(k, f); err == nil {
			vlanOf[m.DevName()] = m.Vlan
		}
	}
	var errs []error
	for _, l := range links {
		vlan, ok := vlanOf[l.Name]
		if !ok || !ownedDev(l, "vxlan") {
			continue
		}
		for _, dst := range o.view.remotesOf(l.Name) {
			key := vlan + schema.ConfigSep + dst.String()
			if (l.Vxlan != nil && l.Vxlan.Remote == dst) || o.configured(schema.TableVxlanRemoteVNI, key) {
				continue
			}
			errs = append(errs, o.delRemoteEntry(key, l.Name, dst, "sweep: "))
		}
	}
	return errs
}

// delVxlanLink deletes a vxlan device; its flood entry goes with it, so
// the view forgets its remotes at once (the keys of the remotes put them
// on the next device of that name).
func (o *Orch) delVxlanLink(dev string) error {
	if err := ignoreNotFound(o.k.Links().Del(dev)); err != nil {
		return err
	}
	o.view.mu.Lock()
	o.view.purgeRemotesLocked(dev)
	o.view.mu.Unlock()
	return nil
}

// The view's remotes: filled by Prime, kept by FDB events and our writes.

func (v *kernelView) hasRemote(link string, dst netip.Addr) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.remotes[remoteKey{link, dst}]
}

func (v *kernelView) remotesOf(link string) []netip.Addr {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []netip.Addr
	for k := range v.remotes {
		if k.link == link {
			out = append(out, k.dst)
		}
	}
	return out
}

func (v *kernelView) notedRemote(link string, dst netip.Addr, present bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if present {
		v.remotes[remoteKey{link, dst}] = true
	} else {
		delete(v.remotes, remoteKey{link, dst})
	}
}

// isRemoteEntry: a vxlan device's own flood entry towards one remote.
func isRemoteEntry(f *netlinkmgr.FdbInfo) bool {
	return f.Master == "" && f.Dst.IsValid() && len(f.MAC) == 6 && isZeroMAC(f.MAC)
}

// onRemoteLocked records a flood entry event; a change re-enqueues the
// key of that remote.
func (v *kernelView) onRemoteLocked(f *netlinkmgr.FdbInfo, deleted bool) []string {
	k := remoteKey{f.Link, f.Dst.Unmap()}
	if v.remotes[k] != deleted {
		return nil // no change (the echo of our own write)
	}
	if deleted {
		delete(v.remotes, k)
	} else {
		v.remotes[k] = true
	}
	return []string{resRemote(k.link, k.dst)}
}

// purgeRemotesLocked forgets the remotes of a deleted device.
func (v *kernelView) purgeRemotesLocked(link string) {
	for k := range v.remotes {
		if k.link == link {
			delete(v.remotes, k)
		}
	}
}
