package netlinkmgr

import (
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
