package bpf

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// Apply makes the port's maps hold plan, changing only what differs, in an
// order that never leaves a packet without a complete rule set:
//
//  1. new rules get a free slot (counters and state zeroed first);
//  2. new masks go into free mask ids; new or changed match entries are
//     written whole (slot, rank and profile in one map update, so a packet
//     sees the old or the new rule), new ones while their mask is still
//     inactive; a changed profile gets a new generation, which makes the
//     data plane reset that rule's RNG, Gilbert and policer state;
//  3. the config (active masks + port profile + IPv4 shape filter, one
//     pointer swap) becomes old+new masks, its filter naming every entry
//     present or wanted; stale match entries are deleted; the config
//     becomes the new masks only, its filter naming the wanted entries;
//  4. removed rules' names are cleared.
//
// Running Apply twice with the same plan changes nothing the second time.
func (p *Port) Apply(plan *Plan) error {
	cfg, hasCfg, err := p.readCfg()
	if err != nil {
		return err
	}
	have, err := p.readMatches()
	if err != nil {
		return err
	}
	if plan.BeforeWrite != nil {
		plan.BeforeWrite()
	}
	if err := p.applySlots(plan); err != nil {
		return err
	}

	// Profiles keep their generation when unchanged.
	curProf := map[uint32]Profile{}
	for _, m := range have {
		curProf[m.Slot] = m.Prof
	}
	withGen := func(want Profile, cur Profile, ok bool) Profile {
		want.Gen = cur.Gen
		if ok && cur == want {
			return want
		}
		want.Gen = p.newGen()
		return want
	}
	newCfg := impairPortCfg{}
	if plan.Port != nil {
		if !hasCfg || cfg.HasPort == 0 {
			if err := p.resetSlot(PortSlot); err != nil {
				return err
			}
		}
		newCfg.HasPort = 1
		newCfg.Port = withGen(*plan.Port, cfg.Port, hasCfg && cfg.HasPort != 0)
	}

	// Current masks by shape.
	oldActive := cfg.ActiveMasks
	ids := map[Tuple]uint32{}
	for id := uint32(0); id < MaxMasks; id++ {
		if oldActive&(1<<id) == 0 {
			continue
		}
		var m Tuple
		if err := p.objs.Masks.Lookup(id, &m); err != nil {
			return fmt.Errorf("read mask %d: %w", id, err)
		}
		ids[m] = id
	}
	var newActive uint32
	want := map[matchEntry]impairMatch{}
	for rank, r := range plan.Rules {
		slot := p.slots[r.Name]
		cur, ok := curProf[slot]
		prof := withGen(r.Profile, cur, ok)
		for i, key := range r.Matches {
			mask := r.Masks[i]
			id, ok := ids[mask]
			if !ok {
				id = freeMask(oldActive | newActive)
				if id >= MaxMasks {
					return fmt.Errorf("no free mask id: a port takes at most %d match shapes", MaxMasks)
				}
				// a free id's pre-check is emptied (off) before the mask is written
				if err := p.objs.Blooms.Put(id, &impairBloom{}); err != nil {
					return fmt.Errorf("reset bloom %d: %w", id, err)
				}
				if err := p.objs.Masks.Put(id, &mask); err != nil {
					return fmt.Errorf("write mask %d: %w", id, err)
				}
				ids[mask] = id
			}
			newActive |= 1 << id
			key.MaskId = uint8(id)
			for _, v4 := range families(r.Family) {
				e := matchEntry{v4: v4, key: key}
				if _, dup := want[e]; !dup { // an earlier (better) rule keeps it
					want[e] = impairMatch{Slot: slot, Rank: uint32(rank), Prof: prof}
				}
			}
		}
	}
	if err := p.fillBlooms(oldActive|newActive, have, want); err != nil {
		return err
	}
	for e, v := range want {
		if cur, ok := have[e]; ok && cur == v {
			continue
		}
		if err := p.putMatch(e, &v); err != nil {
			return err
		}
	}
	newCfg.ActiveMasks = oldActive | newActive
	maskOf := map[uint8]Tuple{}
	for m, id := range ids {
		maskOf[uint8(id)] = m
	}
	setFilter(&newCfg, maskOf, have, want)
	setInline(&newCfg, have, want)
	if err := p.putCfg(newCfg, cfg, hasCfg); err != nil {
		return err
	}
	for e := range have {
		if _, ok := want[e]; ok {
			continue
		}
		if err := p.deleteMatch(e); err != nil {
			return err
		}
	}
	final := newCfg
	final.ActiveMasks = newActive
	setFilter(&final, maskOf, want)
	setInline(&final, want)
	if err := p.putCfg(final, newCfg, true); err != nil {
		return err
	}
	return p.dropRemoved(plan)
}

