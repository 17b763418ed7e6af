package schema

import (
	"errors"
	"strings"
	"testing"
)

// errCase is one input every parser must refuse, with fragments the
// error text must contain (so the reason stays actionable).
type errCase struct {
	table, key string
	f          Fields
	want       []string
}

var errCases = []errCase{
	// PORT key: kernel-legal interface names.
	{TablePort, "", nil, []string{"PORT|: key", "interface name is empty"}},
	{TablePort, "Ethernet0123456789", nil, []string{"18 bytes long", "at most 15"}},
	{TablePort, ".", nil, []string{`cannot be "."`}},
	{TablePort, "..", nil, []string{`cannot be ".."`}},
	{TablePort, "eth/0", nil, []string{`cannot contain '/'`}},
	{TablePort, "eth:0", nil, []string{`cannot contain ':'`}},
	{TablePort, "eth 0", nil, []string{`cannot contain ' '`}},
	{TablePort, "eth\t0", nil, []string{`cannot contain '\t'`}},
	{TablePort, "eth\u00a00", nil, []string{"byte 0xa0"}},
	{TablePort, "eth\x000", nil, []string{`cannot contain '\x00'`}},
	{TablePort, "eth|0", nil, []string{"cannot contain '|'", "separates"}},
	{TablePort, "Vlan100", nil, []string{"Vlan100 is a VLAN device"}},
	// PORT fields.
	{TablePort, "Ethernet0", Fields{"mtu": "banana"}, []string{`PORT|Ethernet0: field "mtu": "banana" is not valid: want an integer 68-9216`}},
	{TablePort, "Ethernet0", Fields{"mtu": "67"}, []string{`"67" is not valid`, "68-9216"}},
	{TablePort, "Ethernet0", Fields{"mtu": "9217"}, []string{`"9217" is not valid`}},
	{TablePort, "Ethernet0", Fields{"mtu": "-1500"}, []string{`"-1500" is not valid`}},
	{TablePort, "Ethernet0", Fields{"mtu": ""}, []string{`field "mtu": "" is not valid`}},
	{TablePort, "Ethernet0", Fields{"mtu": "99999999999999999999"}, []string{"68-9216"}},
	{TablePort, "Ethernet0", Fields{"admin_status": "UP"}, []string{`field "admin_status": "UP" is not valid: want up or down`}},
	{TablePort, "Ethernet0", Fields{"mac": "01:00:5e:00:00:01"}, []string{`field "mac"`, "multicast", "must be unicast"}},
	{TablePort, "Ethernet0", Fields{"mac": "ff:ff:ff:ff:ff:ff"}, []string{"multicast"}},
	{TablePort, "Ethernet0", Fields{"mac": "00:00:00:00:00:00"}, []string{"all-zero"}},
	{TablePort, "Ethernet0", Fields{"mac": "00:11:22:33:44"}, []string{`"00:11:22:33:44" is not valid`, "48-bit"}},
	{TablePort, "Ethernet0", Fields{"mac": "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"}, []string{"48-bit"}},
	{TablePort, "Ethernet0", Fields{"description": strings.Repeat("x", 256)}, []string{`field "description"`, "256 bytes long", "at most 255"}},
	{TablePort, "Ethernet0", Fields{"description": "a\x00b"}, []string{"NUL"}},
	// VLAN key and fields.
	{TableVlan, "Vlan0", nil, []string{"VLAN number 0 is out of range", "1-4094"}},
	{TableVlan, "Vlan4095", nil, []string{"4095 is out of range"}},
	{TableVlan, "Vlan0100", nil, []string{"VLAN|Vlan0100: key:", "use Vlan100"}},
	{TableVlan, "vlan100", nil, []string{"use Vlan100"}},
	{TableVlan, "VLAN100", nil, []string{"use Vlan100"}},
	{TableVlan, "Vlan", nil, []string{"not a VLAN name", "VlanN"}},
	{TableVlan, "Vlan1a", nil, []string{"not a VLAN name"}},
	{TableVlan, "Ethernet0", nil, []string{"not a VLAN name"}},
	{TableVlan, "Vlan+100", nil, []string{"not a VLAN name"}},
	{TableVlan, "Vlan100", Fields{"vlanid": "200"}, []string{`field "vlanid"`, "does not match the key Vlan100", "want 100"}},
	{TableVlan, "Vlan100", Fields{"vlanid": "5000"}, []string{`"5000" is not valid`, "want 100"}},
	{TableVlan, "Vlan100", Fields{"vlanid": "x"}, []string{`"x" is not valid`}},
	{TableVlan, "Vlan100", Fields{"mtu": "10000"}, []string{`field "mtu"`, "68-9216"}},
	{TableVlan, "Vlan100", Fields{"mac": "33:33:00:00:00:01"}, []string{"multicast"}},
	{TableVlan, "Vlan100", Fields{"admin_status": "on"}, []string{"up or down"}},
	// VLAN_MEMBER.
	{TableVlanMember, "Vlan100", Fields{"tagging_mode": "tagged"}, []string{"want VlanN|port"}},
	{TableVlanMember, "Vlan100|Ethernet0|x", Fields{"tagging_mode": "tagged"}, []string{"want VlanN|port"}},
	{TableVlanMember, "Vlan0100|Ethernet0", Fields{"tagging_mode": "tagged"}, []string{"Vlan0100: VLAN name is not in canonical form: use Vlan100"}},
	{TableVlanMember, "Vlan5000|Ethernet0", Fields{"tagging_mode": "tagged"}, []string{"out of range"}},
	{TableVlanMember, "Vlan100|", Fields{"tagging_mode": "tagged"}, []string{"interface name is empty"}},
	{TableVlanMember, "Vlan100|Vlan200", Fields{"tagging_mode": "tagged"}, []string{"is a VLAN device, not a port"}},
	{TableVlanMember, "Vlan100|Ethernet0", nil, []string{`field "tagging_mode": required field is missing: want tagged, untagged or priority_tagged`}},
	{TableVlanMember, "Vlan100|Ethernet0", Fields{"tagging_mode": "TAGGED"}, []string{`"TAGGED" is not valid`}},
	// INTERFACE / VLAN_INTERFACE.
	{TableInterface, "Ethernet0|2001:DB8::1/64", nil, []string{"not in canonical form", "use 2001:db8::1/64"}},
	{TableInterface, "Ethernet0|2001:db8:0::1/64", nil, []string{"use 2001:db8::1/64"}},
	{TableInterface, "Ethernet0|10.0.0.1", nil, []string{`"10.0.0.1" is not an address with prefix length`, "10.0.0.1/24"}},
	{TableInterface, "Ethernet0|10.0.0.1/33", nil, []string{"not an address with prefix length"}},
	{TableInterface, "Ethernet0|010.0.0.1/24", nil, []string{"not an address with prefix length"}},
	{TableInterface, "Ethernet0|::ffff:10.0.0.1/120", nil, []string{"IPv4-mapped", "use 10.0.0.1/24"}},
	{TableInterface, "Ethernet0|::ffff:10.0.0.1/64", nil, []string{"IPv4-mapped", "use an IPv4 address"}},
	{TableInterface, "Ethernet0|0.0.0.0/8", nil, []string{"unspecified"}},
	{TableInterface, "Ethernet0|::/64", nil, []string{"unspecified"}},
	{TableInterface, "Ethernet0|224.0.0.1/24", nil, []string{"multicast"}},
	{TableInterface, "Ethernet0|ff02::1/64", nil, []string{"multicast"}},
	{TableInterface, "Ethernet0|fe80::1%eth0/64", nil, []string{"not an address with prefix length"}},
	{TableInterface, "Vlan100|10.0.0.1/24", nil, []string{"Vlan100 is a VLAN", "VLAN_INTERFACE|Vlan100|10.0.0.1/24"}},
	{TableInterface, "Ethernet0|", nil, []string{`"" is not an address with prefix length`}},
	{TableInterface, "Ethernet0|10.0.0.1/24|x", nil, []string{"want ifname or ifname|addr/len"}},
	{TableInterface, "|10.0.0.1/24", nil, []string{"interface name is empty"}},
	{TableInterface, "Ethernet0", Fields{"vrf_name": "red"}, []string{`field "vrf_name": VRF name "red" does not start with Vrf`}},
	{TableInterface, "Ethernet0", Fields{"vrf_name": "Vrf"}, []string{`does not start with Vrf and a name`}},
	{TableInterface, "Ethernet0", Fields{"vrf_name": "Vrf_a_very_long_name"}, []string{"20 bytes long"}},
	{TableInterface, "Ethernet0", Fields{"vrf_name": "Vrf.x"}, []string{`cannot contain '.'`}},
	{TableInterface, "Ethernet0|10.0.0.1/24", Fields{"vrf_name": "Vrf1"}, []string{"the VRF binding belongs on the bare key INTERFACE|Ethernet0"}},
	{TableInterface, "Loopback0|10.1.0.1/32", nil, []string{"Loopback0 is a loopback", "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32"}},
	// LOOPBACK_INTERFACE.
	{TableLoopback, "Ethernet0", nil, []string{`LOOPBACK_INTERFACE|Ethernet0: key: "Ethernet0": not a loopback name: want LoopbackN`}},
	{TableLoopback, "Loopback01", nil, []string{"not LoopbackN"}},
	{TableLoopback, "Loopback", nil, []string{"not LoopbackN"}},
	{TableLoopback, "Loopback12345678", nil, []string{"16 bytes long"}},
	{TableLoopback, "Loopback0|10.1.0.1", nil, []string{"not an address with prefix length"}},
	{TableLoopback, "Loopback0", Fields{"admin_status": "enable"}, []string{`field "admin_status": "enable" is not valid: want up or down`}},
	{TableLoopback, "Loopback0", Fields{"vrf_name": "blue"}, []string{`VRF name "blue" does not start with Vrf`}},
	{TableLoopback, "Loopback0|fc00::1/128", Fields{"family": "IPv4"}, []string{"want IPv6"}},
	// PORTCHANNEL, PORTCHANNEL_MEMBER, PORTCHANNEL_INTERFACE.
	{TablePortChannel, "Po1", nil, []string{`PORTCHANNEL|Po1: key: "Po1" is not a PortChannel name: want PortChannelN`}},
	{TablePortChannel, "PortChannel12345", nil, []string{"is not PortChannel followed by 1 to 4 digits"}},
	{TablePortChannel, "PortChannel", nil, []string{"1 to 4 digits"}},
	{TablePortChannel, "PortChannel01", Fields{"min_links": "0"}, []string{`field "min_links": "0" is not valid: want an integer 1-1024`}},
	{TablePortChannel, "PortChannel01", Fields{"min_links": "1025"}, []string{"1-1024"}},
	{TablePortChannel, "PortChannel01", Fields{"fast_rate": "yes"}, []string{`field "fast_rate": "yes" is not valid: want true or false`}},
	{TablePortChannel, "PortChannel01", Fields{"mtu": "9217"}, []string{"68-9216"}},
	{TablePortChannel, "PortChannel01", Fields{"admin_status": "UP"}, []string{"up or down"}},
	{TablePortChannel, "PortChannel01", Fields{"lacp_key": "0"}, []string{"auto or an integer 1-65535"}},
	{TablePortChannel, "PortChannel01", Fields{"fallback": "true"}, []string{"LACP fallback is not supported"}},
	{TablePortChannel, "PortChannel01", Fields{"static": "true"}, []string{"static PortChannels (no LACP) are not supported"}},
	{TablePortChannelMember, "PortChannel01", nil, []string{"want PortChannelN|port"}},
	{TablePortChannelMember, "Po1|Ethernet0", nil, []string{"not a PortChannel name"}},
	{TablePortChannelMember, "PortChannel01|Vlan100", nil, []string{"is a VLAN device, not a port"}},
	{TablePortChannelMember, "PortChannel01|PortChannel02", nil, []string{"PortChannel02 is not a port"}},
	{TablePortChannelMember, "PortChannel01|", nil, []string{"interface name is empty"}},
	{TablePortChannelInterface, "Ethernet0|10.0.0.1/24", nil, []string{"not a PortChannel name"}},
	{TablePortChannelInterface, "PortChannel01|10.0.0.1", nil, []string{"not an address with prefix length"}},
	{TableInterface, "PortChannel01|10.0.0.1/31", nil, []string{"PortChannel01 is a PortChannel", "PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.1/31"}},
	// VXLAN_TUNNEL, VXLAN_TUNNEL_MAP.
	{TableVxlanTunnel, "vtep1", nil, []string{`VXLAN_TUNNEL|vtep1: field "src_ip": required field is missing`}},
	{TableVxlanTunnel, "vtep_toolong", Fields{"src_ip": "10.1.0.1"}, []string{"tunnel name is 12 bytes long: at most 10"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "10.1.0"}, []string{`field "src_ip": "10.1.0" is not valid: want an IPv4 or IPv6 address`}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "224.0.0.1"}, []string{"cannot be a VTEP address"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "2001:DB8::1"}, []string{"use 2001:db8::1"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "10.1.0.1", "dst_ip": "2001:db8::2"}, []string{"not of src_ip's address family"}},
	{TableVxlanTunnel, "vtep1", Fields{"src_ip": "10.1.0.1", "ttl_mode": "copy"}, []string{"uniform or pipe"}},
	{TableVxlanTunnelMap, "vtep1", Fields{"vlan": "Vlan100", "vni": "1000"}, []string{"want tunnel|mapname"}},
	{TableVxlanTunnelMap, "vtep1|map", Fields{"vni": "1000"}, []string{`field "vlan": required field is missing`}},
	{TableVxlanTunnelMap, "vtep1|map", Fields{"vlan": "Vlan5000", "vni": "1000"}, []string{`field "vlan"`, "out of range"}},
	{TableVxlanTunnelMap, "vtep1|map", Fields{"vlan": "Vlan100"}, []string{`field "vni": required field is missing`}},
	{TableVxlanTunnelMap, "vtep1|map", Fields{"vlan": "Vlan100", "vni": "0"}, []string{"want an integer 1-16777215"}},
	{TableVxlanTunnelMap, "vtep1|map", Fields{"vlan": "Vlan100", "vni": "16777216"}, []string{"want an integer 1-16777215"}},
	// VXLAN_REMOTE_VNI.
	{TableVxlanRemoteVNI, "Vlan100", Fields{"vni": "1000"}, []string{"want VlanN|remote VTEP address"}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0.2|x", Fields{"vni": "1000"}, []string{"want VlanN|remote VTEP address"}},
	{TableVxlanRemoteVNI, "Vlan0|10.0.0.2", Fields{"vni": "1000"}, []string{"Vlan0", "VlanN with N 1-4094"}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0", Fields{"vni": "1000"}, []string{`"10.0.0" is not an IP address`}},
	{TableVxlanRemoteVNI, "Vlan100|fe80::1%eth0", Fields{"vni": "1000"}, []string{"is not an IP address"}},
	{TableVxlanRemoteVNI, "Vlan100|239.1.1.1", Fields{"vni": "1000"}, []string{"239.1.1.1 cannot be a VTEP address"}},
	{TableVxlanRemoteVNI, "Vlan100|0.0.0.0", Fields{"vni": "1000"}, []string{"cannot be a VTEP address"}},
	{TableVxlanRemoteVNI, "Vlan100|2001:DB8::2", Fields{"vni": "1000"}, []string{"use Vlan100|2001:db8::2"}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0.2", nil, []string{`VXLAN_REMOTE_VNI|Vlan100|10.0.0.2: field "vni": required field is missing`}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0.2", Fields{"vni": "0"}, []string{"want an integer 1-16777215"}},
	{TableVxlanRemoteVNI, "Vlan100|10.0.0.2", Fields{"vni": "16777216"}, []string{"want an integer 1-16777215"}},
	// VRF.
	{TableVRF, "blue", nil, []string{`VRF|blue: key: VRF name "blue" does not start with Vrf`, "e.g. Vrf_blue"}},
	{TableVRF, "vrf_blue", nil, []string{"does not start with Vrf"}},
	{TableVRF, "Vrf_0123456789ab", nil, []string{"16 bytes long"}},
	{TableVRF, "Vrf|x", nil, []string{`cannot contain '|'`}},
	{TableVRF, "Vrf_blue", Fields{"vni": "16777216"}, []string{`field "vni": "16777216" is not valid: want an integer 0-16777215`}},
	{TableVRF, "Vrf_blue", Fields{"vni": "-1"}, []string{"want an integer 0-16777215"}},
	{TableVRF, "Vrf_blue", Fields{"fallback": "true"}, []string{"fallback lookup", "not supported"}},
	{TableVRF, "Vrf_blue", Fields{"fallback": "yes"}, []string{"want false or absent"}},
	{TableInterface, "Ethernet0", Fields{"vnet_name": "Vnet1"}, []string{`field "vnet_name"`, "VNETs are not supported"}},
	{TableInterface, "Ethernet0|10.0.0.1/24", Fields{"NULL": "NULL", "family": "IPv6"}, []string{`field "family": family IPv6 does not match the address 10.0.0.1/24: want IPv4`}},
	{TableInterface, "Ethernet0|2001:db8::1/64", Fields{"family": "IPv4", "scope": "global"}, []string{"want IPv6"}},
	{TableInterface, "Ethernet0|10.0.0.1/24", Fields{"family": "ipv4"}, []string{`"ipv4" is not valid: want IPv4 or IPv6`}},
	{TableInterface, "Ethernet0|10.0.0.1/24", Fields{"scope": "link"}, []string{`field "scope": "link" is not valid: want global or local`}},
	{TableVlanInterface, "Ethernet0|10.0.0.1/24", nil, []string{"Ethernet0 is not a VLAN", "INTERFACE|Ethernet0|10.0.0.1/24"}},
	{TableVlanInterface, "Vlan0100|10.0.0.1/24", nil, []string{"use Vlan100"}},
	{TableVlanInterface, "Vlan100", Fields{"vrf_name": "Vrf red"}, []string{`cannot contain ' '`}},
	// STATIC_ROUTE key.
	{TableStaticRoute, "10.0.0.1/8", Fields{"nexthop": "10.0.0.2"}, []string{"STATIC_ROUTE|10.0.0.1/8: key: prefix has host bits set: use 10.0.0.0/8"}},
	{TableStaticRoute, "default|10.0.0.1/8", Fields{"nexthop": "10.0.0.2"}, []string{"host bits set: use 10.0.0.0/8"}},
	{TableStaticRoute, "2001:DB8::/32", Fields{"ifname": "Ethernet0"}, []string{"not in canonical form: use 2001:db8::/32"}},
	{TableStaticRoute, "2001:db8::1/32", Fields{"ifname": "Ethernet0"}, []string{"host bits set: use 2001:db8::/32"}},
	{TableStaticRoute, "::ffff:10.0.0.0/104", Fields{"ifname": "Ethernet0"}, []string{"IPv4-mapped", "use 10.0.0.0/8"}},
	{TableStaticRoute, "mgmt|10.0.0.0/8", Fields{"nexthop": "10.0.0.2"}, []string{`STATIC_ROUTE|mgmt|10.0.0.0/8: key: VRF name "mgmt" does not start with Vrf`, "want prefix, default|prefix or VrfNAME|prefix"}},
	{TableStaticRoute, "|10.0.0.0/8", Fields{"nexthop": "10.0.0.2"}, []string{`VRF name "" does not start with Vrf`}},
	{TableStaticRoute, "Vrf_a_very_long_name|10.0.0.0/8", Fields{"nexthop": "10.0.0.2"}, []string{"20 bytes long"}},
	{TableStaticRoute, "default|10.0.0.0/8|x", nil, []string{"want prefix or default|prefix"}},
	{TableStaticRoute, "10.0.0.0", Fields{"nexthop": "10.0.0.2"}, []string{`"10.0.0.0" is not a prefix`}},
	// STATIC_ROUTE fields.
	{TableStaticRoute, "10.0.0.0/8", nil, []string{"the route has no next hop", "blackhole true"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "", "ifname": " "}, []string{"no next hop"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.2", "ifname": "Ethernet0"}, []string{"nexthop lists 2 entries but ifname 1"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,", "ifname": "Ethernet0,"}, []string{"next hop 2 is empty in both nexthop and ifname"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,,10.0.0.3"}, []string{"next hop 2 is empty"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "gw1"}, []string{`entry 1: "gw1" is not an IP address`}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "2001:db8::1"}, []string{"not of the prefix's address family"}},
	{TableStaticRoute, "2001:db8::/32", Fields{"nexthop": "10.0.0.1"}, []string{"not of the prefix's address family"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "224.0.0.1"}, []string{"multicast"}},
	{TableStaticRoute, "2001:db8::/32", Fields{"nexthop": "fe80::1%eth0"}, []string{"has a zone", "ifname"}},
	{TableStaticRoute, "2001:db8::/32", Fields{"nexthop": "fe80::1"}, []string{"link-local gateway fe80::1 needs an interface"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "::ffff:10.0.0.1"}, []string{"IPv4-mapped", "use 10.0.0.1"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "0.0.0.0"}, []string{"unspecified address and the entry has no ifname"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.1"}, []string{"next hop 2 repeats an earlier one (via 10.0.0.1)"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"ifname": "Ethernet0,Ethernet0"}, []string{"repeats an earlier one (dev Ethernet0)"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"ifname": "eth/0"}, []string{`field "ifname"`, "entry 1: interface name cannot contain '/'"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"ifname": "Ethernet0", "distance": "256"}, []string{`field "distance": "256" is not valid: want an integer 0-255`}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"ifname": "Ethernet0", "blackhole": "yes"}, []string{`"yes" is not valid: want true or false`}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1", "blackhole": "true"}, []string{`field "nexthop"`, "a blackhole route has no next hops"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"ifname": "Ethernet0", "blackhole": "true"}, []string{`field "ifname"`, "blackhole route has no next hops"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1", "nexthop-vrf": "mgmt"}, []string{`field "nexthop-vrf": entry 1: VRF name "mgmt" does not start with Vrf`}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.2", "nexthop-vrf": "default,Vrf.red"}, []string{`entry 2: VRF name cannot contain '.'`}},
	{TableStaticRoute, "Vrf_red|10.0.0.0/8", Fields{"nexthop": "10.0.0.1", "nexthop-vrf": "Vrf_blue,Vrf_red"}, []string{"nexthop-vrf lists 2 entries but the route has 1 next hops"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.2", "distance": "0,0,0"}, []string{`field "distance"`, "distance lists 3 entries but the route has 2 next hops"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.2", "blackhole": "false,maybe"}, []string{`field "blackhole"`, "want true or false"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "10.0.0.1,10.0.0.2", "distance": "0,x"}, []string{`field "distance"`, "0-255"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": ",10.0.0.2", "ifname": "null,", "blackhole": "true,false", "distance": "5,5"},
		[]string{"next hops 1 and 2 have the same distance but only one is a blackhole"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"nexthop": "", "ifname": "Ethernet0", "blackhole": "true"}, []string{`field "ifname"`, "blackhole route has no next hops"}},
	{TableStaticRoute, "10.0.0.0/8", Fields{"blackhole": "false", "distance": "0"}, []string{"the route has no next hop"}},
	// FDB.
	{TableFDB, "Vlan100|00:11:22:33:44:AA", Fields{"port": "Ethernet0"}, []string{"MAC is not in canonical form: use Vlan100|00:11:22:33:44:aa"}},
	{TableFDB, "Vlan100|00-11-22-33-44-55", Fields{"port": "Ethernet0"}, []string{"use Vlan100|00:11:22:33:44:55"}},
	{TableFDB, "Vlan100|0011.2233.4455", Fields{"port": "Ethernet0"}, []string{"use Vlan100|00:11:22:33:44:55"}},
	{TableFDB, "Vlan100|01:00:5e:00:00:01", Fields{"port": "Ethernet0"}, []string{"multicast"}},
	{TableFDB, "Vlan100|00:00:00:00:00:00", Fields{"port": "Ethernet0"}, []string{"all-zero"}},
	{TableFDB, "Vlan100|nomac", Fields{"port": "Ethernet0"}, []string{`"nomac" is not a MAC`}},
	{TableFDB, "Vlan100", Fields{"port": "Ethernet0"}, []string{"want VlanN|mac"}},
	{TableFDB, "Vlan0|00:11:22:33:44:55", Fields{"port": "Ethernet0"}, []string{"out of range"}},
	{TableFDB, "Vlan100|00:11:22:33:44:55", nil, []string{`field "port": required field is missing`}},
	{TableFDB, "Vlan100|00:11:22:33:44:55", Fields{"port": "Ethernet0", "type": "dynamic"}, []string{"only static FDB entries can be configured"}},
	{TableFDB, "Vlan100|00:11:22:33:44:55", Fields{"port": ""}, []string{"interface name is empty"}},
	{TableFDB, "Vlan100|00:11:22:33:44:55", Fields{"port": "Vlan100"}, []string{"is a VLAN device"}},
}

func TestParseErrors(t *testing.T) {
	for _, c := range errCases {
		t.Run(c.table+"|"+c.key, func(t *testing.T) {
			r, err := Parse(c.table, c.key, c.f)
			if err == nil {
				t.Fatalf("accepted %v: Key %q Fields %v", c.f, r.Key(), r.Fields())
			}
			if r != nil {
				t.Errorf("returned a record with the error: %#v", r)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError: %v", err, err)
			}
			if fe.Table != c.table || fe.Key != c.key {
				t.Errorf("FieldError names %s|%s, want %s|%s", fe.Table, fe.Key, c.table, c.key)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.table+"|"+c.key+": ") {
				t.Errorf("error %q does not start with the table and key", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestParseUnknownTable(t *testing.T) {
	_, err := Parse("NO_SUCH_TABLE", "x", nil)
	if !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("got %v, want ErrUnknownTable", err)
	}
	for _, w := range []string{`NO_SUCH_TABLE|x`, "known tables are", "PORT", "VLAN_MEMBER"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestParseInterfaceWrongTable(t *testing.T) {
	_, err := ParseInterface(TablePort, "Ethernet0", nil)
	if err == nil || !strings.Contains(err.Error(), "not an interface table") {
		t.Fatalf("got %v, want a refusal naming the interface tables", err)
	}
}

func TestFieldErrorText(t *testing.T) {
	cases := []struct {
		e    FieldError
		want string
	}{
		{FieldError{Table: "PORT", Key: "Ethernet0", Field: "mtu", Value: "banana", Allowed: "an integer 68-9216"},
			`PORT|Ethernet0: field "mtu": "banana" is not valid: want an integer 68-9216`},
		{FieldError{Table: "STATIC_ROUTE", Key: "10.0.0.1/8", Value: "10.0.0.1/8", Reason: "prefix has host bits set: use 10.0.0.0/8"},
			`STATIC_ROUTE|10.0.0.1/8: key: prefix has host bits set: use 10.0.0.0/8`},
		{FieldError{Table: "VLAN", Key: "Foo", Value: "Foo", Allowed: "VlanN"},
			`VLAN|Foo: key: "Foo" is not valid: want VlanN`},
		{FieldError{Table: "FDB", Key: "Vlan1|00:11:22:33:44:55", Field: "port", Reason: "required field is missing"},
			`FDB|Vlan1|00:11:22:33:44:55: field "port": required field is missing`},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}
