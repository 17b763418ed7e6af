package schema

import (
	"net/netip"
	"strconv"
)

// TableVxlanRemoteVNI (db.go) is the static remote VTEP list of a VLAN's
// VXLAN network: "VlanN|remote" with field vni. SONiC has this table only
// in APPL_DB (VXLAN_REMOTE_VNI_TABLE:Vlan100:10.0.0.2, vni; fdbsyncd writes
// it from EVPN type-3 routes, vxlanorch's EvpnRemoteVni orch reads it) and
// sonic-vxlan.yang has no CONFIG_DB form; switchyard takes the same key
// parts and field in CONFIG_DB so remotes can be listed by hand.

// VxlanRemoteVNI is a VXLAN_REMOTE_VNI entry: flood the VLAN's broadcast,
// unknown-unicast and multicast traffic to Remote over VNI.
type VxlanRemoteVNI struct {
	Vlan   string // "Vlan100"
	VID    int
	Remote netip.Addr
	VNI    int // 1-16777215
}

// remoteKeyAllowed describes a valid VXLAN_REMOTE_VNI key.
const remoteKeyAllowed = "VlanN|remote VTEP address, e.g. Vlan100|10.0.0.2"

// ParseVxlanRemoteVNI parses a VXLAN_REMOTE_VNI entry: key "VlanN|addr"
// (the remote VTEP, a unicast address in canonical form), vni required
// (1-16777215; it must be the VNI a VXLAN_TUNNEL_MAP gives the VLAN).
func ParseVxlanRemoteVNI(key string, f Fields) (VxlanRemoteVNI, error) {
	const t = TableVxlanRemoteVNI
	parts := SplitKey(key)
	if len(parts) != 2 {
		return VxlanRemoteVNI{}, keyError(t, key, "", remoteKeyAllowed)
	}
	id, problem := vlanName(parts[0])
	if problem != "" {
		return VxlanRemoteVNI{}, vlanKeyError(t, key, parts[0], problem)
	}
	a, err := netip.ParseAddr(parts[1])
	if err != nil || a.Zone() != "" {
		return VxlanRemoteVNI{}, keyError(t, key, strconv.Quote(parts[1])+" is not an IP address", remoteKeyAllowed)
	}
	if a.Is4In6() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() {
		return VxlanRemoteVNI{}, keyError(t, key, a.String()+" cannot be a VTEP address", "a unicast address")
	}
	if c := a.String(); c != parts[1] {
		return VxlanRemoteVNI{}, keyError(t, key, "address is not in canonical form: use "+parts[0]+ConfigSep+c, "")
	}
	s, ok := f[FieldVNI]
	if !ok {
		return VxlanRemoteVNI{}, fieldError(t, key, FieldVNI, "", "required field is missing", "the VLAN's VNI, an integer 1-16777215")
	}
	n, ok := parseDigits(s)
	if !ok || n < 1 || n > MaxVNI {
		return VxlanRemoteVNI{}, valueError(t, key, FieldVNI, s, "an integer 1-16777215")
	}
	return VxlanRemoteVNI{Vlan: parts[0], VID: id, Remote: a, VNI: n}, nil
}

// Table returns "VXLAN_REMOTE_VNI".
func (r VxlanRemoteVNI) Table() string { return TableVxlanRemoteVNI }

// Key returns "VlanN|remote".
func (r VxlanRemoteVNI) Key() string { return r.Vlan + ConfigSep + r.Remote.String() }

// Fields renders vni.
func (r VxlanRemoteVNI) Fields() Fields { return Fields{FieldVNI: strconv.Itoa(r.VNI)} }
