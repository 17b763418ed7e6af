package orchagent

import (
	"errors"
	"fmt"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
	"golang.org/x/sys/unix"
)

// Batched VLANs. In a bulk the keys come as a VLAN then its members, so
// VLAN and VLAN_MEMBER keys share one batch (batchGroup). A VLAN key whose
// device is to be made defers its two writes — "vid N self" on Bridge and
// the 802.1Q device — and a member defers its vid add as before. A member
// whose VLAN key is deferred in the same batch goes ahead as if the VLAN
// were ok; when the batch is sent, the VLAN keys are finished first, and
// a member whose VLAN then failed is recorded as waiting for it and
// enqueued again, so its next reconcile takes the vid back off the port
// as a member of a VLAN that is not ok always does. The vid adds of the
// batch go out in key order in one BridgeVlans().AddBatch (which sends
// each link's in one request: one announcement of the link's VLAN list
// per batch, not per vid), then the devices in one Links().AddBatch
// (neither depends on the other).

// deferredVlan is a VLAN key's deferred writes.
type deferredVlan struct {
	deferred
	v    schema.Vlan
	self *netlinkmgr.BridgeVlanInfo // "vid N self" on Bridge; nil = there
	dev  netlinkmgr.LinkInfo        // the 802.1Q device to make
	br   netlinkmgr.LinkInfo        // Bridge as the key saw it
	refs []string
	ok   bool // set by flushVlans once the key is finished
}

// batchedVlan reports whether VLAN name's key is deferred in the current
// batch; i is its index in vlans.
func (o *Orch) batchedVlan(name string) (i int, ok bool) {
	if !o.deferring(schema.TableVlan) {
		return 0, false
	}
	i, ok = o.batch.vlanAt[name]
	return i, ok
}

// deferVlan defers the writes of a VLAN key whose device is absent.
func (o *Orch) deferVlan(v schema.Vlan, self *netlinkmgr.BridgeVlanInfo, dev netlinkmgr.LinkInfo, br netlinkmgr.LinkInfo, refs []string) outcome {
	b := o.batch
	if b.vlanAt == nil {
		b.vlanAt = map[string]int{}
	}
	b.vlanAt[v.Name] = len(b.vlans)
	b.vlans = append(b.vlans, deferredVlan{deferred: b.cur, v: v, self: self, dev: dev, br: br, refs: refs})
	return outcome{deferred: true}
}

// flushVlans sends b's deferred VLAN writes and member vid adds, then
// finishes the VLAN keys and the members.
func (o *Orch) flushVlans(b *writeBatch) {
	// The vid adds in key order: the VLANs' self vids merged with the
	// members' by position.
	vids := make([]netlinkmgr.BridgeVlanInfo, 0, len(b.vlans)+len(b.vids))
	selfAt := make([]int, len(b.vlans)) // index in vids, -1 = none
	memberAt := make([]int, len(b.vids))
	for i, j := 0, 0; i < len(b.vlans) || j < len(b.vids); {
		if j == len(b.vids) || (i < len(b.vlans) && b.vlans[i].pos < b.vids[j].pos) {
			selfAt[i] = -1
			if s := b.vlans[i].self; s != nil {
				selfAt[i] = len(vids)
				vids = append(vids, *s)
			}
			i++
			continue
		}
		memberAt[j] = len(vids)
		vids = append(vids, b.vids[j].want)
		j++
	}
	var vres []error
	if len(vids) > 0 {
		vres = o.k.BridgeVlans().AddBatch(vids)
	}
	var devs []netlinkmgr.LinkInfo
	for i := range b.vlans {
		devs = append(devs, b.vlans[i].dev)
	}
	var lres []error
	if len(devs) > 0 {
		lres = o.k.Links().AddBatch(devs)
	}
	for i := range b.vlans {
		d := &b.vlans[i]
		var out outcome
		switch {
		case selfAt[i] >= 0 && vres[selfAt[i]] != nil:
			err := vres[selfAt[i]]
			o.logAct(d.table, d.key, func() string { return describeSelfVid(d.self.VID) }, err)
			out = kernelOut(err, d.refs)
		default:
			if selfAt[i] >= 0 {
				o.logAct(d.table, d.key, func() string { return describeSelfVid(d.self.VID) }, nil)
				o.view.notedVid(*d.self, true)
			}
			o.logAct(d.table, d.key, func() string { return describeVlanDev(&d.v) }, lres[i])
			out = o.vlanCreated(d.key, d.v, d.br, d.refs, lres[i])
		}
		d.ok = out.res.State == schema.StateOK
		o.echoesAfter(schema.ConfigKey(d.table, d.key), out) // vlanecho.go
		o.finishDeferred(b, &d.deferred, out)
	}
	for j := range b.vids {
		d := &b.vids[j]
		err := vres[memberAt[j]]
		o.logAct(d.table, d.key, func() string { return describeVid(&d.want) }, err)
		out := okOut(d.refs)
		if err != nil {
			out = kernelOut(err, d.refs)
		} else {
			o.view.notedVid(d.want, true)
		}
		if err == nil && d.vlan > 0 && !b.vlans[d.vlan-1].ok {
			// Its VLAN failed after all: the next reconcile takes the
			// vid back off (applyMember of a VLAN that is not ok).
			vk := schema.ConfigKey(schema.TableVlan, b.vlans[d.vlan-1].v.Name)
			out = pendingOut("waiting for "+vk, d.refs)
			o.enqueue(schema.ConfigKey(d.table, d.key))
		}
		o.finishDeferred(b, &d.deferred, out)
	}
}

