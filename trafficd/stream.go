package trafficd

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/schema"
)

// Pacing: a token bucket on the monotonic clock. Tokens are packets (a
// pps rate) or bits of frames with FCS (a bit rate); each pass sends the
// frames the bucket covers, at most maxBatch, in one system call. Late
// wake-ups are caught up from the bucket (up to bucketDepth of rate), so
// the average rate holds even when a sleep overshoots.
const (
	bucketDepth = time.Second
	// spinBelow: waits shorter than this spin instead of sleeping (a
	// sleep costs more than the gap at high rates).
	spinBelow = 50 * time.Microsecond
	// batchWindow: at high rates frames are sent in batches of what falls
	// due in this window (one system call each) rather than one by one.
	batchWindow = 50 * time.Microsecond
	// maxSleep bounds one sleep so a stop is seen promptly.
	maxSleep = 50 * time.Millisecond
)

// progress is what a stream has sent; it survives a restart of trafficd
// through COUNTERS_DB (resume).
type progress struct {
	Packets, Bytes, Dropped, Late uint64
	Elapsed                       time.Duration // time spent sending
}

// stream is one running TRAFFIC_GEN entry.
type stream struct {
	key, gen string
	g        schema.TrafficGen
	ifindex  int // the port's netdev the sender is bound to
	snd      sender
	sizes    []uint64  // frame sizes with FCS, per pool index
	costs    []float64 // tokens per frame: 1 or its bits
	rate     float64   // tokens per second

	base    progress // resumed from COUNTERS_DB
	packets atomic.Uint64
	bytes   atomic.Uint64
	dropped atomic.Uint64
	late    atomic.Uint64 // frames never sent: the thread was held up longer than bucketDepth
	elapsed atomic.Int64  // ns since this run started (base excluded)

	stopping atomic.Bool
	done     chan struct{}
	mu       sync.Mutex
	err      error // why the stream ended early (nil: finished or stopped)
	finished bool  // count or duration reached
}

func newStream(key, gen string, g schema.TrafficGen, pool [][]byte, snd sender, base progress) *stream {
	s := &stream{key: key, gen: gen, g: g, snd: snd, base: base, done: make(chan struct{}), rate: float64(g.Rate)}
	s.sizes = make([]uint64, len(pool))
	s.costs = make([]float64, len(pool))
	for i, f := range pool {
		s.sizes[i] = uint64(len(f) + schema.FCSLen)
		s.costs[i] = 1
		if g.RateBits {
			s.costs[i] = float64(8 * s.sizes[i])
		}
	}
	return s
}

// snapshot is the stream's progress now, base included.
func (s *stream) snapshot() progress {
	return progress{
		Packets: s.base.Packets + s.packets.Load(), Bytes: s.base.Bytes + s.bytes.Load(),
		Dropped: s.base.Dropped + s.dropped.Load(), Late: s.base.Late + s.late.Load(), Elapsed: s.base.Elapsed + time.Duration(s.elapsed.Load()),
	}
}

