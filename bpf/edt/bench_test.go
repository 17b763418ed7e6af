package edt

import (
	"testing"
	"time"
)

// BenchmarkEgress is the program's cost per packet (BPF_PROG_TEST_RUN
// with repeat, 64-byte frames), per profile, beside a port without a
// profile (the lookup and return only). Run: go test -bench Egress
// ./bpf/edt (root).
func BenchmarkEgress(b *testing.B) {
	o := load(b)
	for _, c := range []struct {
		name string
		cfg  *Config
	}{
		{"no-profile", nil},
		{"delay", &Config{Delay: 50 * time.Millisecond}},
		{"delay-jitter-normal", &Config{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Dist: DistNormal}},
		{"delay-jitter-reorder", &Config{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Dist: DistNormal, Reorder: true}},
		{"shape-unbounded", &Config{RateBps: 1e15, QueueLimit: time.Second}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.cfg != nil {
				if err := o.Set(PortKey(loIfindex), *c.cfg); err != nil {
					b.Fatal(err)
				}
			} else {
				o.Delete(PortKey(loIfindex))
			}
			_, per, err := o.Program().Benchmark(frame(64), b.N, b.ResetTimer)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(per.Nanoseconds()), "kernel-ns/pkt")
		})
	}
}
