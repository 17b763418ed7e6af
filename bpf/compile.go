package bpf

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"sort"

	"github.com/switchyard-net/switchyard/schema"
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

// Profile is the data plane form of a schema.ImpairmentProfile.
type Profile = impairProfile

// Tuple is a match tuple, mask or match key of impair.c.
type Tuple = impairTuple

// Counters of one slot, summed over CPUs.
type Counters struct {
	RxPackets, RxBytes, Passed, DroppedLoss, DroppedRate, Corrupted uint64
}

// MaxEDTClass is the highest EDT class id a rule can carry (impair.c
// hands it to tc as metadata, MARK_MAGIC | id); ids above it are the
// per-port classes of impaird.
const MaxEDTClass = 0x7fffff

// Compile turns a port's IMPAIRMENT entry (nil when absent) and its
// IMPAIRMENT_FLOW entries into a Plan. Rules are ranked by priority
// (higher first), then name.
func Compile(port *schema.Impairment, flows []schema.ImpairmentFlow) (*Plan, error) {
	return CompileClasses(port, flows, nil)
}

// CompileClasses is Compile with the EDT class id of each rule with
// delay/jitter/shaping (IMPAIRMENT_FLOW name -> 1..MaxEDTClass): a packet
// such a rule matches and passes leaves XDP with the id as metadata
// (docs/edt.md). A rule with EDT fields and no id, or rules without EDT
// fields, carry none.
func CompileClasses(port *schema.Impairment, flows []schema.ImpairmentFlow, classes map[string]uint32) (*Plan, error) {
	p := &Plan{}
	if port != nil {
		prof := CompileProfile(&port.ImpairmentProfile, false)
		p.Port = &prof
	}
	if len(flows) > MaxRules {
		return nil, fmt.Errorf("%d IMPAIRMENT_FLOW rules: a port takes at most %d", len(flows), MaxRules)
	}
	sorted := append([]schema.ImpairmentFlow(nil), flows...)
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
		r := Rule{Name: f.Name, Profile: CompileProfile(&f.ImpairmentProfile, f.Scope == schema.ScopeFlow), Family: f.Family()}
		if id := classes[f.Name]; f.EDT.Active() && id != 0 {
			if id > MaxEDTClass {
				return nil, fmt.Errorf("IMPAIRMENT_FLOW %s: EDT class id %#x above %#x", f.Name, id, MaxEDTClass)
			}
			r.Profile.EdtClass = id
		}
		r.Masks, r.Matches = compileMatch(f)
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
func CompileProfile(s *schema.ImpairmentProfile, scopeFlow bool) Profile {
	var p Profile
	switch s.LossModel {
	case schema.LossGilbert:
		p.Flags |= flagLossGilbert
		p.GeP, p.GeR = prob(s.GEP), prob(s.GER)
		p.GeLg, p.GeLb = prob(s.GELossGood), prob(s.GELossBad)
	case schema.LossPeriodic:
		p.Flags |= flagLossPeriodic
		p.Period = s.Period
	default:
		if s.Loss > 0 {
			p.Flags |= flagLossRandom
			p.Loss = prob(s.Loss)
		}
	}
	if s.Rate > 0 {
		p.Flags |= flagRate
		nsPerByte := 8e9 / float64(s.Rate)
		p.NsPerByteFp = uint64(math.Round(nsPerByte * 65536))
		// A burst of a second or more at 1 bit/s is years of ticks: cap
		// it far below the point where tat arithmetic could overflow.
		p.Depth = uint64(min(math.Round(float64(s.EffectiveBurst())*nsPerByte*tickPerNs), 1<<60))
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

// compileMatch gives the masks and masked keys of one rule: one entry per
// (sport block, dport block) pair.
func compileMatch(f *schema.ImpairmentFlow) (masks, keys []Tuple) {
	var m, k Tuple
	if fam := f.Family(); fam != 0 {
		m.Family, k.Family = 0xff, uint8(fam)
	}
	if f.Proto >= 0 {
		m.Proto, k.Proto = 0xff, uint8(f.Proto)
	}
	if f.DSCP >= 0 {
		m.Dscp, k.Dscp = 0xff, uint8(f.DSCP)
	}
	if f.VLAN != 0 {
		m.Vlan, k.Vlan = 0xffff, uint16(f.VLAN)
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
func portBlocks(r schema.PortRange) []portBlock {
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
