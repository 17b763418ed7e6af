package bpf

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"sort"
)

// Limits of one port's data plane (they match impair.c).
const (
	MaxRules   = 1024  // IMPAIRMENT_FLOW rules per port (slots 1..1024)
	MaxMasks   = 32    // distinct match shapes per port
	BloomWords = 256   // IPv4 pre-check: 64-bit words per mask (impair.c BLOOM_WORDS)
	MaxMatches = 65536 // match entries per port and address family (port ranges expand)
	maxSlots   = MaxRules + 1
)

// Profile flags (impair.c F_*).
const (
	flagLossRandom   = 1
	flagLossGilbert  = 2
	flagLossPeriodic = 4
	flagRate         = 8
	flagCorrupt      = 16
	flagScopeFlow    = 32
	flagSeeded       = 64
	flagLossCorr     = 128
	flagLoss4State   = 256
	flagDup          = 512
)

// tickPerNs is the policer's time unit (impair.c TICK_SHIFT): 1/64 ns.
const tickPerNs = 64

// PortSlot is the slot of the port profile; rules use 1..MaxRules.
const PortSlot = 0

// Plan is the compiled desired state of one port: what the maps must hold.
// Slots (which rule lives where) are assigned by the Port that applies it,
// so the Plan names rules rather than slots.
type Plan struct {
	// Port is the port profile; nil when the port has none (unmatched
	// packets then pass uncounted).
	Port *Profile
	// Rules in rank order (best first).
	Rules []Rule
	// BeforeWrite, when set, is called once by Port.Apply after it has
	// read the port's maps and before its first write: a schedule waits
	// there for its step's due time, so the reads are not late work.
	BeforeWrite func()
}

// Rule is one compiled IMPAIRMENT_FLOW rule.
type Rule struct {
	Name    string
	Profile Profile
	// Family is 4 or 6 when the rule only matches that family (its
	// entries go into matches4 or matches6), 0 for both.
	Family int
	// Matches are the rule's masked match tuples (mask_id unset); a port
	// range becomes several prefix-aligned entries.
	Matches []Tuple
	// Masks holds, for each entry of Matches, its mask.
	Masks []Tuple
}

// Profile is the data plane form of a Spec (map value of impair.c).
type Profile = impairProfile

// Tuple is a match tuple, mask or match key of impair.c.
type Tuple = impairTuple

// LossModel selects how a Spec drops packets at random.
type LossModel uint8

// Loss models: independent random loss (Spec.Loss), the Gilbert-Elliott
// two-state burst model (Spec.GE*) and "drop every Period-th packet".
const (
	LossRandom LossModel = iota
	LossGilbert
	LossPeriodic
	// LossState is netem's 4-state Markov model (Spec.P13 ... P14).
	LossState
)

// Spec is what happens to the packets of a port or a rule, in the units
// an operator writes: percentages 0-100, bit/s, bytes. The zero value
// impairs nothing. Compile does not validate it: the caller (impaird,
// from CONFIG_DB through the schema) hands in checked values.
type Spec struct {
	LossModel LossModel
	Loss      float64 // random loss, percent (LossRandom)
	// Gilbert-Elliott: per-packet transition probabilities good->bad (P)
	// and bad->good (R), and the loss in each state, all percent.
	GEP, GER, GELossGood, GELossBad float64
	Period                          uint64  // LossPeriodic: drop every Period-th packet
	Rate                            uint64  // policer rate in bit/s; 0 = no policer
	Burst                           uint64  // policer bucket in bytes (with Rate; the caller picks any default)
	Corrupt                         float64 // percent of passed packets with one L4 payload bit flipped
	Seed                            *uint64 // nil = seeded from the kernel's RNG
	// LossCorr is netem's loss correlation, percent (LossRandom): the
	// random number of each packet is netem's get_crandom.
	LossCorr float64
	// P13, P31, P32, P23, P14: LossState's transition probabilities,
	// percent, as tc netem "loss state" takes them (all given).
	P13, P31, P32, P23, P14 float64
	// Duplicate is the percent of passed packets the port's tc ingress
	// program (impair_dup, see AttachDuplicate) delivers twice.
	Duplicate float64
}

// PortRange is an inclusive L4 port range; the zero value (Set false)
// matches any port.
type PortRange struct {
	Set    bool
	Lo, Hi uint16
}

// Contains reports whether port is in the range (any port when not Set).
func (r PortRange) Contains(port uint16) bool { return !r.Set || (port >= r.Lo && port <= r.Hi) }

// Match selects a rule's packets; every set field must match, and the
// zero value matches every IP packet.
type Match struct {
	Src, Dst     netip.Prefix // invalid = any; masked, of one family
	Proto        uint8        // IP protocol, when ProtoSet
	ProtoSet     bool
	Sport, Dport PortRange
	DSCP         uint8 // 0-63, when DSCPSet
	DSCPSet      bool
	VLAN         uint16 // outer 802.1Q VID; 0 = any
}

