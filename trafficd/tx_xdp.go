package trafficd

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AF_XDP transmit in copy mode (XDP_COPY): frames live in a UMEM the
// kernel reads; TX needs no XDP program, so it works beside impaird's
// program on the same port. On veth (and any driver without zero-copy)
// the kernel copies each frame into an skb and calls the driver directly,
// bypassing the qdisc like PACKET_QDISC_BYPASS does.

const (
	xdpChunk     = 4096 // UMEM chunk: the largest frame AF_XDP sends here (no multi-buffer)
	xdpRingSize  = 2048 // TX and completion ring entries (power of two)
	xdpTxBudget  = 256  // XDP_MAX_TX_SKB_BUDGET: frames one sendto sends (kernel default 32)
	xdpMinChunks = xdpRingSize
	xdpMaxQueues = 64 // queues tried when queue 0 is taken
)

// xdpRing is a mapped producer/consumer ring.
type xdpRing struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	desc     unsafe.Pointer
	mask     uint32
}

func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, entries, entrySize uint32) (xdpRing, error) {
	size := int(off.Desc) + int(entries*entrySize)
	mem, err := unix.Mmap(fd, pgoff, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return xdpRing{}, err
	}
	return xdpRing{
		mem:      mem,
		producer: (*uint32)(unsafe.Pointer(&mem[off.Producer])),
		consumer: (*uint32)(unsafe.Pointer(&mem[off.Consumer])),
		desc:     unsafe.Pointer(&mem[off.Desc]),
		mask:     entries - 1,
	}, nil
}

// xdpSender owns one AF_XDP socket and its UMEM on queue 0 of the port.
type xdpSender struct {
	fd   int
	umem []byte
	tx   xdpRing
	cq   xdpRing
	fq   xdpRing
	// chunks holds frame i mod len(pool) in chunk i; lens are their sizes.
	chunks int
	lens   []uint32
	pool   int
	// next is the chunk the next frame uses; outstanding are sent frames
	// whose completion was not read yet.
	next        int
	outstanding uint32
	txProd      uint32
	cqCons      uint32
	budget      int // frames one sendto transmits (XDP_MAX_TX_SKB_BUDGET)
}

var errXDPFrameSize = errors.New("AF_XDP sends frames of at most 4092 bytes here (no multi-buffer)")

// openXDP binds an AF_XDP socket to queue 0 of ifindex in copy mode and
// lays the pool's frames into its UMEM. (No iproute2 equivalent; xdpsock
// -t -S in the kernel samples does the same.)
func openXDP(ifindex int, pool [][]byte) (_ *xdpSender, err error) {
	for _, f := range pool {
		if len(f) > xdpChunk-4 {
			return nil, errXDPFrameSize
		}
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open AF_XDP socket: %w", err)
	}
	s := &xdpSender{fd: fd, pool: len(pool)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	// As many chunks as the ring holds, a multiple of the pool so the
	// size mix repeats exactly.
	s.chunks = len(pool) * ((xdpMinChunks + len(pool) - 1) / len(pool))
	s.umem, err = unix.Mmap(-1, 0, s.chunks*xdpChunk, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("map UMEM of %d bytes: %w", s.chunks*xdpChunk, err)
	}
	s.lens = make([]uint32, s.chunks)
	for i := 0; i < s.chunks; i++ {
		f := pool[i%len(pool)]
		copy(s.umem[i*xdpChunk:], f)
		s.lens[i] = uint32(len(f))
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: xdpChunk}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return nil, fmt.Errorf("register UMEM: %w", err)
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o, xdpRingSize); err != nil {
			return nil, fmt.Errorf("size AF_XDP ring %d: %w", o, err)
		}
	}
	var off unix.XDPMmapOffsets
	ol := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&ol)), 0); e != 0 {
		return nil, fmt.Errorf("read AF_XDP ring offsets: %w", e)
	}
	if s.tx, err = mapRing(fd, off.Tx, unix.XDP_PGOFF_TX_RING, xdpRingSize, uint32(unsafe.Sizeof(unix.XDPDesc{}))); err != nil {
		return nil, fmt.Errorf("map TX ring: %w", err)
	}
	if s.cq, err = mapRing(fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, xdpRingSize, 8); err != nil {
		return nil, fmt.Errorf("map completion ring: %w", err)
	}
	if s.fq, err = mapRing(fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, xdpRingSize, 8); err != nil {
		return nil, fmt.Errorf("map fill ring: %w", err)
	}
	// Send more than 32 frames per sendto where the kernel allows it
	// (6.17+); older kernels keep their default.
	s.budget = 32
	if unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, xdpTxBudget) == nil {
		s.budget = xdpTxBudget
	}
	// One AF_XDP socket per queue: a port with several TX queues
	// (veth numtxqueues) takes as many AF_XDP streams.
	for q := uint32(0); ; q++ {
		err := unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_COPY, Ifindex: uint32(ifindex), QueueID: q})
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EBUSY) || q == xdpMaxQueues-1 {
			if errors.Is(err, unix.EINVAL) && q > 0 {
				err = fmt.Errorf("every TX queue has an AF_XDP socket already: %w", unix.EBUSY)
			}
			return nil, fmt.Errorf("bind AF_XDP socket to queue %d of ifindex %d in copy mode: %w", q, ifindex, err)
		}
	}
	s.txProd = atomic.LoadUint32(s.tx.producer)
	s.cqCons = atomic.LoadUint32(s.cq.consumer)
	return s, nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0); e != 0 {
		return e
	}
	return nil
}

