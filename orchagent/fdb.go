package orchagent

import (
	"net"
	"strings"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// applyFdb installs "bridge fdb replace MAC dev PORT master static vlan N"
// once the port is an ok member of the VLAN; when the membership goes
// away the entry is removed and the key waits again.
func (o *Orch) applyFdb(key string, f schema.Fields) outcome {
	e, err := schema.ParseFDB(key, f)
	if err != nil {
		return errorOut(err, nil)
	}
	vid, mac := uint16(e.VID), e.MAC.String()
	mk := schema.ConfigKey(schema.TableVlanMember, e.Vlan+schema.ConfigSep+e.Port)
	// The port's resource name interned (linkRes): 10k entries on a port
	// do not hold 10k copies of "link:PORT" in the dependency index.
	refs := []string{mk, resFdb(vid, mac), o.linkRes.of(e.Port)}
	cur, have := o.view.fdb(vid, mac)
	ours := have && cur.Static && !cur.Local
	if !o.resultOK(mk) {
		if ours {
			if err := o.delFdb(key, cur); err != nil {
				return kernelOut(err, refs)
			}
		}
		return pendingOut("waiting for "+mk, refs)
	}
	if ours && cur.Link == e.Port {
		return okOut(refs)
	}
	want := netlinkmgr.FdbInfo{MAC: e.MAC, Link: e.Port, Master: BridgeName, Vlan: vid, Static: true}
	if o.deferring(schema.TableFDB) {
		o.batch.fdbs = append(o.batch.fdbs, deferredFdb{deferred: o.batch.cur, want: want, refs: refs})
		return outcome{deferred: true}
	}
	err = o.act(schema.TableFDB, key, describeFdb(&want), func() error { return o.k.Fdbs().Add(want) })
	return o.fdbWritten(want, refs, err)
}

func describeFdb(f *netlinkmgr.FdbInfo) string {
	return "replace fdb " + f.MAC.String() + " dev " + f.Link + " master static vlan " + itoa(int(f.Vlan))
}

// fdbWritten is the outcome of the add of want.
func (o *Orch) fdbWritten(want netlinkmgr.FdbInfo, refs []string, err error) outcome {
	if err != nil {
		return kernelOut(err, refs)
	}
	o.view.notedFdb(want, true)
	return okOut(refs)
}

// removeFdb deletes the static entry of a deleted FDB key.
func (o *Orch) removeFdb(key string) outcome {
	vlanName, macText, ok := strings.Cut(key, schema.ConfigSep)
	id, err := schema.ParseVlanName(vlanName)
	mac, merr := net.ParseMAC(macText)
	if !ok || err != nil || merr != nil {
		return okOut(nil)
	}
	cur, have := o.view.fdb(uint16(id), mac.String())
	if !have || !cur.Static || cur.Local {
		return okOut(nil)
	}
	if err := o.delFdb(key, cur); err != nil {
		return kernelOut(err, nil)
	}
	return okOut(nil)
}

func (o *Orch) delFdb(key string, cur netlinkmgr.FdbInfo) error {
	d := netlinkmgr.FdbInfo{MAC: cur.MAC, Link: cur.Link, Master: BridgeName, Vlan: cur.Vlan, Static: true}
	if err := o.act(schema.TableFDB, key, "delete fdb "+cur.MAC.String()+" dev "+cur.Link+" vlan "+itoa(int(cur.Vlan)),
		func() error { return ignoreNotFound(o.k.Fdbs().Del(d)) }); err != nil {
		return err
	}
	o.view.notedFdb(d, false)
	return nil
}
