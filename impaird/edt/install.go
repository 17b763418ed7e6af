package edt

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	bpfedt "github.com/switchyard-net/switchyard/bpf/edt"
	"github.com/switchyard-net/switchyard/internal/netnsx"
	"github.com/switchyard-net/switchyard/internal/tcfilter"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Kernel objects this package owns on a port.
var (
	// fqHandle is the handle of our fq root qdisc ("ed:"), how a root
	// qdisc is recognised as ours (also after a restart).
	fqHandle = netlink.MakeHandle(0xed, 0)
	// filterPrio and filterHandle identify our egress filter on clsact.
	filterPrio   uint16 = 0xed
	filterHandle uint32 = 1
)

// FilterName is the name of the egress filter (tc filter show names it).
const FilterName = "switchyard_edt"

// fq sizing: the queue must hold everything in flight for the longest
// time a packet can wait (delay + jitter tail + shaping queue) at the
// highest packet rate we plan for, 1 Gbit/s of minimum-size frames
// (1.49 Mpps), so 200 ms at 1 Gbit/s loses nothing in the qdisc.
const (
	planPPS      = 1.5e6
	minFqLimit   = 10000 // fq's default
	maxFqLimit   = 1 << 24
	horizonSlack = time.Second
	minHorizon   = 10 * time.Second // fq's default
)

// MissingFeatureError says the kernel lacks what EDT needs on a port.
// Feature is "fq qdisc", "clsact qdisc" or "bpf tc filter (cls_bpf)".
type MissingFeatureError struct {
	Port, Feature string
	Err           error
}

func (e *MissingFeatureError) Error() string {
	return fmt.Sprintf("%s: kernel lacks the %s (needed for delay/jitter/shaping): %v", e.Port, e.Feature, e.Err)
}

func (e *MissingFeatureError) Unwrap() error { return e.Err }

// Options configure an Installer.
type Options struct {
	// NetNS is a named network namespace (ip netns add NAME); empty = the
	// caller's.
	NetNS string
	// PinDir is a directory on a bpf filesystem where the previous root
	// qdisc of every EDT port is kept (pinned map PrevQdiscPin), written
	// before Apply replaces it, so that Remove in another process (a
	// restarted impaird) still restores it. Empty: kept in memory only
	// (Remove after a restart restores the kernel's default).
	PinDir string
}

// Installer puts EDT on ports of one network namespace. It is safe for
// concurrent use. One BPF program instance serves all its ports.
type Installer struct {
	mu      sync.Mutex
	h       *netlink.Handle
	objs    *bpfedt.Objects
	ports   map[string]*port
	classes map[uint32]Profile
	// prev persists previous root qdiscs (nil without Options.PinDir).
	prev *prevStore
}

// port is what Apply found on a port before taking it over.
type port struct {
	ifindex int
	// prev is the root qdisc to put back on Remove; nil means the
	// kernel's default (restored by deleting ours).
	prev netlink.Qdisc
	// profile is the port's own profile (inactive: classes only).
	profile Profile
}

// New opens a netlink handle in o.NetNS. The BPF program is loaded on
// the first Apply.
func New(o Options) (*Installer, error) {
	ns, err := netnsx.Open(o.NetNS)
	if err != nil {
		return nil, err
	}
	h, err := ns.NetlinkHandle()
	ns.Close()
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %q: %w", o.NetNS, err)
	}
	i := &Installer{h: h, ports: map[string]*port{}, classes: map[uint32]Profile{}}
	if o.PinDir != "" {
		if i.prev, err = openPrevStore(o.PinDir); err != nil {
			h.Close()
			return nil, fmt.Errorf("previous root qdiscs: %w", err)
		}
	}
	return i, nil
}

// Close releases the handle and the program's file descriptors. What is
// installed stays installed (the filter holds the program): Close is not
// Remove.
func (i *Installer) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.h.Close()
	if i.prev != nil {
		i.prev.Close()
	}
	if i.objs != nil {
		return i.objs.Close()
	}
	return nil
}

