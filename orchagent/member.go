package orchagent

import (
	"fmt"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// applyMember enslaves the port to Bridge and gives it vid N (pvid
// untagged unless tagged), removing vid 1. It waits for its VLAN key to be
// ok and for the port's netdev; when the VLAN goes away it takes the port
// out of the VLAN and waits again.
func (o *Orch) applyMember(key string, f schema.Fields) outcome {
	vlanName, portName, _ := strings.Cut(key, schema.ConfigSep)
	refs := []string{schema.ConfigKey(schema.TableVlan, vlanName), resLink(portName), resBrPort(portName)}
	m, err := schema.ParseVlanMember(key, f)
	if err != nil {
		return errorOut(err, refs)
	}
	refs = append(refs, resBrVid(m.Port, uint16(m.VID)))
	vlanKey := schema.ConfigKey(schema.TableVlan, m.Vlan)
	// rely: the VLAN key is deferred in this batch (vlanbatch.go): the
	// member goes ahead and is finished after it.
	rely := 0
	if !o.resultOK(vlanKey) {
		if i, ok := o.batchedVlan(m.Vlan); ok {
			rely = i + 1
		} else {
			return o.memberWaits(key, m, vlanKey, refs)
		}
	}
	if m.Port == BridgeName || isVlanName(m.Port) {
		return errorOut(fmt.Errorf("VLAN_MEMBER|%s: %s cannot be a VLAN member", key, m.Port), refs)
	}
	untagged := m.Tagging != schema.Tagged
	if untagged {
		for _, other := range o.cfg.ByIndex(schema.TableVlanMember, m.Port) {
			if other == key {
				continue
			}
			of, ok := o.config(schema.TableVlanMember, other)
			if ok && of[schema.FieldTaggingMode] != string(schema.Tagged) {
				refs = append(refs, schema.ConfigKey(schema.TableVlanMember, other))
				return errorOut(fmt.Errorf("VLAN_MEMBER|%s: %s is already an untagged member in VLAN_MEMBER|%s and a port has one untagged VLAN: make one of them tagged",
					key, m.Port, other), refs)
			}
		}
	}
	// Links from the view (vlanview.go); a write the view misleads fails
	// and is retried, and the event that corrects the view re-enqueues.
	port, ok, err := o.linkOf(m.Port)
	if err != nil {
		return kernelOut(err, refs)
	}
	if !ok {
		return pendingOut(waitingForLink(m.Port), refs)
	}
	br, brOK, err := o.linkOf(BridgeName)
	if err != nil {
		return kernelOut(err, refs)
	}
	if !brOK {
		return pendingOut("waiting for "+vlanKey, refs)
	}
	if port.MasterIdx != br.Index {
		// Not on Bridge, says the view, which may be behind: before a
		// port is moved, the kernel says.
		if port, ok, err = o.getLink(m.Port); err != nil {
			return kernelOut(err, refs)
		}
		if !ok {
			return pendingOut(waitingForLink(m.Port), refs)
		}
	}
	if port.MasterIdx != br.Index {
		if port.MasterIdx != 0 {
			// Someone else's: left alone; releasing it is a link event
			// on the port, which re-enqueues this key.
			master := fmt.Sprintf("ifindex %d", port.MasterIdx)
			if port.Master != nil && *port.Master != "" {
				master = *port.Master
			}
			return errorOut(fmt.Errorf("VLAN_MEMBER|%s: %s is enslaved to another master (%s), not %s; not moving it: release it first",
				key, m.Port, master, BridgeName), refs)
		}
		master := BridgeName
		if err := o.act(schema.TableVlanMember, key, "enslave "+m.Port+" to "+BridgeName, func() error {
			return o.k.Links().Set(netlinkmgr.LinkInfo{Name: m.Port, Master: &master})
		}); err != nil {
			return kernelOut(err, refs)
		}
		o.view.notedMaster(m.Port, br.Index)
	}
	vid := uint16(m.VID)
	have, hasVid, err := o.vidOf(m.Port, vid)
	if err != nil {
		return kernelOut(err, refs)
	}
	_, vid1, err := o.vidOf(m.Port, 1)
	if err != nil {
		return kernelOut(err, refs)
	}
	dropVid1 := vid1 && vid != 1 && !o.configured(schema.TableVlanMember, "Vlan1|"+m.Port)
	if !hasVid || have.PVID != untagged || have.Untagged != untagged {
		want := netlinkmgr.BridgeVlanInfo{Link: m.Port, VID: vid, PVID: untagged, Untagged: untagged}
		if !dropVid1 && o.deferring(schema.TableVlanMember) {
			// The key's last write: it goes with the next keys'.
			o.batch.vids = append(o.batch.vids, deferredVid{deferred: o.batch.cur, want: want, refs: refs, vlan: rely})
			return outcome{deferred: true}
		}
		if rely > 0 {
			// Not deferred after all: the VLAN's outcome first.
			o.flushBatch()
			if !o.resultOK(vlanKey) {
				return o.memberWaits(key, m, vlanKey, refs)
			}
		}
		if err := o.addVid(schema.TableVlanMember, key, describeVid(&want), want); err != nil {
			return kernelOut(err, refs)
		}
	}
	if rely > 0 {
		o.flushBatch()
		if !o.resultOK(vlanKey) {
			return o.memberWaits(key, m, vlanKey, refs)
		}
	}
	if dropVid1 {
		if err := o.delVid(schema.TableVlanMember, key, "delete vid 1 from "+m.Port,
			netlinkmgr.BridgeVlanInfo{Link: m.Port, VID: 1}); err != nil {
			return kernelOut(err, refs)
		}
	}
	return okOut(refs)
}

// memberWaits takes the port out of a VLAN that is not ok and waits.
func (o *Orch) memberWaits(key string, m schema.VlanMember, vlanKey string, refs []string) outcome {
	if err := o.unbindMember(key, m.VID, m.Port); err != nil {
		return kernelOut(err, refs)
	}
	return pendingOut("waiting for "+vlanKey, refs)
}

// removeMember takes the port out of the VLAN.
func (o *Orch) removeMember(key string) outcome {
	vlanName, portName, ok := strings.Cut(key, schema.ConfigSep)
	id, err := schema.ParseVlanName(vlanName)
	if !ok || err != nil {
		return okOut(nil)
	}
	if err := o.unbindMember(key, id, portName); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

// unbindMember removes vid from port and, when it did and no other
// VLAN_MEMBER key names the port, releases it from Bridge. A port on
// Bridge without the vid (enslaved by hand, or a key that never applied)
// is not released: deleting what never applied changes nothing.
func (o *Orch) unbindMember(key string, vid int, port string) error {
	l, ok, err := o.getLink(port)
	if err != nil || !ok {
		return err
	}
	br, brOK, err := o.getLink(BridgeName)
	if err != nil || !brOK || l.MasterIdx != br.Index {
		return err
	}
	_, had, err := o.vidOf(port, uint16(vid))
	if err != nil {
		if _, missing := netlinkmgr.MissingFeature(err); !missing {
			return err
		}
	}
	if !had {
		return nil
	}
	if err := o.delVid(schema.TableVlanMember, key, fmt.Sprintf("delete vid %d from %s", vid, port),
		netlinkmgr.BridgeVlanInfo{Link: port, VID: uint16(vid)}); err != nil {
		return err
	}
	for _, other := range o.cfg.ByIndex(schema.TableVlanMember, port) {
		if other != key {
			return nil
		}
	}
	none := ""
	return o.act(schema.TableVlanMember, key, "release "+port+" from "+BridgeName, func() error {
		return o.k.Links().Set(netlinkmgr.LinkInfo{Name: port, Master: &none})
	})
}

// addVid and delVid are bridge VLAN writes that keep the view current.
func (o *Orch) addVid(table, key, action string, v netlinkmgr.BridgeVlanInfo) error {
	if err := o.act(table, key, action, func() error { return o.k.BridgeVlans().Add(v) }); err != nil {
		return err
	}
	o.view.notedVid(v, true)
	return nil
}

func (o *Orch) delVid(table, key, action string, v netlinkmgr.BridgeVlanInfo) error {
	if err := o.act(table, key, action, func() error { return ignoreNotFound(o.k.BridgeVlans().Del(v)) }); err != nil {
		return err
	}
	o.view.notedVid(v, false)
	return nil
}
