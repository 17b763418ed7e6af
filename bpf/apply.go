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
//  2. changed profiles are written whole, each in one map update (a packet
//     sees the old or the new profile), with a new generation so the data
//     plane resets that rule's RNG, Gilbert and policer state;
//  3. new masks go into free mask ids, new match entries are added while
//     their mask is still inactive, then the active set becomes old+new;
//  4. stale match entries are deleted, the active set becomes new;
//  5. removed rules' profiles and names are deleted.
//
// Running Apply twice with the same plan changes nothing the second time.
func (p *Port) Apply(plan *Plan) error {
	if err := p.applySlots(plan); err != nil {
		return err
	}
	if err := p.applyProfiles(plan); err != nil {
		return err
	}
	return p.applyMatches(plan)
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
	zero := make([]impairSlotPcpu, runtime.NumCPU())
	if n, err := ebpf.PossibleCPU(); err == nil {
		zero = make([]impairSlotPcpu, n)
	}
	if err := p.objs.Pcpu.Put(slot, zero); err != nil {
		return fmt.Errorf("reset counters of slot %d: %w", slot, err)
	}
	if err := p.objs.Shared.Put(slot, &impairSlotShared{}); err != nil {
		return fmt.Errorf("reset state of slot %d: %w", slot, err)
	}
	return nil
}

// putProfile writes want into slot unless the slot already holds it
// (ignoring the generation).
func (p *Port) putProfile(slot uint32, want Profile) error {
	var cur Profile
	err := p.objs.Profiles.Lookup(slot, &cur)
	if err == nil {
		want.Gen = cur.Gen
		if cur == want {
			return nil
		}
	} else if !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("read profile of slot %d: %w", slot, err)
	}
	want.Gen = p.nextGen
	p.nextGen++
	if p.nextGen == 0 {
		p.nextGen = 1 // 0 is what a fresh per-CPU slot holds
	}
	if err := p.objs.Profiles.Put(slot, &want); err != nil {
		return fmt.Errorf("write profile of slot %d: %w", slot, err)
	}
	return nil
}

func (p *Port) applyProfiles(plan *Plan) error {
	if plan.Port != nil {
		var cur Profile
		if err := p.objs.Profiles.Lookup(uint32(PortSlot), &cur); errors.Is(err, ebpf.ErrKeyNotExist) {
			if err := p.resetSlot(PortSlot); err != nil {
				return err
			}
		}
		if err := p.putProfile(PortSlot, *plan.Port); err != nil {
			return err
		}
	}
	for _, r := range plan.Rules {
		if err := p.putProfile(p.slots[r.Name], r.Profile); err != nil {
			return err
		}
	}
	return nil
}

func (p *Port) applyMatches(plan *Plan) error {
	var cfg impairPortCfg
	if err := p.objs.Cfg.Lookup(uint32(0), &cfg); err != nil {
		return fmt.Errorf("read cfg: %w", err)
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
	// Desired entries; masks reuse ids with the same shape.
	var newActive uint32
	want := map[Tuple]impairMatch{}
	for rank, r := range plan.Rules {
		for i, key := range r.Matches {
			mask := r.Masks[i]
			id, ok := ids[mask]
			if !ok {
				id = freeMask(oldActive | newActive)
				if id >= MaxMasks {
					return fmt.Errorf("no free mask id: a port takes at most %d match shapes", MaxMasks)
				}
				if err := p.objs.Masks.Put(id, &mask); err != nil {
					return fmt.Errorf("write mask %d: %w", id, err)
				}
				ids[mask] = id
			}
			newActive |= 1 << id
			key.MaskId = uint8(id)
			if _, dup := want[key]; !dup { // an earlier (better) rule keeps it
				want[key] = impairMatch{Slot: p.slots[r.Name], Rank: uint32(rank)}
			}
		}
	}
	// Current entries.
	have := map[Tuple]impairMatch{}
	var (
		k Tuple
		v impairMatch
	)
	it := p.objs.Matches.Iterate()
	for it.Next(&k, &v) {
		have[k] = v
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read matches: %w", err)
	}
	for k, v := range want {
		if cur, ok := have[k]; ok && cur == v {
			continue
		}
		if err := p.objs.Matches.Put(&k, &v); err != nil {
			return fmt.Errorf("write match entry: %w", err)
		}
	}
	if err := p.setActive(oldActive | newActive); err != nil {
		return err
	}
	for k := range have {
		if _, ok := want[k]; ok {
			continue
		}
		if err := p.objs.Matches.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete match entry: %w", err)
		}
	}
	if err := p.setActive(newActive); err != nil {
		return err
	}
	return p.dropRemoved(plan)
}

func (p *Port) setActive(active uint32) error {
	if err := p.objs.Cfg.Put(uint32(0), &impairPortCfg{ActiveMasks: active}); err != nil {
		return fmt.Errorf("write cfg: %w", err)
	}
	return nil
}

// dropRemoved deletes the profiles and names of rules no longer planned
// (their match entries are already gone) and the port profile if absent.
func (p *Port) dropRemoved(plan *Plan) error {
	keep := map[string]bool{}
	for _, r := range plan.Rules {
		keep[r.Name] = true
	}
	for name, slot := range p.slots {
		if keep[name] {
			continue
		}
		if err := p.objs.Profiles.Delete(slot); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete profile of %s: %w", name, err)
		}
		if err := p.objs.SlotNames.Put(slot, &impairSlotName{}); err != nil {
			return fmt.Errorf("clear slot_names[%d]: %w", slot, err)
		}
		delete(p.slots, name)
	}
	if plan.Port == nil {
		if err := p.objs.Profiles.Delete(uint32(PortSlot)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete port profile: %w", err)
		}
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