// FqFor is the fq root qdisc Apply installs for p on the link with
// index ifindex: horizon and limits sized from the profile.
//
// Equivalent to: tc qdisc replace dev $l root handle ed: fq limit N
// flow_limit N horizon H
func FqFor(ifindex int, p Profile) *netlink.Fq {
	window := window(p)
	horizon := max(minHorizon, window+horizonSlack)
	limit := uint32(math.Min(math.Max(math.Ceil(window.Seconds()*planPPS), minFqLimit), maxFqLimit))
	fq := netlink.NewFq(netlink.QdiscAttrs{LinkIndex: ifindex, Parent: netlink.HANDLE_ROOT, Handle: fqHandle})
	fq.PacketLimit = limit
	fq.FlowPacketLimit = limit
	fq.Horizon = uint32(horizon / time.Microsecond)
	fq.HorizonDropPolicy = netlink.HORIZON_DROP_POLICY_DROP
	fq.Pacing = 1
	return fq
}

// window is the longest a packet of p can wait in fq (with slots capped
// by packets or bytes, a backlog beyond it is dropped at the horizon, as
// netem drops beyond its limit).
func window(p Profile) time.Duration {
	tail := p.Jitter
	if p.Distribution != Uniform {
		tail = p.Jitter * 4 // netem tables clamp at 32767/8192 sigma
	}
	return p.Delay + tail + p.QueueLimit() + p.SlotMax + p.SlotDelay + 4*p.SlotJitter
}

func config(p Profile) bpfedt.Config {
	return bpfedt.Config{
		Delay: p.Delay, Jitter: p.Jitter, Dist: int(p.Distribution),
		RateBps: p.Shape, QueueLimit: p.QueueLimit(), Loss: p.Loss / 100, Reorder: p.Reorder,
		SlotMin: p.SlotMin, SlotMax: p.SlotMax,
		SlotDist: int(p.SlotDist), SlotDelay: p.SlotDelay, SlotJitter: p.SlotJitter,
		SlotPackets: uint32(p.SlotPackets), SlotBytes: uint32(p.SlotBytes),
	}
}

// Apply gives ifname the profile p: clsact and the egress program are
// added, fq becomes the root qdisc (the previous root qdisc is
// remembered for Remove) and the profile is written to the program's
// map. Applying again updates in place with no traffic gap. A zero p
// makes ifname an egress for classes only (SetClass). On a kernel
// without fq, clsact or cls_bpf the error is a *MissingFeatureError and
// the port is left as it was.
//
// Equivalent to: tc qdisc add dev $l clsact; tc filter replace dev $l
// egress prio 237 handle 1 bpf da obj edt.o; tc qdisc replace dev $l
// root handle ed: fq ...
func (i *Installer) Apply(ifname string, p Profile) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if p.Distribution > ParetoNormal || p.Loss < 0 || p.Loss > 100 {
		return fmt.Errorf("%s: invalid profile %+v", ifname, p)
	}
	link, err := i.h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("%s: find link: %w", ifname, err)
	}
	idx := link.Attrs().Index
	if err := i.load(); err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	st := i.ports[ifname]
	if st == nil || st.ifindex != idx {
		st = &port{ifindex: idx}
		root, err := i.rootQdisc(link)
		if err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
		switch {
		case root != nil && root.Attrs().Handle == fqHandle:
			// Ours already (a restarted process): what was there before
			// is what an earlier Apply persisted.
			if st.prev, err = i.loadPrev(ifname, idx); err != nil {
				return err
			}
		case root != nil:
			if major, _ := netlink.MajorMinor(root.Attrs().Handle); major != 0 {
				st.prev = root // not the kernel's default: put it back on Remove
			}
			fallthrough
		default:
			// Persisted before fq replaces it (nil: the default).
			if err := i.savePrev(ifname, idx, st.prev); err != nil {
				return err
			}
		}
	}
	// The profile first, so the first stamped packet already has it. An
	// inactive profile: the port only carries classes (SetClass).
	key := bpfedt.PortKey(idx)
	if p.Active() || p.Loss > 0 {
		if err := i.objs.Set(key, config(p)); err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
	} else if err := i.objs.Delete(key); err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	createdClsact, err := i.ensureClsact(ifname, idx)
	if err != nil {
		i.objs.Delete(key)
		return err
	}
	// undo puts the port back as it was when this Apply fails.
	undo := func(filter bool) {
		if filter {
			i.h.FilterDel(i.filter(idx))
		}
		if createdClsact {
			i.h.QdiscDel(tcfilter.Clsact(idx))
		}
		if i.ports[ifname] == nil {
			i.objs.Delete(key)
			i.savePrev(ifname, idx, nil)
		}
	}
	// The filter before fq: a packet stamped before fq is in place just
	// leaves when the old qdisc sends it (most ignore skb->tstamp).
	if err := i.h.FilterReplace(i.filter(idx)); err != nil {
		undo(false)
		if missing(err) {
			return &MissingFeatureError{Port: ifname, Feature: "bpf tc filter (cls_bpf)", Err: err}
		}
		return fmt.Errorf("%s: attach edt program on egress: %w", ifname, err)
	}
	if err := i.h.QdiscReplace(FqFor(idx, i.sizing(p))); err != nil {
		undo(i.ports[ifname] == nil)
		if missing(err) {
			return &MissingFeatureError{Port: ifname, Feature: "fq qdisc", Err: err}
		}
		return fmt.Errorf("%s: install fq root qdisc: %w", ifname, err)
	}
	st.profile = p
	i.ports[ifname] = st
	return nil
}

