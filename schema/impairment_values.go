package schema

// Value syntaxes of the IMPAIRMENT and IMPAIRMENT_FLOW fields: percentages,
// tc-style rates and sizes, protocols, port ranges, match prefixes, names.

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// parsePercent accepts a decimal 0-100 ("10", "0.5", "12.25").
func parsePercent(s string) (float64, bool) {
	if s == "" || len(s) > 32 || strings.ContainsAny(s, "eEinfINFxX+-_") {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > 100 {
		return 0, false
	}
	return x, true
}

// rateUnits are tc's rate units: *bit are bits/s, *bps are bytes/s.
var rateUnits = []struct {
	suffix string
	mult   float64
}{
	{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1},
	{"tbps", 8e12}, {"gbps", 8e9}, {"mbps", 8e6}, {"kbps", 8e3}, {"bps", 8},
}

// MaxRate is the highest policer rate accepted: 1 tbit/s.
const MaxRate = 1e12

// ParseRate parses a tc-style rate into bit/s: "100mbit", "1.5gbit",
// "800kbit", "1000000" (bit/s), "10mbps" (bytes/s as in tc). Between 1 bit/s
// and 1 tbit/s.
func ParseRate(s string) (uint64, bool) {
	num, mult := strings.ToLower(s), 1.0
	for _, u := range rateUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	x, ok := parseUnsignedDecimal(num)
	if !ok {
		return 0, false
	}
	r := math.Round(x * mult)
	if r < 1 || r > MaxRate {
		return 0, false
	}
	return uint64(r), true
}

// FormatRate renders bit/s in the largest tc unit that keeps it exact.
func FormatRate(r uint64) string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if r%u.mult == 0 {
			return strconv.FormatUint(r/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(r, 10) + "bit"
}

// MaxBurst is the largest policer burst accepted: 1 GiB.
const MaxBurst = 1 << 30

// ParseSize parses a byte size as tc does: "15000", "15000b", "32k",
// "32kb", "1m", "1mb" (k = 1024, m = 1024*1024). At most MaxBurst.
func ParseSize(s string) (uint64, bool) {
	num, mult := strings.ToLower(s), 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kb", 1024}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1024}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	x, ok := parseUnsignedDecimal(num)
	if !ok {
		return 0, false
	}
	b := math.Round(x * mult)
	if b < 1 || b > MaxBurst {
		return 0, false
	}
	return uint64(b), true
}

// parseUnsignedDecimal accepts "12", "1.5", "0.25" (no sign, exponent or
// hex), so every accepted spelling is one an operator meant as a number.
func parseUnsignedDecimal(s string) (float64, bool) {
	if s == "" || len(s) > 24 || s[0] == '.' || s[len(s)-1] == '.' {
		return 0, false
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			dots++
		case c < '0' || c > '9':
			return 0, false
		}
	}
	if dots > 1 {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil
}

var protoNames = map[string]int{"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}

// parseProto accepts a protocol name or number 0-255.
func parseProto(s string) (int, bool) {
	if n, ok := protoNames[strings.ToLower(s)]; ok {
		return n, true
	}
	n, ok := impDigits(s)
	if !ok || n > 255 {
		return 0, false
	}
	return n, true
}

// protoName renders a protocol number by name where it has one.
func protoName(p int) string {
	for name, n := range protoNames {
		if n == p {
			return name
		}
	}
	return strconv.Itoa(p)
}

// parsePortRange accepts "N" or "N-M" with N <= M <= 65535.
func parsePortRange(s string) (PortRange, bool) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, ok := impDigits(lo)
	if !ok || a > 65535 {
		return PortRange{}, false
	}
	b := a
	if isRange {
		if b, ok = impDigits(hi); !ok || b > 65535 || b < a {
			return PortRange{}, false
		}
	}
	return PortRange{Set: true, Lo: uint16(a), Hi: uint16(b)}, true
}

const matchPrefixAllowed = "an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2001:db8::/32, or a single address"

// parseMatchPrefix accepts a prefix with host bits clear, or a bare
// address meaning /32 or /128; the reason names the canonical form.
func parseMatchPrefix(s string) (netip.Prefix, string) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, "not a prefix"
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, "not an address"
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, "IPv4-mapped IPv6 addresses are not supported: use the IPv4 form"
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, "prefix has host bits set: use " + m.String()
	}
	return p, ""
}

// impPortProblem is portProblem without depending on other files' helpers.
func impPortProblem(name string) string {
	switch {
	case name == "":
		return "port name is empty"
	case len(name) > MaxIfnameLen:
		return fmt.Sprintf("port name is %d bytes long: the kernel allows at most %d", len(name), MaxIfnameLen)
	case name == "." || name == "..":
		return fmt.Sprintf("port name cannot be %q", name)
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '/' || c == ':' || c == '|' || c <= ' ' || c == 0x7f:
			return fmt.Sprintf("port name cannot contain %q", c)
		}
	}
	return ""
}

// flowNameProblem checks an IMPAIRMENT_FLOW name: it becomes part of
// COUNTERS_DB keys, so it stays printable and short.
func flowNameProblem(name string) string {
	if name == "" || len(name) > MaxFlowNameLen {
		return fmt.Sprintf("flow name must be 1-%d bytes", MaxFlowNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Sprintf("flow name cannot contain %q: use letters, digits, '_', '-' or '.'", c)
		}
	}
	return ""
}

// impDigits parses 1-9 ASCII digits (leading zeros allowed).
func impDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
