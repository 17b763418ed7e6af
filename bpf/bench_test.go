package bpf

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkImpair measures ns per packet of the impairment program with
// BPF_PROG_TEST_RUN (the kernel's own per-run time, 64-byte UDP frame),
// side by side with the minimal XDP_PASS program measured in the same
// iteration. Metrics: ns/pkt, pass-ns/pkt, x-pass (ratio) and Mpps (one
// core). The 10 GbE budget for 64-byte frames is 67 ns (14.88 Mpps).
//
//	sudo go test -run '^$' -bench Impair -benchtime 2000000x ./bpf/
func BenchmarkImpair(b *testing.B) {
	udp9 := Match{Proto: 17, ProtoSet: true, Dport: PortRange{Set: true, Lo: 9, Hi: 9}}
	flowsLast := func(n int, shapes int) []RuleSpec {
		var out []RuleSpec
		for i := 0; i < n; i++ {
			m := udp9
			m.Dst = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + i/65536), byte(i / 256), byte(i)}), 32-i%shapes).Masked()
			if i == n-1 {
				m.Dst = netip.MustParsePrefix("10.0.0.1/32")
			}
			// the rule matching the test frame (dst 10.0.0.1) ranks last
			out = append(out, RuleSpec{Name: fmt.Sprintf("r%d", i), Match: m, Spec: Spec{Loss: 0.01}, Priority: 2000 - i})
		}
		return out
	}
	gilbert := Spec{LossModel: LossGilbert, GEP: 1, GER: 10, GELossBad: 100}
	// 10 Gbit/s with the default burst of CONFIG_DB (10 ms of rate)
	const rate10g, burst10g = 10e9, 10e9 / 800
	for _, bc := range []struct {
		name  string
		port  *Spec
		flows func() []RuleSpec
		empty bool
		v6    bool // an IPv6 frame to 2001:db8::1 instead of IPv4 to 10.0.0.1
	}{
		{name: "no-impairment", empty: true},
		{name: "random-loss", port: &Spec{Loss: 1}},
		{name: "gilbert", port: &gilbert},
		{name: "policer", port: &Spec{Rate: rate10g, Burst: burst10g}},
		{name: "loss-corr", port: &Spec{Loss: 1, LossCorr: 25}},
		{name: "4-state", port: &Spec{LossModel: LossState, P13: 1, P31: 30, P32: 20, P23: 40, P14: 1}},
		{name: "duplicate", port: &Spec{Duplicate: 1}},
		{name: "1000-rules-match-last", flows: func() []RuleSpec { return flowsLast(1000, 1) }},
		{name: "1000-rules-8-shapes", flows: func() []RuleSpec { return flowsLast(1000, 8) }},
		{name: "1000-rules-ipv6-match-last", v6: true, flows: func() []RuleSpec {
			out := flowsLast(1000, 1)
			for i := range out {
				a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)})
				if i == len(out)-1 {
					a = netip.MustParseAddr("2001:db8::1")
				}
				out[i].Match.Dst = netip.PrefixFrom(a, 128)
			}
			return out
		}},
		{name: "scope-flow", flows: func() []RuleSpec {
			s := gilbert
			s.Rate, s.Burst = rate10g, burst10g
			return []RuleSpec{{Name: "f", Match: proto(17), Spec: s, ScopeFlow: true}}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := loadPort(b)
			pinCPU(b)
			port := bc.port
			var flows []RuleSpec
			if bc.flows != nil {
				flows = bc.flows()
			}
			if !bc.empty {
				apply(b, p, port, flows...)
			}
			f := udp4("10.0.0.1", 9)
			f.payloadLen = 64 - 42 // a 64-byte frame
			if bc.v6 {
				f.src, f.dst = netip.MustParseAddr("2001:db8:ffff::1"), netip.MustParseAddr("2001:db8::1")
				f.payloadLen = 0 // 14 + 40 + 8 = 62 bytes: the smallest UDP/IPv6 frame
			}
			data := f.bytes()
			b.ResetTimer()
			_, per, err := p.objs.Impair.Benchmark(data, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_, pass, err := p.objs.XdpPass.Benchmark(data, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			ns, passNs := float64(per.Nanoseconds()), float64(pass.Nanoseconds())
			b.ReportMetric(ns, "ns/pkt")
			b.ReportMetric(passNs, "pass-ns/pkt")
			if passNs > 0 {
				b.ReportMetric(ns/passNs, "x-pass")
			}
			if ns > 0 {
				b.ReportMetric(1e3/ns, "Mpps")
			}
		})
	}
}
