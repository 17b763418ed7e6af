package impaird

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/bpf"
	bpfedt "github.com/switchyard-net/switchyard/bpf/edt"
	"github.com/switchyard-net/switchyard/impaird/edt"
	"github.com/switchyard-net/switchyard/schema"
)

// Delay, jitter and shaping of IMPAIRMENT (per port) through impaird/edt.
//
// IMPAIRMENT|P applies to packets arriving on P, but EDT works where
// packets leave (fq holds each one until its departure time). So:
//
//   - ingress: P gets the tc ingress program that marks every packet
//     arriving on it with the class id portClass(P) (skb->mark), and the
//     class gets P's profile (Installer.SetClass);
//   - egress: while some port has a delay/jitter/shape profile, every
//     port impaird manages in the namespace (every port with an
//     IMPAIRMENT or IMPAIRMENT_FLOW key, an empty one included) gets fq
//     and the egress program with no profile of its own
//     (Installer.Apply(port, Profile{})): a marked packet leaving by it
//     gets its class's departure time, any other packet passes
//     unstamped. A packet leaving by a port impaird does not manage is
//     not delayed. Ports are left untouched when no port has such a
//     profile.
//
// Random loss of a port that also shapes is applied by the egress program
// after shaping (seed 004 §3.4: congestion loss, then channel loss) and
// not in XDP; any other loss stays in XDP, before the delay.
//
// IMPAIRMENT_FLOW with delay/jitter/shape (per class): the rule gets a
// class id (flowClass: stable per port and name, below portClassBase),
// which the XDP program of the flow's port writes as metadata in front of
// every packet the rule matches and passes; the class gets the rule's
// profile (SetClass) and the port the ingress program that copies the
// metadata into skb->mark (MarkIngress; on a port with its own profile
// too, MarkPort's program, which lets a classified packet keep its
// class). Egress is the same as per port: while any port or rule has
// such a profile, every managed port gets fq and the egress program. A
// matched rule's profile replaces the port's (as its loss fields do);
// a rule without delay/jitter/shape leaves the port's in place. Random
// loss of a shaping rule follows the shaping, as per port.

// portClassBase is OR-ed into a port's ifindex to make its class id:
// per-port classes stay clear of ids a classifier may hand out below it.
const portClassBase = 0x800000

func portClass(ifindex int) uint32 { return portClassBase | uint32(ifindex)&(portClassBase-1) }

// edtState is what impaird has installed through the Installer.
type edtState struct {
	inst *edt.Installer
	// egress: ports with fq and the egress program -> their ifindex.
	egress map[string]int
	// marked: ports with the ingress mark program -> their class id.
	marked map[string]uint32
	// metaMarked: ports with the ingress metadata program (MarkIngress)
	// -> their ifindex.
	metaMarked map[string]int
	// classes: class id -> profile set.
	classes map[uint32]edt.Profile
	// flowIDs: IMPAIRMENT_FLOW key with a profile -> its class id.
	flowIDs map[string]uint32
	// errs: the EDT error of each port with a profile (nil = in place).
	errs map[string]error
	// flowErrs: the same for IMPAIRMENT_FLOW keys.
	flowErrs map[string]error
}

func newEDTState(inst *edt.Installer) *edtState {
	return &edtState{inst: inst, egress: map[string]int{}, marked: map[string]uint32{}, metaMarked: map[string]int{},
		classes: map[uint32]edt.Profile{}, flowIDs: map[string]uint32{}, errs: map[string]error{}, flowErrs: map[string]error{}}
}