// putCfg writes the port config unless it is unchanged; an empty config
// (no masks, no port profile) is deleted so the program returns at once.
func (p *Port) putCfg(want, cur impairPortCfg, hasCur bool) error {
	if want.ActiveMasks == 0 && want.HasPort == 0 {
		if err := p.objs.Cfg.Delete(p.cfgKey); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete cfg: %w", err)
		}
		return nil
	}
	if hasCur && want == cur {
		return nil
	}
	inner, err := ebpf.NewMap(p.innerSpec)
	if err != nil {
		return fmt.Errorf("create config array: %w", err)
	}
	defer inner.Close() // cfg holds its own reference
	if err := inner.Put(uint32(0), &want); err != nil {
		return fmt.Errorf("write config array: %w", err)
	}
	if err := p.objs.Cfg.Put(p.cfgKey, inner); err != nil {
		return fmt.Errorf("publish config: %w", err)
	}
	return nil
}

// readCfg returns the published port config; false when there is none.
func (p *Port) readCfg() (impairPortCfg, bool, error) {
	var (
		cfg impairPortCfg
		id  uint32
	)
	if err := p.objs.Cfg.Lookup(p.cfgKey, &id); errors.Is(err, ebpf.ErrKeyNotExist) {
		return cfg, false, nil
	} else if err != nil {
		return cfg, false, fmt.Errorf("read cfg: %w", err)
	}
	inner, err := ebpf.NewMapFromID(ebpf.MapID(id))
	if err != nil {
		return cfg, false, fmt.Errorf("open config array %d: %w", id, err)
	}
	defer inner.Close()
	if err := inner.Lookup(uint32(0), &cfg); err != nil {
		return cfg, false, fmt.Errorf("read config array %d: %w", id, err)
	}
	return cfg, true, nil
}

func (p *Port) newGen() uint32 {
	g := p.nextGen
	p.nextGen++
	if p.nextGen == 0 {
		p.nextGen = 1 // 0 is what a fresh per-CPU slot holds
	}
	return g
}

func (p *Port) applySlots(plan *Plan) error {
	used := map[uint32]bool{}
	for _, s := range p.slots {
		used[s] = true
	}
	next := uint32(1)
	for _, r := range plan.Rules {
		if _, ok := p.slots[r.Name]; ok {
			continue
		}
		for used[next] {
			next++
		}
		if next >= maxSlots {
			return fmt.Errorf("no free rule slot for %s: a port takes at most %d rules", r.Name, MaxRules)
		}
		if err := p.resetSlot(next); err != nil {
			return err
		}
		var name impairSlotName
		if len(r.Name) >= len(name.Name) {
			return fmt.Errorf("rule name %q is longer than %d bytes", r.Name, len(name.Name)-1)
		}
		for i := 0; i < len(r.Name); i++ {
			name.Name[i] = int8(r.Name[i])
		}
		if err := p.objs.SlotNames.Put(next, &name); err != nil {
			return fmt.Errorf("write slot_names[%d]: %w", next, err)
		}
		p.slots[r.Name] = next
		used[next] = true
	}
	return nil
}

// resetSlot zeroes a slot's per-CPU counters and shared state before a
// rule (or the port profile) starts using it.
func (p *Port) resetSlot(slot uint32) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		n = runtime.NumCPU()
	}
	if err := p.objs.Pcpu.Put(slot, make([]impairSlotPcpu, n)); err != nil {
		return fmt.Errorf("reset counters of slot %d: %w", slot, err)
	}
	if err := p.objs.Shared.Put(slot, &impairSlotShared{}); err != nil {
		return fmt.Errorf("reset state of slot %d: %w", slot, err)
	}
	return nil
}

