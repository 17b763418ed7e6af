package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// aclProtoNames are the IP_PROTOCOL names accepted besides numbers: the
// plain names and acl-loader's openconfig names (IP_TCP, …).
var aclProtoNames = map[string]int{
	"TCP": 6, "UDP": 17, "ICMP": 1, "ICMPV6": 58, "IGMP": 2, "GRE": 47, "PIM": 103, "RSVP": 46,
	"AUTH": 51, "L2TP": 115, "SCTP": 132,
	"IP_TCP": 6, "IP_UDP": 17, "IP_ICMP": 1, "IP_ICMPV6": 58, "IP_IGMP": 2, "IP_GRE": 47, "IP_PIM": 103,
	"IP_RSVP": 46, "IP_AUTH": 51, "IP_L2TP": 115,
}

// aclNumber parses a decimal integer 0..max (no sign, at most 9 digits).
func aclNumber(s string, max int) (int, bool) {
	n, ok := impDigits(s)
	return n, ok && n <= max
}

// aclNumberHex parses a decimal or 0x-hex integer 0..max, as SONiC's
// orchagent does for IP_PROTOCOL, ETHER_TYPE and TCP_FLAGS.
func aclNumberHex(s string, max int) (int, bool) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		h := s[2:]
		if len(h) > 8 || strings.ContainsAny(h, "+-_") {
			return 0, false
		}
		n, err := strconv.ParseUint(h, 16, 32)
		return int(n), err == nil && int(n) <= max
	}
	return aclNumber(s, max)
}

// parseACLL4 reads IP_PROTOCOL, the L4 ports and ranges and TCP_FLAGS.
func parseACLL4(key string, f Fields, r *ACLRule) error {
	t := TableACLRule
	if v, ok := f[FieldIPProtocol]; ok {
		n, ok := aclProtoNames[strings.ToUpper(v)]
		if !ok {
			if n, ok = aclNumberHex(v, 255); !ok {
				return valueError(t, key, FieldIPProtocol, v, "a protocol number 0-255 (decimal or 0x hex) or TCP, UDP, ICMP, ICMPV6, IP_TCP, …")
			}
		}
		r.Proto = n
	}
	for _, pf := range []struct {
		single, rng string
		dst         *PortRange
		isRange     *bool
	}{{FieldL4SrcPort, FieldL4SrcPortRange, &r.SrcPort, &r.SrcPortIsRange}, {FieldL4DstPort, FieldL4DstPortRange, &r.DstPort, &r.DstPortIsRange}} {
		if v, ok := f[pf.single]; ok {
			n, ok := aclNumber(v, 65535)
			if !ok {
				return valueError(t, key, pf.single, v, "a port 0-65535")
			}
			*pf.dst = PortRange{Set: true, Lo: uint16(n), Hi: uint16(n)}
		}
		if v, ok := f[pf.rng]; ok {
			if pf.dst.Set {
				return fieldError(t, key, pf.rng, v, pf.single+" and "+pf.rng+" in one rule: use one of them", "")
			}
			lo, hi, isRange := strings.Cut(v, "-")
			a, ok1 := aclNumber(lo, 65535)
			b, ok2 := aclNumber(hi, 65535)
			if !isRange || !ok1 || !ok2 || a > b {
				return valueError(t, key, pf.rng, v, "a range N-M with 0 <= N <= M <= 65535, e.g. 1024-65535")
			}
			*pf.dst, *pf.isRange = PortRange{Set: true, Lo: uint16(a), Hi: uint16(b)}, true
		}
		if pf.dst.Set && r.Proto >= 0 && r.Proto != 6 && r.Proto != 17 && r.Proto != 132 {
			name := pf.single
			if *pf.isRange {
				name = pf.rng
			}
			return fieldError(t, key, name, f[name], fmt.Sprintf("L4 ports need IP_PROTOCOL 6 (TCP), 17 (UDP) or 132 (SCTP), not %d", r.Proto), "")
		}
	}
	if v, ok := f[FieldTCPFlags]; ok {
		const want = "flags/mask as 0xVV/0xMM (e.g. 0x02/0x12: SYN without ACK) or 0xVV (mask 0x3f)"
		val, mask, hasMask := strings.Cut(v, "/")
		a, ok := aclNumberHex(val, 255)
		m := aclDefaultTCPFlagMask
		if hasMask {
			var okm bool
			m, okm = aclNumberHex(mask, 255)
			ok = ok && okm
		}
		if !ok {
			return valueError(t, key, FieldTCPFlags, v, want)
		}
		if r.Proto >= 0 && r.Proto != 6 {
			return fieldError(t, key, FieldTCPFlags, v, fmt.Sprintf("TCP_FLAGS need IP_PROTOCOL 6 (TCP), not %d", r.Proto), "")
		}
		r.TCPFlags, r.TCPFlagsMask = uint8(a&m), uint8(m)
	}
	return nil
}

