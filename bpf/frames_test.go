package bpf

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/kernelcap"
)

// frame describes a hand-built test packet.
type frame struct {
	vlans      []uint16 // outer first; the first is 802.1ad when there are two
	src, dst   netip.Addr
	proto      uint8
	sport      uint16
	dport      uint16
	dscp       uint8
	hopByHop   bool // IPv6: add a hop-by-hop options header
	ipOptions  bool // IPv4: add 4 bytes of options (NOPs)
	payloadLen int
	etherType  uint16 // non-IP frames: e.g. 0x0806 ARP
	tcpFlags   uint8  // TCP: the flags byte
	icmpType   uint8  // ICMP, ICMPv6 (proto 1, 58)
	icmpCode   uint8
}

func (f frame) bytes() []byte {
	b := []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1}
	for i, v := range f.vlans {
		tpid := uint16(0x8100)
		if i == 0 && len(f.vlans) > 1 {
			tpid = 0x88a8
		}
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, v)
	}
	if f.etherType != 0 {
		b = binary.BigEndian.AppendUint16(b, f.etherType)
		return append(b, make([]byte, 46)...)
	}
	l4 := f.l4()
	if f.src.Is4() {
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		ihl := 5
		if f.ipOptions {
			ihl = 6
		}
		ip := make([]byte, ihl*4)
		ip[0] = 0x40 | byte(ihl)
		ip[1] = f.dscp << 2
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+len(l4)))
		ip[8] = 64
		ip[9] = f.proto
		copy(ip[12:], f.src.AsSlice())
		copy(ip[16:], f.dst.AsSlice())
		for i := 20; i < len(ip); i++ {
			ip[i] = 1 // NOP
		}
		b = append(b, ip...)
	} else {
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		ip := make([]byte, 40)
		binary.BigEndian.PutUint32(ip, 6<<28|uint32(f.dscp)<<22)
		next := f.proto
		var ext []byte
		if f.hopByHop {
			ext = []byte{f.proto, 0, 1, 4, 0, 0, 0, 0} // PadN
			next = 0
		}
		binary.BigEndian.PutUint16(ip[4:], uint16(len(ext)+len(l4)))
		ip[6] = next
		ip[7] = 64
		copy(ip[8:], f.src.AsSlice())
		copy(ip[24:], f.dst.AsSlice())
		b = append(append(b, ip...), ext...)
	}
	return append(b, l4...)
}

func (f frame) l4() []byte {
	n := f.payloadLen
	if n == 0 {
		n = 18
	}
	var h []byte
	switch f.proto {
	case 6:
		h = make([]byte, 20)
		h[12] = 5 << 4
		h[13] = f.tcpFlags
	case 17:
		h = make([]byte, 8)
		binary.BigEndian.PutUint16(h[4:], uint16(8+n))
	default:
		h = make([]byte, 8)
		h[0], h[1] = f.icmpType, f.icmpCode
	}
	if f.proto == 6 || f.proto == 17 {
		binary.BigEndian.PutUint16(h, f.sport)
		binary.BigEndian.PutUint16(h[2:], f.dport)
	}
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i)
	}
	return append(h, payload...)
}

func udp4(dst string, dport uint16) frame {
	return frame{src: netip.MustParseAddr("192.0.2.1"), dst: netip.MustParseAddr(dst), proto: 17, sport: 40000, dport: dport}
}

// loadPort loads an unpinned instance, skipping where the kernel or the
// privileges are missing.
func loadPort(t testing.TB) *Port {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs (BPF_PROG_TEST_RUN)")
	}
	p, err := Load("")
	if errors.Is(err, ebpf.ErrNotSupported) {
		if kernelcap.InVM() { // Debian's kernel has every feature: a bug, not a skip
			t.Fatalf("the test VM's kernel lacks a BPF feature the program needs: %v", err)
		}
		t.Skipf("kernel lacks a BPF feature the program needs: %v", err)
	}
	if ve := (*ebpf.VerifierError)(nil); errors.As(err, &ve) {
		t.Fatalf("%+v", ve) // the whole verifier log, not its last line
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pinCPU keeps the calling goroutine on one OS thread on one CPU, so the
// per-CPU RNG stream (and so the drop pattern) is the same run to run.
func pinCPU(t testing.TB) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := 0
	for !set.IsSet(cpu) {
		cpu++
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.SchedSetaffinity(0, &set) })
}

// run runs the program once on data and returns the XDP verdict.
func run(t testing.TB, p *Port, data []byte) uint32 {
	t.Helper()
	ret, err := p.objs.Impair.Run(&ebpf.RunOptions{Data: data})
	if err != nil {
		t.Fatalf("prog.Run: %v", err)
	}
	return ret
}

const (
	xdpDrop = 1
	xdpPass = 2
)

// seed is a Spec.Seed.
func seed(v uint64) *uint64 { return &v }

// proto is a Match on an IP protocol.
func proto(p uint8) Match { return Match{Proto: p, ProtoSet: true} }

// ports is a set PortRange.
func ports(lo, hi uint16) PortRange { return PortRange{Set: true, Lo: lo, Hi: hi} }

func apply(t testing.TB, p *Port, port *Spec, rules ...RuleSpec) {
	t.Helper()
	plan, err := Compile(port, rules)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(plan); err != nil {
		t.Fatal(err)
	}
}

func counters(t testing.TB, p *Port, name string) Counters {
	t.Helper()
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c[name]
}

func checkInvariant(t testing.TB, name string, c Counters) {
	t.Helper()
	if c.RxPackets != c.Passed+c.DroppedLoss+c.DroppedRate {
		t.Errorf("%q: rx_packets %d != passed %d + dropped_loss %d + dropped_rate %d",
			name, c.RxPackets, c.Passed, c.DroppedLoss, c.DroppedRate)
	}
}
