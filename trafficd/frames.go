package trafficd

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"

	"github.com/switchyard-net/switchyard/schema"
)

// Frames are built once per stream: the hot path only hands prebuilt
// buffers to the kernel.

// imixOrder is the simple IMIX (7:4:1 of 64/576/1500 bytes) interleaved,
// so a short run already has the mix.
var imixOrder = []int{64, 576, 64, 1500, 64, 576, 64, 64, 576, 64, 576, 64}

// uniformPool is how many frames a uniform size distribution draws.
const uniformPool = 1024

// frameSizes lists the sizes (with FCS) of a stream's frame pool in the
// order they are sent.
func frameSizes(g schema.TrafficGen) []int {
	switch g.Size.Kind {
	case schema.SizeIMIX:
		return imixOrder
	case schema.SizeUniform:
		seed := uint64(1)
		if g.Seed != nil {
			seed = *g.Seed
		}
		rng := rand.New(rand.NewPCG(seed, 0x7261666669636400))
		out := make([]int, uniformPool)
		for i := range out {
			out[i] = g.Size.Min + rng.IntN(g.Size.Max-g.Size.Min+1)
		}
		return out
	}
	return []int{g.Size.Min}
}

// buildFrames returns the stream's frame pool: each frame as handed to
// the kernel (its size minus the FCS the NIC would add).
func buildFrames(g schema.TrafficGen, portMAC net.HardwareAddr) [][]byte {
	sizes := frameSizes(g)
	out := make([][]byte, len(sizes))
	for i, s := range sizes {
		out[i] = buildFrame(g, portMAC, s-schema.FCSLen)
	}
	return out
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// buildFrame lays out Ethernet [802.1Q] IPv4|IPv6 UDP|TCP|ICMP echo
// and a zero payload in n bytes, checksums filled in.
func buildFrame(g schema.TrafficGen, portMAC net.HardwareAddr, n int) []byte {
	b := make([]byte, n)
	dst, src := g.DstMAC, g.SrcMAC
	if dst == nil {
		dst = broadcast
	}
	if src == nil {
		src = portMAC
	}
	copy(b[0:6], dst)
	copy(b[6:12], src)
	off := 12
	if g.VLAN != 0 {
		binary.BigEndian.PutUint16(b[off:], 0x8100)
		binary.BigEndian.PutUint16(b[off+2:], uint16(g.VLAN))
		off += 4
	}
	sa, da := g.Addrs()
	tos := 0
	if g.DSCP > 0 {
		tos = g.DSCP << 2
	}
	proto := 17
	switch g.Proto {
	case "tcp":
		proto = 6
	case "icmp":
		proto = 1
		if sa.Is6() {
			proto = 58
		}
	}
	var l4 int
	if sa.Is4() {
		binary.BigEndian.PutUint16(b[off:], 0x0800)
		ip := b[off+2:]
		ip[0] = 0x45
		ip[1] = byte(tos)
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		ip[8] = 64
		ip[9] = byte(proto)
		s4, d4 := sa.As4(), da.As4()
		copy(ip[12:16], s4[:])
		copy(ip[16:20], d4[:])
		binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip[:20], 0)))
		l4 = off + 2 + 20
	} else {
		binary.BigEndian.PutUint16(b[off:], 0x86dd)
		ip := b[off+2:]
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(tos)<<20)
		binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
		ip[6] = byte(proto)
		ip[7] = 64
		s16, d16 := sa.As16(), da.As16()
		copy(ip[8:24], s16[:])
		copy(ip[24:40], d16[:])
		l4 = off + 2 + 40
	}
	seg := b[l4:]
	sport, dport := g.Ports()
	var csumAt int
	switch proto {
	case 17:
		binary.BigEndian.PutUint16(seg[0:], uint16(sport))
		binary.BigEndian.PutUint16(seg[2:], uint16(dport))
		binary.BigEndian.PutUint16(seg[4:], uint16(len(seg)))
		csumAt = 6
	case 6:
		binary.BigEndian.PutUint16(seg[0:], uint16(sport))
		binary.BigEndian.PutUint16(seg[2:], uint16(dport))
		seg[12] = 5 << 4
		seg[13] = 0x10 // ACK
		binary.BigEndian.PutUint16(seg[14:], 65535)
		csumAt = 16
	default: // ICMP / ICMPv6 echo request, id 0x5347 ("SG"), seq 1
		seg[0] = 8
		if proto == 58 {
			seg[0] = 128
		}
		binary.BigEndian.PutUint16(seg[4:], 0x5347)
		binary.BigEndian.PutUint16(seg[6:], 1)
		csumAt = 2
	}
	var acc uint32
	if proto != 1 { // UDP, TCP and ICMPv6 cover a pseudo-header
		acc = pseudo(sa, da, proto, len(seg))
	}
	c := ^fold(sum(seg, acc))
	if c == 0 && proto == 17 {
		c = 0xffff // UDP: 0 means "no checksum"
	}
	binary.BigEndian.PutUint16(seg[csumAt:], c)
	return b
}

// pseudo sums the IPv4/IPv6 pseudo-header.
func pseudo(src, dst netip.Addr, proto, n int) uint32 {
	var acc uint32
	s, d := src.AsSlice(), dst.AsSlice()
	acc = sum(s, acc)
	acc = sum(d, acc)
	return acc + uint32(proto) + uint32(n)
}

// sum adds b as big-endian 16-bit words to acc (RFC 1071).
func sum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}
