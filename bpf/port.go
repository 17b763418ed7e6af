package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// XDPMode says how a program is attached.
type XDPMode string

// Attach modes: auto tries native (driver) XDP and falls back to generic.
const (
	ModeAuto    XDPMode = "auto"
	ModeNative  XDPMode = "native"
	ModeGeneric XDPMode = "generic"
)

// linkPin is the name of the pinned bpf link inside a port's directory.
const linkPin = "link"

// Port is one port's loaded impairment program, its maps (pinned under
// Dir) and, once attached, its XDP bpf link (pinned as Dir/link).
type Port struct {
	Dir   string
	objs  impairObjects
	link  link.Link
	slots map[string]uint32 // rule name -> slot (1..MaxRules)
	// innerSpec makes the one-element arrays published in cfg.
	innerSpec *ebpf.MapSpec
	nextGen   uint32
	// Mode is how the link was attached by this process; empty for an
	// adopted link (ask netlink).
	Mode XDPMode
	// Adopted says the last Attach took over the link pinned by an
	// earlier run instead of attaching anew.
	Adopted bool
	acl     *aclState // acl_port.go
	// cfgKey is the key of cfg this instance's configuration lives at:
	// 0 (ingress, read by the XDP program) or cfgEgress (an egress
	// instance, read by the tc egress program; egress.go).
	cfgKey uint32
	// egress is the port's egress instance, once loaded (egress.go).
	egress *Port
}

// Load loads the program with its maps pinned under dir (created when
// missing; existing pins are reused, so state and counters survive a
// restart). It does not attach; see Attach.
//
// An empty dir loads without pins (tests and benchmarks).
func Load(dir string) (*Port, error) {
	p, err := load(dir, nil, 0)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		// an egress instance pinned by an earlier run keeps its state
		if _, err := os.Stat(filepath.Join(dir, egressDir)); err == nil {
			if _, err := p.Egress(); err != nil {
				p.Close()
				return nil, err
			}
		}
	}
	return p, nil
}

// load loads one instance of the collection; repl replaces maps by name
// (an egress instance shares its port's ACL maps), cfgKey is where its
// configuration lives in cfg.
func load(dir string, repl map[string]*ebpf.Map, cfgKey uint32) (*Port, error) {
	spec, err := loadImpair()
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create pin directory %s: %w", dir, err)
		}
		for _, m := range spec.Maps {
			m.Pinning = ebpf.PinByName
		}
	}
	p := &Port{Dir: dir, slots: map[string]uint32{}, cfgKey: cfgKey}
	p.innerSpec = spec.Maps["cfg_proto"].Copy()
	p.innerSpec.Name, p.innerSpec.Pinning = "cfg", ebpf.PinNone
	// Without BTF, like the template cfg was created with: kernels before
	// 6.2 compare the BTF-derived layout (timer offset) of an inner map
	// with the template's, and 6.1 refuses an inner array with BTF into
	// an outer map whose template has none (EINVAL on publish).
	p.innerSpec.Key, p.innerSpec.Value = nil, nil
	opts := &ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: dir}, MapReplacements: repl}
	err = spec.LoadAndAssign(&p.objs, opts)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		// Pins of a release with another map layout: start this port
		// afresh (its impairment pauses while the new program attaches).
		if rerr := RemovePins(dir); rerr != nil {
			return nil, fmt.Errorf("remove incompatible pins in %s: %w", dir, rerr)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create pin directory %s: %w", dir, err)
		}
		err = spec.LoadAndAssign(&p.objs, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("load impairment program with maps in %s: %w", dir, err)
	}
	if err := p.recover(); err != nil {
		p.objs.Close()
		return nil, err
	}
	if err := p.initACL(spec); err != nil {
		p.objs.Close()
		return nil, err
	}
	return p, nil
}

