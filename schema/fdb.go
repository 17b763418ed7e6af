package schema

import (
	"net"
	"strconv"
	"strings"
)

// ParseFDB parses a static FDB entry: key "VlanN|mac" with the MAC in
// canonical form (lowercase, colon-separated), field port (required) and
// optional type, which may only be "static".
func ParseFDB(key string, f Fields) (FDB, error) {
	if e, ok := parseFDBCanonical(key, f); ok {
		return e, nil
	}
	return parseFDB(key, f)
}

// parseFDBCanonical accepts what parseFDB accepts when the key is already
// canonical (the only spelling it takes), in one pass over the key and
// with one allocation (the MAC): a bulk of 10k entries spent ~10% of
// orchagent's per-entry work in parseFDB's split, VLAN name rendering,
// net.ParseMAC and MAC rendering. ok false: let parseFDB say why (or
// accept it; FuzzParseFDBCanonical checks the two agree).
func parseFDBCanonical(key string, f Fields) (FDB, bool) {
	vlan, macText, ok := strings.Cut(key, ConfigSep)
	if !ok || len(macText) != 17 {
		return FDB{}, false
	}
	id, ok := canonicalVlanID(vlan)
	if !ok {
		return FDB{}, false
	}
	var m [6]byte
	for i := range m {
		hi, ok1 := lowerHex(macText[3*i])
		lo, ok2 := lowerHex(macText[3*i+1])
		if !ok1 || !ok2 || (i < 5 && macText[3*i+2] != ':') {
			return FDB{}, false
		}
		m[i] = hi<<4 | lo
	}
	if m[0]&1 != 0 || m == [6]byte{} {
		return FDB{}, false
	}
	if v, ok := f[FieldType]; ok && v != FDBStatic {
		return FDB{}, false
	}
	port, ok := f[FieldPort]
	if !ok || portProblem(port) != "" {
		return FDB{}, false
	}
	return FDB{Vlan: vlan, VID: id, MAC: net.HardwareAddr(m[:]), Port: port}, true
}

// canonicalVlanID returns N of "VlanN" spelled canonically (capital V, no
// leading zero, 1-4094), without rendering the name again as vlanName does.
func canonicalVlanID(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, vlanPrefix)
	if !ok || digits == "" || len(digits) > 4 || digits[0] == '0' {
		return 0, false
	}
	n, ok := parseDigits(digits)
	return n, ok && n >= MinVlanID && n <= MaxVlanID
}

// lowerHex is the value of a lowercase hex digit.
func lowerHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// parseFDB is ParseFDB for any key: it says precisely what is wrong.
func parseFDB(key string, f Fields) (FDB, error) {
	const t = TableFDB
	parts := SplitKey(key)
	if len(parts) != 2 {
		return FDB{}, keyError(t, key, "", "VlanN|mac, e.g. Vlan100|00:11:22:33:44:55")
	}
	id, problem := vlanName(parts[0])
	if problem != "" {
		return FDB{}, vlanKeyError(t, key, parts[0], problem)
	}
	mac, ok := parseMAC(parts[1])
	if !ok {
		return FDB{}, keyError(t, key, strconv.Quote(parts[1])+" is not a MAC", "a lowercase colon-separated MAC, e.g. Vlan100|00:11:22:33:44:55")
	}
	if p := unicastProblem(mac); p != "" {
		return FDB{}, keyError(t, key, p, "")
	}
	if c := mac.String(); c != parts[1] {
		return FDB{}, keyError(t, key, "MAC is not in canonical form: use "+parts[0]+ConfigSep+c, "")
	}
	if v, ok := f[FieldType]; ok && v != FDBStatic {
		return FDB{}, fieldError(t, key, FieldType, v, "only static FDB entries can be configured", FDBStatic)
	}
	port, ok := f[FieldPort]
	if !ok {
		return FDB{}, fieldError(t, key, FieldPort, "", "required field is missing", "the port the MAC is behind, e.g. Ethernet0")
	}
	if p := portProblem(port); p != "" {
		return FDB{}, fieldError(t, key, FieldPort, port, p, ifnameAllowed)
	}
	return FDB{Vlan: parts[0], VID: id, MAC: mac, Port: port}, nil
}

// Table returns "FDB".
func (e FDB) Table() string { return TableFDB }

// Key returns "VlanN|mac".
func (e FDB) Key() string { return e.Vlan + ConfigSep + e.MAC.String() }

// Fields renders port (the type is always static and left implicit).
func (e FDB) Fields() Fields { return Fields{FieldPort: e.Port} }
