package schema

import (
	"net/netip"
	"strconv"
)

// VXLAN field names (sonic-vxlan.yang).
const (
	FieldSrcIP   = "src_ip"   // VXLAN_TUNNEL: the local VTEP address
	FieldDstIP   = "dst_ip"   // VXLAN_TUNNEL: the remote VTEP (point-to-point)
	FieldTTLMode = "ttl_mode" // VXLAN_TUNNEL: uniform or pipe (accepted)
	FieldVlan    = "vlan"     // VXLAN_TUNNEL_MAP: the VLAN mapped
)

// MaxTunnelNameLen is the longest VXLAN tunnel name: its vxlan devices
// are named "TUNNEL-VID" (vxlanmgrd's form), at most 15 bytes.
const MaxTunnelNameLen = MaxIfnameLen - 5

// VxlanTunnel is a VXLAN_TUNNEL entry: a VTEP's source address and,
// for a point-to-point tunnel, the remote VTEP.
type VxlanTunnel struct {
	Name  string
	SrcIP netip.Addr
	DstIP netip.Addr // invalid when absent
}

// VxlanTunnelMap is a VXLAN_TUNNEL_MAP entry "tunnel|mapname": VLAN to VNI.
type VxlanTunnelMap struct {
	Tunnel  string
	MapName string
	Vlan    string // "Vlan100"
	VID     int
	VNI     int // 1-16777215
}

// DevName is the vxlan device of the map: "TUNNEL-VID" (vxlanmgrd's name).
func (m VxlanTunnelMap) DevName() string { return m.Tunnel + "-" + strconv.Itoa(m.VID) }

// tunnelNameProblem says why name cannot be a VXLAN tunnel name, or "".
func tunnelNameProblem(name string) string {
	if p := ifnameProblem(name); p != "" {
		return p
	}
	if len(name) > MaxTunnelNameLen {
		return "tunnel name is " + strconv.Itoa(len(name)) + " bytes long: at most " + strconv.Itoa(MaxTunnelNameLen) +
			" (its vxlan devices are named TUNNEL-VID, at most 15 bytes)"
	}
	return ""
}

// vtepAddr parses a VTEP address field: a unicast IPv4 or IPv6 address.
func vtepAddr(table, key, field, v string) (netip.Addr, error) {
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, valueError(table, key, field, v, "an IPv4 or IPv6 address")
	}
	if a.Is4In6() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() {
		return netip.Addr{}, fieldError(table, key, field, v, a.String()+" cannot be a VTEP address", "a unicast address")
	}
	if c := a.String(); c != v {
		return netip.Addr{}, fieldError(table, key, field, v, "address is not in canonical form: use "+c, "")
	}
	return a, nil
}

// ParseVxlanTunnel parses a VXLAN_TUNNEL entry: key the tunnel name (at
// most 10 bytes), src_ip required, dst_ip optional and of src_ip's family,
// ttl_mode uniform or pipe (accepted, not acted on).
func ParseVxlanTunnel(key string, f Fields) (VxlanTunnel, error) {
	const t = TableVxlanTunnel
	if p := tunnelNameProblem(key); p != "" {
		return VxlanTunnel{}, keyError(t, key, p, "an interface-safe name of at most 10 bytes, e.g. vtep1")
	}
	v, ok := f[FieldSrcIP]
	if !ok {
		return VxlanTunnel{}, fieldError(t, key, FieldSrcIP, "", "required field is missing", "the local VTEP address")
	}
	tun := VxlanTunnel{Name: key}
	var err error
	if tun.SrcIP, err = vtepAddr(t, key, FieldSrcIP, v); err != nil {
		return VxlanTunnel{}, err
	}
	if v, ok := f[FieldDstIP]; ok && v != "" {
		if tun.DstIP, err = vtepAddr(t, key, FieldDstIP, v); err != nil {
			return VxlanTunnel{}, err
		}
		if tun.DstIP.Is4() != tun.SrcIP.Is4() {
			return VxlanTunnel{}, fieldError(t, key, FieldDstIP, v, "dst_ip is not of src_ip's address family", "")
		}
	}
	if v, ok := f[FieldTTLMode]; ok && v != "uniform" && v != "pipe" {
		return VxlanTunnel{}, valueError(t, key, FieldTTLMode, v, "uniform or pipe")
	}
	return tun, nil
}

// Table returns "VXLAN_TUNNEL".
func (v VxlanTunnel) Table() string { return TableVxlanTunnel }

// Key returns the tunnel name.
func (v VxlanTunnel) Key() string { return v.Name }

// Fields renders src_ip and dst_ip.
func (v VxlanTunnel) Fields() Fields {
	f := Fields{FieldSrcIP: v.SrcIP.String()}
	if v.DstIP.IsValid() {
		f[FieldDstIP] = v.DstIP.String()
	}
	return f
}

// ParseVxlanTunnelMap parses a VXLAN_TUNNEL_MAP entry "tunnel|mapname"
// (SONiC's CLI names maps map_VNI_VlanN): vlan (VlanN) and vni
// (1-16777215) required.
func ParseVxlanTunnelMap(key string, f Fields) (VxlanTunnelMap, error) {
	const t = TableVxlanTunnelMap
	parts := SplitKey(key)
	if len(parts) != 2 || parts[1] == "" {
		return VxlanTunnelMap{}, keyError(t, key, "", "tunnel|mapname, e.g. vtep1|map_1000_Vlan100")
	}
	if p := tunnelNameProblem(parts[0]); p != "" {
		return VxlanTunnelMap{}, keyError(t, key, p, "an interface-safe name of at most 10 bytes, e.g. vtep1")
	}
	m := VxlanTunnelMap{Tunnel: parts[0], MapName: parts[1]}
	v, ok := f[FieldVlan]
	if !ok {
		return VxlanTunnelMap{}, fieldError(t, key, FieldVlan, "", "required field is missing", vlanAllowed)
	}
	id, problem := vlanName(v)
	if problem != "" {
		return VxlanTunnelMap{}, fieldError(t, key, FieldVlan, v, problem, vlanAllowed)
	}
	m.Vlan, m.VID = v, id
	s, ok := f[FieldVNI]
	if !ok {
		return VxlanTunnelMap{}, fieldError(t, key, FieldVNI, "", "required field is missing", "an integer 1-16777215")
	}
	n, ok := parseDigits(s)
	if !ok || n < 1 || n > MaxVNI {
		return VxlanTunnelMap{}, valueError(t, key, FieldVNI, s, "an integer 1-16777215")
	}
	m.VNI = n
	return m, nil
}

// Table returns "VXLAN_TUNNEL_MAP".
func (m VxlanTunnelMap) Table() string { return TableVxlanTunnelMap }

// Key returns "tunnel|mapname".
func (m VxlanTunnelMap) Key() string { return m.Tunnel + ConfigSep + m.MapName }

// Fields renders vlan and vni.
func (m VxlanTunnelMap) Fields() Fields {
	return Fields{FieldVlan: m.Vlan, FieldVNI: strconv.Itoa(m.VNI)}
}
