package schema

import (
	"strconv"
	"strings"
)

// PORTCHANNEL field names (sonic-portchannel.yang, sonic-utilities'
// `config portchannel add`).
const (
	FieldMinLinks = "min_links" // PORTCHANNEL: 1-1024 member links up for the LAG to be up
	FieldFastRate = "fast_rate" // PORTCHANNEL: LACPDUs every second (true) or 30 s (false)
	FieldLacpKey  = "lacp_key"  // PORTCHANNEL: auto or 1-65535 (validated, not acted on)
	FieldStatic   = "static"    // PORTCHANNEL: true = no LACP (not supported)
)

// PortChannel is a PORTCHANNEL entry "PortChannelN": a Linux bond in
// 802.3ad (LACP) mode. nil fields are not managed (min_links: 1, fast_rate:
// false, SONiC's defaults, at creation).
type PortChannel struct {
	Name     string
	AdminUp  *bool
	MTU      *int
	MinLinks *int
	FastRate *bool
}

// PortChannelMember is a PORTCHANNEL_MEMBER entry "PortChannelN|port".
type PortChannelMember struct {
	PortChannel string
	Port        string
}

// portChannelPrefix starts every PortChannel name.
const portChannelPrefix = "PortChannel"

// portChannelAllowed describes a valid PortChannel name.
const portChannelAllowed = "PortChannelN with N 1 to 4 digits, e.g. PortChannel01"

// portChannelProblem says why name is not a PortChannel name
// (sonic-portchannel.yang: PortChannel[0-9]{1,4}), or "".
func portChannelProblem(name string) string {
	digits, ok := strings.CutPrefix(name, portChannelPrefix)
	if !ok {
		return strconv.Quote(Clip(name)) + " is not a PortChannel name"
	}
	if _, ok := parseDigits(digits); !ok || len(digits) > 4 {
		return strconv.Quote(Clip(name)) + " is not PortChannel followed by 1 to 4 digits"
	}
	return ""
}

// IsPortChannelName reports whether name is a PortChannel name. It builds
// no message (every INTERFACE key asks it: portChannelProblem quoted the
// name for a message nobody read, an allocation per address).
func IsPortChannelName(name string) bool {
	digits, ok := strings.CutPrefix(name, portChannelPrefix)
	if !ok || len(digits) > 4 {
		return false
	}
	_, ok = parseDigits(digits)
	return ok
}

// ParsePortChannel parses a PORTCHANNEL entry. Acted on: admin_status,
// mtu (68-9216), min_links (1-1024), fast_rate (true|false). Checked:
// lacp_key (auto or 1-65535; the bond derives its own key), fallback and
// static (only false: the bond driver has no LACP fallback, and a static
// LAG is not supported). The rest SONiC defines (description, tpid,
// system_mac, mode, members@) is accepted and not acted on; unknown fields
// are ignored.
func ParsePortChannel(key string, f Fields) (PortChannel, error) {
	const t = TablePortChannel
	if p := portChannelProblem(key); p != "" {
		return PortChannel{}, keyError(t, key, p, portChannelAllowed)
	}
	pc := PortChannel{Name: key}
	var err error
	if pc.AdminUp, err = optAdmin(t, key, f); err != nil {
		return PortChannel{}, err
	}
	if pc.MTU, err = optInt(t, key, f, FieldMTU, MinMTU, MaxMTU); err != nil {
		return PortChannel{}, err
	}
	if pc.MinLinks, err = optInt(t, key, f, FieldMinLinks, 1, 1024); err != nil {
		return PortChannel{}, err
	}
	if v, ok := f[FieldFastRate]; ok {
		b, ok := parseBool(v)
		if !ok {
			return PortChannel{}, valueError(t, key, FieldFastRate, v, "true or false")
		}
		pc.FastRate = &b
	}
	if v, ok := f[FieldLacpKey]; ok && v != "auto" {
		if n, ok := parseDigits(v); !ok || n < 1 || n > 65535 {
			return PortChannel{}, valueError(t, key, FieldLacpKey, v, "auto or an integer 1-65535")
		}
	}
	for field, why := range map[string]string{
		FieldFallback: "LACP fallback is not supported (the bond driver has none)",
		FieldStatic:   "static PortChannels (no LACP) are not supported",
	} {
		if v, ok := f[field]; ok {
			b, ok := parseBool(v)
			if !ok {
				return PortChannel{}, valueError(t, key, field, v, "true or false")
			}
			if b {
				return PortChannel{}, fieldError(t, key, field, v, why, "false or absent")
			}
		}
	}
	return pc, nil
}

// parseBool accepts SONiC's boolean spellings (true/false, any case).
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case ValueTrue:
		return true, true
	case ValueFalse:
		return false, true
	}
	return false, false
}

// Table returns "PORTCHANNEL".
func (pc PortChannel) Table() string { return TablePortChannel }

// Key returns the PortChannel name.
func (pc PortChannel) Key() string { return pc.Name }

// Fields renders the managed fields.
func (pc PortChannel) Fields() Fields {
	f := Fields{}
	if pc.AdminUp != nil {
		f[FieldAdminStatus] = adminString(*pc.AdminUp)
	}
	putInt(f, FieldMTU, pc.MTU)
	putInt(f, FieldMinLinks, pc.MinLinks)
	if pc.FastRate != nil {
		f[FieldFastRate] = strconv.FormatBool(*pc.FastRate)
	}
	return orNull(f)
}

// ParsePortChannelMember parses a PORTCHANNEL_MEMBER entry
// "PortChannelN|port" (no fields).
func ParsePortChannelMember(key string, f Fields) (PortChannelMember, error) {
	const t = TablePortChannelMember
	parts := SplitKey(key)
	if len(parts) != 2 {
		return PortChannelMember{}, keyError(t, key, "", "PortChannelN|port, e.g. PortChannel01|Ethernet0")
	}
	if p := portChannelProblem(parts[0]); p != "" {
		return PortChannelMember{}, keyError(t, key, p, portChannelAllowed)
	}
	if p := portProblem(parts[1]); p != "" {
		return PortChannelMember{}, keyError(t, key, p, ifnameAllowed)
	}
	if IsPortChannelName(parts[1]) || IsLoopbackName(parts[1]) {
		return PortChannelMember{}, keyError(t, key, parts[1]+" is not a port", "a port, e.g. Ethernet0")
	}
	return PortChannelMember{PortChannel: parts[0], Port: parts[1]}, nil
}

// Table returns "PORTCHANNEL_MEMBER".
func (m PortChannelMember) Table() string { return TablePortChannelMember }

// Key returns "PortChannelN|port".
func (m PortChannelMember) Key() string { return m.PortChannel + ConfigSep + m.Port }

// Fields returns the NULL placeholder.
func (m PortChannelMember) Fields() Fields { return orNull(nil) }
