package bpf

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// aclState is a Port's ACL bookkeeping: the specs of the inner maps and,
// per stage, each rule's counter index. An index stays with its rule
// name across rule-set swaps (so counters of unchanged rules survive a
// swap) and is written to acl_names so a restarted process keeps it.
type aclState struct {
	hdrSpec, rules4Spec, rules6Spec *ebpf.MapSpec
	idx                             [2]map[string]uint32
	// applied is the digest of the plan this process published last per
	// stage ("" = unknown): ApplyACL of the same rule set is a no-op.
	applied [2]string
	egress  egressState
}

// innerSpec copies a prototype map's spec for creating inner maps:
// unpinned and without BTF (see Load: 6.1 refuses an inner map with BTF
// into an outer map whose template has none).
func innerSpec(s *ebpf.MapSpec, name string) *ebpf.MapSpec {
	c := s.Copy()
	c.Name, c.Pinning = name, ebpf.PinNone
	c.Key, c.Value = nil, nil
	return c
}

// initACL sets up the ACL bookkeeping from the collection spec and reads
// the counter indexes back from acl_names (pins of an earlier run).
func (p *Port) initACL(spec *ebpf.CollectionSpec) error {
	p.acl = &aclState{
		hdrSpec:    innerSpec(spec.Maps["acl_hdr_proto"], "acl_hdr"),
		rules4Spec: innerSpec(spec.Maps["acl_rules4_proto"], "acl_rules4"),
		rules6Spec: innerSpec(spec.Maps["acl_rules6_proto"], "acl_rules6"),
		idx:        [2]map[string]uint32{{}, {}},
	}
	var (
		key  uint32
		name impairAclName
	)
	it := p.objs.AclNames.Iterate()
	for it.Next(&key, &name) {
		if n := cString(name.Name[:]); n != "" {
			p.acl.idx[key/aclStride][n] = key % aclStride
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read acl_names: %w", err)
	}
	return nil
}

// aclMaps are the ACL's maps (unpinned by Remove).
func (p *Port) aclMaps() []*ebpf.Map {
	o := &p.objs
	return []*ebpf.Map{o.AclHdrs, o.AclHdrProto, o.AclRules4, o.AclRules4Proto, o.AclRules6, o.AclRules6Proto, o.AclCnts, o.AclNames}
}

// readACLHdr returns the stage's published header; false when none.
func (p *Port) readACLHdr(stage ACLStage) (*impairAclHdr, bool, error) {
	var id uint32
	if err := p.objs.AclHdrs.Lookup(uint32(stage), &id); errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("read acl_hdrs[%s]: %w", stage, err)
	}
	inner, err := ebpf.NewMapFromID(ebpf.MapID(id))
	if err != nil {
		return nil, false, fmt.Errorf("open ACL header %d: %w", id, err)
	}
	defer inner.Close()
	h := new(impairAclHdr)
	if err := inner.Lookup(uint32(0), h); err != nil {
		return nil, false, fmt.Errorf("read ACL header %d: %w", id, err)
	}
	return h, true, nil
}

