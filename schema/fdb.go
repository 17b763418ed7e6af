package schema

import "strconv"

// ParseFDB parses a static FDB entry: key "VlanN|mac" with the MAC in
// canonical form (lowercase, colon-separated), field port (required) and
// optional type, which may only be "static".
func ParseFDB(key string, f Fields) (FDB, error) {
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
