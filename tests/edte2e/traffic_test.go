package edte2e

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/tests/e2eutil"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// Addresses of the two ends: a0 (sender side, where EDT is applied on
// egress) in namespace A, b0 in namespace B.
var (
	addrA = netip.MustParseAddr("10.9.0.1")
	addrB = netip.MustParseAddr("10.9.0.2")
)

const udpPort = 9000

// frameOverhead is Ethernet + IPv4 + UDP: what the shaper counts beyond
// the payload (skb->len at egress).
const frameOverhead = 14 + 20 + 8

// pair is two namespaces joined by a veth, with static neighbours (no
// ARP exchange to delay the first packets).
type pair struct {
	A, B *testns.NS
	// Dst is B's address the sender sends to.
	Dst netip.Addr
}

func newPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{A: testns.New(t), B: testns.New(t), Dst: addrB}
	p.A.Veth("a0", p.B, "b0")
	p.A.IP("link", "set", "a0", "up")
	p.A.IP("addr", "add", addrA.String()+"/24", "dev", "a0")
	p.B.IP("addr", "add", addrB.String()+"/24", "dev", "b0")
	p.A.IP("neigh", "replace", addrB.String(), "lladdr", e2eutil.MAC(t, p.B, "b0"), "dev", "a0", "nud", "permanent")
	p.B.IP("neigh", "replace", addrA.String(), "lladdr", e2eutil.MAC(t, p.A, "a0"), "dev", "b0", "nud", "permanent")
	return p
}

// sample is one received packet.
type sample struct {
	seq    uint64
	tx, rx int64 // CLOCK_REALTIME ns: sender's before send, kernel's at receive
	size   int   // UDP payload bytes
}

func (s sample) delay() time.Duration { return time.Duration(s.rx - s.tx) }

// receiver collects packets on B until Stop.
type receiver struct {
	fd      int
	stop    atomic.Bool
	done    chan struct{}
	mu      sync.Mutex
	samples []sample
	err     error
}

func listen(t *testing.T, p *pair) *receiver {
	t.Helper()
	r := &receiver{done: make(chan struct{})}
	err := p.B.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		r.fd = fd
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return err
		}
		// The receive timeout lets the loop notice Stop.
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
		return unix.Bind(fd, &unix.SockaddrInet4{Port: udpPort, Addr: p.Dst.As4()})
	})
	if err != nil {
		t.Fatalf("receiver socket in %s: %v", p.B.Name, err)
	}
	go r.loop()
	t.Cleanup(func() { r.Stop() })
	return r
}

func (r *receiver) loop() {
	defer close(r.done)
	buf, oob := make([]byte, 65536), make([]byte, 256)
	for !r.stop.Load() {
		n, oobn, _, _, err := unix.Recvmsg(r.fd, buf, oob, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
			return
		}
		if n < 16 {
			continue
		}
		s := sample{seq: binary.LittleEndian.Uint64(buf), tx: int64(binary.LittleEndian.Uint64(buf[8:])), size: n}
		s.rx = rxTime(oob[:oobn])
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
	}
}

// rxTime is the kernel's receive timestamp (SCM_TIMESTAMPNS), or now.
func rxTime(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				sec := int64(binary.NativeEndian.Uint64(m.Data))
				nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
				return sec*1e9 + nsec
			}
		}
	}
	return time.Now().UnixNano()
}

// Count is how many packets arrived so far.
func (r *receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.samples)
}

// Wait waits until want packets arrived or nothing arrived for idle.
func (r *receiver) Wait(want int, idle time.Duration) {
	last, lastChange := -1, time.Now()
	for {
		n := r.Count()
		if n >= want {
			return
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > idle {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the receiver and returns its samples in arrival order.
func (r *receiver) Stop() []sample {
	if !r.stop.Swap(true) {
		<-r.done
		unix.Close(r.fd)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.samples
}

// sender sends from A to B.
type sender struct {
	fd  int
	seq uint64
	buf []byte
}

func dial(t *testing.T, p *pair, payload int) *sender {
	t.Helper()
	s := &sender{buf: make([]byte, payload)}
	err := p.A.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		s.fd = fd
		// Packets held in fq are charged to the socket until they leave:
		// a large send buffer lets the sender run ahead of the delay.
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 256<<20)
		return unix.Connect(fd, &unix.SockaddrInet4{Port: udpPort, Addr: p.Dst.As4()})
	})
	if err != nil {
		t.Fatalf("sender socket in %s: %v", p.A.Name, err)
	}
	t.Cleanup(func() { unix.Close(s.fd) })
	return s
}

// send sends one packet stamped with the time just before the send.
func (s *sender) send() error {
	binary.LittleEndian.PutUint64(s.buf, s.seq)
	binary.LittleEndian.PutUint64(s.buf[8:], uint64(time.Now().UnixNano()))
	s.seq++
	_, err := unix.Write(s.fd, s.buf)
	return err
}

// paced sends n packets at about pps (batches every millisecond: TCG
// sleeps are coarse). See onCPU0 for where it runs.
func (s *sender) paced(t *testing.T, n, pps int) {
	t.Helper()
	err := onCPU0(func() error {
		start := time.Now()
		for i := 0; i < n; i++ {
			if due := start.Add(time.Duration(float64(i) / float64(pps) * 1e9)); time.Until(due) > time.Millisecond {
				time.Sleep(time.Until(due))
			}
			if err := s.send(); err != nil {
				return fmt.Errorf("send packet %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// onCPU0 runs f on an OS thread pinned to CPU 0 (the thread is thrown
// away afterwards). The sender's CPU enqueues into fq and arms its
// timer there, so fq dequeues on one CPU and veth hands the packets to
// one CPU's backlog: otherwise two CPUs' backlogs reorder a few packets
// on receive, with netem as with EDT, which is not what is measured.
func onCPU0(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the pinned thread exits with the goroutine
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			done <- fmt.Errorf("pin sender to CPU 0: %w", err)
			return
		}
		done <- f()
	}()
	return <-done
}

// stats of a delay sample set.
type delayStats struct {
	n                     int
	min, median, p99, max time.Duration
	p10, p25, p75, p90    time.Duration
	mean, stddev          float64 // ns
	reordered             int
}

func summarize(ss []sample) delayStats {
	d := make([]time.Duration, len(ss))
	var st delayStats
	st.n = len(ss)
	var sum, sum2 float64
	for i, s := range ss {
		d[i] = s.delay()
		sum += float64(d[i])
		if i > 0 && s.seq < ss[i-1].seq {
			st.reordered++
		}
	}
	if len(d) == 0 {
		return st
	}
	st.mean = sum / float64(len(d))
	for _, x := range d {
		sum2 += (float64(x) - st.mean) * (float64(x) - st.mean)
	}
	st.stddev = math.Sqrt(sum2 / float64(len(d)))
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	st.min, st.median, st.max = d[0], d[len(d)/2], d[len(d)-1]
	st.p99 = d[len(d)*99/100]
	st.p10, st.p25, st.p75, st.p90 = d[len(d)/10], d[len(d)/4], d[len(d)*3/4], d[len(d)*9/10]
	return st
}

func (s delayStats) String() string {
	return fmt.Sprintf("n=%d min=%v median=%v p99=%v max=%v mean=%.3fms stddev=%.3fms reordered=%d",
		s.n, s.min, s.median, s.p99, s.max, s.mean/1e6, s.stddev/1e6, s.reordered)
}
