package trafficd

import (
	"math"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// runStream runs a stream on a fresh pair until it ends by itself and
// returns its progress and what the receiver counted.
func runStream(t *testing.T, f schema.Fields) (progress, uint64) {
	p := newPair(t)
	g := testGen(t, f)
	pool := buildFrames(g, testMAC)
	s := newStream("Ethernet0|t", "", g, pool, p.open(t, schema.PathPacket, pool), progress{})
	before := p.rx(t)
	done := make(chan struct{})
	go s.run(func() { close(done) })
	<-done
	if _, finished, err := s.state(); !finished || err != nil {
		t.Fatalf("stream ended: finished %v, %v", finished, err)
	}
	return s.snapshot(), p.rx(t) - before
}

// TestPatterns: each pattern sends what its definition says over a
// second, counted by the receiver and the generator alike.
func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		name string
		f    schema.Fields
		want float64 // frames
		tol  float64
	}{
		{"constant", schema.Fields{"rate": "10kpps", "duration": "1s"}, 10000, 0.01},
		// 5.12 Mbit/s of 64-byte frames (512 bits each) is 10 kpps.
		{"bitrate", schema.Fields{"rate": "5.12mbit", "duration": "1s"}, 10000, 0.01},
		// On 50 ms of every 100 ms: half the rate on average.
		{"bursty", schema.Fields{"rate": "10kpps", "pattern": "bursty", "on": "50ms", "off": "50ms", "duration": "1s"}, 5000, 0.01},
		// Poisson: 10,000 expected, standard deviation 100; 5 sigma.
		{"poisson", schema.Fields{"rate": "10kpps", "pattern": "poisson", "seed": "3", "duration": "1s"}, 10000, 0.05},
		{"count", schema.Fields{"rate": "50kpps", "count": "7777", "size": "uniform 64-1500"}, 7777, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, rx := runStream(t, c.f)
			t.Logf("%s: generator %d frames (late %d) in %v, receiver %d", c.name, pr.Packets, pr.Late, pr.Elapsed, rx)
			if rx != pr.Packets {
				t.Errorf("receiver %d, generator %d", rx, pr.Packets)
			}
			if math.Abs(float64(pr.Packets)-c.want) > c.tol*c.want {
				t.Errorf("%d frames, want %v ±%v%%", pr.Packets, c.want, 100*c.tol)
			}
		})
	}
}

func TestOnTime(t *testing.T) {
	const ms = 1_000_000
	for _, c := range []struct{ t, want int64 }{{0, 0}, {30 * ms, 30 * ms}, {50 * ms, 50 * ms}, {70 * ms, 50 * ms}, {130 * ms, 80 * ms}} {
		if got := onTime(durationNS(c.t), durationNS(50*ms), durationNS(50*ms)); int64(got) != c.want {
			t.Errorf("onTime(%d) = %d, want %d", c.t, got, c.want)
		}
	}
}

func durationNS(n int64) time.Duration { return time.Duration(n) }
