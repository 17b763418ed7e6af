package bpf

import (
	"encoding/binary"
	"math/bits"
	"testing"

	"github.com/cilium/ebpf"
)

// The egress impairment stage (egress.h) in BPF_PROG_TEST_RUN: the port's
// tc egress program on skb frames, configured through the egress instance.

// egressPort loads an unpinned port and its egress instance.
func egressPort(t *testing.T) (*Port, *Port) {
	t.Helper()
	p := loadPort(t)
	eg, err := p.Egress()
	if err != nil {
		t.Fatal(err)
	}
	return p, eg
}

// runEgress runs the port's egress program (the egress instance's) once.
func runEgress(t testing.TB, eg *Port, data []byte) (uint32, []byte) {
	t.Helper()
	out := make([]byte, len(data)+256)
	ret, err := eg.objs.AclEgress.Run(&ebpf.RunOptions{Data: data, DataOut: out})
	if err != nil {
		t.Fatalf("egress program run: %v", err)
	}
	return ret, out[:len(data)]
}

func egressVerdicts(t *testing.T, eg *Port, data []byte, n int) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := range out {
		ret, _ := runEgress(t, eg, data)
		if ret != tcActShot && ret != tcActUnspec {
			t.Fatalf("egress verdict %#x: want TC_ACT_SHOT or TC_ACT_UNSPEC", ret)
		}
		out[i] = ret == tcActShot
	}
	return out
}

// TestEgressLossSeeded: every loss model drops on egress with the same
// seeded sequence as on ingress for the same packets; the counters are
// the egress instance's, the ingress ones untouched (and the reverse).
func TestEgressLossSeeded(t *testing.T) {
	data := udp4("10.0.0.1", 9).bytes()
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"random", Spec{Loss: 30, Seed: seed(7)}},
		{"gilbert", Spec{LossModel: LossGilbert, GEP: 5, GER: 30, GELossGood: 1, GELossBad: 60, Seed: seed(8)}},
		{"periodic", Spec{LossModel: LossPeriodic, Period: 4}},
		{"loss_corr", Spec{Loss: 20, LossCorr: 50, Seed: seed(9)}},
		{"state", Spec{LossModel: LossState, P13: 5, P31: 40, P32: 10, P23: 5, P14: 1, Seed: seed(10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pinCPU(t) // the subtest's own goroutine: per-CPU streams
			p, eg := egressPort(t)
			apply(t, eg, &tc.spec)
			out := egressVerdicts(t, eg, data, 2000)
			loss, _, _ := lossStats(out)
			if loss == 0 || loss == 100 {
				t.Fatalf("egress loss %.1f%%: the model does not act on egress", loss)
			}
			if got := run(t, p, data); got != xdpPass {
				t.Fatalf("ingress with an egress-only profile: verdict %d, want XDP_PASS", got)
			}
			ce := counters(t, eg, "")
			checkInvariant(t, "egress", ce)
			if ce.RxPackets != 2000 {
				t.Fatalf("egress counters %+v: want rx_packets 2000", ce)
			}
			if ci, err := p.Counters(); err != nil || len(ci) != 0 {
				t.Fatalf("ingress counters %v (%v): want none", ci, err)
			}
			apply(t, p, &tc.spec)
			in := verdicts(t, p, 2000)
			if !equalBools(in, out) {
				t.Fatalf("same seed, same packets: ingress and egress drop patterns differ (%.1f%% vs %.1f%%)",
					func() float64 { l, _, _ := lossStats(in); return l }(), loss)
			}
			ci := counters(t, p, "")
			if ci.RxPackets != 2000 || counters(t, eg, "").RxPackets != 2000 {
				t.Fatalf("ingress %+v, egress %+v: each direction counts its own packets", ci, counters(t, eg, ""))
			}
		})
	}
}