// state reports whether the stream still runs, finished by itself, or
// failed (err).
func (s *stream) state() (running, finished bool, err error) {
	select {
	case <-s.done:
	default:
		return true, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return false, s.finished, s.err
}

// stop ends the stream and waits for its sender to close.
func (s *stream) stop() {
	s.stopping.Store(true)
	<-s.done
}

// onTime is how much of the first t of a bursty stream was "on".
func onTime(t, on, off time.Duration) time.Duration {
	period := on + off
	cycles := t / period
	return cycles*on + min(t%period, on)
}

// run sends until stopped, finished or failed; exit is called after.
func (s *stream) run(exit func()) {
	defer exit()
	defer close(s.done)
	runtime.LockOSThread() // one OS thread per stream: pin it with CPUAffinity
	defer runtime.UnlockOSThread()
	err := s.loop()
	s.snd.flush()
	s.snd.close()
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *stream) loop() error {
	g := s.g
	pool := len(s.sizes)
	idx := int(s.base.Packets % uint64(pool))
	maxCost, avgCost := 0.0, 0.0
	for _, c := range s.costs {
		maxCost = max(maxCost, c)
		avgCost += c / float64(pool)
	}
	depth := max(s.rate*bucketDepth.Seconds(), maxBatch*maxCost)
	minBatch := min(maxBatch, max(1, int(s.rate/avgCost*batchWindow.Seconds())))
	seed := uint64(1)
	if g.Seed != nil {
		seed = *g.Seed
	}
	rng := rand.New(rand.NewPCG(seed, s.base.Packets))
	// poisson: due times (ns) drawn and not sent yet, ascending.
	var due [maxBatch + 1]float64
	nd := 0
	prev := s.base.Elapsed // bursty phase continues across a resume
	if g.Duration > 0 && prev >= g.Duration {
		s.finish() // resumed after its duration was already reached
		return nil
	}
	start := time.Now()
	// The first frame goes at once: duration d at rate r sends d*r frames.
	tokens, last := s.costs[idx], 0.0
	for !s.stopping.Load() {
		nowD := time.Since(start)
		// At the end of a duration the frames due up to that instant
		// still go (a late last wake-up must not cut them), then it stops.
		final := g.Duration > 0 && prev+nowD >= g.Duration
		if final {
			nowD = g.Duration - prev - 1 // frames due before the end, not at it
		}
		s.elapsed.Store(int64(nowD))
		now := float64(nowD)
		remaining := uint64(math.MaxUint64)
		if g.Count > 0 {
			sent := s.base.Packets + s.packets.Load()
			if sent >= g.Count {
				s.finish()
				return nil
			}
			remaining = g.Count - sent
		}
		n, cost := 0, 0.0
		switch g.Pattern {
		case schema.PatternPoisson:
			if nd == 0 {
				due[0], nd = 0, 1
			}
			if behind := now - depth/s.rate*1e9; due[0] < behind {
				// Too far behind: forget the backlog.
				s.late.Add(uint64((behind - due[0]) * s.rate / 1e9 / avgCost))
				due[0], nd = behind, 1
			}
			for nd < len(due) && due[nd-1] <= now {
				due[nd] = due[nd-1] + rng.ExpFloat64()*s.costs[(idx+nd-1)%pool]/s.rate*1e9
				nd++
			}
			for n < maxBatch && n < nd && uint64(n) < remaining && due[n] <= now {
				n++
			}
			// Wait for a batch unless the first frame would be more than
			// a window late.
			if n == 0 || (n < minBatch && uint64(n) < remaining && !final && now < due[0]+float64(batchWindow)) {
				if final {
					s.finish()
					return nil
				}
				wake := due[0]
				if n > 0 {
					wake = due[0] + float64(batchWindow)
				}
				s.wait(time.Duration(wake - now))
				continue
			}
		default:
			if g.Pattern == schema.PatternBursty {
				tokens += float64(onTime(prev+nowD, g.On, g.Off)-onTime(prev+time.Duration(last), g.On, g.Off)) * s.rate / 1e9
			} else {
				tokens += (now - last) * s.rate / 1e9
			}
			last = now
			if tokens > depth {
				s.late.Add(uint64((tokens - depth) / avgCost))
				tokens = depth
			}
			for n < maxBatch && uint64(n) < remaining {
				c := s.costs[(idx+n)%pool]
				if cost+c > tokens {
					break
				}
				cost += c
				n++
			}
			// Wait for a batch's worth (a few frames at high rates), but
			// never past the end of an on phase.
			short := n < minBatch && uint64(n) < remaining && !final && !s.offPhase(prev+nowD)
			if n == 0 || short {
				if final {
					s.finish()
					return nil
				}
				s.wait(s.gap(prev+nowD, tokens, float64(minBatch)*avgCost))
				continue
			}
		}
		sent, dropped, err := s.snd.send(idx, n)
		if err != nil {
			return err
		}
		var b uint64
		used := 0.0
		for i := 0; i < sent; i++ {
			b += s.sizes[(idx+i)%pool]
			used += s.costs[(idx+i)%pool]
		}
		tokens -= used
		if g.Pattern == schema.PatternPoisson {
			nd = copy(due[:], due[sent:nd])
		}
		idx = (idx + sent) % pool
		s.packets.Add(uint64(sent))
		s.bytes.Add(b)
		if dropped > 0 {
			s.dropped.Add(uint64(dropped))
		}
		if sent == 0 {
			runtime.Gosched() // the device is full: let the receiver run
		}
	}
	return nil
}

// offPhase reports whether a bursty stream is silent at t.
func (s *stream) offPhase(t time.Duration) bool {
	return s.g.Pattern == schema.PatternBursty && t%(s.g.On+s.g.Off) >= s.g.On
}

// gap is how long until the bucket covers cost: in an off period of a
// bursty stream, until the next on period.
func (s *stream) gap(t time.Duration, tokens, cost float64) time.Duration {
	d := time.Duration((cost - tokens) / s.rate * 1e9)
	if s.g.Pattern == schema.PatternBursty {
		if ph := t % (s.g.On + s.g.Off); ph >= s.g.On {
			d = s.g.On + s.g.Off - ph
		}
	}
	return d
}

// wait sleeps d (bounded), or spins when d is too short to sleep. The
// sleep is clock_nanosleep on the stream's own locked thread: one kernel
// wake-up, where time.Sleep would hop through the Go scheduler (a timer
// on some P, then a hand-off to the locked thread) and, on a loaded host,
// wait in the run queue twice.
func (s *stream) wait(d time.Duration) {
	if d < spinBelow {
		return
	}
	ts := unix.NsecToTimespec(int64(min(d, maxSleep)))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}

func (s *stream) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
}