// Family is 4 or 6 when Src, Dst or Proto (icmp, icmpv6) pin the address
// family, else 0.
func (m *Match) Family() int {
	for _, p := range []netip.Prefix{m.Src, m.Dst} {
		if p.IsValid() {
			if p.Addr().Is4() {
				return 4
			}
			return 6
		}
	}
	if m.ProtoSet {
		switch m.Proto {
		case 1:
			return 4
		case 58:
			return 6
		}
	}
	return 0
}

// RuleSpec is one rule (an IMPAIRMENT_FLOW entry) as Compile takes it.
type RuleSpec struct {
	Name     string // unique on the port; names counters and slots
	Priority int    // higher wins; ties go to the smaller Name
	Match    Match
	Spec     Spec
	// ScopeFlow gives every 5-tuple its own Gilbert state, periodic
	// counter and policer bucket instead of one per rule.
	ScopeFlow bool
	// EDTClass, when not 0 (1..MaxEDTClass), is written as metadata in
	// front of every packet the rule matches and passes (docs/edt.md).
	EDTClass uint32
}

// Counters of one slot, summed over CPUs.
type Counters struct {
	RxPackets, RxBytes, Passed, DroppedLoss, DroppedRate, Corrupted uint64
	// Duplicated counts the passed packets sent twice (duplicate).
	Duplicated uint64
}

// Add adds o's counts to c (summing CPUs, or the slots of a port).
func (c *Counters) Add(o Counters) {
	c.RxPackets += o.RxPackets
	c.RxBytes += o.RxBytes
	c.Passed += o.Passed
	c.DroppedLoss += o.DroppedLoss
	c.DroppedRate += o.DroppedRate
	c.Corrupted += o.Corrupted
	c.Duplicated += o.Duplicated
}

// MaxEDTClass is the highest EDT class id a rule can carry (impair.c
// hands it to tc as metadata, MARK_MAGIC | id); ids above it are the
// per-port classes of impaird.
const MaxEDTClass = 0x7fffff

// Compile turns a port's profile (nil when it has none) and its rules
// into a Plan. Rules are ranked by priority (higher first), then name.
func Compile(port *Spec, rules []RuleSpec) (*Plan, error) {
	p := &Plan{}
	if port != nil {
		prof := CompileProfile(port, false)
		p.Port = &prof
	}
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%d IMPAIRMENT_FLOW rules: a port takes at most %d", len(rules), MaxRules)
	}
	sorted := append([]RuleSpec(nil), rules...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Priority != sorted[j].Priority {
			return sorted[i].Priority > sorted[j].Priority
		}
		return sorted[i].Name < sorted[j].Name
	})
	masks := map[Tuple]bool{}
	entries4, entries6 := 0, 0
	for i := range sorted {
		f := &sorted[i]
		r := Rule{Name: f.Name, Profile: CompileProfile(&f.Spec, f.ScopeFlow), Family: f.Match.Family()}
		if f.EDTClass > MaxEDTClass {
			return nil, fmt.Errorf("IMPAIRMENT_FLOW %s: EDT class id %#x above %#x", f.Name, f.EDTClass, MaxEDTClass)
		}
		r.Profile.EdtClass = f.EDTClass
		r.Masks, r.Matches = compileMatch(&f.Match)
		for _, m := range r.Masks {
			masks[m] = true
		}
		if r.Family != 6 {
			entries4 += len(r.Matches)
		}
		if r.Family != 4 {
			entries6 += len(r.Matches)
		}
		p.Rules = append(p.Rules, r)
	}
	if len(masks) > MaxMasks {
		return nil, fmt.Errorf("the rules use %d distinct match shapes (combinations of fields, prefix lengths and port-range blocks): a port takes at most %d", len(masks), MaxMasks)
	}
	if entries := max(entries4, entries6); entries > MaxMatches {
		return nil, fmt.Errorf("the rules expand to %d match entries of one address family (port ranges split into aligned blocks): a port takes at most %d", entries, MaxMatches)
	}
	return p, nil
}

