package schema

import (
	"net/netip"
	"strconv"
	"strings"
)

// loopbackPrefix starts every loopback name: "Loopback0".
const loopbackPrefix = "Loopback"

// loopbackAllowed describes a valid LOOPBACK_INTERFACE name.
const loopbackAllowed = "LoopbackN with N a decimal number without leading zeros, at most 15 bytes in all, e.g. Loopback0"

// loopbackProblem says why name is not a canonical loopback name
// ("Loopback0"), or "".
func loopbackProblem(name string) string {
	if !strings.HasPrefix(name, loopbackPrefix) {
		return "not a loopback name"
	}
	digits := name[len(loopbackPrefix):]
	if _, ok := parseDigits(digits); !ok || (len(digits) > 1 && digits[0] == '0') || len(name) > MaxIfnameLen {
		return "loopback name is not LoopbackN"
	}
	return ""
}

// IsLoopbackName reports whether name is a loopback name ("Loopback0").
func IsLoopbackName(name string) bool { return loopbackProblem(name) == "" }

// ParseInterface parses an INTERFACE, VLAN_INTERFACE or
// LOOPBACK_INTERFACE entry: key "ifname|addr/len" (an address: host bits
// kept; IPv4 or IPv6 in canonical text form) or a bare "ifname".
// VLAN_INTERFACE names must be VlanN, LOOPBACK_INTERFACE names LoopbackN,
// PORTCHANNEL_INTERFACE names PortChannelN; INTERFACE names must be none
// of these (those belong in their own tables).
//
// SONiC's fields are accepted: on a bare key, vrf_name binds the interface
// to that VRF ("" or "default": the default VRF; anything else must be a
// VRF name, Vrf...), on LOOPBACK_INTERFACE admin_status (up, the default,
// or down); vnet_name must be empty; on an address, family (must match
// it) and scope (global or local) are checked and vrf_name may only be
// empty or default (the binding is the bare key's); the rest (nat_zone,
// mpls, …) are not acted on. Unknown fields are ignored (UnknownFields
// names them).
func ParseInterface(table, key string, f Fields) (Interface, error) {
	if table != TableInterface && table != TableVlanInterface && table != TableLoopback && table != TablePortChannelInterface {
		return Interface{}, keyError(table, key, "not an interface table",
			TableInterface+", "+TableVlanInterface+", "+TablePortChannelInterface+" or "+TableLoopback)
	}
	// Cut, not SplitKey: no slice per key.
	name, addr, hasAddr := strings.Cut(key, ConfigSep)
	if strings.Contains(addr, ConfigSep) {
		return Interface{}, keyError(table, key, "", "ifname or ifname|addr/len, e.g. Ethernet0|10.0.0.1/24")
	}
	switch table {
	case TableVlanInterface:
		if _, problem := vlanName(name); problem != "" {
			if ifnameProblem(name) == "" && !strings.HasPrefix(strings.ToLower(name), "vlan") {
				return Interface{}, keyError(table, key,
					name+" is not a VLAN: configure its addresses in "+TableInterface+ConfigSep+key, "")
			}
			return Interface{}, vlanKeyError(table, key, name, problem)
		}
	case TablePortChannelInterface:
		if p := portChannelProblem(name); p != "" {
			return Interface{}, keyError(table, key, p, portChannelAllowed)
		}
	case TableLoopback:
		if p := ifnameProblem(name); p != "" {
			return Interface{}, keyError(table, key, p, loopbackAllowed)
		}
		if p := loopbackProblem(name); p != "" {
			return Interface{}, keyError(table, key, strconv.Quote(name)+": "+p, loopbackAllowed)
		}
	default:
		if p := ifnameProblem(name); p != "" {
			return Interface{}, keyError(table, key, p, ifnameAllowed)
		}
		if isVlanName(name) {
			return Interface{}, keyError(table, key,
				name+" is a VLAN: configure its addresses in "+TableVlanInterface+ConfigSep+key, "")
		}
		if IsLoopbackName(name) {
			return Interface{}, keyError(table, key,
				name+" is a loopback: configure it in "+TableLoopback+ConfigSep+key, "")
		}
		if IsPortChannelName(name) {
			return Interface{}, keyError(table, key,
				name+" is a PortChannel: configure its addresses in "+TablePortChannelInterface+ConfigSep+key, "")
		}
	}
	in := Interface{TableName: table, Name: name}
	if hasAddr {
		p, problem, allowed := parseIfAddr(addr)
		if problem != "" || allowed != "" {
			if problem == "" {
				problem = strconv.Quote(addr) + " is not an address with prefix length"
			}
			return Interface{}, keyError(table, key, problem, allowed)
		}
		in.Addr = p
	}
	if err := interfaceFields(table, key, &in, f); err != nil {
		return Interface{}, err
	}
	return in, nil
}

// interfaceFields checks the fields of an interface entry that change
// what the address means, and reads the bare key's VRF binding and a
// loopback's admin_status into in.
func interfaceFields(table, key string, in *Interface, f Fields) error {
	if v, ok := f[FieldVRFName]; ok && v != "" && v != DefaultVRF {
		if !in.IsBare() {
			return fieldError(table, key, FieldVRFName, v,
				"the VRF binding belongs on the bare key "+table+ConfigSep+in.Name, "empty or default on an address key")
		}
		if p := vrfNameProblem(v); p != "" {
			return fieldError(table, key, FieldVRFName, v, p, "empty, default or "+vrfAllowed)
		}
		in.VRF = v
	}
	if v, ok := f[FieldVnetName]; ok && v != "" {
		return fieldError(table, key, FieldVnetName, v, "VNETs are not supported", "no vnet_name")
	}
	if table == TableLoopback && in.IsBare() {
		up, err := optAdmin(table, key, f)
		if err != nil {
			return err
		}
		in.AdminUp = up
	}
	if v, ok := f[FieldFamily]; ok {
		want := "IPv4"
		if in.Addr.Addr().Is6() {
			want = "IPv6"
		}
		switch {
		case v != "IPv4" && v != "IPv6":
			return valueError(table, key, FieldFamily, v, "IPv4 or IPv6")
		case in.IsBare():
			// SONiC defines family for address keys only; on a bare
			// key it says nothing.
		case v != want:
			return fieldError(table, key, FieldFamily, v, "family "+v+" does not match the address "+in.Addr.String(), want)
		}
	}
	if v, ok := f[FieldScope]; ok && v != "global" && v != "local" {
		return valueError(table, key, FieldScope, v, "global or local")
	}
	return nil
}

// Table returns INTERFACE, VLAN_INTERFACE or LOOPBACK_INTERFACE.
func (in Interface) Table() string { return in.TableName }

// Key returns "ifname|addr/len" or the bare "ifname".
func (in Interface) Key() string {
	if !in.Addr.IsValid() {
		return in.Name
	}
	return in.Name + ConfigSep + in.Addr.String()
}

// Fields returns vrf_name when the interface is bound to a VRF and a
// loopback's admin_status when set; else the NULL placeholder.
func (in Interface) Fields() Fields {
	f := Fields{}
	if in.VRF != "" {
		f[FieldVRFName] = in.VRF
	}
	if in.AdminUp != nil {
		f[FieldAdminStatus] = adminString(*in.AdminUp)
	}
	return orNull(f)
}

// IsBare reports whether the entry is a bare "ifname" key (no address).
func (in Interface) IsBare() bool { return !in.Addr.IsValid() }

// Prefix returns the subnet the address lies in (host bits cleared).
func (in Interface) Prefix() netip.Prefix { return in.Addr.Masked() }
