package orchagent

import (
	"crypto/rand"
	"fmt"
	"net"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// bridgeMTU is Bridge's MTU, as SONiC's vlanmgrd sets it, so VLAN devices
// on it may take any MTU a VLAN key allows.
const bridgeMTU = 9100

// applyVlan makes VLAN N exist: Bridge (vlan_filtering 1), "vid N self" on
// Bridge and the 802.1Q device VlanN on Bridge with the managed fields.
// Links and vids are read from the view (vlanview.go); in a batch, the
// writes of a VLAN whose device is to be made are deferred (vlanbatch.go).
//
// The key expects the echoes of its writes (vlanecho.go): the events of
// its own new device do not re-enqueue it while the view shows what it
// made.
func (o *Orch) applyVlan(key string, f schema.Fields) outcome {
	ck := schema.ConfigKey(schema.TableVlan, key)
	out := o.vlanApply(key, ck, f)
	if !out.deferred { // a deferred key's outcome comes in flushVlans
		o.echoesAfter(ck, out)
	}
	return out
}

func (o *Orch) vlanApply(key, ck string, f schema.Fields) outcome {
	refs := []string{resLink(key), resLink(BridgeName)}
	v, err := schema.ParseVlan(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	o.expectEchoes(ck, vlanFinal(v), vlanInterim(v))
	refs = append(refs, resBrVid(BridgeName, uint16(v.ID)))
	br, err := o.ensureBridge(key)
	if err != nil {
		return kernelOut(err, refs)
	}
	self, err := o.bridgeVidToAdd(key, uint16(v.ID))
	if err != nil {
		return kernelOut(err, refs)
	}
	cur, ok := o.view.viewLink(v.Name)
	if !ok {
		up := true
		if v.AdminUp != nil {
			up = *v.AdminUp
		}
		dev := netlinkmgr.LinkInfo{Name: v.Name, Kind: "vlan", AdminUp: &up, MTU: v.MTU, MAC: v.MAC,
			Vlan: &netlinkmgr.VlanOptions{ID: v.ID, Parent: BridgeName}}
		if o.deferring(schema.TableVlan) {
			return o.deferVlan(v, self, dev, br, refs)
		}
		if self != nil {
			if err := o.addVid(schema.TableVlan, key, describeSelfVid(self.VID), *self); err != nil {
				return kernelOut(err, refs)
			}
		}
		err := o.act(schema.TableVlan, key, describeVlanDev(&v), func() error { return o.k.Links().Add(dev) })
		return o.vlanCreated(key, v, br, refs, err)
	}
	if self != nil {
		if err := o.addVid(schema.TableVlan, key, describeSelfVid(self.VID), *self); err != nil {
			return kernelOut(err, refs)
		}
	}
	return o.vlanExisting(key, v, cur, br, refs)
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
	o.forgetEchoes(schema.ConfigKey(schema.TableVlan, key))
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

// bridgeVidToAdd removes "vid 1 self" from Bridge unless VLAN 1 is
// configured, and returns "vid N self" when Bridge lacks it (nil: there).
func (o *Orch) bridgeVidToAdd(key string, vid uint16) (*netlinkmgr.BridgeVlanInfo, error) {
	_, have1, err := o.vidOf(BridgeName, 1)
	if err != nil {
		return nil, err
	}
	if have1 && vid != 1 && !o.configured(schema.TableVlan, "Vlan1") {
		if err := o.delVid(schema.TableVlan, key, "delete vid 1 self from "+BridgeName,
			netlinkmgr.BridgeVlanInfo{Link: BridgeName, VID: 1, Self: true}); err != nil {
			return nil, err
		}
	}
	if _, have, err := o.vidOf(BridgeName, vid); err != nil || have {
		return nil, err
	}
	return &netlinkmgr.BridgeVlanInfo{Link: BridgeName, VID: vid, Self: true}, nil
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

func joinChanges(changes []string) string { return strings.Join(changes, " ") }
