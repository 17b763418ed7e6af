// The Fake's bridge objects: VLANs, FDB entries, neighbours.

package netlinkmgr

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// --- bridge vlans ---

type fakeVlans struct{ f *Fake }

// checkVlan validates v against the kernel's rules; f.mu held.
func (f *Fake) checkVlan(v BridgeVlanInfo) error {
	if v.VID < 1 || v.VID > 4094 {
		return fmt.Errorf("vid %d out of range 1-4094: %w", v.VID, unix.EINVAL)
	}
	l := f.links[v.Link]
	if l == nil {
		return notFound(unix.ENODEV)
	}
	if v.Self && l.info.Kind != "bridge" {
		return fmt.Errorf("%s is not a bridge (self): %w", v.Link, unix.EOPNOTSUPP)
	}
	if !v.Self && *l.info.Master == "" {
		return fmt.Errorf("%s is not a bridge port: %w", v.Link, unix.EOPNOTSUPP)
	}
	if f.unsupported["vlan_filtering"] {
		return &FeatureError{Feature: FeatureVlanFiltering, Err: unix.EOPNOTSUPP}
	}
	return nil
}

// Add adds (or updates the flags of) a VLAN; see BridgeVlans.Add.
func (x fakeVlans) Add(v BridgeVlanInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "vlan add " + v.String()
	obj := fmt.Sprintf("vlan %d on %s", v.VID, v.Link)
	if err := f.begin(op); err != nil {
		return opErr("add", obj, err)
	}
	if err := f.checkVlan(v); err != nil {
		return opErr("add", obj, err)
	}
	f.ops = append(f.ops, op)
	found := false
	for i := range f.vlans {
		o := &f.vlans[i]
		if o.Link != v.Link || o.Self != v.Self {
			continue
		}
		if o.VID == v.VID {
			*o, found = v, true
		} else if v.PVID {
			o.PVID = false
		}
	}
	if !found {
		f.vlans = append(f.vlans, v)
	}
	return nil
}

// Del removes a VLAN; see BridgeVlans.Del.
func (x fakeVlans) Del(v BridgeVlanInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := fmt.Sprintf("vlan del dev %s vid %d", v.Link, v.VID)
	if v.Self {
		op += " self"
	}
	obj := fmt.Sprintf("vlan %d on %s", v.VID, v.Link)
	if err := f.begin(op); err != nil {
		return opErr("del", obj, err)
	}
	if err := f.checkVlan(v); err != nil {
		return opErr("del", obj, err)
	}
	f.ops = append(f.ops, op)
	for i, o := range f.vlans {
		if o.Link == v.Link && o.VID == v.VID && o.Self == v.Self {
			f.vlans = append(f.vlans[:i], f.vlans[i+1:]...)
			return nil
		}
	}
	return nil // the kernel ignores deleting an absent VLAN
}

// List lists VLANs by link index then VID; see BridgeVlans.List.
func (x fakeVlans) List(link string) ([]BridgeVlanInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if link != "" && f.links[link] == nil {
		return nil, opErr("list", "vlans of "+link, notFound(unix.ENODEV))
	}
	var out []BridgeVlanInfo
	for _, n := range f.sortedLinks() {
		if link != "" && n != link {
			continue
		}
		var vs []BridgeVlanInfo
		for _, v := range f.vlans {
			if v.Link == n {
				vs = append(vs, v)
			}
		}
		sortVlans(vs)
		out = append(out, vs...)
	}
	return out, nil
}

func sortVlans(vs []BridgeVlanInfo) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].VID < vs[j-1].VID; j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// --- fdb ---

type fakeFdbs struct{ f *Fake }

func sameFdb(a, b FdbInfo) bool {
	return a.Master == b.Master && a.Vlan == b.Vlan && bytes.Equal(a.MAC, b.MAC)
}

// AddBatch is Add of each entry in order; see Fdbs.AddBatch.
func (x fakeFdbs) AddBatch(es []FdbInfo) []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = x.Add(e)
	}
	return errs
}

// Add adds or replaces a static entry; see Fdbs.Add.
func (x fakeFdbs) Add(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb add " + e.String()
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("add", obj, err)
	}
	if err := f.learn(e, true); err != nil {
		return opErr("add", obj, err)
	}
	f.ops = append(f.ops, op)
	return nil
}

// learn stores e as a static (or dynamic) entry on its port's bridge.
func (f *Fake) learn(e FdbInfo, static bool) error {
	l := f.links[e.Link]
	if l == nil {
		return notFound(unix.ENODEV)
	}
	if len(e.MAC) != 6 {
		return fmt.Errorf("mac %s is not 6 bytes: %w", e.MAC, unix.EINVAL)
	}
	br := *l.info.Master
	if br == "" {
		return fmt.Errorf("%s is not a bridge port: %w", e.Link, unix.EOPNOTSUPP)
	}
	if e.Vlan != 0 {
		ok := false
		for _, v := range f.vlans {
			ok = ok || (v.Link == e.Link && v.VID == e.Vlan && !v.Self)
		}
		if !ok {
			return fmt.Errorf("vlan %d not configured on %s (bridge vlan add): %w", e.Vlan, e.Link, unix.EINVAL)
		}
	}
	e = cloneFdb(e)
	e.Master, e.Static, e.Local = br, static, false
	for _, vid := range f.fdbVids(e) {
		e := cloneFdb(e)
		e.Vlan = vid
		if err := f.putFdb(e); err != nil {
			return err
		}
	}
	return nil
}

