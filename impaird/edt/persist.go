package edt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// PrevQdiscPin is the name, under Options.PinDir, of the pinned map that
// remembers each EDT port's previous root qdisc across restarts. It holds
// a ':' so it can never be a netdev's name (impaird's per-port pin
// directories live beside it).
const PrevQdiscPin = "edt:qdisc"

// prevValueSize is the value size of the map: a little-endian uint32
// length, then the JSON of the qdisc (savedQdisc).
const prevValueSize = 2048

// savedQdisc is a root qdisc as persisted: the netlink type, the ifindex
// it was on, and the netlink struct as JSON.
type savedQdisc struct {
	Type    string          `json:"type"`
	Ifindex int             `json:"ifindex"`
	Qdisc   json.RawMessage `json:"qdisc"`
}

// prevStore persists previous root qdiscs in a pinned BPF hash map keyed
// by the netdev name (bpffs holds no regular files). The map exists only
// while it has entries: created on the first save, unpinned when the last
// entry goes.
type prevStore struct {
	path string
	m    *ebpf.Map // nil: no map pinned
}

func prevKey(ifname string) []byte {
	k := make([]byte, unix.IFNAMSIZ)
	copy(k, ifname)
	return k
}

// openPrevStore opens the map pinned in dir, if any.
func openPrevStore(dir string) (*prevStore, error) {
	s := &prevStore{path: filepath.Join(dir, PrevQdiscPin)}
	m, err := ebpf.LoadPinnedMap(s.path, nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return s, nil
		}
		return nil, fmt.Errorf("open %s: %w", s.path, err)
	}
	if info, ierr := m.Info(); ierr == nil && info.Type == ebpf.Hash &&
		info.KeySize == unix.IFNAMSIZ && info.ValueSize == prevValueSize {
		s.m = m
		return s, nil
	}
	m.Close()
	os.Remove(s.path) // another layout: start afresh
	return s, nil
}

// create makes and pins the map.
func (s *prevStore) create() error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name: "edt_prev_qdisc", Type: ebpf.Hash, KeySize: unix.IFNAMSIZ, ValueSize: prevValueSize,
		MaxEntries: 4096, Flags: unix.BPF_F_NO_PREALLOC,
	})
	if err != nil {
		return fmt.Errorf("create map for %s: %w", s.path, err)
	}
	if err := m.Pin(s.path); err != nil {
		m.Close()
		return fmt.Errorf("pin %s: %w", s.path, err)
	}
	s.m = m
	return nil
}

func (s *prevStore) Close() error {
	if s.m == nil {
		return nil
	}
	return s.m.Close()
}

// save records q as ifname's previous root qdisc.
func (s *prevStore) save(ifname string, ifindex int, q netlink.Qdisc) error {
	q.Attrs().Statistics = nil // not configuration
	raw, err := json.Marshal(q)
	if err != nil {
		return err
	}
	b, err := json.Marshal(savedQdisc{Type: q.Type(), Ifindex: ifindex, Qdisc: raw})
	if err != nil {
		return err
	}
	if len(b) > prevValueSize-4 {
		return fmt.Errorf("%s qdisc description too long (%d bytes)", q.Type(), len(b))
	}
	v := make([]byte, prevValueSize)
	binary.LittleEndian.PutUint32(v, uint32(len(b)))
	copy(v[4:], b)
	if s.m == nil {
		if err := s.create(); err != nil {
			return err
		}
	}
	return s.m.Put(prevKey(ifname), v)
}

// load returns ifname's saved previous root qdisc when it was saved for
// ifindex (nil when none).
func (s *prevStore) load(ifname string, ifindex int) (netlink.Qdisc, error) {
	if s.m == nil {
		return nil, nil
	}
	v := make([]byte, prevValueSize)
	if err := s.m.Lookup(prevKey(ifname), v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(v)
	if n > prevValueSize-4 {
		return nil, fmt.Errorf("saved qdisc of %s: bad length %d", ifname, n)
	}
	var sq savedQdisc
	if err := json.Unmarshal(v[4:4+n], &sq); err != nil {
		return nil, fmt.Errorf("saved qdisc of %s: %w", ifname, err)
	}
	if sq.Ifindex != ifindex {
		return nil, nil // another netdev of that name
	}
	var q netlink.Qdisc
	switch sq.Type {
	case "pfifo_fast":
		q = &netlink.PfifoFast{}
	case "prio":
		q = &netlink.Prio{}
	case "htb":
		q = &netlink.Htb{}
	case "netem":
		q = &netlink.Netem{}
	case "tbf":
		q = &netlink.Tbf{}
	case "fq":
		q = &netlink.Fq{}
	case "fq_codel":
		q = &netlink.FqCodel{}
	case "sfq":
		q = &netlink.Sfq{}
	default:
		q = &netlink.GenericQdisc{QdiscType: sq.Type}
	}
	if err := json.Unmarshal(sq.Qdisc, q); err != nil {
		return nil, fmt.Errorf("saved %s qdisc of %s: %w", sq.Type, ifname, err)
	}
	if g, ok := q.(*netlink.GenericQdisc); ok {
		g.QdiscType = sq.Type
	}
	return q, nil
}

// forget deletes ifname's entry (absent is no error); the map is unpinned
// when it is empty.
func (s *prevStore) forget(ifname string) error {
	if s.m == nil {
		return nil
	}
	if err := s.m.Delete(prevKey(ifname)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	k := make([]byte, unix.IFNAMSIZ)
	if err := s.m.NextKey(nil, k); errors.Is(err, ebpf.ErrKeyNotExist) {
		if err := s.m.Unpin(); err != nil {
			return err
		}
		s.m.Close()
		s.m = nil
	}
	return nil
}