// SetClass sets the profile of class id: packets marked
// bpfedt.MarkClass(id) (at ingress, see MarkIngress) get it on
// whichever EDT port (Apply) they leave by, instead of that port's own.
// Every EDT port's fq is resized to hold the longest profile.
func (i *Installer) SetClass(id uint32, p Profile) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if id == 0 || id > bpfedt.MarkClassMask {
		return fmt.Errorf("class id %d: want 1 to %d", id, bpfedt.MarkClassMask)
	}
	if err := i.load(); err != nil {
		return err
	}
	if err := i.objs.Set(bpfedt.ClassKey(id), config(p)); err != nil {
		return err
	}
	i.classes[id] = p
	return i.resize()
}

// DeleteClass removes class id's profile: its packets get the egress
// port's own profile again.
func (i *Installer) DeleteClass(id uint32) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.classes, id)
	if i.objs == nil {
		return nil
	}
	if err := i.objs.Delete(bpfedt.ClassKey(id)); err != nil {
		return err
	}
	return i.resize()
}

func (i *Installer) load() error {
	if i.objs != nil {
		return nil
	}
	o, err := bpfedt.Load()
	if err != nil {
		return err
	}
	i.objs = o
	return nil
}

// sizing is the profile with the longest window among p and the
// classes: what fq must hold on a port.
func (i *Installer) sizing(p Profile) Profile {
	best := p
	for _, c := range i.classes {
		if window(c) > window(best) {
			best = c
		}
	}
	return best
}

// resize updates every EDT port's fq to the current sizing.
func (i *Installer) resize() error {
	for name, st := range i.ports {
		if err := i.h.QdiscReplace(FqFor(st.ifindex, i.sizing(st.profile))); err != nil {
			return fmt.Errorf("%s: resize fq: %w", name, err)
		}
	}
	return nil
}

// Remove takes EDT off ifname: the egress filter goes, clsact goes when
// no filter (ours or another owner's) is left on it, and
// the previous root qdisc comes back (the kernel's default when it was
// the default or is unknown). Removing a port without EDT is no error.
//
// Equivalent to: tc filter del dev $l egress prio 237 handle 1 bpf;
// tc qdisc del dev $l clsact; tc qdisc replace dev $l root <previous>
// (or tc qdisc del dev $l root)
func (i *Installer) Remove(ifname string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	link, err := i.h.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			delete(i.ports, ifname)
			if i.prev != nil {
				i.prev.forget(ifname)
			}
			return nil
		}
		return fmt.Errorf("%s: find link: %w", ifname, err)
	}
	idx := link.Attrs().Index
	st := i.ports[ifname]
	if st == nil || st.ifindex != idx {
		st = &port{ifindex: idx}
		if st.prev, err = i.loadPrev(ifname, idx); err != nil {
			return err
		}
	}
	for _, parent := range []uint32{netlink.HANDLE_MIN_EGRESS, netlink.HANDLE_MIN_INGRESS} {
		f := i.filter(idx)
		f.Parent = parent
		if err := i.h.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("%s: detach edt program: %w", ifname, err)
		}
	}
	if err := i.maybeDelClsact(ifname, idx); err != nil {
		return err
	}
	root, err := i.rootQdisc(link)
	if err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	if root != nil && root.Attrs().Handle == fqHandle && root.Type() == "fq" {
		if st.prev != nil {
			if err := i.h.QdiscReplace(st.prev); err != nil {
				return fmt.Errorf("%s: restore root qdisc %s %s: %w", ifname, st.prev.Type(), netlink.HandleStr(st.prev.Attrs().Handle), err)
			}
		} else if err := i.h.QdiscDel(root); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: delete fq root qdisc: %w", ifname, err)
		}
	}
	if i.objs != nil {
		if err := i.objs.Delete(bpfedt.PortKey(idx)); err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
		if err := i.objs.DeletePortClass(idx); err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
	}
	if err := i.savePrev(ifname, idx, nil); err != nil {
		return err
	}
	delete(i.ports, ifname)
	return nil
}