// dropRemoved clears the names of rules no longer planned (their match
// entries are already gone).
func (p *Port) dropRemoved(plan *Plan) error {
	keep := map[string]bool{}
	for _, r := range plan.Rules {
		keep[r.Name] = true
	}
	for name, slot := range p.slots {
		if keep[name] {
			continue
		}
		if err := p.objs.SlotNames.Put(slot, &impairSlotName{}); err != nil {
			return fmt.Errorf("clear slot_names[%d]: %w", slot, err)
		}
		delete(p.slots, name)
	}
	return nil
}

func freeMask(used uint32) uint32 {
	for id := uint32(0); id < MaxMasks; id++ {
		if used&(1<<id) == 0 {
			return id
		}
	}
	return MaxMasks
}

// matchEntry names one entry of matches4 (v4) or matches6; key is the
// 48-byte tuple form in both cases (IPv4 addresses in word 0).
type matchEntry struct {
	v4  bool
	key Tuple
}

// families lists the maps a rule of family fam (4, 6 or 0 = both) is in.
func families(fam int) []bool {
	switch fam {
	case 4:
		return []bool{true}
	case 6:
		return []bool{false}
	}
	return []bool{true, false}
}

func to4(t Tuple) impairTuple4 {
	return impairTuple4{MaskId: t.MaskId, Family: t.Family, Proto: t.Proto, Dscp: t.Dscp,
		Vlan: t.Vlan, Sport: t.Sport, Dport: t.Dport, Src: t.Src[0], Dst: t.Dst[0]}
}

func from4(t impairTuple4) Tuple {
	return Tuple{MaskId: t.MaskId, Family: t.Family, Proto: t.Proto, Dscp: t.Dscp,
		Vlan: t.Vlan, Sport: t.Sport, Dport: t.Dport, Src: [4]uint32{t.Src}, Dst: [4]uint32{t.Dst}}
}

// readMatches returns the entries of both match maps.
func (p *Port) readMatches() (map[matchEntry]impairMatch, error) {
	out := map[matchEntry]impairMatch{}
	var (
		k4 impairTuple4
		k6 Tuple
		v  impairMatch
	)
	it := p.objs.Matches4.Iterate()
	for it.Next(&k4, &v) {
		out[matchEntry{v4: true, key: from4(k4)}] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read matches4: %w", err)
	}
	it = p.objs.Matches6.Iterate()
	for it.Next(&k6, &v) {
		out[matchEntry{key: k6}] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read matches6: %w", err)
	}
	return out, nil
}

func (p *Port) putMatch(e matchEntry, v *impairMatch) error {
	var err error
	if e.v4 {
		k := to4(e.key)
		err = p.objs.Matches4.Put(&k, v)
	} else {
		err = p.objs.Matches6.Put(&e.key, v)
	}
	if err != nil {
		return fmt.Errorf("write match entry: %w", err)
	}
	return nil
}

func (p *Port) deleteMatch(e matchEntry) error {
	var err error
	if e.v4 {
		k := to4(e.key)
		err = p.objs.Matches4.Delete(&k)
	} else {
		err = p.objs.Matches6.Delete(&e.key)
	}
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete match entry: %w", err)
	}
	return nil
}

// bloomHash is the IPv4 pre-check's hash of a masked key (classify4 in
// impair.c computes the same); the top 14 bits index the mask's bits.
func bloomHash(k impairTuple4) uint32 {
	h := (uint64(k.Src)<<32 | uint64(k.Dst)) * 0x9E3779B97F4A7C15
	h ^= uint64(k.Sport)<<48 | uint64(k.Dport)<<32 | uint64(k.Vlan)<<16 | uint64(k.Proto)<<8 | uint64(k.Dscp)
	h *= 0xBF58476D1CE4E5B9
	return uint32(h >> 50)
}

