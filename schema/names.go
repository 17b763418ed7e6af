package schema

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Limits of the values this package validates.
const (
	MinVlanID = 1    // lowest usable 802.1Q VLAN ID
	MaxVlanID = 4094 // highest usable 802.1Q VLAN ID (4095 is reserved)
	MinMTU    = 68   // smallest MTU IPv4 allows
	MaxMTU    = 9216 // largest MTU SONiC allows
	// MaxIfnameLen is the longest interface name the kernel accepts
	// (IFNAMSIZ 16 including the terminating NUL).
	MaxIfnameLen = 15
)

// vlanPrefix starts every VLAN name: "Vlan100".
const vlanPrefix = "Vlan"

// SplitKey splits a CONFIG_DB key on "|": "Vlan100|Ethernet0" gives
// ["Vlan100", "Ethernet0"]. An empty key gives [""].
func SplitKey(key string) []string { return strings.Split(key, ConfigSep) }

// SplitTableKey splits a full CONFIG_DB or STATE_DB key at its first "|":
// "VLAN_MEMBER|Vlan100|Ethernet0" gives "VLAN_MEMBER", "Vlan100|Ethernet0".
// ok is false when there is no separator (e.g. CONFIG_DB_INITIALIZED).
func SplitTableKey(full string) (table, key string, ok bool) {
	return strings.Cut(full, ConfigSep)
}

// VlanName is the canonical name of VLAN id: VlanName(100) = "Vlan100".
func VlanName(id int) string { return vlanPrefix + strconv.Itoa(id) }

// ParseVlanName returns N for a canonical VLAN name "VlanN" (N 1-4094, no
// leading zeros, capital V). Where the intent is clear the error names the
// canonical spelling ("vlan0100" gives "use Vlan100").
func ParseVlanName(name string) (int, error) {
	id, problem := vlanName(name)
	if problem != "" {
		return 0, fmt.Errorf("vlan name %q: %s", name, problem)
	}
	return id, nil
}

// vlanAllowed describes a valid VLAN name.
const vlanAllowed = "VlanN with N 1-4094, e.g. Vlan100"

// vlanName is ParseVlanName with the bare reason for FieldErrors.
func vlanName(name string) (int, string) {
	if len(name) < len(vlanPrefix) || !strings.EqualFold(name[:len(vlanPrefix)], vlanPrefix) {
		return 0, "not a VLAN name"
	}
	digits := name[len(vlanPrefix):]
	n, ok := parseDigits(digits)
	if !ok {
		return 0, "not a VLAN name"
	}
	if n < MinVlanID || n > MaxVlanID {
		return 0, fmt.Sprintf("VLAN number %s is out of range", digits)
	}
	if canon := VlanName(n); canon != name {
		return 0, "VLAN name is not in canonical form: use " + canon
	}
	return n, ""
}

// vlanKeyError reports a bad VLAN name in part of a key. The generic
// "want VlanN" is left out when the reason already names the fix.
func vlanKeyError(table, key, part, problem string) *FieldError {
	if part != key {
		problem = part + ": " + problem
	}
	if strings.Contains(problem, ": use ") {
		return keyError(table, key, problem, "")
	}
	return keyError(table, key, problem, vlanAllowed)
}

// isVlanName reports whether name is a canonical VLAN name.
func isVlanName(name string) bool {
	_, problem := vlanName(name)
	return problem == ""
}

// parseDigits parses a non-empty run of ASCII digits (leading zeros
// allowed) of at most 9 digits, so it never overflows.
func parseDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// ifnameAllowed describes a valid interface name.
const ifnameAllowed = "a kernel interface name: 1-15 bytes, not \".\" or \"..\", without '/', ':', '|' or whitespace"

