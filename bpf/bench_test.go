package bpf

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// BenchmarkImpair measures ns per packet of the impairment program with
// BPF_PROG_TEST_RUN (the kernel's own per-run time, 64-byte UDP frame),
// side by side with the minimal XDP_PASS program measured in the same
// iteration. Metrics: ns/pkt, pass-ns/pkt, x-pass (ratio) and Mpps (one
// core). The 10 GbE budget for 64-byte frames is 67 ns (14.88 Mpps).
//
//	sudo go test -run '^$' -bench Impair -benchtime 2000000x ./bpf/
func BenchmarkImpair(b *testing.B) {
	flowsLast := func(n int, shapes int) []schema.ImpairmentFlow {
		var out []schema.ImpairmentFlow
		for i := 0; i < n; i++ {
			f := schema.Fields{"proto": "udp", "dport": "9", "loss": "0.01",
				"dst": netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + i/65536), byte(i / 256), byte(i)}), 32-i%shapes).Masked().String(),
				// the rule matching the test frame (dst 10.0.0.1) ranks last
				"priority": fmt.Sprint(2000 - i)}
			if i == n-1 {
				f["dst"] = "10.0.0.1/32"
			}
			out = append(out, mustFlow(b, fmt.Sprintf("r%d", i), f))
		}
		return out
	}
	for _, bc := range []struct {
		name  string
		port  schema.Fields
		flows func() []schema.ImpairmentFlow
		empty bool
	}{
		{name: "no-impairment", empty: true},
		{name: "random-loss", port: schema.Fields{"loss": "1"}},
		{name: "gilbert", port: schema.Fields{"loss_model": "gilbert", "ge_p": "1", "ge_r": "10"}},
		{name: "policer", port: schema.Fields{"rate": "10gbit"}},
		{name: "1000-rules-match-last", flows: func() []schema.ImpairmentFlow { return flowsLast(1000, 1) }},
		{name: "1000-rules-8-shapes", flows: func() []schema.ImpairmentFlow { return flowsLast(1000, 8) }},
		{name: "scope-flow", flows: func() []schema.ImpairmentFlow {
			return []schema.ImpairmentFlow{mustFlow(b, "f", schema.Fields{"proto": "udp", "scope": "flow",
				"loss_model": "gilbert", "ge_p": "1", "ge_r": "10", "rate": "10gbit"})}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := loadPort(b)
			pinCPU(b)
			var port *schema.Impairment
			if bc.port != nil {
				port = mustPort(b, bc.port)
			}
			var flows []schema.ImpairmentFlow
			if bc.flows != nil {
				flows = bc.flows()
			}
			if !bc.empty {
				apply(b, p, port, flows...)
			}
			f := udp4("10.0.0.1", 9)
			f.payloadLen = 64 - 42 // a 64-byte frame
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