// parseACLMisc reads ETHER_TYPE, DSCP, VLAN_ID and the ICMP fields.
func parseACLMisc(key string, f Fields, r *ACLRule) error {
	t := TableACLRule
	fam := r.Family()
	if v, ok := f[FieldEtherType]; ok {
		n, ok := aclNumberHex(v, 0xffff)
		if !ok || n < 0x600 {
			return valueError(t, key, FieldEtherType, v, "an EtherType 0x0600-0xffff, hex (0x0800) or decimal (2048)")
		}
		if (fam == 4 && n != 0x0800) || (fam == 6 && n != 0x86dd) {
			return fieldError(t, key, FieldEtherType, v, fmt.Sprintf("ETHER_TYPE 0x%04x contradicts the rule's IPv%d fields", n, fam), "")
		}
		if r.IPType == "ARP" && n != 0x0806 {
			return fieldError(t, key, FieldEtherType, v, fmt.Sprintf("ETHER_TYPE 0x%04x contradicts IP_TYPE ARP", n), "")
		}
		r.EtherType = n
	}
	if v, ok := f[FieldACLDSCP]; ok {
		n, ok := aclNumber(v, 63)
		if !ok {
			return valueError(t, key, FieldACLDSCP, v, "an integer 0-63")
		}
		r.DSCP = n
	}
	if v, ok := f[FieldACLVlanID]; ok {
		n, ok := aclNumber(v, MaxVlanID)
		if !ok || n < MinVlanID {
			return valueError(t, key, FieldACLVlanID, v, "a VLAN ID 1-4094")
		}
		r.VLAN = n
	}
	fam = r.Family()
	_, t4 := f[FieldICMPType]
	_, c4 := f[FieldICMPCode]
	_, t6 := f[FieldICMPv6Type]
	_, c6 := f[FieldICMPv6Code]
	if (t4 || c4) && (t6 || c6) {
		return fieldError(t, key, FieldICMPv6Type, f[FieldICMPv6Type], "ICMP and ICMPv6 fields in one rule: a rule matches one family", "")
	}
	r.ICMPv6 = t6 || c6
	typ, code, proto, pfam := FieldICMPType, FieldICMPCode, 1, 4
	if r.ICMPv6 {
		typ, code, proto, pfam = FieldICMPv6Type, FieldICMPv6Code, 58, 6
	}
	for _, ff := range []struct {
		name string
		dst  *int
	}{{typ, &r.ICMPType}, {code, &r.ICMPCode}} {
		v, ok := f[ff.name]
		if !ok {
			continue
		}
		n, ok := aclNumber(v, 255)
		if !ok {
			return valueError(t, key, ff.name, v, "an integer 0-255")
		}
		if r.Proto >= 0 && r.Proto != proto {
			return fieldError(t, key, ff.name, v, fmt.Sprintf("%s needs IP_PROTOCOL %d, not %d", ff.name, proto, r.Proto), "")
		}
		if fam != 0 && fam != pfam {
			return fieldError(t, key, ff.name, v, fmt.Sprintf("%s in a rule with IPv%d fields", ff.name, fam), "")
		}
		*ff.dst = n
	}
	return nil
}
