package edt

import (
	"github.com/switchyard-net/switchyard/schema"
)

// The parser lives in the schema (schema/impairment_edt.go) so that
// IMPAIRMENT validation and this package share one; these are its names
// here.

// Field names of the EDT impairment (IMPAIRMENT and IMPAIRMENT_FLOW).
const (
	FieldDelay              = schema.FieldDelay
	FieldJitter             = schema.FieldJitter
	FieldJitterDistribution = schema.FieldJitterDistribution
	FieldShape              = schema.FieldShape
	FieldShapeLimit         = schema.FieldShapeLimit
	FieldReorder            = schema.FieldReorder
	FieldSlot               = schema.FieldSlot
	FieldSlotPackets        = schema.FieldSlotPackets
	FieldSlotBytes          = schema.FieldSlotBytes
	FieldSlotDistribution   = schema.FieldSlotDistribution
)

// Fields lists every field ParseFields reads, in a stable order.
var Fields = schema.EDTFields

// Limits of the accepted values (see schema).
const (
	MaxDelay          = schema.MaxEDTDelay
	MaxShapeLimitTime = schema.MaxShapeLimitTime
	DefaultShapeLimit = schema.DefaultShapeLimit
)

// Distribution is a jitter distribution, named as netem names them.
type Distribution = schema.JitterDistribution

// The jitter distributions; Uniform is the default.
const (
	Uniform      = schema.JitterUniform
	Normal       = schema.JitterNormal
	Pareto       = schema.JitterPareto
	ParetoNormal = schema.JitterParetoNormal
)

// Profile is the EDT part of a port's or class's impairment
// (schema.EDTProfile). The zero value delays and shapes nothing.
type Profile = schema.EDTProfile

// FieldError is an invalid EDT field (schema.EDTFieldError).
type FieldError = schema.EDTFieldError

// ParseFields reads the EDT fields out of an IMPAIRMENT or
// IMPAIRMENT_FLOW hash: schema.ParseEDTFields.
func ParseFields(fields map[string]string) (Profile, bool, error) {
	return schema.ParseEDTFields(fields)
}