// ApplyACL publishes plan as the stage's rule set; nil removes the
// stage's ACL. A packet sees the old or the new rule set, never a mix:
//
//  1. rules new to the stage get a free counter index (counters zeroed,
//     name written to acl_names); kept rules keep theirs;
//  2. the new rule hashes are created and filled, then put in the
//     buffer the published header does not use (acl_rules4/6[stage*2+nb]);
//  3. a new header (shapes, buffer nb) is published in acl_hdrs[stage]:
//     one pointer swap;
//  4. the old buffer's hashes are removed and removed rules' names
//     cleared.
//
// Every update of an array of maps from user space returns only after
// an RCU grace period (the kernel's synchronize_rcu in
// maybe_wait_bpf_programs), so when step 3 returns no packet still uses
// the old header: the old buffer can go, and the next ApplyACL can fill it.
func (p *Port) ApplyACL(stage ACLStage, plan *ACLPlan) error {
	if stage > ACLEgress {
		return fmt.Errorf("unknown ACL stage %d", stage)
	}
	st := uint32(stage)
	cur, has, err := p.readACLHdr(stage)
	if err != nil {
		return err
	}
	oldBuf := uint32(1)
	if has {
		oldBuf = cur.Buf & 1
	}
	newBuf := 1 - oldBuf
	p.acl.applied[stage] = ""
	if plan == nil {
		if has {
			if err := p.objs.AclHdrs.Delete(st); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("remove %s ACL: %w", stage, err)
			}
		}
		if err := p.dropACLBuf(st, oldBuf); err != nil {
			return err
		}
		return p.forgetACLRules(stage, nil)
	}
	if has && p.acl.applied[stage] == plan.digest {
		return nil // this process published the same rule set last
	}
	idx, err := p.assignACLIdx(stage, plan)
	if err != nil {
		return err
	}
	hdr := new(impairAclHdr)
	hdr.Buf = newBuf
	hdr.Fb[2].Rank = noRank // non-IP packets: every L2 shape is searched
	hdr.Cand = aclCandidates(&plan.fam)
	for fi := range plan.fam {
		hdr.Fb[fi].Rank = noRank
		if r := plan.fam[fi].fallback; r != noRank {
			hdr.Fb[fi] = impairAclFb{Rank: r, Idx: idx[r], Action: uint32(plan.actions[r])}
		}
	}
	for fi, m := range []*ebpf.Map{p.objs.AclRules4, p.objs.AclRules6} {
		f := &plan.fam[fi]
		bloom := &hdr.Bloom4
		if fi == 0 {
			hdr.N4 = uint32(len(f.shapes))
			copy(hdr.S4[:], f.shapes)
		} else {
			hdr.N6 = uint32(len(f.shapes))
			copy(hdr.S6[:], f.shapes)
			bloom = &hdr.Bloom6
		}
		for k := range f.entries {
			w, bits := aclBloomBits(aclHash(k.words(fi == 1)))
			bloom[w] |= bits
		}
		aclInline(hdr, fi, f, plan, idx)
		if f.dskip != nil {
			hdr.Dskip[fi] = *f.dskip
		}
		if f.vskip != nil {
			hdr.Vskip[fi] = *f.vskip
		}
		for dir, sk := range f.askip {
			if sk != nil {
				hdr.Askip[fi][dir] = *sk
			}
		}
		slot := st*2 + newBuf
		if len(f.entries) == 0 {
			if err := m.Delete(slot); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("clear %s rule hash %d: %w", stage, slot, err)
			}
			continue
		}
		spec := p.acl.rules4Spec
		if fi == 1 {
			spec = p.acl.rules6Spec
		}
		inner, err := p.fillACLHash(spec, fi, f, plan, idx)
		if err != nil {
			return fmt.Errorf("%s ACL: %w", stage, err)
		}
		err = m.Put(slot, inner)
		inner.Close() // the outer map holds its own reference
		if err != nil {
			return fmt.Errorf("%s ACL: put rule hash in slot %d: %w", stage, slot, err)
		}
	}
	inner, err := ebpf.NewMap(p.acl.hdrSpec)
	if err != nil {
		return fmt.Errorf("%s ACL: create header: %w", stage, err)
	}
	defer inner.Close()
	if err := inner.Put(uint32(0), hdr); err != nil {
		return fmt.Errorf("%s ACL: write header: %w", stage, err)
	}
	if err := p.objs.AclHdrs.Put(st, inner); err != nil {
		return fmt.Errorf("%s ACL: publish header: %w", stage, err)
	}
	p.acl.applied[stage] = plan.digest
	if err := p.dropACLBuf(st, oldBuf); err != nil {
		return err
	}
	return p.forgetACLRules(stage, plan)
}

// fillACLHash creates one family's rule hash of plan.
func (p *Port) fillACLHash(spec *ebpf.MapSpec, fi int, f *aclFamily, plan *ACLPlan, idx []uint32) (*ebpf.Map, error) {
	inner, err := ebpf.NewMap(spec)
	if err != nil {
		return nil, fmt.Errorf("create rule hash: %w", err)
	}
	n := len(f.entries)
	vals := make([]impairAclVal, 0, n)
	var keys any
	if fi == 0 {
		k4 := make([]impairAclKey4, 0, n)
		for k, rank := range f.entries {
			w := k.words(false)
			k4 = append(k4, impairAclKey4{W: [3]uint64{w[0], w[1], w[2]}})
			vals = append(vals, impairAclVal{Rank: rank, Idx: idx[rank], Action: uint32(plan.actions[rank])})
		}
		keys = k4
	} else {
		k6 := make([]impairAclKey, 0, n)
		for k, rank := range f.entries {
			k6 = append(k6, impairAclKey{W: k.words(true)})
			vals = append(vals, impairAclVal{Rank: rank, Idx: idx[rank], Action: uint32(plan.actions[rank])})
		}
		keys = k6
	}
	if _, err := inner.BatchUpdate(keys, vals, nil); err != nil {
		inner.Close()
		return nil, fmt.Errorf("fill rule hash (%d entries): %w", n, err)
	}
	return inner, nil
}

