package orchagent

import (
	"fmt"
	"net"
	"strings"
	"sync"

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
	vid := uint16(e.VID)
	// The VLAN member's key and the port's link, one slice per member
	// (fdbRefCache). The entry's own resource (fdb:VID|MAC) is not in the
	// index: an event about it names the key (enqueueFdbRefs: ParseFDB
	// takes only the canonical VlanN and MAC, which the event's spell).
	refs := o.fdbRefs.of(o, e.Vlan, e.Port)
	mk := refs[0]
	cur, have := o.view.fdbAt(vid, e.MAC)
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
		return okOut(nil) // an ok key is not in the index (enqueueFdbKeys)
	}
	want := netlinkmgr.FdbInfo{MAC: e.MAC, Link: e.Port, Master: BridgeName, Vlan: vid, Static: true}
	if o.deferring(schema.TableFDB) {
		o.batch.fdbs = append(o.batch.fdbs, deferredFdb{deferred: o.batch.cur, want: want, refs: refs})
		return outcome{deferred: true}
	}
	wants := []netlinkmgr.FdbInfo{want}
	o.view.writingFdbs(wants)
	err = o.act(schema.TableFDB, key, describeFdb(&want), func() error { return o.k.Fdbs().Add(want) })
	var noted [1]bool
	o.view.notedFdbsWritten(wants, []error{err}, noted[:0])
	return o.fdbWritten(key, want, refs, err, noted[0])
}

// fdbRefCache holds the dependencies of FDB keys per VLAN member (its
// VLAN_MEMBER key, its port's link resource), so 10k entries behind one
// port share one slice in the dependency index instead of building one
// each. The slices are never appended to (capacity = length).
type fdbRefCache struct {
	mu sync.Mutex
	m  map[fdbMember][]string
}

type fdbMember struct{ vlan, port string }

// of returns the refs of an FDB entry of vlan behind port.
func (c *fdbRefCache) of(o *Orch, vlan, port string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := fdbMember{vlan, port}
	if r, ok := c.m[k]; ok {
		return r
	}
	r := []string{schema.ConfigKey(schema.TableVlanMember, vlan+schema.ConfigSep+port), o.linkRes.of(port)}
	r = r[:2:2]
	if len(c.m) < maxResNames {
		if c.m == nil {
			c.m = map[fdbMember][]string{}
		}
		c.m[k] = r
	}
	return r
}

func describeFdb(f *netlinkmgr.FdbInfo) string {
	return "replace fdb " + f.MAC.String() + " dev " + f.Link + " master static vlan " + itoa(int(f.Vlan))
}

// fdbWritten is the outcome of the add of want (key: "VlanN|mac"); noted
// is what notedFdbsWritten said of it.
func (o *Orch) fdbWritten(key string, want netlinkmgr.FdbInfo, refs []string, err error, noted bool) outcome {
	if err != nil {
		return kernelOut(err, refs)
	}
	if !noted {
		// Removed by someone right after the kernel wrote it (its
		// delete was heard before this note): write it again.
		return kernelOut(fmt.Errorf("FDB|%s: %s was deleted while being written", key, describeFdb(&want)), refs)
	}
	return okOut(nil) // an ok key is not in the index (enqueueFdbKeys)
}

// enqueueFdbKeys enqueues the FDB keys of a VLAN member's result change
// (resource "VLAN_MEMBER|VlanN|PORT"): every configured "VlanN|…" key.
// An FDB key whose outcome is ok is not in the dependency index — 10k
// entries behind one port were 10k entries in three of its maps — so
// its wake-ups are derived: its entry's events by enqueueFdbRefs, its
// member's result here. The keys of the VLAN behind another port run for
// nothing (ok without a write): a member's result changes rarely. Its
// port's link events need no wake-up: the entry stays while the port is
// there, and when the port goes the kernel's delete of the entry and the
// member's result both say so. A pending or failed FDB key keeps its
// refs in the index.
func (o *Orch) enqueueFdbKeys(res string) {
	rest, ok := strings.CutPrefix(res, schema.TableVlanMember+schema.ConfigSep)
	if !ok {
		return
	}
	vlan, _, ok := strings.Cut(rest, schema.ConfigSep)
	if !ok || o.cfg.Len(schema.TableFDB) == 0 {
		return
	}
	for _, k := range o.cfg.KeysWithPrefix(schema.TableFDB, vlan+schema.ConfigSep) {
		o.enqueue(schema.ConfigKey(schema.TableFDB, k))
	}
}

// enqueueFdbRefs enqueues the dependants of an FDB event's resources and,
// for an entry's own (fdb:VID|MAC), the FDB key VlanVID|MAC if configured.
func (o *Orch) enqueueFdbRefs(resources []string) {
	o.enqueueRefs(resources...)
	for _, r := range resources {
		rest, ok := strings.CutPrefix(r, "fdb:")
		if !ok {
			continue
		}
		vid, mac, ok := strings.Cut(rest, schema.ConfigSep)
		if !ok {
			continue
		}
		if k := "Vlan" + vid + schema.ConfigSep + mac; o.cfg.Has(schema.TableFDB, k) {
			o.enqueue(schema.ConfigKey(schema.TableFDB, k))
		}
	}
}

// removeFdb deletes the static entry of a deleted FDB key.
func (o *Orch) removeFdb(key string) outcome {
	vlanName, macText, ok := strings.Cut(key, schema.ConfigSep)
	id, err := schema.ParseVlanName(vlanName)
	mac, merr := net.ParseMAC(macText)
	if !ok || err != nil || merr != nil {
		return okOut(nil)
	}
	cur, have := o.view.fdbAt(uint16(id), mac)
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