// TestEgressRulesAndPolicer: IMPAIRMENT_FLOW rules classify on egress
// (the rule's slot counts), and a rule's policer drops over rate there.
func TestEgressRulesAndPolicer(t *testing.T) {
	_, eg := egressPort(t)
	apply(t, eg, nil,
		RuleSpec{Name: "F|drop", Match: Match{Dst: pfx("10.0.0.0/24"), Proto: 17, ProtoSet: true}, Spec: Spec{Loss: 100}},
		RuleSpec{Name: "F|pol", Match: Match{Dst: pfx("10.0.1.0/24")}, Spec: Spec{Rate: 8000, Burst: 1000}})
	if got, _ := runEgress(t, eg, udp4("10.0.0.1", 9).bytes()); got != tcActShot {
		t.Fatalf("egress rule with loss 100: %#x, want TC_ACT_SHOT", got)
	}
	if got, _ := runEgress(t, eg, udp4("10.0.2.1", 9).bytes()); got != tcActUnspec {
		t.Fatalf("no rule matches, no port profile: %#x, want TC_ACT_UNSPEC", got)
	}
	data := udp4("10.0.1.1", 9).bytes()
	shot := 0
	for i := 0; i < 100; i++ {
		if got, _ := runEgress(t, eg, data); got == tcActShot {
			shot++
		}
	}
	c := counters(t, eg, "F|pol")
	checkInvariant(t, "F|pol", c)
	if shot == 0 || c.DroppedRate != uint64(shot) || c.Passed == 0 {
		t.Fatalf("policer at 1000 B/s, burst 1000 B, 100 x %d B: %d shot, counters %+v", len(data), shot, c)
	}
	if c := counters(t, eg, "F|drop"); c.DroppedLoss != 1 {
		t.Fatalf("F|drop counters %+v: want dropped_loss 1", c)
	}
}

// TestEgressCorrupt: corrupt flips one payload bit of the skb and leaves
// a TCP checksum that no longer verifies (test-run skbs are not
// CHECKSUM_PARTIAL: the field was a complete checksum).
func TestEgressCorrupt(t *testing.T) {
	_, eg := egressPort(t)
	apply(t, eg, &Spec{Corrupt: 100, Seed: seed(3)})
	f := tcp4("192.0.2.1", "10.0.0.1", 1000, 80, 0x18)
	f.payloadLen = 200
	in := f.bytes()
	const l4 = 14 + 20
	binary.BigEndian.PutUint16(in[l4+16:], tcpChecksum(in[14:34], in[l4:]))
	if tcpChecksum(in[14:34], in[l4:]) != 0 {
		t.Fatal("test frame: checksum does not verify")
	}
	for i := 0; i < 20; i++ {
		ret, out := runEgress(t, eg, in)
		if ret != tcActUnspec {
			t.Fatalf("corrupt: verdict %#x, want TC_ACT_UNSPEC", ret)
		}
		flipped := 0
		for j := range in {
			if j == l4+16 || j == l4+17 {
				continue
			}
			if j < l4+20 && in[j] != out[j] {
				t.Fatalf("byte %d outside the payload changed", j)
			}
			flipped += bits.OnesCount8(in[j] ^ out[j])
		}
		if flipped != 1 {
			t.Fatalf("%d payload bits flipped, want 1", flipped)
		}
		if tcpChecksum(out[14:34], out[l4:]) == 0 {
			t.Fatal("the corrupted segment's checksum still verifies")
		}
	}
	if c := counters(t, eg, ""); c.Corrupted != 20 || c.Passed != 20 {
		t.Fatalf("counters %+v: want corrupted 20, passed 20", c)
	}
}