// vlanCreated is the outcome of the create of VLAN v's device (err): ok,
// or — when the device was there after all (EEXIST: the view had not seen
// it yet) — what the key makes of the device the kernel has.
func (o *Orch) vlanCreated(key string, v schema.Vlan, br netlinkmgr.LinkInfo, refs []string, err error) outcome {
	if err == nil {
		return okOut(refs)
	}
	if !errors.Is(err, unix.EEXIST) {
		return kernelOut(err, refs)
	}
	cur, ok, gerr := o.getLink(v.Name)
	if gerr != nil || !ok {
		return kernelOut(errors.Join(gerr, fmt.Errorf("netdev %s: exists, then not found", v.Name)), refs)
	}
	return o.vlanExisting(key, v, cur, br, refs)
}

// vlanExisting checks that the device VLAN v found (cur, from the view
// or the kernel) is ours and sets its managed fields.
func (o *Orch) vlanExisting(key string, v schema.Vlan, cur, br netlinkmgr.LinkInfo, refs []string) outcome {
	if !isOurVlanDev(cur, br.Index) || cur.Vlan.ID != v.ID {
		// The view may be behind: the kernel says.
		fresh, ok, err := o.getLink(v.Name)
		if err != nil {
			return kernelOut(err, refs)
		}
		if !ok || !isOurVlanDev(fresh, br.Index) || fresh.Vlan.ID != v.ID {
			return errorOut(fmt.Errorf("netdev %s exists and is not VLAN %d on %s (not created by orchagent): delete it", v.Name, v.ID, BridgeName), refs)
		}
		cur = fresh
	}
	want, changes := linkDiff(cur, v.AdminUp, v.MTU, v.MAC, nil)
	if len(changes) > 0 {
		if err := o.act(schema.TableVlan, key, "set "+joinChanges(changes),
			func() error { return o.k.Links().Set(want) }); err != nil {
			return kernelOut(err, refs)
		}
	}
	return okOut(refs)
}

func describeSelfVid(vid uint16) string {
	return fmt.Sprintf("add vid %d self on %s", vid, BridgeName)
}

func describeVlanDev(v *schema.Vlan) string {
	return fmt.Sprintf("create 802.1Q device %s id %d on %s", v.Name, v.ID, BridgeName)
}

func describeVid(v *netlinkmgr.BridgeVlanInfo) string {
	mode := "tagged"
	if v.PVID && v.Untagged {
		mode = "pvid untagged"
	}
	return fmt.Sprintf("add vid %d %s on %s", v.VID, mode, v.Link)
}
