package orchagent

import "github.com/switchyard-net/switchyard/schema"

// A VLAN key reconciles once per change, not once more per echo of its
// own device. The 802.1Q device a VLAN key makes is news to the view when
// its RTM_NEWLINK arrives (a new link: "link:VlanN" changed), and that
// re-enqueued the key: a bulk of 1,000 VLANs reconciled 2,000 times, the
// second run finding everything in place. The key registers, before its
// first write, what the view shows once the kernel holds its outcome
// (vlanFinal) and on the way there (vlanInterim), with the PortChannel
// keys' mechanism (pcecho.go): a link event after which the view still
// satisfies the expectation does not re-enqueue the key; any other one
// (a foreign change of the device or of Bridge) drops the expectation and
// re-enqueues it, and a deletion always does.
//
// The checks are what the key's reconcile compares among the fields a
// link event carries: Bridge as ensureBridge takes it from the view, the
// device as vlanExisting does (ours on Bridge, the id, the managed admin
// state, MTU and MAC). Bridge's "vid N self" is not a link event (it is
// told by the bridge's local FDB entry, enqueueFdbRefs) and is not part
// of the expectation.

// vlanFinal is the view when VLAN v holds its outcome.
func vlanFinal(v schema.Vlan) func(kv *kernelView) bool {
	mac := ""
	if len(v.MAC) > 0 {
		mac = v.MAC.String()
	}
	return func(kv *kernelView) bool {
		s, ok := kv.links[v.Name]
		return ok && kv.ourVlanSnapLocked(s, v.ID) &&
			(v.AdminUp == nil || s.admin == *v.AdminUp) && (v.MTU == nil || s.mtu == *v.MTU) &&
			(mac == "" || s.mac == mac)
	}
}

// vlanInterim is the view while VLAN v's device is being made: not heard
// of yet, or ours with any admin state, MTU and MAC (the kernel announces
// a device before it sets it up), on a Bridge that needs nothing.
func vlanInterim(v schema.Vlan) func(kv *kernelView) bool {
	return func(kv *kernelView) bool {
		s, ok := kv.links[v.Name]
		if !ok {
			return kv.bridgeReadyLocked()
		}
		return kv.ourVlanSnapLocked(s, v.ID)
	}
}

// ourVlanSnapLocked: s is our 802.1Q device with id on a Bridge that needs
// nothing (ensureBridge's view check); v.mu held.
func (v *kernelView) ourVlanSnapLocked(s linkSnap, id int) bool {
	br := v.links[BridgeName]
	return v.bridgeReadyLocked() && s.kind == "vlan" && s.vlanID == id && s.parentIdx != 0 && s.parentIdx == br.index
}

// bridgeReadyLocked is ensureBridge's view check: Bridge is a bridge with
// vlan_filtering, up, with a MAC that is not all zero; v.mu held.
func (v *kernelView) bridgeReadyLocked() bool {
	br, ok := v.links[BridgeName]
	return ok && br.kind == "bridge" && br.filtering && br.admin && br.mac != "" && br.mac != "00:00:00:00:00:00"
}