// CompileProfile converts percentages to 2^32-scaled thresholds and the
// rate to the policer's nanosecond cost and depth. Gen is left 0.
func CompileProfile(s *Spec, scopeFlow bool) Profile {
	var p Profile
	switch s.LossModel {
	case LossGilbert:
		p.Flags |= flagLossGilbert
		p.GeP, p.GeR = prob(s.GEP), prob(s.GER)
		p.GeLg, p.GeLb = prob(s.GELossGood), prob(s.GELossBad)
	case LossPeriodic:
		p.Flags |= flagLossPeriodic
		p.Period = s.Period
	case LossState:
		// impair.c's field sharing: a1..a5 = p13, p31, p32, p14, p23
		p.Flags |= flagLoss4State
		p.GeP, p.GeR, p.GeLg = netemProb(s.P13), netemProb(s.P31), netemProb(s.P32)
		p.GeLb, p.Period = netemProb(s.P14), netemProb(s.P23)
	default:
		switch {
		case s.Loss > 0 && s.LossCorr > 0:
			// impair.c's field sharing: rho and netem's loss threshold
			p.Flags |= flagLossCorr
			p.GeP, p.GeR = netemProb(s.LossCorr), netemProb(s.Loss)
			p.Loss = prob(s.Loss)
		case s.Loss > 0:
			p.Flags |= flagLossRandom
			p.Loss = prob(s.Loss)
		}
	}
	if s.Duplicate > 0 {
		p.Flags |= flagDup
		p.Dup = uint32(min(prob(s.Duplicate), math.MaxUint32))
	}
	if s.Rate > 0 {
		p.Flags |= flagRate
		nsPerByte := 8e9 / float64(s.Rate)
		p.NsPerByteFp = uint64(math.Round(nsPerByte * 65536))
		// A burst of a second or more at 1 bit/s is years of ticks: cap
		// it far below the point where tat arithmetic could overflow.
		p.Depth = uint64(min(math.Round(float64(s.Burst)*nsPerByte*tickPerNs), 1<<60))
	}
	if s.Corrupt > 0 {
		p.Flags |= flagCorrupt
		p.Corrupt = prob(s.Corrupt)
	}
	if scopeFlow {
		p.Flags |= flagScopeFlow
	}
	if s.Seed != nil {
		p.Flags |= flagSeeded
		p.Seed = *s.Seed
	}
	return p
}

// prob scales a percentage to the 2^32 threshold impair.c compares a
// 32-bit random number against (100% = 2^32: always).
func prob(pct float64) uint64 {
	return uint64(math.Round(pct / 100 * (1 << 32)))
}

// netemProb is a percentage as tc netem sends it (get_percent: rint of
// the fraction times 2^32-1).
func netemProb(pct float64) uint64 {
	return uint64(math.RoundToEven(pct / 100 * math.MaxUint32))
}

// compileMatch gives the masks and masked keys of one rule: one entry per
// (sport block, dport block) pair.
func compileMatch(f *Match) (masks, keys []Tuple) {
	var m, k Tuple
	if fam := f.Family(); fam != 0 {
		m.Family, k.Family = 0xff, uint8(fam)
	}
	if f.ProtoSet {
		m.Proto, k.Proto = 0xff, f.Proto
	}
	if f.DSCPSet {
		m.Dscp, k.Dscp = 0xff, f.DSCP
	}
	if f.VLAN != 0 {
		m.Vlan, k.Vlan = 0xffff, f.VLAN
	}
	m.Src, k.Src = prefixWords(f.Src)
	m.Dst, k.Dst = prefixWords(f.Dst)
	for _, sp := range portBlocks(f.Sport) {
		for _, dp := range portBlocks(f.Dport) {
			mm, kk := m, k
			mm.Sport, kk.Sport = sp.mask, sp.val
			mm.Dport, kk.Dport = dp.mask, dp.val
			masks = append(masks, mm)
			keys = append(keys, kk)
		}
	}
	return masks, keys
}

// prefixWords renders a prefix as the mask and address words of a tuple
// (network byte order in memory, as the packet has them).
func prefixWords(p netip.Prefix) (mask, addr [4]uint32) {
	if !p.IsValid() {
		return
	}
	var mb, ab [16]byte
	a := p.Addr().AsSlice()
	for i := 0; i < p.Bits(); i++ {
		mb[i/8] |= 0x80 >> (i % 8)
	}
	for i := range a {
		ab[i] = a[i] & mb[i]
	}
	for i := 0; i < 4; i++ {
		mask[i] = binary.NativeEndian.Uint32(mb[4*i:])
		addr[i] = binary.NativeEndian.Uint32(ab[4*i:])
	}
	return
}

type portBlock struct{ val, mask uint16 }

// portBlocks splits a port range into prefix-aligned blocks (at most 30),
// as a TCAM does: 1000-2000 = 1000/13 bits ... An unset range is one
// wildcard block.
func portBlocks(r PortRange) []portBlock {
	if !r.Set || (r.Lo == 0 && r.Hi == 0xffff) {
		return []portBlock{{0, 0}}
	}
	var out []portBlock
	lo, hi := uint32(r.Lo), uint32(r.Hi)
	for lo <= hi {
		size := uint32(1)
		for lo&(size*2-1) == 0 && lo+size*2-1 <= hi && size < 0x10000 {
			size *= 2
		}
		out = append(out, portBlock{val: uint16(lo), mask: uint16(0xffff &^ (size - 1))})
		lo += size
	}
	return out
}
