package netlinkmgr

import (
	"bytes"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// The Fake's vrf, bond and vxlan devices. A bond is up when at least
// max(1, min_links) of its ports are oper up; every up port is active in
// aggregator 1, LACP collecting and distributing (the Fake has no LACP
// partner to wait for).

// checkNewKind validates the options of a new vrf, bond or vxlan device.
func (f *Fake) checkNewKind(l LinkInfo) error {
	switch l.Kind {
	case "vrf":
		if l.Vrf == nil || !validVrfTable(l.Vrf.Table) {
			return fmt.Errorf("vrf needs a table other than 0, 253-255: %w", unix.EINVAL)
		}
	case "bond":
		return fakeBondCheck(l.Bond, true)
	case "vxlan":
		if l.Vxlan == nil || l.Vxlan.VNI < 1 || l.Vxlan.VNI > 1<<24-1 {
			return fmt.Errorf("vxlan needs an id 1-16777215: %w", unix.EINVAL)
		}
		for _, o := range f.links {
			if v := o.info.Vxlan; v != nil && v.VNI == l.Vxlan.VNI && fakeVxlanPort(v) == fakeVxlanPort(l.Vxlan) && v.Local == l.Vxlan.Local {
				return fmt.Errorf("a vxlan device with vni %d exists (%s): %w", v.VNI, o.info.Name, unix.EEXIST)
			}
		}
	}
	return nil
}

// initKind stores the options of a new vrf, bond or vxlan device n.
func (f *Fake) initKind(n *fakeLink, l LinkInfo) {
	switch l.Kind {
	case "vrf":
		v := *l.Vrf
		n.info.Vrf = &v
		*n.info.MTU = 65536 // as the kernel gives a vrf device (64 KiB)
	case "bond":
		n.info.Bond = newFakeBond(l.Bond)
	case "vxlan":
		v := *l.Vxlan
		v.Port = fakeVxlanPort(&v)
		n.info.Vxlan = &v
		*n.info.MTU = 1450 // 1500 less the VXLAN encapsulation, as the kernel gives it
	}
}

// fakeBondCheck validates bond options as the kernel would.
func fakeBondCheck(b *BondOptions, add bool) error {
	if b == nil {
		return nil
	}
	if add && b.Mode != "" {
		switch b.Mode {
		case "balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb":
		default:
			return fmt.Errorf("bond mode %q: %w", b.Mode, unix.EINVAL)
		}
	}
	if b.MinLinks != nil && *b.MinLinks < 0 {
		return fmt.Errorf("min_links %d: %w", *b.MinLinks, unix.EINVAL)
	}
	if b.LacpRate != nil && *b.LacpRate != "slow" && *b.LacpRate != "fast" {
		return fmt.Errorf("lacp_rate %q: %w", *b.LacpRate, unix.EINVAL)
	}
	return nil
}

// newFakeBond is a new bond's stored options, with the kernel's defaults.
func newFakeBond(o *BondOptions) *BondOptions {
	mode, miimon, minLinks, rate := "balance-rr", 0, 0, "slow"
	b := &BondOptions{Mode: mode, Miimon: &miimon, MinLinks: &minLinks, LacpRate: &rate}
	if o != nil && o.Mode != "" {
		b.Mode = o.Mode
	}
	setFakeBond(b, o)
	return b
}

func setFakeBond(b, o *BondOptions) {
	if o == nil {
		return
	}
	if o.Miimon != nil {
		*b.Miimon = *o.Miimon
	}
	if o.MinLinks != nil {
		*b.MinLinks = *o.MinLinks
	}
	if o.LacpRate != nil {
		*b.LacpRate = *o.LacpRate
	}
}

// bondUpPorts counts the oper-up ports of bond name.
func (f *Fake) bondUpPorts(name string) int {
	n := 0
	for pn, p := range f.links {
		if *p.info.Master == name && f.portUp(pn) {
			n++
		}
	}
	return n
}

// portUp is a bond port's link state: admin up with carrier (a veth: its
// peer up too).
func (f *Fake) portUp(name string) bool {
	l := f.links[name]
	if !*l.info.AdminUp || !l.carrier {
		return false
	}
	if p := f.links[l.peer]; l.info.Kind == "veth" && (p == nil || !*p.info.AdminUp) {
		return false
	}
	return true
}

// bondView is a copy of bond name's options with its active aggregator.
func (f *Fake) bondView(name string) *BondOptions {
	in := f.links[name].info.Bond
	miimon, minLinks, rate := *in.Miimon, *in.MinLinks, *in.LacpRate
	out := &BondOptions{Mode: in.Mode, Miimon: &miimon, MinLinks: &minLinks, LacpRate: &rate}
	if f.bondUpPorts(name) > 0 {
		out.ActiveAggregator = 1
	}
	return out
}

// bondSlaveView is the state of bond port name.
func (f *Fake) bondSlaveView(name string) *BondSlaveInfo {
	if !f.portUp(name) {
		return &BondSlaveInfo{State: "backup", MiiStatus: "down"}
	}
	return &BondSlaveInfo{State: "active", MiiStatus: "up", AggregatorID: 1,
		ActorOperPortState: 0x3d, PartnerOperPortState: 0x3d}
}

// fakeVxlanPort is a vxlan device's UDP port: the kernel's 8472 when 0.
func fakeVxlanPort(v *VxlanOptions) int {
	if v.Port == 0 {
		return 8472
	}
	return v.Port
}

// checkBondSet validates the bond options of a Set (or Add) of l.
func (f *Fake) checkBondSet(l LinkInfo, exists bool) error {
	if l.Bond == nil || l.Bond.setString() == "" {
		return nil
	}
	if exists && f.links[l.Name].info.Kind != "bond" {
		return fmt.Errorf("bond options on a non-bond: %w", unix.EOPNOTSUPP)
	}
	if err := fakeBondCheck(l.Bond, false); err != nil {
		return err
	}
	if exists && l.Bond.LacpRate != nil && *f.links[l.Name].info.AdminUp && (l.AdminUp == nil || *l.AdminUp) {
		return fmt.Errorf("lacp_rate can be changed only while the bond is down: %w", unix.EBUSY)
	}
	return nil
}

// applyBondSet stores the bond options of l on n; a bond's MTU goes to
// its ports.
func (f *Fake) applyBondSet(n *fakeLink, l LinkInfo) {
	if l.Bond != nil && n.info.Bond != nil {
		setFakeBond(n.info.Bond, l.Bond)
	}
	if l.MTU != nil && n.info.Kind == "bond" {
		for _, p := range f.links {
			if *p.info.Master == l.Name {
				*p.info.MTU = *l.MTU
			}
		}
	}
}

// zeroMAC is the all-zeros MAC of a vxlan device's flood entry.
var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// addDefaultRemote gives a new vxlan device with a remote its flood
// entry towards it, as the kernel does.
func (f *Fake) addDefaultRemote(n *fakeLink) {
	if v := n.info.Vxlan; v != nil && v.Remote.IsValid() {
		f.fdbs = append(f.fdbs, FdbInfo{MAC: append(net.HardwareAddr(nil), zeroMAC...), Link: n.info.Name, Local: true, Dst: v.Remote})
		f.emitFdb(len(f.fdbs)-1, false)
	}
}

// AddRemote appends a remote to a vxlan device's entry; see Fdbs.AddRemote.
func (x fakeFdbs) AddRemote(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb append " + e.String() + " self"
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("append", obj, err)
	}
	l := f.links[e.Link]
	switch {
	case l == nil:
		return opErr("append", obj, notFound(unix.ENODEV))
	case l.info.Vxlan == nil:
		return opErr("append", obj, fmt.Errorf("%s is not a vxlan device: %w", e.Link, unix.EOPNOTSUPP))
	case len(e.MAC) != 6 || !e.Dst.IsValid():
		return opErr("append", obj, fmt.Errorf("a remote entry needs a 6-byte MAC and a dst: %w", unix.EINVAL))
	}
	if f.remoteAt(e) < 0 {
		f.fdbs = append(f.fdbs, FdbInfo{MAC: cloneFdb(e).MAC, Link: e.Link, Local: true, Dst: e.Dst.Unmap()})
		f.emitFdb(len(f.fdbs)-1, false)
	}
	f.ops = append(f.ops, op)
	return nil
}

// DelRemote removes one remote of a vxlan device's entry; see Fdbs.DelRemote.
func (x fakeFdbs) DelRemote(e FdbInfo) error {
	f := x.f
	f.mu.Lock()
	defer f.mu.Unlock()
	op := "fdb del " + e.String() + " self"
	obj := "fdb " + e.String()
	if err := f.begin(op); err != nil {
		return opErr("del", obj, err)
	}
	if f.links[e.Link] == nil {
		return opErr("del", obj, notFound(unix.ENODEV))
	}
	if i := f.remoteAt(e); i >= 0 {
		f.emitFdb(i, true)
		f.fdbs = append(f.fdbs[:i:i], f.fdbs[i+1:]...)
	}
	f.ops = append(f.ops, op)
	return nil
}

// remoteAt is the index of e's remote entry in f.fdbs, or -1.
func (f *Fake) remoteAt(e FdbInfo) int {
	for i, o := range f.fdbs {
		if o.Link == e.Link && o.Master == "" && o.Dst == e.Dst.Unmap() && bytes.Equal(o.MAC, e.MAC) {
			return i
		}
	}
	return -1
}
