package netlinkmgr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// VxlanOptions are vxlan device attributes (Add; read back):
//
//	ip link add NAME type vxlan id VNI [local L] [remote R] dstport P [no]learning
//
// The kernel does not change them on an existing device: a different
// configuration means deleting and adding the device again.
type VxlanOptions struct {
	VNI      int        // 1-16777215
	Local    netip.Addr // the local VTEP address; invalid = any
	Remote   netip.Addr // the default remote VTEP (unicast); invalid = none
	Port     int        // UDP destination port; 0 = the kernel's default (8472): give 4789 (IANA)
	Learning bool       // learn remote MACs and their VTEP from received packets
}

// FeatureVxlan names the vxlan driver in FeatureError.
const FeatureVxlan = "VXLAN devices"

// newVxlan is the library's link for Add of kind vxlan.
func newVxlan(attrs netlink.LinkAttrs, o *VxlanOptions) (*netlink.Vxlan, error) {
	if o == nil || o.VNI < 1 || o.VNI > 1<<24-1 {
		return nil, fmt.Errorf("vxlan needs an id 1-16777215: %w", unix.EINVAL)
	}
	v := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: o.VNI, Port: o.Port, Learning: o.Learning, TTL: 0}
	if o.Local.IsValid() {
		v.SrcAddr = net.IP(o.Local.AsSlice())
	}
	if o.Remote.IsValid() {
		v.Group = net.IP(o.Remote.AsSlice())
	}
	return v, nil
}

// vxlanInfo reads a vxlan device's options back.
func vxlanInfo(t *netlink.Vxlan) *VxlanOptions {
	o := &VxlanOptions{VNI: t.VxlanId, Port: t.Port, Learning: t.Learning}
	if a, ok := netip.AddrFromSlice(t.SrcAddr); ok && !a.Unmap().IsUnspecified() {
		o.Local = a.Unmap()
	}
	if a, ok := netip.AddrFromSlice(t.Group); ok && !a.Unmap().IsUnspecified() {
		o.Remote = a.Unmap()
	}
	return o
}

// remoteNeigh is the vxlan device's own (self) entry for e.MAC towards
// e.Dst.
func remoteNeigh(idx int, e FdbInfo) (*netlink.Neigh, error) {
	if !e.Dst.IsValid() || len(e.MAC) != 6 {
		return nil, fmt.Errorf("a remote entry needs a 6-byte MAC and a dst: %w", unix.EINVAL)
	}
	return &netlink.Neigh{
		LinkIndex: idx, Family: unix.AF_BRIDGE, Flags: netlink.NTF_SELF,
		State: netlink.NUD_PERMANENT, HardwareAddr: e.MAC, IP: net.IP(e.Dst.Unmap().AsSlice()),
	}, nil
}

// AddRemote appends a remote VTEP to a vxlan device's entry (NLM_F_APPEND:
// the entry keeps its other remotes; the kernel answers 0 when the remote
// is there). Equivalent to:
// bridge fdb append MAC dev LINK dst DST self permanent
func (x realFdbs) AddRemote(e FdbInfo) error {
	k := x.k
	k.writes.Add(1)
	return opErr("append", "fdb "+e.String(), k.withIfindex(e.Link, func(idx int) error {
		n, err := remoteNeigh(idx, e)
		if err != nil {
			return err
		}
		return k.h.NeighAppend(n)
	}))
}

// DelRemote removes one remote VTEP from a vxlan device's entry (with
// NDA_DST the kernel removes that remote only; the entry goes with its
// last one). A remote that is not there is no error (the kernel answers 0
// when the entry has other remotes, ENOENT when it has none); ErrNotFound
// when the device is absent. Equivalent to:
// bridge fdb del MAC dev LINK dst DST self
func (x realFdbs) DelRemote(e FdbInfo) error {
	k := x.k
	k.writes.Add(1)
	return opErr("del", "fdb "+e.String(), mapNotFound(k.withIfindex(e.Link, func(idx int) error {
		n, err := remoteNeigh(idx, e)
		if err != nil {
			return err
		}
		n.State = 0
		if err := k.h.NeighDel(n); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		return nil
	})))
}
