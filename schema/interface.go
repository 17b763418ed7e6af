package schema

import (
	"net/netip"
	"strconv"
	"strings"
)

// ParseInterface parses an INTERFACE or VLAN_INTERFACE entry: key
// "ifname|addr/len" (an address: host bits kept; IPv4 or IPv6 in canonical
// text form) or a bare "ifname". VLAN_INTERFACE names must be VlanN;
// INTERFACE names must not be (those belong in VLAN_INTERFACE). SONiC's
// fields are accepted: on an address, family (must match it) and scope
// (global or local) are checked; vrf_name may only name the default VRF and
// vnet_name must be empty, since the address would otherwise land in a
// routing table SONiC would not use; the rest (nat_zone, mpls, …) are not
// acted on. Unknown fields are ignored (UnknownFields names them).
func ParseInterface(table, key string, f Fields) (Interface, error) {
	if table != TableInterface && table != TableVlanInterface {
		return Interface{}, keyError(table, key, "not an interface table", TableInterface+" or "+TableVlanInterface)
	}
	parts := SplitKey(key)
	if len(parts) > 2 {
		return Interface{}, keyError(table, key, "", "ifname or ifname|addr/len, e.g. Ethernet0|10.0.0.1/24")
	}
	name := parts[0]
	if table == TableVlanInterface {
		if _, problem := vlanName(name); problem != "" {
			if ifnameProblem(name) == "" && !strings.HasPrefix(strings.ToLower(name), "vlan") {
				return Interface{}, keyError(table, key,
					name+" is not a VLAN: configure its addresses in "+TableInterface+ConfigSep+key, "")
			}
			return Interface{}, vlanKeyError(table, key, name, problem)
		}
	} else {
		if p := ifnameProblem(name); p != "" {
			return Interface{}, keyError(table, key, p, ifnameAllowed)
		}
		if isVlanName(name) {
			return Interface{}, keyError(table, key,
				name+" is a VLAN: configure its addresses in "+TableVlanInterface+ConfigSep+key, "")
		}
	}
	in := Interface{TableName: table, Name: name}
	if len(parts) == 2 {
		p, problem, allowed := parseIfAddr(parts[1])
		if problem != "" || allowed != "" {
			if problem == "" {
				problem = strconv.Quote(parts[1]) + " is not an address with prefix length"
			}
			return Interface{}, keyError(table, key, problem, allowed)
		}
		in.Addr = p
	}
	if err := interfaceFields(table, key, in, f); err != nil {
		return Interface{}, err
	}
	return in, nil
}

// interfaceFields checks the fields of an interface entry that change
// what the address means.
func interfaceFields(table, key string, in Interface, f Fields) error {
	if v, ok := f[FieldVRFName]; ok && v != "" && v != DefaultVRF {
		return fieldError(table, key, FieldVRFName, v,
			"VRF "+strconv.Quote(Clip(v))+": only the default VRF is supported", "empty or default")
	}
	if v, ok := f[FieldVnetName]; ok && v != "" {
		return fieldError(table, key, FieldVnetName, v, "VNETs are not supported", "no vnet_name")
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

// Table returns INTERFACE or VLAN_INTERFACE.
func (in Interface) Table() string { return in.TableName }

// Key returns "ifname|addr/len" or the bare "ifname".
func (in Interface) Key() string {
	if !in.Addr.IsValid() {
		return in.Name
	}
	return in.Name + ConfigSep + in.Addr.String()
}

// Fields returns the NULL placeholder: interface entries have no fields.
func (in Interface) Fields() Fields { return orNull(nil) }

// IsBare reports whether the entry is a bare "ifname" key (no address).
func (in Interface) IsBare() bool { return !in.Addr.IsValid() }

// Prefix returns the subnet the address lies in (host bits cleared).
func (in Interface) Prefix() netip.Prefix { return in.Addr.Masked() }
