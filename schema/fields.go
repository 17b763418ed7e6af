package schema

import (
	"net"
	"strconv"
)

// CONFIG_DB field names (SONiC's).
const (
	FieldAdminStatus = "admin_status"
	FieldMTU         = "mtu"
	FieldMAC         = "mac"
	FieldDescription = "description"
	FieldVlanID      = "vlanid"
	FieldTaggingMode = "tagging_mode"
	FieldNexthop     = "nexthop"
	FieldIfname      = "ifname"
	FieldDistance    = "distance"
	FieldBlackhole   = "blackhole"
	FieldNexthopVRF  = "nexthop-vrf"
	FieldPort        = "port"
	FieldType        = "type"
)

// Field values: admin_status, blackhole, FDB type, and the only VRF.
const (
	AdminUp    = "up"
	AdminDown  = "down"
	ValueTrue  = "true"
	ValueFalse = "false"
	FDBStatic  = "static"
	DefaultVRF = "default"
)

// orNull returns f, or the NULL placeholder when f is empty.
func orNull(f Fields) Fields {
	if len(f) == 0 {
		return Fields{NullField: NullField}
	}
	return f
}

// optAdmin parses an optional admin_status.
func optAdmin(table, key string, f Fields) (*bool, error) {
	v, ok := f[FieldAdminStatus]
	if !ok {
		return nil, nil
	}
	switch v {
	case AdminUp:
		up := true
		return &up, nil
	case AdminDown:
		up := false
		return &up, nil
	}
	return nil, valueError(table, key, FieldAdminStatus, v, "up or down")
}

// adminString renders admin_status.
func adminString(up bool) string {
	if up {
		return AdminUp
	}
	return AdminDown
}

// optInt parses an optional decimal integer field within [lo, hi].
func optInt(table, key string, f Fields, field string, lo, hi int) (*int, error) {
	v, ok := f[field]
	if !ok {
		return nil, nil
	}
	n, ok := parseDigits(v)
	if !ok || n < lo || n > hi {
		return nil, valueError(table, key, field, v, "an integer "+strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
	}
	return &n, nil
}

// optMAC parses an optional interface MAC (unicast, not all-zero).
func optMAC(table, key string, f Fields) (net.HardwareAddr, error) {
	v, ok := f[FieldMAC]
	if !ok {
		return nil, nil
	}
	mac, ok := parseMAC(v)
	if !ok {
		return nil, valueError(table, key, FieldMAC, v, macAllowed)
	}
	if p := unicastProblem(mac); p != "" {
		return nil, fieldError(table, key, FieldMAC, v, p, "")
	}
	return mac, nil
}

// putInt sets field to n when n is managed.
func putInt(f Fields, field string, n *int) {
	if n != nil {
		f[field] = strconv.Itoa(*n)
	}
}
