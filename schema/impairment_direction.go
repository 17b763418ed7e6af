package schema

// The direction of IMPAIRMENT and IMPAIRMENT_FLOW (issue 17): where loss,
// policing and corruption act. Delay, jitter, shaping and slotting keep
// their own place (EDT, on egress; docs/edt.md).

import "fmt"

// Direction is a profile's direction field; "" is ingress.
type Direction string

// Directions: ingress is packets arriving on the port (XDP, the default),
// egress packets the port sends (tc clsact egress), both the same profile
// on both hooks with independent state.
const (
	DirIngress Direction = "ingress"
	DirEgress  Direction = "egress"
	DirBoth    Direction = "both"
)

// FieldDirection is the direction field name.
const FieldDirection = "direction"

// Ingress reports whether the profile acts on arriving packets.
func (d Direction) Ingress() bool { return d == "" || d == DirIngress || d == DirBoth }

// Egress reports whether the profile acts on sent packets.
func (d Direction) Egress() bool { return d == DirEgress || d == DirBoth }

// parseDirection reads direction into p (after the rest of the profile),
// marking it used. flow says the profile is an IMPAIRMENT_FLOW rule's.
func parseDirection(t, key string, f Fields, used map[string]bool, p *ImpairmentProfile, flow bool) error {
	used[FieldDirection] = true
	v, ok := f[FieldDirection]
	if !ok {
		return nil
	}
	switch Direction(v) {
	case DirIngress: // the default: the zero value, so records compare equal
	case DirEgress, DirBoth:
		p.Direction = Direction(v)
	default:
		return valueError(t, key, FieldDirection, v, "ingress, egress or both")
	}
	if !p.Direction.Egress() {
		return nil
	}
	if p.Duplicate > 0 {
		return fieldError(t, key, FieldDirection, v, fmt.Sprintf("duplicate acts on ingress only (direction is %s)", v), "ingress")
	}
	if flow && p.EDT.Active() {
		return fieldError(t, key, FieldDirection, v,
			fmt.Sprintf("a rule's delay/jitter/shaping class is assigned on ingress (direction is %s): put them in a rule of direction ingress", v), "ingress")
	}
	return nil
}