// tcpChecksum is the Internet checksum of an IPv4 TCP segment with its
// pseudo header; 0 when the segment's checksum field is right.
func tcpChecksum(ip, seg []byte) uint16 {
	var s uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			s += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	s += 6 + uint32(len(seg))
	add(seg)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// TestEgressWithACL: the one egress program runs the egress ACL first (a
// dropped packet never reaches the impairment stage or its counters),
// then the egress impairment; the ingress instance's profile never
// applies on egress.
func TestEgressWithACL(t *testing.T) {
	p, eg := egressPort(t)
	apply(t, p, &Spec{Loss: 100})
	applyACL(t, p, ACLEgress, ACLRule{Name: "E|x", Action: ACLDrop, Match: Match{Dst: pfx("10.9.0.0/16")}})
	if got, _ := runEgress(t, eg, udp4("10.0.0.1", 9).bytes()); got != tcActUnspec {
		t.Fatalf("ingress loss 100 only: egress verdict %#x, want TC_ACT_UNSPEC", got)
	}
	apply(t, eg, &Spec{})
	apply(t, eg, &Spec{Loss: 0, Corrupt: 0}, RuleSpec{Name: "F|all", Spec: Spec{}})
	for i := 0; i < 5; i++ {
		if got, _ := runEgress(t, eg, udp4("10.9.0.1", 9).bytes()); got != tcActShot {
			t.Fatalf("egress ACL drop: %#x, want TC_ACT_SHOT", got)
		}
		if got, _ := runEgress(t, eg, udp4("10.0.0.1", 9).bytes()); got != tcActUnspec {
			t.Fatalf("egress pass: %#x, want TC_ACT_UNSPEC", got)
		}
	}
	if c := aclCounters(t, p, ACLEgress); c["E|x"].Packets != 5 {
		t.Fatalf("egress ACL counters %v: want 5 on E|x", c)
	}
	if c := counters(t, eg, "F|all"); c.RxPackets != 5 || c.Passed != 5 {
		t.Fatalf("egress impairment counters %+v: want the 5 packets the ACL passed", c)
	}
	// the port's own program (ingress instance) carries no egress config
	if ret, err := p.objs.AclEgress.Run(&ebpf.RunOptions{Data: udp4("10.0.0.1", 9).bytes()}); err != nil || ret != tcActUnspec {
		t.Fatalf("ingress instance's tc program: %#x, %v", ret, err)
	}
}

// BenchmarkEgress measures ns per packet of the port's tc egress program
// (BPF_PROG_TEST_RUN on a 64-byte skb): nothing configured, an egress
// random loss, the same with the ingress profile only (the egress stage
// must cost nothing then), and the policer.
//
//	sudo go test -run '^$' -bench Egress -benchtime 1000000x ./bpf/
func BenchmarkEgress(b *testing.B) {
	for _, bc := range []struct {
		name       string
		in, egSpec *Spec
	}{
		{name: "nothing"},
		{name: "ingress-loss-only", in: &Spec{Loss: 1}},
		{name: "egress-random-loss", egSpec: &Spec{Loss: 1}},
		{name: "egress-policer", egSpec: &Spec{Rate: 10e9, Burst: 10e9 / 800}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := loadPort(b)
			eg, err := p.Egress()
			if err != nil {
				b.Fatal(err)
			}
			pinCPU(b)
			if bc.in != nil {
				apply(b, p, bc.in)
			}
			if bc.egSpec != nil {
				apply(b, eg, bc.egSpec)
			}
			f := udp4("10.0.0.1", 9)
			f.payloadLen = 64 - 42
			b.ResetTimer()
			_, per, err := eg.objs.AclEgress.Benchmark(f.bytes(), b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(per.Nanoseconds()), "ns/pkt")
		})
	}
}

// TestEgressScopeFlow: a scope flow rule on egress gives each flow its own
// bucket (the egress instance's flow table): two flows over the same rule
// each pass their burst, then drop.
func TestEgressScopeFlow(t *testing.T) {
	_, eg := egressPort(t)
	apply(t, eg, nil, RuleSpec{Name: "F|pf", Match: proto(17), ScopeFlow: true, Spec: Spec{Rate: 8000, Burst: 1000}})
	for _, sport := range []uint16{1000, 2000} {
		f := udp4("10.0.0.1", 9)
		f.sport = sport
		passed := 0
		for i := 0; i < 50; i++ {
			if got, _ := runEgress(t, eg, f.bytes()); got == tcActUnspec {
				passed++
			}
		}
		if passed == 0 || passed == 50 {
			t.Fatalf("flow from port %d: %d of 50 passed, want its own burst then drops", sport, passed)
		}
	}
	c := counters(t, eg, "F|pf")
	checkInvariant(t, "F|pf", c)
	if c.RxPackets != 100 || c.DroppedRate == 0 {
		t.Fatalf("counters %+v", c)
	}
}
