package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// ParsePort parses a PORT entry: key an interface name, fields
// admin_status (up|down), mtu (68-9216), mac (unicast), description. The
// other fields SONiC defines (lanes, speed, …) are accepted and not acted
// on; unknown ones are ignored (UnknownFields names them).
func ParsePort(key string, f Fields) (Port, error) {
	const t = TablePort
	if p := portProblem(key); p != "" {
		return Port{}, keyError(t, key, p, ifnameAllowed)
	}
	p := Port{Name: key}
	var err error
	if p.AdminUp, err = optAdmin(t, key, f); err != nil {
		return Port{}, err
	}
	if p.MTU, err = optInt(t, key, f, FieldMTU, MinMTU, MaxMTU); err != nil {
		return Port{}, err
	}
	if p.MAC, err = optMAC(t, key, f); err != nil {
		return Port{}, err
	}
	if p.Description, err = optDescription(t, key, f); err != nil {
		return Port{}, err
	}
	return p, nil
}

// optDescription parses an optional description (it becomes the
// interface alias).
func optDescription(table, key string, f Fields) (*string, error) {
	d, ok := f[FieldDescription]
	if !ok {
		return nil, nil
	}
	if problem := descriptionProblem(d); problem != "" {
		return nil, fieldError(table, key, FieldDescription, d, problem, "")
	}
	return &d, nil
}

// MaxDescriptionLen is the longest PORT description: it becomes the
// interface alias, which the kernel limits to IFALIASZ-1 bytes.
const MaxDescriptionLen = 255

// descriptionProblem says why the kernel could not keep d as an interface
// alias (it would never read back equal), or "" when it can.
func descriptionProblem(d string) string {
	if len(d) > MaxDescriptionLen {
		return fmt.Sprintf("description is %d bytes long: the kernel keeps at most %d (it becomes the interface alias)", len(d), MaxDescriptionLen)
	}
	if strings.IndexByte(d, 0) >= 0 {
		return "description cannot contain a NUL byte"
	}
	return ""
}

// Table returns "PORT".
func (p Port) Table() string { return TablePort }

// Key returns the port name.
func (p Port) Key() string { return p.Name }

// Fields renders the managed fields; unmanaged ones are absent.
func (p Port) Fields() Fields {
	f := Fields{}
	if p.AdminUp != nil {
		f[FieldAdminStatus] = adminString(*p.AdminUp)
	}
	putInt(f, FieldMTU, p.MTU)
	if p.MAC != nil {
		f[FieldMAC] = p.MAC.String()
	}
	if p.Description != nil {
		f[FieldDescription] = *p.Description
	}
	return orNull(f)
}

// ParseVlan parses a VLAN entry: key "VlanN" (N 1-4094, no leading zeros),
// fields vlanid (optional, must equal N), admin_status, mtu, mac,
// description; SONiC's other VLAN fields (dhcp_servers@, …) are accepted
// and not acted on, unknown ones ignored.
func ParseVlan(key string, f Fields) (Vlan, error) {
	const t = TableVlan
	id, problem := vlanName(key)
	if problem != "" {
		return Vlan{}, vlanKeyError(t, key, key, problem)
	}
	if v, ok := f[FieldVlanID]; ok {
		n, ok := parseDigits(v)
		if !ok || n < MinVlanID || n > MaxVlanID {
			return Vlan{}, valueError(t, key, FieldVlanID, v, strconv.Itoa(id)+" (the number in the key)")
		}
		if n != id {
			return Vlan{}, fieldError(t, key, FieldVlanID, v,
				"vlanid "+v+" does not match the key "+key, strconv.Itoa(id)+" or no vlanid field")
		}
	}
	vl := Vlan{Name: key, ID: id}
	var err error
	if vl.AdminUp, err = optAdmin(t, key, f); err != nil {
		return Vlan{}, err
	}
	if vl.MTU, err = optInt(t, key, f, FieldMTU, MinMTU, MaxMTU); err != nil {
		return Vlan{}, err
	}
	if vl.MAC, err = optMAC(t, key, f); err != nil {
		return Vlan{}, err
	}
	if vl.Description, err = optDescription(t, key, f); err != nil {
		return Vlan{}, err
	}
	return vl, nil
}

// Table returns "VLAN".
func (v Vlan) Table() string { return TableVlan }

// Key returns "VlanN".
func (v Vlan) Key() string { return v.Name }

// Fields renders vlanid (always, as SONiC does) and the managed fields.
func (v Vlan) Fields() Fields {
	f := Fields{FieldVlanID: strconv.Itoa(v.ID)}
	if v.AdminUp != nil {
		f[FieldAdminStatus] = adminString(*v.AdminUp)
	}
	putInt(f, FieldMTU, v.MTU)
	if v.MAC != nil {
		f[FieldMAC] = v.MAC.String()
	}
	if v.Description != nil {
		f[FieldDescription] = *v.Description
	}
	return f
}

// taggingAllowed lists the tagging modes.
const taggingAllowed = "tagged, untagged or priority_tagged"

// ParseVlanMember parses a VLAN_MEMBER entry: key "VlanN|port", field
// tagging_mode (required): tagged, untagged or priority_tagged.
func ParseVlanMember(key string, f Fields) (VlanMember, error) {
	const t = TableVlanMember
	parts := SplitKey(key)
	if len(parts) != 2 {
		return VlanMember{}, keyError(t, key, "", "VlanN|port, e.g. Vlan100|Ethernet0")
	}
	id, problem := vlanName(parts[0])
	if problem != "" {
		return VlanMember{}, vlanKeyError(t, key, parts[0], problem)
	}
	if p := portProblem(parts[1]); p != "" {
		return VlanMember{}, keyError(t, key, p, ifnameAllowed)
	}
	v, ok := f[FieldTaggingMode]
	if !ok {
		return VlanMember{}, fieldError(t, key, FieldTaggingMode, "", "required field is missing", taggingAllowed)
	}
	mode := TaggingMode(v)
	switch mode {
	case Tagged, Untagged, PriorityTagged:
	default:
		return VlanMember{}, valueError(t, key, FieldTaggingMode, v, taggingAllowed)
	}
	return VlanMember{Vlan: parts[0], VID: id, Port: parts[1], Tagging: mode}, nil
}

// Table returns "VLAN_MEMBER".
func (m VlanMember) Table() string { return TableVlanMember }

// Key returns "VlanN|port".
func (m VlanMember) Key() string { return m.Vlan + ConfigSep + m.Port }

// Fields renders tagging_mode.
func (m VlanMember) Fields() Fields { return Fields{FieldTaggingMode: string(m.Tagging)} }
