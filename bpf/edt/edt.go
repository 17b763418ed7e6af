package edt

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cilium/ebpf"
)

// Mark layout for a class carried from XDP ingress to tc egress:
// skb->mark = MarkMagic | class id (24 bits). See docs/edt.md.
const (
	MarkMagic     = 0xED000000
	MarkMagicMask = 0xFF000000
	MarkClassMask = 0x00FFFFFF
)

// MarkClass is the skb->mark that selects class id's profile.
func MarkClass(id uint32) uint32 { return MarkMagic | id&MarkClassMask }

// Key selects a profile: a port (Ifindex, Class 0) or a class carried
// in the mark (Ifindex 0, Class id).
type Key = edtKey

// PortKey is the key of a port's own profile.
func PortKey(ifindex int) Key { return Key{Ifindex: uint32(ifindex)} }

// ClassKey is the key of a class carried in skb->mark.
func ClassKey(id uint32) Key { return Key{Class: id & MarkClassMask} }

// Config is one profile in data plane form.
type Config struct {
	Delay, Jitter time.Duration
	Dist          int    // DistUniform, DistNormal, ...
	RateBps       uint64 // 0 = no shaping
	QueueLimit    time.Duration
	Loss          float64 // channel loss after shaping, 0..1
	Reorder       bool
	// SlotMin, SlotMax: netem's slotting (packets leave at slot times,
	// the next slot a uniform [SlotMin, SlotMax] after the last closed);
	// SlotMax 0 = none. SlotPackets, SlotBytes cap a slot (0 = no cap).
	SlotMin, SlotMax time.Duration
	// SlotDist, when not DistUniform, is netem's distribution form: the
	// gap is SlotDelay + the table's sample x SlotJitter (at least 0);
	// SlotMin and SlotMax are then unused.
	SlotDist               int
	SlotDelay, SlotJitter  time.Duration
	SlotPackets, SlotBytes uint32
}

// flagReorder is edt.c's F_REORDER.
const flagReorder = 1

func (c Config) kernel() (edtCfg, error) {
	if c.Delay < 0 || c.Jitter < 0 || c.QueueLimit < 0 || c.Dist < 0 || c.Dist >= numDists || c.Loss < 0 || c.Loss > 1 ||
		c.SlotMin < 0 || c.SlotMax < c.SlotMin || c.SlotMax > 10*time.Second ||
		c.SlotDist < 0 || c.SlotDist >= numDists || c.SlotDelay < 0 || c.SlotJitter < 0 || c.SlotDelay > 10*time.Second || c.SlotJitter > 10*time.Second {
		return edtCfg{}, fmt.Errorf("invalid edt config %+v", c)
	}
	k := edtCfg{DelayNs: uint64(c.Delay), JitterNs: uint64(c.Jitter), RateBps: c.RateBps, LimitNs: uint64(c.QueueLimit), Dist: uint32(c.Dist)}
	k.Loss = uint32(math.Min(c.Loss*(1<<32), math.MaxUint32))
	k.SlotMinNs, k.SlotMaxNs = uint64(c.SlotMin), uint64(c.SlotMax)
	if c.SlotDist != DistUniform {
		// edt.c's distribution form: delay and jitter in the same words
		k.SlotDist = uint32(c.SlotDist)
		k.SlotMinNs, k.SlotMaxNs = uint64(c.SlotDelay), uint64(c.SlotJitter)
	}
	k.SlotPackets, k.SlotBytes = c.SlotPackets, c.SlotBytes
	if c.Reorder {
		k.Flags |= flagReorder
	}
	return k, nil
}

// Stats are a profile's counters summed over CPUs.
type Stats struct {
	Packets, Bytes, DroppedLimit, DroppedLoss uint64
}

// Objects is one loaded instance of edt.c: its program (attach it to any
// number of egress hooks) and maps.
type Objects struct {
	objs edtObjects
}

// Load loads edt.c and fills its distribution tables.
func Load() (*Objects, error) {
	o := &Objects{}
	if err := loadEdtObjects(&o.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load edt program: %+v", ve)
		}
		return nil, fmt.Errorf("load edt program: %w", err)
	}
	for d := DistNormal; d < numDists; d++ {
		var t edtDistTable
		copy(t.V[:], DistTable(d))
		if err := o.objs.Dists.Put(uint32(d), &t); err != nil {
			o.Close()
			return nil, fmt.Errorf("fill distribution table %d: %w", d, err)
		}
	}
	return o, nil
}

// Program is the tc egress program (attach with direct action).
func (o *Objects) Program() *ebpf.Program { return o.objs.EdtEgress }

// IngressProgram is the tc ingress program that copies a class id from
// XDP metadata (4 bytes, MarkClass(id)) into skb->mark (attach with
// direct action on the port whose XDP program classifies).
func (o *Objects) IngressProgram() *ebpf.Program { return o.objs.EdtIngressMeta }

// IngressPortProgram is the tc ingress program that marks every packet
// arriving on a port with MarkClass(id) for the id set by SetPortClass
// (attach with direct action on that port).
func (o *Objects) IngressPortProgram() *ebpf.Program { return o.objs.EdtIngressPort }

// SetPortClass makes IngressPortProgram mark packets arriving on
// ifindex with MarkClass(id).
func (o *Objects) SetPortClass(ifindex int, id uint32) error {
	if err := o.objs.PortClasses.Put(uint32(ifindex), id&MarkClassMask); err != nil {
		return fmt.Errorf("set class of port %d: %w", ifindex, err)
	}
	return nil
}

// DeletePortClass stops marking packets arriving on ifindex (absent is
// not an error).
func (o *Objects) DeletePortClass(ifindex int) error {
	if err := o.objs.PortClasses.Delete(uint32(ifindex)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete class of port %d: %w", ifindex, err)
	}
	return nil
}

// Set installs or replaces the profile at k (whole, atomically for the
// packets). The shaper's clock and the counters carry on.
func (o *Objects) Set(k Key, c Config) error {
	kc, err := c.kernel()
	if err != nil {
		return err
	}
	if err := o.objs.Configs.Put(&k, &kc); err != nil {
		return fmt.Errorf("set edt profile %+v: %w", k, err)
	}
	return nil
}

// Delete removes the profile at k with its shaper and counters; packets
// of k then pass unstamped. Absent is not an error.
func (o *Objects) Delete(k Key) error {
	for _, m := range []*ebpf.Map{o.objs.Configs, o.objs.Shapers, o.objs.Slots, o.objs.Counters} {
		if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete edt profile %+v: %w", k, err)
		}
	}
	return nil
}

// Stats sums k's per-CPU counters (zero when none yet).
func (o *Objects) Stats(k Key) (Stats, error) {
	var per []edtStats
	if err := o.objs.Counters.Lookup(&k, &per); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return Stats{}, nil
		}
		return Stats{}, fmt.Errorf("read edt counters %+v: %w", k, err)
	}
	var s Stats
	for _, p := range per {
		s.Packets += p.Packets
		s.Bytes += p.Bytes
		s.DroppedLimit += p.DroppedLimit
		s.DroppedLoss += p.DroppedLoss
	}
	return s, nil
}

// Close releases the program and maps (an attached tc filter keeps its
// own reference to the program and maps).
func (o *Objects) Close() error { return o.objs.Close() }