// fillBlooms sets, before any match entry is written, the pre-check bit of
// every IPv4 entry present or wanted under each active mask, then turns the
// mask's pre-check on: bits only ever grow while a mask id is in use (a
// freed id is emptied when reused), so a set of bits the program reads is
// always a superset of the entries it can find.
func (p *Port) fillBlooms(active uint32, have, want map[matchEntry]impairMatch) error {
	bits := map[uint8]*[BloomWords]uint64{}
	add := func(e matchEntry) {
		if !e.v4 || active&(1<<e.key.MaskId) == 0 {
			return
		}
		b := bits[e.key.MaskId]
		if b == nil {
			b = new([BloomWords]uint64)
			bits[e.key.MaskId] = b
		}
		i := bloomHash(to4(e.key))
		b[i/64] |= 1 << (i % 64)
	}
	for e := range have {
		add(e)
	}
	for e := range want {
		add(e)
	}
	for id := uint32(0); id < MaxMasks; id++ {
		if active&(1<<id) == 0 {
			continue
		}
		var cur impairBloom
		if err := p.objs.Blooms.Lookup(id, &cur); err != nil {
			return fmt.Errorf("read bloom %d: %w", id, err)
		}
		next := cur
		if b := bits[uint8(id)]; b != nil {
			for w := range next.Bits {
				next.Bits[w] |= b[w]
			}
		}
		if next.Bits != cur.Bits {
			if err := p.objs.Blooms.Put(id, &next); err != nil { // On unchanged
				return fmt.Errorf("write bloom %d: %w", id, err)
			}
		}
		if next.On == 0 {
			next.On = 1 // a second write: the bits are all in place before
			if err := p.objs.Blooms.Put(id, &next); err != nil {
				return fmt.Errorf("write bloom %d: %w", id, err)
			}
		}
	}
	return nil
}

// FilterShift is the size of the IPv4 shape filter (impair.c
// FILTER_SHIFT): 2^14 entries, indexed like a pre-check bloom (bloomHash).
const FilterShift = 14

// setFilter fills cfg's IPv4 shape filter from the entries of its active
// masks: common is the AND of every active mask with IPv4 entries, and the
// filter word of each entry's key ANDed with common gets the entry's mask
// bit. A packet then searches only the masks named by the word of its own
// tuple ANDed with common: a superset of the masks that can match it (two
// keys that differ under common differ under every mask it is the AND of).
// The filter is published in the config array with the active masks, so
// a packet always reads a filter made for the masks it searches. With one
// IPv4 mask it stays off: that mask's bloom does the same job.
func setFilter(cfg *impairPortCfg, maskOf map[uint8]Tuple, entries ...map[matchEntry]impairMatch) {
	cfg.FilterOn, cfg.Common, cfg.Filter = 0, impairTuple4{}, [1 << FilterShift]uint32{}
	used := uint32(0)
	for _, es := range entries {
		for e := range es {
			if e.v4 && cfg.ActiveMasks&(1<<e.key.MaskId) != 0 {
				used |= 1 << e.key.MaskId
			}
		}
	}
	if used&(used-1) == 0 {
		return // one mask (or none): its bloom already skips the lookup on a miss
	}
	all := ^uint32(0)
	common := impairTuple4{Family: 0xff, Proto: 0xff, Dscp: 0xff, Vlan: 0xffff, Sport: 0xffff, Dport: 0xffff, Src: all, Dst: all}
	for id := uint8(0); id < MaxMasks; id++ {
		if used&(1<<id) != 0 {
			common = and4(common, to4(maskOf[id]))
		}
	}
	for _, es := range entries {
		for e := range es {
			if e.v4 && used&(1<<e.key.MaskId) != 0 {
				cfg.Filter[bloomHash(and4(to4(e.key), common))] |= 1 << e.key.MaskId
			}
		}
	}
	cfg.FilterOn, cfg.Common = 1, common
}

// impTabShift is impair.c's IMP_TAB_SHIFT: inline entries per port and
// address family.
const impTabShift = 12

