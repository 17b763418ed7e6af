package impairde2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestImpairdScheduleLateness measures step boundaries in the data plane
// (a figure, logged; no timing assertion): h1 sends a datagram every 50 µs
// carrying its sequence number and send time; the port follows 100 steps
// of 20 ms alternating loss 0 / loss 100. For each boundary, the first
// datagram sent after it that meets the new step's fate (through or
// dropped) dates the switch as XDP saw it; lateness is that send time
// minus the boundary's due time (STATE_DB started + offset, both from
// this host's clock), and the datagram before it (still the old fate)
// bounds it from below.
//
//	go test -count=1 ./tests/impairde2e/ -run TestImpairdScheduleLateness -v
func TestImpairdScheduleLateness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 3 s traffic measurement")
	}
	const (
		n     = 100
		every = 20 * time.Millisecond
		gap   = 50 * time.Microsecond
	)
	e := newEnv(t)
	e.start()
	var steps []string
	for i := 0; i < n; i++ {
		steps = append(steps, fmt.Sprintf("%dms loss %d", i*int(every/time.Millisecond), 100*(i%2)))
	}
	steps = append(steps, fmt.Sprintf("%dms end", n*int(every/time.Millisecond)))
	e.HSet("IMPAIRMENT|Ethernet0", "schedule", "lat")
	e.WaitState("IMPAIRMENT|Ethernet0", "pending", "IMPAIRMENT_SCHEDULE|lat")

	// Receiver: which sequence numbers arrived.
	var mu sync.Mutex
	got := map[uint64]bool{}
	var rc *net.UDPConn
	if err := e.NS.Do(func() error {
		var err error
		rc, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(swAddr), Port: 9100})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rc.SetReadBuffer(32 << 20)
	defer rc.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			k, _, err := rc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if k >= 8 {
				mu.Lock()
				got[binary.BigEndian.Uint64(buf)] = true
				mu.Unlock()
			}
		}
	}()
	// Sender: paced by a busy loop (Go's sleep is too coarse for 50 µs).
	sc := e.sender(9100)
	sent := []int64{} // send time of seq i (unix ns)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		next := time.Now()
		for seq := uint64(0); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			for time.Now().Before(next) {
			}
			next = next.Add(gap)
			now := time.Now().UnixNano()
			binary.BigEndian.PutUint64(buf, seq)
			sent = append(sent, now)
			sc.Write(buf)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	e.HSet("IMPAIRMENT_SCHEDULE|lat", "steps", strings.Join(steps, "; "))
	e.Eventually("schedule over", func() (bool, string) {
		st := e.Result("IMPAIRMENT_SCHEDULE|lat")
		return st["step"] == "end", fmt.Sprint(st)
	})
	time.Sleep(100 * time.Millisecond)
	close(stop)
	<-done
	time.Sleep(500 * time.Millisecond)
	st := e.Result("IMPAIRMENT_SCHEDULE|lat")
	started, err := time.Parse(time.RFC3339Nano, st["started"])
	if err != nil {
		t.Fatalf("started %q: %v", st["started"], err)
	}
	mu.Lock()
	defer mu.Unlock()
	var late, early, res []time.Duration
	mixed, missing := 0, 0
	for k := 1; k <= n; k++ {
		due := started.Add(time.Duration(k) * every).UnixNano()
		dropAfter := k < n && k%2 == 1
		i := sort.Search(len(sent), func(i int) bool { return sent[i] >= due-int64(5*time.Millisecond) })
		found := -1
		for ; i < len(sent) && sent[i] < due+int64(every/2); i++ {
			if got[uint64(i)] != dropAfter {
				found = i
				break
			}
		}
		if found < 0 {
			missing++
			continue
		}
		late = append(late, time.Duration(sent[found]-due))
		if found > 0 {
			res = append(res, time.Duration(sent[found]-sent[found-1]))
			early = append(early, time.Duration(sent[found-1]-due))
		}
		for j := found + 1; j < len(sent) && sent[j] < due+int64(every/2); j++ {
			if got[uint64(j)] == dropAfter {
				mixed++ // a datagram with the old step's fate after the switch
			}
		}
	}
	t.Logf("switch skipped %s, %d datagrams sent, %d boundaries without a switch seen in the window, %d datagrams with the old fate after a switch (socket drops count here too)",
		st["skipped"], len(sent), missing, mixed)
	t.Logf("data-plane lateness over %d boundaries of %v steps, upper bound (first datagram with the new fate): %s", len(late), every, percentiles(late))
	t.Logf("  lower bound (the datagram before it, still the old fate): %s; gap between the two: %s", percentiles(early), percentiles(res))
}

func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("n=%d min %v p50 %v p99 %v max %v", len(s), s[0], s[len(s)/2], s[len(s)*99/100], s[len(s)-1])
}
