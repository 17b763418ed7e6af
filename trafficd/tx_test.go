package trafficd

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// pair is a veth pair: "sw" in one namespace (the switch port the
// generator sends from), "peer" in another (the receiver).
type pair struct {
	sw, peer *testns.NS
	ifindex  int
}

func newPair(t testing.TB) *pair {
	p := &pair{sw: testns.New(t), peer: testns.New(t)}
	p.sw.Veth("Ethernet0", p.peer, "eth0")
	for _, ns := range []*testns.NS{p.sw, p.peer} {
		ns.Run("ip", "netns", "exec", ns.Name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	}
	var l []struct {
		Ifindex int `json:"ifindex"`
	}
	p.sw.JSON(&l, "link", "show", "Ethernet0")
	p.ifindex = l[0].Ifindex
	return p
}

// rx is the receiver's frame count (ip -s link show eth0 in the peer).
func (p *pair) rx(t testing.TB) uint64 {
	var l []struct {
		Stats64 struct {
			Rx struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	p.peer.JSON(&l, "-s", "link", "show", "eth0")
	return l[0].Stats64.Rx.Packets
}

func (p *pair) open(t testing.TB, path schema.TrafficPath, pool [][]byte) sender {
	var s sender
	err := p.sw.Do(func() error {
		var err error
		if path == schema.PathXDP {
			s, err = openXDP(p.ifindex, pool)
		} else {
			s, err = openPacket(p.ifindex, pool)
		}
		return err
	})
	if err != nil {
		t.Fatalf("open %s sender: %v", path, err)
	}
	return s
}

func testGen(t testing.TB, f schema.Fields) schema.TrafficGen {
	g, err := schema.ParseTrafficGen("Ethernet0|t", f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var testMAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}

// TestPathsDeliver: every frame each path says it sent reaches the peer.
func TestPathsDeliver(t *testing.T) {
	for _, path := range []schema.TrafficPath{schema.PathPacket, schema.PathXDP} {
		t.Run(string(path), func(t *testing.T) {
			p := newPair(t)
			pool := buildFrames(testGen(t, schema.Fields{"rate": "1kpps", "size": "imix"}), testMAC)
			s := p.open(t, path, pool)
			before := p.rx(t)
			sent, dropped := 0, 0
			for sent < 20000 {
				n, d, err := s.send(sent, min(maxBatch, 20000-sent))
				if err != nil {
					t.Fatal(err)
				}
				sent += n
				dropped += d
				if n == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			if x, ok := s.(*xdpSender); ok {
				t.Logf("AF_XDP TX budget per sendto: %d", x.budget)
			}
			s.flush()
			s.close()
			got := p.rx(t) - before
			if got != uint64(sent) {
				t.Errorf("%s: sent %d (dropped %d), the peer received %d", path, sent, dropped, got)
			}
		})
	}
}

// TestXDPBesideXDPProgram: AF_XDP TX needs no program, so it works on a
// port that has an XDP program (impaird's) attached.
func TestXDPBesideXDPProgram(t *testing.T) {
	p := newPair(t)
	// A pass-all program attached in generic mode stands for impaird's.
	prog := attachPassProgram(t, p)
	pool := buildFrames(testGen(t, schema.Fields{"rate": "1kpps"}), testMAC)
	s := p.open(t, schema.PathXDP, pool)
	before := p.rx(t)
	n, _, err := s.send(0, 32)
	s.flush()
	s.close()
	if err != nil || n != 32 {
		t.Fatalf("send beside XDP program: %d, %v", n, err)
	}
	if got := p.rx(t) - before; got != 32 {
		t.Errorf("peer received %d of 32", got)
	}
	if id := xdpProgID(t, p); id != prog {
		t.Errorf("XDP program changed: %d, was %d", id, prog)
	}
}

// BenchmarkPaths is the maximum rate of 64-byte frames per path from one
// core, measured at the receiver (make bench). Each b.N frames: raw
// sender calls ("packet", "xdp"), then the same through a stream's
// pacing loop at an unreachable rate ("stream-…": what trafficd reaches).
func BenchmarkPaths(b *testing.B) {
	for _, path := range []schema.TrafficPath{schema.PathPacket, schema.PathXDP} {
		b.Run("stream-"+string(path), func(b *testing.B) {
			p := newPair(b)
			g := testGen(b, schema.Fields{"rate": "1gpps", "dst_mac": "02:00:00:00:00:02",
				"count": strconv.Itoa(b.N)})
			pool := buildFrames(g, testMAC)
			s := newStream("Ethernet0|t", "", g, pool, p.open(b, path, pool), progress{})
			before := p.rx(b)
			b.ResetTimer()
			start := time.Now()
			done := make(chan struct{})
			go s.run(func() { close(done) })
			<-done
			el := time.Since(start)
			got := p.rx(b) - before
			b.ReportMetric(float64(got)/el.Seconds()/1e6, "rx-Mpps")
			if b.N >= 100000 {
				fmt.Printf("    stream-%s: %d frames sent, %d received in %v: %.3f Mpps at the receiver\n",
					path, s.snapshot().Packets, got, el.Round(time.Millisecond), float64(got)/el.Seconds()/1e6)
			}
		})
		b.Run(string(path), func(b *testing.B) {
			p := newPair(b)
			pool := buildFrames(testGen(b, schema.Fields{"rate": "1kpps", "dst_mac": "02:00:00:00:00:02"}), testMAC)
			s := p.open(b, path, pool)
			defer s.close()
			before := p.rx(b)
			b.ResetTimer()
			start := time.Now()
			sent, dropped := 0, 0
			for sent < b.N {
				n, d, err := s.send(sent, min(maxBatch, b.N-sent))
				if err != nil {
					b.Fatal(err)
				}
				sent += n
				dropped += d
			}
			s.flush()
			el := time.Since(start)
			got := p.rx(b) - before
			b.ReportMetric(float64(got)/el.Seconds()/1e6, "rx-Mpps")
			b.ReportMetric(float64(dropped), "dropped")
			if b.N >= 100000 {
				fmt.Printf("    %s: %d frames sent, %d received in %v: %.3f Mpps at the receiver\n",
					path, sent, got, el.Round(time.Millisecond), float64(got)/el.Seconds()/1e6)
			}
		})
	}
}

// BenchmarkRates: how close a paced stream comes to its target at high
// rates, measured at the receiver: frames received / the stream's sending
// time (start to the count reached; closing the socket — an RCU grace
// period for AF_XDP — is not sending). b.N frames at each rate, so with
// the default -benchtime a run lasts about a second.
func BenchmarkRates(b *testing.B) {
	for _, path := range []schema.TrafficPath{schema.PathPacket, schema.PathXDP} {
		for _, rate := range []int{100_000, 500_000, 1_000_000} {
			b.Run(fmt.Sprintf("%s-%dkpps", path, rate/1000), func(b *testing.B) {
				p := newPair(b)
				g := testGen(b, schema.Fields{"rate": strconv.Itoa(rate) + "pps", "dst_mac": "02:00:00:00:00:02",
					"count": strconv.Itoa(b.N)})
				pool := buildFrames(g, testMAC)
				s := newStream("Ethernet0|t", "", g, pool, p.open(b, path, pool), progress{})
				before := p.rx(b)
				b.ResetTimer()
				done := make(chan struct{})
				go s.run(func() { close(done) })
				<-done
				el := s.snapshot().Elapsed
				got := p.rx(b) - before
				if b.N < 2 {
					return
				}
				// Frame i is due at i/rate: N frames take (N-1)/rate.
				achieved := float64(got-1) / el.Seconds()
				b.ReportMetric(100*achieved/float64(rate), "%-of-target")
				b.ReportMetric(float64(s.snapshot().Late), "late")
				if b.N >= rate/2 {
					fmt.Printf("    %s at %d pps: %d frames received in %v: %.0f pps (%.2f%% of target), late %d\n",
						path, rate, got, el.Round(time.Millisecond), achieved, 100*achieved/float64(rate), s.snapshot().Late)
				}
			})
		}
	}
}
