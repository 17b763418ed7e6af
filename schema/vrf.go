package schema

import (
	"strconv"
	"strings"
)

// VRF field names (sonic-vrf.yang).
const (
	FieldVNI      = "vni"      // VRF: L3 VNI, 0-16777215 (validated, not acted on)
	FieldFallback = "fallback" // VRF: deprecated per-VRF fallback; only false
)

// MaxVNI is the largest VXLAN network identifier (24 bits).
const MaxVNI = 1<<24 - 1

// vrfPrefix starts every VRF name (sonic-vrf.yang: "Vrf[a-zA-Z0-9_-]+").
const vrfPrefix = "Vrf"

// vrfAllowed describes a valid VRF name.
const vrfAllowed = "Vrf followed by letters, digits, '_' or '-', at most 15 bytes in all, e.g. Vrf_blue"

// vrfNameProblem says why name is not a VRF name SONiC accepts (and the
// kernel can name a device), or "" when it is one.
func vrfNameProblem(name string) string {
	if !strings.HasPrefix(name, vrfPrefix) || len(name) == len(vrfPrefix) {
		return "VRF name " + strconv.Quote(Clip(name)) + " does not start with " + vrfPrefix + " and a name"
	}
	if len(name) > MaxIfnameLen {
		return "VRF name is " + strconv.Itoa(len(name)) + " bytes long: the kernel allows at most " + strconv.Itoa(MaxIfnameLen)
	}
	for i := len(vrfPrefix); i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "VRF name cannot contain " + strconv.QuoteRune(rune(c))
		}
	}
	return ""
}

// IsVRFName reports whether name is a valid VRF name ("Vrf_blue").
func IsVRFName(name string) bool { return vrfNameProblem(name) == "" }

// ParseVRF parses a VRF entry: key "VrfNAME" (SONiC's pattern
// Vrf[a-zA-Z0-9_-]+, at most 15 bytes: it names a kernel vrf device).
// vni (0-16777215) is validated and not acted on; fallback must be false
// or absent (the deprecated per-VRF fallback lookup is not supported).
// Unknown fields are ignored (UnknownFields names them).
func ParseVRF(key string, f Fields) (VRF, error) {
	const t = TableVRF
	if p := vrfNameProblem(key); p != "" {
		return VRF{}, keyError(t, key, p, vrfAllowed)
	}
	v := VRF{Name: key}
	if s, ok := f[FieldVNI]; ok {
		n, ok := parseDigits(s)
		if !ok || n > MaxVNI {
			return VRF{}, valueError(t, key, FieldVNI, s, "an integer 0-16777215")
		}
		v.VNI = n
	}
	if s, ok := f[FieldFallback]; ok && s != ValueFalse {
		if s == ValueTrue {
			return VRF{}, fieldError(t, key, FieldFallback, s,
				"the per-VRF fallback lookup into the default table is not supported", "false or absent")
		}
		return VRF{}, valueError(t, key, FieldFallback, s, "false or absent")
	}
	return v, nil
}

// Table returns "VRF".
func (v VRF) Table() string { return TableVRF }

// Key returns the VRF name.
func (v VRF) Key() string { return v.Name }

// Fields returns the NULL placeholder: no VRF field is acted on.
func (v VRF) Fields() Fields { return orNull(nil) }