// dropACLBuf removes the stage's rule hashes in buffer buf.
func (p *Port) dropACLBuf(st, buf uint32) error {
	for _, m := range []*ebpf.Map{p.objs.AclRules4, p.objs.AclRules6} {
		if err := m.Delete(st*2 + buf); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("remove old rule hash %d: %w", st*2+buf, err)
		}
	}
	return nil
}

// assignACLIdx gives every rule of plan its counter index (by rank),
// taking free ones for new rules after zeroing their counters.
func (p *Port) assignACLIdx(stage ACLStage, plan *ACLPlan) ([]uint32, error) {
	have := p.acl.idx[stage]
	used := map[uint32]bool{}
	for _, i := range have {
		used[i] = true
	}
	out := make([]uint32, len(plan.names))
	next := uint32(1)
	for rank, name := range plan.names {
		if i, ok := have[name]; ok {
			out[rank] = i
			continue
		}
		for used[next] {
			next++
		}
		if next > ACLMaxRules {
			return nil, &ACLRuleError{Name: name, Reason: fmt.Sprintf("no free counter: a stage takes at most %d rules", ACLMaxRules)}
		}
		key := uint32(stage)*aclStride + next
		if err := p.objs.AclCnts.Put(key, make([]impairAclCnt, possibleCPUs())); err != nil {
			return nil, fmt.Errorf("reset counters of ACL rule %s: %w", name, err)
		}
		var n impairAclName
		for i := 0; i < len(name); i++ {
			n.Name[i] = int8(name[i])
		}
		if err := p.objs.AclNames.Put(key, &n); err != nil {
			return nil, fmt.Errorf("write acl_names[%d]: %w", key, err)
		}
		have[name] = next
		used[next] = true
		out[rank] = next
	}
	return out, nil
}

// forgetACLRules frees the counter indexes of the stage's rules not in
// plan (nil: all); only called once no packet can reach them any more.
func (p *Port) forgetACLRules(stage ACLStage, plan *ACLPlan) error {
	keep := map[string]bool{}
	if plan != nil {
		for _, n := range plan.names {
			keep[n] = true
		}
	}
	for name, i := range p.acl.idx[stage] {
		if keep[name] {
			continue
		}
		if err := p.objs.AclNames.Put(uint32(stage)*aclStride+i, &impairAclName{}); err != nil {
			return fmt.Errorf("clear acl_names of ACL rule %s: %w", name, err)
		}
		delete(p.acl.idx[stage], name)
	}
	return nil
}

func possibleCPUs() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return runtime.NumCPU()
	}
	return n
}

// ACLCounter is one rule's matched packets and bytes, summed over CPUs.
type ACLCounter struct{ Packets, Bytes uint64 }

// ACLCounters returns the stage's counters by rule Name, summed over
// CPUs. A rule keeps its counts across ApplyACL as long as it stays in
// the rule set (by name); a rule new to the set starts at zero.
func (p *Port) ACLCounters(stage ACLStage) (map[string]ACLCounter, error) {
	if stage > ACLEgress {
		return nil, fmt.Errorf("unknown ACL stage %d", stage)
	}
	out := make(map[string]ACLCounter, len(p.acl.idx[stage]))
	for name, i := range p.acl.idx[stage] {
		c, err := p.aclCounter(stage, i)
		if err != nil {
			return nil, fmt.Errorf("read counters of ACL rule %q: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

// ACLUnmatched returns the packets of the stage no rule matched (they
// were forwarded), summed over CPUs.
func (p *Port) ACLUnmatched(stage ACLStage) (ACLCounter, error) {
	if stage > ACLEgress {
		return ACLCounter{}, fmt.Errorf("unknown ACL stage %d", stage)
	}
	c, err := p.aclCounter(stage, 0)
	if err != nil {
		return c, fmt.Errorf("read %s ACL no-match counters: %w", stage, err)
	}
	return c, nil
}

func (p *Port) aclCounter(stage ACLStage, i uint32) (ACLCounter, error) {
	var per []impairAclCnt
	var c ACLCounter
	if err := p.objs.AclCnts.Lookup(uint32(stage)*aclStride+i, &per); err != nil {
		return c, err
	}
	for _, v := range per {
		c.Packets += v.Packets
		c.Bytes += v.Bytes
	}
	return c, nil
}
