package bpf

import (
	"errors"
	"fmt"
)

// ACLAction is what an ACL rule does with the packets it matches.
type ACLAction uint8

// ACL actions (SONiC PACKET_ACTION FORWARD / DROP).
const (
	ACLForward ACLAction = iota
	ACLDrop
)

// ACLStage is where an ACL runs on a port.
type ACLStage uint8

// ACL stages: ingress runs in the port's XDP program, egress in a tc
// clsact egress program of the same collection (AttachEgress).
const (
	ACLIngress ACLStage = iota
	ACLEgress
)

func (s ACLStage) String() string {
	if s == ACLEgress {
		return "egress"
	}
	return "ingress"
}

// ACLRule is one rule of a port's ACL (all tables bound to the port and
// stage, merged). Every set field must match.
type ACLRule struct {
	Name     string // "<table>|<rule>", unique per port+stage; names counters
	Priority int    // higher wins; ties go to the smaller Name
	Action   ACLAction
	// Match is the impairment Match: Src/Dst prefix, Proto, Sport/Dport
	// ranges (TCP and UDP ports), DSCP, VLAN (outer VID).
	Match        Match
	EtherType    uint16 // with EtherTypeSet
	EtherTypeSet bool
	// TCPFlags matches when flags&TCPFlagsMask == TCPFlags&TCPFlagsMask;
	// mask 0 = any.
	TCPFlags, TCPFlagsMask   uint8
	ICMPType, ICMPCode       uint8 // ICMP or ICMPv6, by the rule's family
	ICMPTypeSet, ICMPCodeSet bool
}

// ACLRuleError says a rule cannot be held by the data plane.
type ACLRuleError struct {
	Name   string
	Reason string
}

func (e *ACLRuleError) Error() string { return fmt.Sprintf("ACL rule %s: %s", e.Name, e.Reason) }

// ErrACLNotImplemented is returned by the API until the data plane lands.
var ErrACLNotImplemented = errors.New("bpf ACL data plane: not implemented yet")

// ACLPlan is the compiled rule set of one port and stage.
type ACLPlan struct {
	rules []ACLRule
}

// CompileACL ranks rules (priority, then name) and compiles them to the
// data plane's match entries; a rule the maps cannot hold is an
// *ACLRuleError naming it.
func CompileACL(rules []ACLRule) (*ACLPlan, error) {
	return nil, ErrACLNotImplemented
}

// ApplyACL publishes plan as the stage's rule set with one pointer swap
// (a packet sees the old or the new set, never a mix); nil removes the
// stage's ACL.
func (p *Port) ApplyACL(stage ACLStage, plan *ACLPlan) error {
	return ErrACLNotImplemented
}

// ACLCounter is one rule's matched packets and bytes, summed over CPUs.
type ACLCounter struct{ Packets, Bytes uint64 }

// ACLCounters returns the stage's counters by rule Name.
func (p *Port) ACLCounters(stage ACLStage) (map[string]ACLCounter, error) {
	return nil, ErrACLNotImplemented
}

// AttachEgress attaches the collection's tc egress ACL program to
// ifindex (clsact egress, direct action); idempotent.
func (p *Port) AttachEgress(ifindex int) error {
	return ErrACLNotImplemented
}

// DetachEgress takes the egress ACL program off again; not attached is no
// error.
func (p *Port) DetachEgress() error {
	return ErrACLNotImplemented
}
