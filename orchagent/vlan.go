package orchagent

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// bridgeMTU is Bridge's MTU, as SONiC's vlanmgrd sets it, so VLAN devices
// on it may take any MTU a VLAN key allows.
const bridgeMTU = 9100

// applyVlan makes VLAN N exist: Bridge (vlan_filtering 1), "vid N self" on
// Bridge and the 802.1Q device VlanN on Bridge with the managed fields.
func (o *Orch) applyVlan(key string, f schema.Fields) outcome {
	refs := []string{resLink(key), resLink(BridgeName)}
	v, err := schema.ParseVlan(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	refs = append(refs, resBrVid(BridgeName, uint16(v.ID)))
	br, err := o.ensureBridge(key)
	if err != nil {
		return kernelOut(err, refs)
	}
	if err := o.ensureBridgeVid(key, uint16(v.ID)); err != nil {
		return kernelOut(err, refs)
	}
	// The view first (vlanview.go); the kernel when the view has no
	// device or one that is not ours.
	cur, ok := o.view.viewLink(v.Name)
	if !ok {
		up := true
		if v.AdminUp != nil {
			up = *v.AdminUp
		}
		l := netlinkmgr.LinkInfo{Name: v.Name, Kind: "vlan", AdminUp: &up, MTU: v.MTU, MAC: v.MAC,
			Vlan: &netlinkmgr.VlanOptions{ID: v.ID, Parent: BridgeName}}
		err := o.act(schema.TableVlan, key, fmt.Sprintf("create 802.1Q device %s id %d on %s", v.Name, v.ID, BridgeName),
			func() error { return o.k.Links().Add(l) })
		if err == nil {
			return okOut(refs)
		}
		if !errors.Is(err, unix.EEXIST) {
			return kernelOut(err, refs)
		}
		// There after all: its event is on its way. Read it.
		if cur, ok, err = o.getLink(v.Name); err != nil || !ok {
			return kernelOut(errors.Join(err, fmt.Errorf("netdev %s: exists, then not found", v.Name)), refs)
		}
	}
	if !isOurVlanDev(cur, br.Index) || cur.Vlan.ID != v.ID {
		// The view may be behind: the kernel says.
		if cur, ok, err = o.getLink(v.Name); err != nil {
			return kernelOut(err, refs)
		}
		if !ok || !isOurVlanDev(cur, br.Index) || cur.Vlan.ID != v.ID {
			return errorOut(fmt.Errorf("netdev %s exists and is not VLAN %d on %s (not created by orchagent): delete it", v.Name, v.ID, BridgeName), refs)
		}
	}
	want, changes := linkDiff(cur, v.AdminUp, v.MTU, v.MAC, nil)
	if len(changes) > 0 {
		if err := o.act(schema.TableVlan, key, "set "+strings.Join(changes, " "),
			func() error { return o.k.Links().Set(want) }); err != nil {
			return kernelOut(err, refs)
		}
	}
	return okOut(refs)
}

// isOurVlanDev: an 802.1Q device on Bridge is ours (Bridge is).
func isOurVlanDev(l netlinkmgr.LinkInfo, bridgeIdx int) bool {
	if l.Kind != "vlan" || l.Vlan == nil {
		return false
	}
	if l.ParentIdx != 0 && bridgeIdx != 0 {
		return l.ParentIdx == bridgeIdx
	}
	return l.Vlan.Parent == BridgeName
}

// removeVlan deletes VlanN and "vid N self" on Bridge. Bridge stays. The
// members, VLAN interfaces and FDB entries of the VLAN are re-enqueued by
// the result change and clean up after themselves.
func (o *Orch) removeVlan(key string) outcome {
	id, err := schema.ParseVlanName(key)
	if err != nil {
		return okOut(nil) // an invalid key was never applied
	}
	br, brOK, err := o.getLink(BridgeName)
	if err != nil {
		return kernelOut(err, nil)
	}
	cur, ok, err := o.getLink(key)
	if err != nil {
		return kernelOut(err, nil)
	}
	if ok && isOurVlanDev(cur, br.Index) {
		if err := o.act(schema.TableVlan, key, "delete 802.1Q device "+key,
			func() error { return ignoreNotFound(o.k.Links().Del(key)) }); err != nil {
			return kernelOut(err, nil)
		}
	}
	if brOK {
		if err := o.delBridgeVid(key, uint16(id)); err != nil {
			return kernelOut(err, nil)
		}
	}
	return okOut(nil)
}

// ensureBridge creates Bridge (vlan_filtering 1, default_pvid 0 so ports
// do not join VLAN 1, mtu 9100, up) or repairs its filtering and admin
// state, and removes "vid 1 self" unless VLAN 1 is configured.
func (o *Orch) ensureBridge(key string) (netlinkmgr.LinkInfo, error) {
	// As the view has it, if that needs nothing (vlanview.go).
	if br, ok := o.view.viewLink(BridgeName); ok && br.Kind == "bridge" && *br.Bridge.VlanFiltering &&
		*br.AdminUp && len(br.MAC) > 0 && !isZeroMAC(br.MAC) {
		return br, nil
	}
	br, ok, err := o.getLink(BridgeName)
	if err != nil {
		return br, err
	}
	on, pvid0, up, mtu := true, uint16(0), true, bridgeMTU
	if !ok {
		// An explicit MAC: a bridge left to follow its ports falls back to
		// 00:00:00:00:00:00 when its last port leaves, and then the kernel
		// refuses "vid N self" (EINVAL: no valid address for the local
		// FDB entry).
		l := netlinkmgr.LinkInfo{Name: BridgeName, Kind: "bridge", AdminUp: &up, MTU: &mtu, MAC: bridgeMAC(),
			Bridge: &netlinkmgr.BridgeOptions{VlanFiltering: &on, DefaultPVID: &pvid0}}
		if err := o.act(schema.TableVlan, key, "create bridge "+BridgeName+" vlan_filtering 1",
			func() error { return o.k.Links().Add(l) }); err != nil {
			return br, err
		}
		if br, _, err = o.getLink(BridgeName); err != nil {
			return br, err
		}
	}
	if br.Kind != "bridge" {
		return br, fmt.Errorf("netdev %s exists and is not a bridge: %w", BridgeName, errNotOurs)
	}
	fix := netlinkmgr.LinkInfo{Name: BridgeName}
	var changes []string
	if br.Bridge == nil || br.Bridge.VlanFiltering == nil || !*br.Bridge.VlanFiltering {
		fix.Bridge = &netlinkmgr.BridgeOptions{VlanFiltering: &on}
		changes = append(changes, "vlan_filtering 1")
	}
	if isZeroMAC(br.MAC) {
		fix.MAC = bridgeMAC()
		changes = append(changes, "address "+fix.MAC.String())
	}
	if br.AdminUp == nil || !*br.AdminUp {
		fix.AdminUp = &up
		changes = append(changes, "up")
	}
	if len(changes) > 0 {
		if err := o.act(schema.TableVlan, key, "set "+BridgeName+" "+strings.Join(changes, " "),
			func() error { return o.k.Links().Set(fix) }); err != nil {
			return br, err
		}
	}
	return br, nil
}

// bridgeSelfVids lists the VLANs on the Bridge device itself.
func (o *Orch) bridgeSelfVids() (map[uint16]bool, error) {
	vl, err := o.listVids(BridgeName)
	if err != nil {
		return nil, err
	}
	out := map[uint16]bool{}
	for _, v := range vl {
		if v.Link == BridgeName {
			out[v.VID] = true
		}
	}
	return out, nil
}

func (o *Orch) ensureBridgeVid(key string, vid uint16) error {
	_, have1, err := o.vidOf(BridgeName, 1)
	if err != nil {
		return err
	}
	if have1 && vid != 1 && !o.configured(schema.TableVlan, "Vlan1") {
		if err := o.delVid(schema.TableVlan, key, "delete vid 1 self from "+BridgeName,
			netlinkmgr.BridgeVlanInfo{Link: BridgeName, VID: 1, Self: true}); err != nil {
			return err
		}
	}
	if _, have, err := o.vidOf(BridgeName, vid); err != nil || have {
		return err
	}
	return o.addVid(schema.TableVlan, key, fmt.Sprintf("add vid %d self on %s", vid, BridgeName),
		netlinkmgr.BridgeVlanInfo{Link: BridgeName, VID: vid, Self: true})
}

func (o *Orch) delBridgeVid(key string, vid uint16) error {
	have, err := o.bridgeSelfVids()
	if err != nil {
		if _, missing := netlinkmgr.MissingFeature(err); missing {
			return nil
		}
		return err
	}
	if !have[vid] {
		return nil
	}
	return o.delVid(schema.TableVlan, key, fmt.Sprintf("delete vid %d self from %s", vid, BridgeName),
		netlinkmgr.BridgeVlanInfo{Link: BridgeName, VID: vid, Self: true})
}

// bridgeMAC is a random locally administered unicast MAC for Bridge.
func bridgeMAC() net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	rand.Read(m)
	m[0] = m[0]&0xfc | 0x02
	return m
}

func isZeroMAC(m net.HardwareAddr) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return true
}

func ignoreNotFound(err error) error {
	if netlinkmgr.IsNotFound(err) {
		return nil
	}
	return err
}