// recover reads slot names and generations back from the pinned maps.
func (p *Port) recover() error {
	var name impairSlotName
	for s := uint32(1); s < maxSlots; s++ {
		if err := p.objs.SlotNames.Lookup(s, &name); err != nil {
			return fmt.Errorf("read slot_names[%d]: %w", s, err)
		}
		if n := cString(name.Name[:]); n != "" {
			p.slots[n] = s
		}
	}
	if cfg, ok, err := p.readCfg(); err != nil {
		return err
	} else if ok {
		p.nextGen = cfg.Port.Gen
	}
	entries, err := p.readMatches()
	if err != nil {
		return err
	}
	for _, m := range entries {
		p.nextGen = max(p.nextGen, m.Prof.Gen)
	}
	p.nextGen++
	return nil
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// Attach links the program to ifindex, or adopts the link pinned by an
// earlier run, switching it to this process's program with one atomic
// link update (no packet goes unimpaired). It fails when another XDP
// program is attached (the kernel refuses with EBUSY).
func (p *Port) Attach(ifindex int, mode XDPMode) error {
	if p.link != nil { // re-attach (the netdev was re-created): drop the old link
		p.link.Close()
		p.link = nil
	}
	p.Adopted = false
	pin := filepath.Join(p.Dir, linkPin)
	if p.Dir == "" {
		// no pins: always a fresh link
	} else if l, err := link.LoadPinnedLink(pin, nil); err == nil {
		info, ierr := l.Info()
		if ierr == nil && info.XDP() != nil && int(info.XDP().Ifindex) == ifindex {
			if sameProgram(uint32(info.Program), p.objs.Impair) {
				// The running program is this release's, on the same
				// pinned maps: keep it (same program id, nothing swapped).
				p.link, p.Adopted = l, true
				return nil
			}
			if err := l.Update(p.objs.Impair); err != nil {
				l.Close()
				return fmt.Errorf("update pinned XDP link %s to the new program: %w", pin, err)
			}
			p.link, p.Adopted = l, true
			return nil
		}
		// A pin of a link on another (or a vanished) ifindex: retire it.
		l.Unpin()
		l.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		os.Remove(pin)
	}
	var flags []link.XDPAttachFlags
	switch mode {
	case ModeNative:
		flags = []link.XDPAttachFlags{link.XDPDriverMode}
	case ModeGeneric:
		flags = []link.XDPAttachFlags{link.XDPGenericMode}
	default:
		flags = []link.XDPAttachFlags{link.XDPDriverMode, link.XDPGenericMode}
	}
	var err error
	for _, f := range flags {
		var l link.Link
		l, err = link.AttachXDP(link.XDPOptions{Program: p.objs.Impair, Interface: ifindex, Flags: f})
		if err != nil {
			continue
		}
		if p.Dir == "" { // unpinned (tests): the link lives as long as p
			p.link, p.Mode = l, modeOf(f)
			return nil
		}
		if err := l.Pin(pin); err != nil {
			l.Close()
			return fmt.Errorf("pin XDP link as %s: %w", pin, err)
		}
		p.link, p.Mode = l, modeOf(f)
		return nil
	}
	return fmt.Errorf("attach XDP program to ifindex %d (%s mode): %w", ifindex, mode, err)
}

func modeOf(f link.XDPAttachFlags) XDPMode {
	if f == link.XDPGenericMode {
		return ModeGeneric
	}
	return ModeNative
}

// ProgramID is the kernel's id of the attached program (0 when detached).
func (p *Port) ProgramID() uint32 {
	if p.link == nil {
		return 0
	}
	info, err := p.link.Info()
	if err != nil {
		return 0
	}
	return uint32(info.Program)
}

// Close releases this process's file descriptors; the pinned link and
// maps keep the impairment running.
func (p *Port) Close() error {
	if p.egress != nil {
		p.egress.Close()
	}
	if p.link != nil {
		p.link.Close()
	}
	return p.objs.Close()
}

// Remove detaches the program and removes every pin of the port.
func (p *Port) Remove() error {
	errs := []error{p.DetachEgress()}
	if p.egress != nil {
		errs = append(errs, p.egress.Remove())
		p.egress = nil
	}
	if p.link != nil {
		errs = append(errs, p.link.Unpin(), p.link.Close())
		p.link = nil
	}
	for _, m := range []*ebpf.Map{p.objs.Cfg, p.objs.CfgProto, p.objs.Masks, p.objs.Blooms, p.objs.Matches4, p.objs.Matches6,
		p.objs.Pcpu, p.objs.Shared, p.objs.Flowtab, p.objs.Flowshare, p.objs.SlotNames} {
		errs = append(errs, m.Unpin())
	}
	if p.cfgKey == 0 { // an egress instance's ACL maps are its port's
		for _, m := range p.aclMaps() {
			errs = append(errs, m.Unpin())
		}
	}
	errs = append(errs, p.objs.Close())
	os.Remove(filepath.Join(p.Dir, linkPin)) // a stale pin of a vanished link
	errs = append(errs, os.Remove(p.Dir))
	return errors.Join(errs...)
}

// RemovePins detaches and unpins whatever an earlier run left in dir
// (used for a port whose config is gone while impaird was down).
func RemovePins(dir string) error {
	if l, err := link.LoadPinnedLink(filepath.Join(dir, linkPin), nil); err == nil {
		l.Unpin()
		l.Close()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := RemovePins(filepath.Join(dir, egressDir)); err != nil {
		return err
	}
	for _, e := range entries {
		os.Remove(filepath.Join(dir, e.Name()))
	}
	return os.Remove(dir)
}

// Counters sums each slot's per-CPU counters: key "" is the port profile,
// other keys are rule names.
func (p *Port) Counters() (map[string]Counters, error) {
	out := map[string]Counters{}
	read := func(name string, slot uint32) error {
		var per []impairSlotPcpu
		if err := p.objs.Pcpu.Lookup(slot, &per); err != nil {
			return fmt.Errorf("read counters of slot %d: %w", slot, err)
		}
		var c Counters
		for _, v := range per {
			c.Add(Counters{RxPackets: v.RxPackets, RxBytes: v.RxBytes, Passed: v.Passed, DroppedLoss: v.DroppedLoss,
				DroppedRate: v.DroppedRate, Corrupted: v.Corrupted, Duplicated: v.Duplicated})
		}
		out[name] = c
		return nil
	}
	if cfg, ok, err := p.readCfg(); err != nil {
		return nil, err
	} else if ok && cfg.HasPort != 0 {
		if err := read("", PortSlot); err != nil {
			return nil, err
		}
	}
	for name, slot := range p.slots {
		if err := read(name, slot); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Profiles returns the profiles the maps hold, as Counters names them:
// key "" is the port profile (absent when the port has none), the other
// keys are rule names. A profile's Gen changes with every rewrite of it.
func (p *Port) Profiles() (map[string]Profile, error) {
	out := map[string]Profile{}
	cfg, ok, err := p.readCfg()
	if err != nil {
		return nil, err
	}
	if ok && cfg.HasPort != 0 {
		out[""] = cfg.Port
	}
	entries, err := p.readMatches()
	if err != nil {
		return nil, err
	}
	names := map[uint32]string{}
	for n, s := range p.slots {
		names[s] = n
	}
	for _, m := range entries {
		if n, ok := names[m.Slot]; ok {
			out[n] = m.Prof
		}
	}
	return out, nil
}

// Rules returns the names of the rules the maps hold, sorted.
func (p *Port) Rules() []string {
	names := make([]string, 0, len(p.slots))
	for n := range p.slots {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sameProgram reports whether program id runs the same instructions on the
// same maps as prog: the kernel's tag hashes the instructions with map
// references left out, and both use the pinned maps.
func sameProgram(id uint32, prog *ebpf.Program) bool {
	old, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return false
	}
	defer old.Close()
	oi, err := old.Info()
	if err != nil {
		return false
	}
	ni, err := prog.Info()
	if err != nil {
		return false
	}
	if oi.Tag == "" || oi.Tag != ni.Tag || oi.Type != ni.Type {
		return false
	}
	// Same maps: every map the running program uses is one of ours.
	oids, ok1 := oi.MapIDs()
	nids, ok2 := ni.MapIDs()
	if !ok1 || !ok2 || len(oids) != len(nids) {
		return false
	}
	have := map[ebpf.MapID]bool{}
	for _, m := range nids {
		have[m] = true
	}
	for _, m := range oids {
		if !have[m] {
			return false
		}
	}
	return true
}

// PinnedProgramID is the program id of the XDP link pinned in dir by an
// earlier run, or 0: impaird uses it to tell its own program from a
// foreign one attached to the port.
func PinnedProgramID(dir string) uint32 {
	l, err := link.LoadPinnedLink(filepath.Join(dir, linkPin), nil)
	if err != nil {
		return 0
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return 0
	}
	return uint32(info.Program)
}