// loadPrev is ifname's persisted previous root qdisc (nil: the default,
// or nothing persisted).
func (i *Installer) loadPrev(ifname string, idx int) (netlink.Qdisc, error) {
	if i.prev == nil {
		return nil, nil
	}
	q, err := i.prev.load(ifname, idx)
	if err != nil {
		return nil, fmt.Errorf("%s: read the persisted previous root qdisc: %w", ifname, err)
	}
	return q, nil
}

// savePrev persists ifname's previous root qdisc; nil forgets it.
func (i *Installer) savePrev(ifname string, idx int, q netlink.Qdisc) error {
	if i.prev == nil {
		return nil
	}
	var err error
	if q == nil {
		err = i.prev.forget(ifname)
	} else {
		err = i.prev.save(ifname, idx, q)
	}
	if err != nil {
		return fmt.Errorf("%s: persist the previous root qdisc: %w", ifname, err)
	}
	return nil
}

// Stats returns ifname's EDT counters (zero when none).
func (i *Installer) Stats(ifname string) (bpfedt.Stats, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	st := i.ports[ifname]
	if st == nil || i.objs == nil {
		return bpfedt.Stats{}, nil
	}
	return i.objs.Stats(bpfedt.PortKey(st.ifindex))
}

// ClassStats returns class id's EDT counters (zero when none).
func (i *Installer) ClassStats(id uint32) (bpfedt.Stats, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.objs == nil {
		return bpfedt.Stats{}, nil
	}
	return i.objs.Stats(bpfedt.ClassKey(id))
}

func (i *Installer) filter(idx int) *netlink.BpfFilter {
	f := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: idx, Parent: netlink.HANDLE_MIN_EGRESS, Handle: filterHandle,
			Protocol: unix.ETH_P_ALL, Priority: filterPrio,
		},
		Name: FilterName, DirectAction: true, Fd: -1,
	}
	if i.objs != nil {
		f.Fd = i.objs.Program().FD()
	}
	return f
}

// rootQdisc is the link's root qdisc (nil if none is listed).
func (i *Installer) rootQdisc(link netlink.Link) (netlink.Qdisc, error) {
	qs, err := i.h.QdiscList(link)
	if err != nil {
		return nil, fmt.Errorf("list qdiscs: %w", err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

// ensureClsact adds clsact unless present (tcfilter, shared with the
// egress ACL); created reports whether it did.
func (i *Installer) ensureClsact(ifname string, idx int) (created bool, err error) {
	created, err = tcfilter.EnsureClsact(i.h, idx)
	if err != nil {
		if missing(err) {
			return false, &MissingFeatureError{Port: ifname, Feature: "clsact qdisc", Err: err}
		}
		return false, fmt.Errorf("%s: add clsact qdisc: %w", ifname, err)
	}
	return created, nil
}

// maybeDelClsact deletes clsact when no filter is left on it (ours or
// another owner's, e.g. the egress ACL or impaird's impair_dup: a filter
// keeps it).
func (i *Installer) maybeDelClsact(ifname string, idx int) error {
	if err := tcfilter.DeleteClsactIfUnused(i.h, idx); err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	return nil
}

// missing reports whether a qdisc error means the kernel does not know
// the kind (no module, not built).
func missing(err error) bool { return tcfilter.Missing(err) }