// ifnameProblem says why the kernel (or our key syntax, for '|') would
// refuse name as an interface name, or "" when it is fine.
func ifnameProblem(name string) string {
	switch {
	case name == "":
		return "interface name is empty"
	case len(name) > MaxIfnameLen:
		return fmt.Sprintf("interface name is %d bytes long: the kernel allows at most %d", len(name), MaxIfnameLen)
	case name == "." || name == "..":
		return fmt.Sprintf("interface name cannot be %q", name)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '/', ':', ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return fmt.Sprintf("interface name cannot contain %q", c)
		case 0xa0: // the kernel's isspace() counts Latin-1 NBSP as a space
			return "interface name cannot contain byte 0xa0 (the kernel counts it as a space)"
		case '|':
			return "interface name cannot contain '|': it separates the parts of a key"
		}
	}
	return ""
}

// portProblem is ifnameProblem for names that must be a port, never a
// VLAN device (so one object never has two keys in two tables).
func portProblem(name string) string {
	if p := ifnameProblem(name); p != "" {
		return p
	}
	if isVlanName(name) {
		return name + " is a VLAN device, not a port"
	}
	return ""
}

// macAllowed describes a valid MAC field value.
const macAllowed = "a unicast 48-bit MAC such as 02:00:00:00:00:01"

// parseMAC accepts any spelling net.ParseMAC knows ("00-11-22-33-44-55",
// "0011.2233.4455", any case) of a 48-bit MAC.
func parseMAC(s string) (net.HardwareAddr, bool) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return nil, false
	}
	return mac, true
}

// unicastProblem says why mac cannot be the address of an interface or a
// static FDB entry, or "" when it can.
func unicastProblem(mac net.HardwareAddr) string {
	if mac[0]&1 != 0 {
		return mac.String() + " is a multicast MAC (the group bit of the first byte is set): an interface or FDB address must be unicast"
	}
	for _, b := range mac {
		if b != 0 {
			return ""
		}
	}
	return "00:00:00:00:00:00 is not a usable MAC: the kernel treats all-zero as no address"
}

// mappedProblem describes an IPv4-mapped IPv6 prefix and its IPv4 form.
func mappedProblem(p netip.Prefix) string {
	if p.Bits() >= 96 {
		v4 := netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		return "IPv4-mapped IPv6 addresses are not supported: use " + v4.String()
	}
	return "IPv4-mapped IPv6 addresses are not supported: use an IPv4 address"
}

// addrAllowed and prefixAllowed describe INTERFACE and STATIC_ROUTE keys.
const (
	addrAllowed   = "an address with prefix length, e.g. 10.0.0.1/24 or 2001:db8::1/64"
	prefixAllowed = "a prefix, e.g. 10.2.0.0/16 or 2001:db8::/32"
)

// parseIfAddr parses the address part of an INTERFACE key: an address with
// its prefix length (host bits kept), in canonical text form.
func parseIfAddr(s string) (netip.Prefix, string, string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, "", addrAllowed
	}
	a := p.Addr()
	switch {
	case a.Is4In6():
		return netip.Prefix{}, mappedProblem(p), ""
	case a.IsUnspecified():
		return netip.Prefix{}, a.String() + " is the unspecified address: an interface address must be a unicast address", ""
	case a.IsMulticast():
		return netip.Prefix{}, a.String() + " is a multicast address: an interface address must be unicast", ""
	}
	// Compared in a buffer on the stack: every address key comes here.
	var buf [64]byte
	if string(p.AppendTo(buf[:0])) != s {
		return netip.Prefix{}, "address is not in canonical form: use " + p.String(), ""
	}
	return p, "", ""
}

// parseRoutePrefix parses the prefix part of a STATIC_ROUTE key: host bits
// clear, canonical text form.
func parseRoutePrefix(s string) (netip.Prefix, string, string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, "", prefixAllowed
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, mappedProblem(p.Masked()), ""
	}
	m := p.Masked()
	if m != p {
		return netip.Prefix{}, "prefix has host bits set: use " + m.String(), ""
	}
	// Compared in a buffer on the stack: every route key comes here.
	var buf [64]byte
	if string(m.AppendTo(buf[:0])) != s {
		return netip.Prefix{}, "prefix is not in canonical form: use " + m.String(), ""
	}
	return m, "", ""
}