// flowClass returns the class id of an IMPAIRMENT_FLOW key ("port|name"),
// allocating it on first use: a hash of the key into 1..bpf.MaxEDTClass
// (clear of the per-port ids, portClassBase and up), probing on past ids
// in use, so a rule keeps its id across restarts unless two rules collide.
func (s *edtState) flowClass(key string) uint32 {
	if id, ok := s.flowIDs[key]; ok {
		return id
	}
	used := map[uint32]bool{}
	for _, id := range s.flowIDs {
		used[id] = true
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	id := h.Sum32()%bpf.MaxEDTClass + 1
	for used[id] {
		id = id%bpf.MaxEDTClass + 1
	}
	s.flowIDs[key] = id
	return id
}

// flowSplit is edtSplit for an IMPAIRMENT_FLOW rule: its EDT profile, and
// r with the loss that moved to it taken out.
func flowSplit(r *schema.ImpairmentFlow) edt.Profile {
	p, x := edtSplit(&schema.Impairment{Port: r.Port, ImpairmentProfile: r.ImpairmentProfile})
	r.ImpairmentProfile = x.ImpairmentProfile
	return p
}

// flowEDT is an IMPAIRMENT_FLOW rule with an EDT profile.
type flowEDT struct {
	port string
	prof edt.Profile
}

// edtFlows parses every IMPAIRMENT_FLOW and returns the keys with an
// active EDT profile (an invalid key: of its last good fields).
func (d *daemon) edtFlows() map[string]flowEDT {
	out := map[string]flowEDT{}
	for port, keys := range d.flows {
		if !safeDirName(port) {
			continue
		}
		for key := range keys {
			r, _, _ := d.parseFlow(port, key)
			if r == nil {
				continue
			}
			if p := flowSplit(r); p.Active() {
				out[key] = flowEDT{port: port, prof: p}
			}
		}
	}
	return out
}

// edtSplit returns the EDT profile of imp and the impairment XDP must
// apply: random loss moves to the EDT profile when the port shapes, so it
// follows the shaping (correlated loss stays in XDP, which models it).
func edtSplit(imp *schema.Impairment) (edt.Profile, *schema.Impairment) {
	if imp == nil {
		return edt.Profile{}, nil
	}
	p := imp.EDT
	if p.Shape > 0 && imp.LossModel == schema.LossRandom && imp.Loss > 0 && imp.LossCorr == 0 {
		p.Loss = imp.Loss
		x := *imp
		x.Loss = 0
		return p, &x
	}
	return p, imp
}

// edtProfiles parses every IMPAIRMENT and returns the ports with an
// active EDT profile (an invalid key: of its last good fields).
func (d *daemon) edtProfiles() map[string]edt.Profile {
	out := map[string]edt.Profile{}
	for port := range d.imp {
		r, _, _ := d.parseImp(port)
		if r == nil {
			continue
		}
		if p, _ := edtSplit(r); p.Active() {
			out[port] = p
		}
	}
	return out
}

// managedPorts are the ports with an IMPAIRMENT or IMPAIRMENT_FLOW key.
func (d *daemon) managedPorts() []string {
	seen := map[string]bool{}
	for p := range d.imp {
		seen[p] = true
	}
	for p := range d.flows {
		seen[p] = true
	}
	var out []string
	for p := range seen {
		if safeDirName(p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// ifindex of a port in the namespace (0, nil when it does not exist).
func (d *daemon) ifindex(port string) (int, error) {
	l, err := d.k.nl.LinkByName(port)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return 0, nil
		}
		return 0, fmt.Errorf("look up %s: %w", port, err)
	}
	return l.Attrs().Index, nil
}

// syncEDT makes the installed EDT state match the configuration of all
// ports (d.mu held). Per-port problems land in d.edt.errs; the error
// returned is for a retry (netlink trouble).
func (d *daemon) syncEDT() error {
	s := d.edt
	want := d.edtProfiles()
	wantFlows := d.edtFlows()
	s.errs = map[string]error{}
	s.flowErrs = map[string]error{}
	egress := map[string]int{}
	if len(want) > 0 || len(wantFlows) > 0 {
		for _, port := range d.managedPorts() {
			idx, err := d.ifindex(port)
			if err != nil {
				return err
			}
			if idx != 0 {
				egress[port] = idx
			}
		}
	}
	var retry error
	// Ports that are no longer egress ports: everything off, the
	// previous root qdisc back.
	for port := range s.egress {
		if _, ok := egress[port]; ok {
			continue
		}
		if err := s.inst.Remove(port); err != nil {
			retry = err
			continue
		}
		delete(s.egress, port)
		delete(s.marked, port)
		delete(s.metaMarked, port)
		d.cfg.Log.WithField("port", port).Info("EDT removed, previous root qdisc restored")
	}
	// Marks of ports without a profile any more.
	for port, id := range s.marked {
		if _, ok := want[port]; ok {
			continue
		}
		if err := s.inst.UnmarkPort(port); err != nil {
			retry = err
			continue
		}
		delete(s.marked, port)
		if err := s.inst.DeleteClass(id); err != nil {
			retry = err
		}
		delete(s.classes, id)
	}
	// Classes of rules without a profile any more.
	metaPorts := map[string]bool{}
	for _, f := range wantFlows {
		metaPorts[f.port] = true
	}
	for key, id := range s.flowIDs {
		if _, ok := wantFlows[key]; ok {
			continue
		}
		if err := s.inst.DeleteClass(id); err != nil {
			retry = err
			continue
		}
		delete(s.classes, id)
		delete(s.flowIDs, key)
	}
	// Metadata marks of ports without such rules any more.
	for port := range s.metaMarked {
		if metaPorts[port] {
			continue
		}
		if _, ok := s.marked[port]; !ok {
			if err := s.inst.UnmarkPort(port); err != nil {
				retry = err
				continue
			}
		}
		delete(s.metaMarked, port)
	}
	if len(want) == 0 && len(wantFlows) == 0 {
		for id := range s.classes {
			if err := s.inst.DeleteClass(id); err == nil {
				delete(s.classes, id)
			}
		}
		return retry
	}
	// Egress ports: fq and the egress program.
	var egressErr error
	for _, port := range sortedKeys(egress) {
		idx := egress[port]
		if s.egress[port] == idx {
			continue
		}
		if err := s.inst.Apply(port, edt.Profile{}); err != nil {
			if egressErr == nil {
				egressErr = fmt.Errorf("egress port %s: %w", port, err)
			}
			continue
		}
		s.egress[port] = idx
		d.cfg.Log.WithField("port", port).Info("EDT egress installed (fq root qdisc, tc egress program)")
	}
	// Ingress ports: the class and the mark.
	for _, port := range sortedKeys(want) {
		p := want[port]
		if egressErr != nil {
			s.errs[port] = egressErr
			continue
		}
		idx, err := d.ifindex(port)
		if err != nil {
			return err
		}
		if idx == 0 {
			continue // the port's own reconcile reports it pending
		}
		id := portClass(idx)
		if old, ok := s.marked[port]; ok && old != id {
			s.inst.DeleteClass(old)
			delete(s.classes, old)
			delete(s.marked, port)
		}
		if cur, ok := s.classes[id]; !ok || cur != p {
			if err := s.inst.SetClass(id, p); err != nil {
				s.errs[port] = err
				continue
			}
			s.classes[id] = p
		}
		if _, ok := s.marked[port]; !ok {
			if err := s.inst.MarkPort(port, id); err != nil {
				s.errs[port] = err
				continue
			}
			s.marked[port] = id
			delete(s.metaMarked, port) // MarkPort's program reads the metadata too
			d.cfg.Log.WithFields(map[string]any{"port": port, "class": id}).Info("EDT ingress mark installed")
		}
	}
	// Rules: the class, and the metadata mark on the rule's port.
	for _, key := range sortedKeys(wantFlows) {
		f := wantFlows[key]
		if egressErr != nil {
			s.flowErrs[key] = egressErr
			continue
		}
		idx, err := d.ifindex(f.port)
		if err != nil {
			return err
		}
		if idx == 0 {
			continue // the port's own reconcile reports it pending
		}
		id := s.flowClass(key)
		if cur, ok := s.classes[id]; !ok || cur != f.prof {
			if err := s.inst.SetClass(id, f.prof); err != nil {
				s.flowErrs[key] = err
				continue
			}
			s.classes[id] = f.prof
		}
		if _, ok := want[f.port]; ok {
			// The port's own mark program carries the class.
			if err := s.errs[f.port]; err != nil {
				s.flowErrs[key] = err
			}
			continue
		}
		if s.metaMarked[f.port] != idx {
			if err := s.inst.MarkIngress(f.port); err != nil {
				s.flowErrs[key] = err
				continue
			}
			s.metaMarked[f.port] = idx
			d.cfg.Log.WithField("port", f.port).Info("EDT ingress class (XDP metadata) program installed")
		}
	}
	return retry
}

// edtStats returns a port's EDT counters as IMPAIRMENT_COUNTERS fields
// (nil when the port has no EDT profile in place).
func (d *daemon) edtStats(port string) (schema.Fields, error) {
	id, ok := d.edt.marked[port]
	if !ok {
		return nil, nil
	}
	st, err := d.edt.inst.ClassStats(id)
	if err != nil {
		return nil, err
	}
	return edtCounterHash(st), nil
}

// EDT counter fields of IMPAIRMENT_COUNTERS:port (ports with a
// delay/jitter/shape profile only).
const (
	CounterDelayed          = "delayed"            // stamped with a departure time and sent on
	CounterDroppedShape     = "dropped_shape"      // beyond the shaping queue limit (shape_limit)
	CounterDroppedShapeLoss = "dropped_shape_loss" // random loss after shaping
)

func edtCounterHash(st bpfedt.Stats) schema.Fields {
	u := func(v uint64) string { return fmt.Sprint(v) }
	return schema.Fields{CounterDelayed: u(st.Packets), CounterDroppedShape: u(st.DroppedLimit), CounterDroppedShapeLoss: u(st.DroppedLoss)}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