// fdbVids is the VLANs an entry applies to: its own, or with VLAN 0 on a
// kernel with VLAN support, 0 and every VLAN of the port (as br_fdb_add
// and br_fdb_delete do).
func (f *Fake) fdbVids(e FdbInfo) []uint16 {
	vids := []uint16{e.Vlan}
	if e.Vlan == 0 && !f.unsupported["vlan_filtering"] {
		for _, v := range f.vlans {
			if v.Link == e.Link && !v.Self {
				vids = append(vids, v.VID)
			}
		}
	}
	return vids
}

func (f *Fake) putFdb(e FdbInfo) error {
	for i, o := range f.fdbs {
		if sameFdb(o, e) {
			if o.Local {
				return fmt.Errorf("%s is a local address: %w", e.MAC, unix.EEXIST)
			}
			f.fdbs[i] = e
			f.emitFdb(i, false)
			return nil
		}
	}
	f.fdbs = append(f.fdbs, e)
	f.emitFdb(len(f.fdbs)-1, false)
	return nil
}

// Del removes an entry; see Fdbs.Del.
func (x fakeFdbs) Del(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb del " + e.String()
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("del", obj, err)
	}
	l := f.links[e.Link]
	if l == nil {
		return opErr("del", obj, notFound(unix.ENODEV))
	}
	vids := map[uint16]bool{}
	for _, v := range f.fdbVids(e) {
		vids[v] = true
	}
	n := len(f.fdbs)
	f.removeFdbs(func(o FdbInfo) bool {
		return o.Link == e.Link && o.Master == *l.info.Master && vids[o.Vlan] && bytes.Equal(o.MAC, e.MAC) && !o.Local
	})
	if len(f.fdbs) == n {
		return opErr("del", obj, notFound(unix.ENOENT))
	}
	f.ops = append(f.ops, op)
	return nil
}

// List lists entries of bridge ("" = all); see Fdbs.List.
func (x fakeFdbs) List(bridge string) ([]FdbInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if bridge != "" && f.links[bridge] == nil {
		return nil, opErr("list", "fdb of "+bridge, notFound(unix.ENODEV))
	}
	var out []FdbInfo
	for _, e := range f.fdbs {
		if bridge == "" || e.Master == bridge {
			out = append(out, cloneFdb(e))
		}
	}
	return out, nil
}

func (f *Fake) removeFdbs(drop func(FdbInfo) bool) {
	keep := f.fdbs[:0]
	for _, e := range f.fdbs {
		if drop(e) {
			e := cloneFdb(e)
			f.emit(Event{Kind: EventFdb, Deleted: true, Fdb: &e})
			continue
		}
		keep = append(keep, e)
	}
	f.fdbs = keep
}

// LearnFdb seeds a dynamic (learned) entry on a bridge port.
func (f *Fake) LearnFdb(e FdbInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return opErr("learn", "fdb "+e.String(), f.learn(e, false))
}

// ForgetFdb removes an entry as ageing would (emits a deleted EventFdb).
func (f *Fake) ForgetFdb(e FdbInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeFdbs(func(o FdbInfo) bool { return o.Link == e.Link && o.Vlan == e.Vlan && bytes.Equal(o.MAC, e.MAC) })
}

// --- neighbours ---

type fakeNeighs struct{ f *Fake }

// List lists neighbours; see Neighs.List.
func (x fakeNeighs) List(link string) ([]NeighInfo, error) {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if link != "" && f.links[link] == nil {
		return nil, opErr("list", "neighbours of "+link, notFound(unix.ENODEV))
	}
	var out []NeighInfo
	for _, n := range f.neighs {
		if link == "" || n.Link == link {
			n.MAC = append(net.HardwareAddr(nil), n.MAC...)
			out = append(out, n)
		}
	}
	return out, nil
}

// AddNeigh seeds (or replaces) a neighbour entry, emitting EventNeigh.
func (f *Fake) AddNeigh(n NeighInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.links[n.Link] == nil {
		return opErr("add", "neighbour "+n.IP.String()+" dev "+n.Link, notFound(unix.ENODEV))
	}
	n.MAC = append(net.HardwareAddr(nil), n.MAC...)
	f.neighs = filter(f.neighs, func(o NeighInfo) bool { return o.Link != n.Link || o.IP != n.IP })
	f.neighs = append(f.neighs, n)
	f.emit(Event{Kind: EventNeigh, Neigh: &n})
	return nil
}

// DelNeigh removes a neighbour entry, emitting a deleted EventNeigh.
func (f *Fake) DelNeigh(link string, ip netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.neighs = filter(f.neighs, func(o NeighInfo) bool {
		if o.Link == link && o.IP == ip {
			o := o
			f.emit(Event{Kind: EventNeigh, Deleted: true, Neigh: &o})
			return false
		}
		return true
	})
}
