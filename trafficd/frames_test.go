package trafficd

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// TestFrames: layouts and checksums (a correct checksum sums to 0xffff
// over the covered bytes), sizes without FCS, the IMIX mix.
func TestFrames(t *testing.T) {
	for _, c := range []struct {
		f        schema.Fields
		l3, l4   int // offsets
		proto    int
		v6, vlan bool
	}{
		{schema.Fields{"rate": "1kpps", "dscp": "46"}, 14, 34, 17, false, false},
		{schema.Fields{"rate": "1kpps", "vlan": "100", "proto": "tcp", "size": "128"}, 18, 38, 6, false, true},
		{schema.Fields{"rate": "1kpps", "src": "2001:db8::1", "proto": "icmp", "size": "99"}, 14, 54, 58, true, false},
		{schema.Fields{"rate": "1kpps", "dst": "2001:db8::2", "size": "1500"}, 14, 54, 17, true, false},
		{schema.Fields{"rate": "1kpps", "proto": "icmp", "size": "65"}, 14, 34, 1, false, false},
	} {
		g := testGen(t, c.f)
		b := buildFrames(g, testMAC)[0]
		if len(b) != g.Size.Min-schema.FCSLen {
			t.Errorf("%v: frame of %d bytes, want size-4", c.f, len(b))
		}
		if c.vlan && binary.BigEndian.Uint16(b[12:]) != 0x8100 {
			t.Errorf("%v: no 802.1Q tag", c.f)
		}
		src, dst := g.Addrs()
		seg := b[c.l4:]
		acc := uint32(0)
		if c.proto != 1 {
			acc = pseudo(src, dst, c.proto, len(seg))
		}
		if fold(sum(seg, acc)) != 0xffff {
			t.Errorf("%v: L4 checksum wrong", c.f)
		}
		if !c.v6 {
			ip := b[c.l3 : c.l3+20]
			if fold(sum(ip, 0)) != 0xffff || int(ip[9]) != c.proto || netip.AddrFrom4([4]byte(ip[16:20])) != dst {
				t.Errorf("%v: IPv4 header wrong: % x", c.f, ip)
			}
			if c.f["dscp"] == "46" && ip[1] != 46<<2 {
				t.Errorf("%v: TOS %#x", c.f, ip[1])
			}
		} else if b[c.l3+6] != byte(c.proto) || int(binary.BigEndian.Uint16(b[c.l3+4:])) != len(seg) {
			t.Errorf("%v: IPv6 header wrong", c.f)
		}
		if string(b[0:6]) != string(broadcast) || string(b[6:12]) != string(testMAC) {
			t.Errorf("%v: MACs % x", c.f, b[:12])
		}
	}
	n := map[int]int{}
	for _, s := range frameSizes(testGen(t, schema.Fields{"rate": "1kpps", "size": "imix"})) {
		n[s]++
	}
	if n[64] != 7 || n[576] != 4 || n[1500] != 1 {
		t.Errorf("imix %v, want 7:4:1", n)
	}
	for _, s := range frameSizes(testGen(t, schema.Fields{"rate": "1kpps", "size": "uniform 100-200"})) {
		if s < 100 || s > 200 {
			t.Fatalf("uniform size %d outside 100-200", s)
		}
	}
}
