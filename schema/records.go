package schema

import (
	"net"
	"net/netip"
)

// Record is one parsed, validated and canonical CONFIG_DB entry.
type Record interface {
	Table() string  // CONFIG_DB table name, e.g. "VLAN"
	Key() string    // canonical key inside the table, e.g. "Vlan100"
	Fields() Fields // canonical fields; NullField placeholder when empty
}

// FieldError is a user-facing validation error: which table, key and field,
// which value, and what is allowed. Field is empty for errors in the key.
// Every error returned by the parsers of this package is a *FieldError.
type FieldError struct {
	Table   string
	Key     string
	Field   string
	Value   string
	Allowed string // e.g. "an integer 68-9216", "tagged, untagged or priority_tagged"
	// Reason says what is wrong when "Value is not valid" alone would not,
	// e.g. "prefix has host bits set: use 10.0.0.0/8". Optional.
	Reason string
}

// Port is a PORT entry: an existing netdev managed by switchyard.
// nil / zero optional fields are not managed.
type Port struct {
	Name        string
	AdminUp     *bool
	MTU         *int
	MAC         net.HardwareAddr
	Description *string
}

// Vlan is a VLAN entry "VlanN".
type Vlan struct {
	Name    string // "Vlan100"
	ID      int    // 1-4094, equals the key's number
	AdminUp *bool
	MTU     *int
	MAC     net.HardwareAddr
	// Description becomes the VlanN interface alias, as PORT's does.
	Description *string
}

// TaggingMode is VLAN_MEMBER's tagging_mode.
type TaggingMode string

// Tagging modes (SONiC names).
const (
	Tagged         TaggingMode = "tagged"
	Untagged       TaggingMode = "untagged"
	PriorityTagged TaggingMode = "priority_tagged"
)

// VlanMember is a VLAN_MEMBER entry "VlanN|port".
type VlanMember struct {
	Vlan    string // "Vlan100"
	VID     int    // 100
	Port    string
	Tagging TaggingMode
}

// Interface is an INTERFACE, VLAN_INTERFACE or LOOPBACK_INTERFACE entry:
// "ifname|addr/len" or bare "ifname" (Addr invalid).
type Interface struct {
	TableName string       // TableInterface, TableVlanInterface, TablePortChannelInterface or TableLoopback
	Name      string       // interface name
	Addr      netip.Prefix // address with its prefix length (host bits kept); invalid for a bare key
	// VRF is the VRF the interface is bound to (vrf_name, bare keys
	// only); "" = the default VRF.
	VRF string
	// AdminUp is a loopback's admin_status (LOOPBACK_INTERFACE bare key
	// only); nil = up, SONiC's default.
	AdminUp *bool
}

// VRF is a VRF entry "VrfNAME": a Linux vrf device with its own routing
// table.
type VRF struct {
	Name string // "Vrf_blue"
	// VNI is the L3 VNI mapped to the VRF (EVPN, 1-16777215); 0 = none
	// (SONiC's default). Validated, not acted on yet.
	VNI int
}

// NextHop is one next hop of a static route: a gateway, an interface, or both.
type NextHop struct {
	Gateway netip.Addr // invalid when absent
	Ifname  string     // empty when absent
	// VRF is the VRF the next hop is reached in when it is not the
	// route's own (nexthop-vrf: "default" or a VRF name); "" = the
	// route's VRF.
	VRF string
}

// StaticRoute is a STATIC_ROUTE entry "prefix" or "vrf|prefix".
type StaticRoute struct {
	VRF       string       // "default" (also when the key has none) or a VRF name
	Prefix    netip.Prefix // host bits clear (else a FieldError naming the canonical form)
	NextHops  []NextHop    // parallel nexthop/ifname lists, ECMP
	Distance  *int         // 0-255; the route metric
	Blackhole bool
}

// FDB is a static FDB entry "VlanN|mac".
type FDB struct {
	Vlan string
	VID  int
	MAC  net.HardwareAddr // lowercase canonical
	Port string
}