// impWords4 gives an IPv4 key's inline form (classify.h imp_w0, imp_w1,
// then dst), the words its inline slot is hashed from.
func impWords4(k impairTuple4) [6]uint64 {
	return [6]uint64{
		uint64(k.MaskId) | uint64(k.Family)<<8 | uint64(k.Proto)<<16 | uint64(k.Dscp)<<24 | uint64(k.Vlan)<<32 | uint64(k.Sport)<<48,
		uint64(k.Dport) | uint64(k.Src)<<32,
		uint64(k.Dst),
	}
}

// impWords6 gives an IPv6 key's inline form (classify.h, classify6):
// imp_w0's word, dport, then the addresses two 32-bit words (as loaded)
// per 64-bit word, the first in the high half.
func impWords6(k Tuple) [6]uint64 {
	w := impWords4(to4(k))
	return [6]uint64{w[0], uint64(k.Dport),
		uint64(k.Src[0])<<32 | uint64(k.Src[1]), uint64(k.Src[2])<<32 | uint64(k.Src[3]),
		uint64(k.Dst[0])<<32 | uint64(k.Dst[1]), uint64(k.Dst[2])<<32 | uint64(k.Dst[3])}
}

// setInline fills cfg's inline entries (port_cfg.tab4 and tab6,
// inline.go) from the entries of its active masks, and the profile of
// each rule slot they name. entries are the maps matches4 and matches6
// hold while cfg is published, a later one's value winning for a key in
// several (the value written last).
func setInline(cfg *impairPortCfg, entries ...map[matchEntry]impairMatch) {
	cfg.Prof = [maxSlots]Profile{}
	vals := map[matchEntry]impairMatch{}
	for _, es := range entries {
		for e, v := range es {
			if cfg.ActiveMasks&(1<<e.key.MaskId) != 0 {
				vals[e] = v
			}
		}
	}
	var set [maxSlots]bool
	// take reports whether an entry of rule slot m.Slot can be inline: its
	// profile is the one prof holds for the slot (a rule's stale entry
	// with its old profile while the new one is inline is left to the
	// hash, which holds its value).
	take := func(m *impairMatch) bool {
		if m.Slot >= maxSlots || (set[m.Slot] && cfg.Prof[m.Slot] != m.Prof) {
			return false
		}
		set[m.Slot], cfg.Prof[m.Slot] = true, m.Prof
		return true
	}
	for _, v4 := range []bool{true, false} {
		var ents []inlineEntry
		var ms []impairMatch
		for e, v := range vals {
			if e.v4 != v4 {
				continue
			}
			w := impWords6(e.key)
			if v4 {
				w = impWords4(to4(e.key))
			}
			ents = append(ents, inlineEntry{w, v.Rank})
			ms = append(ms, v)
		}
		pick, more := inlineSlots(ents, impTabShift)
		for s, i := range pick {
			var m uint32
			if more[s] {
				m = 1
			}
			// empty: a word no key has (dst, dport are 32, 16 bits)
			e4 := impairAclEnt4{K: [3]uint64{2: ^uint64(0)}, Rank: noRank, More: m}
			e6 := impairAclEnt6{K: [6]uint64{1: ^uint64(0)}, Rank: noRank, More: m}
			if i >= 0 && take(&ms[i]) {
				w := ents[i].w
				e4 = impairAclEnt4{K: [3]uint64{w[0], w[1], w[2]}, Rank: ms[i].Rank, Idx: ms[i].Slot, More: m}
				e6 = impairAclEnt6{K: w, Rank: ms[i].Rank, Idx: ms[i].Slot, More: m}
			} else if i >= 0 {
				e4.More, e6.More = 1, 1
			}
			if v4 {
				cfg.Tab4[s] = e4
			} else {
				cfg.Tab6[s] = e6
			}
		}
	}
}

// and4 is a key (or mask) ANDed with a mask, mask_id 0.
func and4(k, m impairTuple4) impairTuple4 {
	return impairTuple4{Family: k.Family & m.Family, Proto: k.Proto & m.Proto, Dscp: k.Dscp & m.Dscp,
		Vlan: k.Vlan & m.Vlan, Sport: k.Sport & m.Sport, Dport: k.Dport & m.Dport, Src: k.Src & m.Src, Dst: k.Dst & m.Dst}
}
