package netlinkmgr

import (
	"bytes"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestVlanGroupRequest: a group of one is the library's BridgeVlanAdd's
// bytes (libraryVlanRequest); a group of
// several is one RTM_SETLINK whose IFLA_AF_SPEC holds the flags once and
// an IFLA_BRIDGE_VLAN_INFO per VLAN, in order, with its own flags.
func TestVlanGroupRequest(t *testing.T) {
	for _, v := range []BridgeVlanInfo{
		{Link: "Ethernet0", VID: 100},
		{Link: "Ethernet0", VID: 7, PVID: true, Untagged: true},
		{Link: "Bridge", VID: 4094, Self: true},
	} {
		one, want := vlanGroupRequest(9, []BridgeVlanInfo{v}), libraryVlanRequest(9, v)
		one.Seq, want.Seq = 5, 5
		if got, w := one.Serialize(), want.Serialize(); !bytes.Equal(got, w) {
			t.Errorf("%+v:\n got % x\nwant % x", v, got, w)
		}
	}
	vs := []BridgeVlanInfo{{Link: "Ethernet0", VID: 10}, {Link: "Ethernet0", VID: 11, PVID: true, Untagged: true},
		{Link: "Ethernet0", VID: 12}}
	b := vlanGroupRequest(9, vs).Serialize()
	if typ := native.Uint16(b[4:]); typ != unix.RTM_SETLINK {
		t.Fatalf("type %d, want RTM_SETLINK", typ)
	}
	// nlmsghdr (16), ifinfomsg (16), then IFLA_AF_SPEC.
	if idx := int32(native.Uint32(b[20:])); idx != 9 || b[16] != unix.AF_BRIDGE {
		t.Fatalf("family %d index %d, want AF_BRIDGE 9", b[16], idx)
	}
	spec := b[32:]
	if native.Uint16(spec[2:]) != unix.IFLA_AF_SPEC {
		t.Fatalf("attribute %d, want IFLA_AF_SPEC", native.Uint16(spec[2:]))
	}
	var flags []uint16
	var infos []nl.BridgeVlanInfo
	for a := spec[4:native.Uint16(spec)]; len(a) >= 4; {
		n, typ := int(native.Uint16(a)), native.Uint16(a[2:])
		switch typ {
		case nl.IFLA_BRIDGE_FLAGS:
			flags = append(flags, native.Uint16(a[4:]))
		case nl.IFLA_BRIDGE_VLAN_INFO:
			infos = append(infos, *nl.DeserializeBridgeVlanInfo(a[4:n]))
		}
		a = a[(n+3)&^3:]
	}
	if len(flags) != 1 || flags[0] != nl.BRIDGE_FLAGS_MASTER {
		t.Fatalf("flags %v, want one BRIDGE_FLAGS_MASTER", flags)
	}
	if len(infos) != 3 || infos[0].Vid != 10 || infos[1].Vid != 11 || infos[2].Vid != 12 ||
		infos[0].Flags != 0 || infos[1].Flags != nl.BRIDGE_VLAN_INFO_PVID|nl.BRIDGE_VLAN_INFO_UNTAGGED || infos[2].Flags != 0 {
		t.Fatalf("vlan infos %+v, want 10, 11 pvid untagged, 12", infos)
	}
}

// libraryVlanRequest is how vishvananda/netlink's BridgeVlanAdd encodes
// one VLAN (RTM_SETLINK AF_BRIDGE, IFLA_AF_SPEC with IFLA_BRIDGE_FLAGS self
// or master and one IFLA_BRIDGE_VLAN_INFO): the reference a group of one
// must match.
func libraryVlanRequest(idx int, v BridgeVlanInfo) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_BRIDGE)
	msg.Index = int32(idx)
	req.AddData(msg)
	br := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
	flags := uint16(nl.BRIDGE_FLAGS_MASTER)
	if v.Self {
		flags = nl.BRIDGE_FLAGS_SELF
	}
	br.AddRtAttr(nl.IFLA_BRIDGE_FLAGS, nl.Uint16Attr(flags))
	info := &nl.BridgeVlanInfo{Vid: v.VID}
	if v.PVID {
		info.Flags |= nl.BRIDGE_VLAN_INFO_PVID
	}
	if v.Untagged {
		info.Flags |= nl.BRIDGE_VLAN_INFO_UNTAGGED
	}
	br.AddRtAttr(nl.IFLA_BRIDGE_VLAN_INFO, info.Serialize())
	req.AddData(br)
	return req
}