func (s *xdpSender) path() string { return "xdp" }

// reap reads the completion ring: those chunks are free again (their
// content never changes, so they are simply reused in order).
func (s *xdpSender) reap() {
	prod := atomic.LoadUint32(s.cq.producer)
	if n := prod - s.cqCons; n > 0 {
		s.cqCons = prod
		s.outstanding -= n
		atomic.StoreUint32(s.cq.consumer, prod)
	}
}

// send queues up to n descriptors and kicks the kernel. The pool index
// is implied: chunks are used in order and chunk i holds frame i mod
// len(pool), which is the order the caller asked for.
func (s *xdpSender) send(_ int, n int) (int, int, error) {
	s.reap()
	free := uint32(xdpRingSize) - s.outstanding
	if uint32(n) > free {
		n = int(free)
	}
	for i := 0; i < n; i++ {
		d := (*unix.XDPDesc)(unsafe.Add(s.tx.desc, uintptr((s.txProd+uint32(i))&s.tx.mask)*unsafe.Sizeof(unix.XDPDesc{})))
		d.Addr = uint64(s.next * xdpChunk)
		d.Len = s.lens[s.next]
		d.Options = 0
		s.next++
		if s.next == s.chunks {
			s.next = 0
		}
	}
	if n > 0 {
		s.txProd += uint32(n)
		s.outstanding += uint32(n)
		atomic.StoreUint32(s.tx.producer, s.txProd)
	}
	dropped, err := s.kick()
	s.reap()
	if dropped > n {
		dropped = n
	}
	return n - dropped, dropped, err
}

// kick asks the kernel to transmit the TX ring: in copy mode each sendto
// sends up to the TX budget synchronously. EBUSY means the device dropped
// one frame (veth: the peer's backlog is full); its descriptor is
// consumed.
func (s *xdpSender) kick() (dropped int, err error) {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.ENOBUFS:
		return 0, nil
	case unix.EBUSY:
		return 1, nil
	}
	return 0, fmt.Errorf("AF_XDP sendto: %w", e)
}

// flush kicks until the kernel has taken every queued descriptor.
func (s *xdpSender) flush() {
	for i := 0; i < 1000 && atomic.LoadUint32(s.tx.consumer) != s.txProd; i++ {
		if _, err := s.kick(); err != nil {
			return
		}
	}
}

func (s *xdpSender) close() error {
	for _, r := range []xdpRing{s.tx, s.cq, s.fq} {
		if r.mem != nil {
			unix.Munmap(r.mem)
		}
	}
	err := unix.Close(s.fd)
	if s.umem != nil {
		unix.Munmap(s.umem)
	}
	return err
}
