package syncd

import (
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// FieldRemoteVtep is the FDB_TABLE field naming the remote VTEP a MAC was
// learned from over a vxlan port (SONiC's VXLAN_FDB_TABLE / VXLAN_REMOTE_VNI
// field name).
const FieldRemoteVtep = "remote_vtep"

// vtepID identifies a vxlan device's own FDB entry: the device and the MAC
// ("bridge fdb show dev vtep1-100": "<mac> dst <vtep> self").
type vtepID struct {
	link string
	mac  string
}

// applyVtep records or forgets the remote VTEP of a vxlan device's own
// entry and marks the FDB_TABLE keys of that MAC behind that device. The
// all-zeros entries (head-end replication) and entries without a
// destination name no learned MAC and are ignored.
func (v *View) applyVtep(f netlinkmgr.FdbInfo, deleted bool) {
	if len(f.MAC) != 6 || f.Link == "" || !f.Dst.IsValid() || f.MAC.String() == "00:00:00:00:00:00" {
		return
	}
	id := vtepID{link: f.Link, mac: strings.ToLower(f.MAC.String())}
	if deleted {
		v.removeVtep(id)
		return
	}
	if old, ok := v.vteps[id]; !ok || old != f.Dst.Unmap() {
		v.vteps[id] = f.Dst.Unmap()
		v.touchFdbOf(id)
	}
	if v.listing {
		v.seenVteps[id] = struct{}{}
	}
}

func (v *View) removeVtep(id vtepID) {
	if _, ok := v.vteps[id]; ok {
		delete(v.vteps, id)
		v.touchFdbOf(id)
	}
}

// dropVtepsOf forgets the entries of a device that is gone.
func (v *View) dropVtepsOf(link string) {
	for id := range v.vteps {
		if id.link == link {
			v.removeVtep(id)
		}
	}
}

// touchFdbOf marks the FDB_TABLE keys of the bridge entries of id's MAC on
// id's device.
func (v *View) touchFdbOf(id vtepID) {
	for fid, f := range v.fdb {
		if fid.mac == id.mac && f.Link == id.link {
			v.touch(schema.StateFDBTable, FdbKey(f, v.untagged))
		}
	}
}

// fdbFields is FdbFields plus remote_vtep when the entry's port is a vxlan
// device that knows the MAC's VTEP.
func (v *View) fdbFields(f netlinkmgr.FdbInfo) schema.Fields {
	out := FdbFields(f)
	if vt, ok := v.vteps[vtepID{link: f.Link, mac: strings.ToLower(f.MAC.String())}]; ok {
		out[FieldRemoteVtep] = vt.String()
	}
	return out
}
