package impaird

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/schema"
)

// fakeClock is a monotonic clock that jumps to each wake-up time plus
// late (a timer that fires late every time), recording the times asked
// for; after limit sleeps it ends the runner.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Duration
	late   time.Duration
	asked  []time.Duration
	limit  int
	cancel func()
}

func (c *fakeClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *fakeClock) wall() time.Time          { return time.Unix(0, 0) }
func (c *fakeClock) newTimer() (timer, error) { return c, nil }
func (c *fakeClock) close()                   {}
func (c *fakeClock) sleepUntil(ctx context.Context, at time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) == c.limit {
		c.cancel()
		return errors.New("enough")
	}
	c.asked = append(c.asked, at)
	if at > c.t {
		c.t = at + c.late
	}
	return ctx.Err()
}

// TestScheduleNoDrift: every wake-up is asked for at start + boundary -
// stepLead, however late the previous one fired (here 700 µs each time):
// boundaries come from the schedule's start, never from adding sleeps.
// Steps are applied in order across cycles, each with its exact due time.
func TestScheduleNoDrift(t *testing.T) {
	d := newDaemon(Config{Log: logrus.NewEntry(logrus.New())}, nil)
	start := 1000 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &fakeClock{t: start, late: 700 * time.Microsecond, limit: 30, cancel: cancel}
	d.sch.clock, d.sch.base = clk, ctx
	var events []stepEvent
	done := make(chan struct{})
	d.sch.onStep = func(ev stepEvent) { events = append(events, ev) }
	d.sch.cfg["s"] = schema.Fields{"steps": "0s loss 1; 10ms loss 2; 25ms; 40ms end", "loop": "true"}
	if err := d.reconcileSchedule(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	go func() { d.mu.Lock(); sc := d.sch.byName["s"]; d.mu.Unlock(); <-sc.done; close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("runner did not end")
	}
	bounds := []time.Duration{10, 25, 40} // ms: boundaries of one cycle
	for i, at := range clk.asked {
		cycle, b := i/3, bounds[i%3]
		want := start + time.Duration(cycle)*40*time.Millisecond + b*time.Millisecond - stepLead
		if at != want {
			t.Fatalf("wake-up %d asked for %v, want %v (drift)", i, at-start, want-start)
		}
	}
	if len(events) != 31 {
		t.Fatalf("%d steps applied, want 31 (the first and one per wake-up)", len(events))
	}
	for i, ev := range events {
		if ev.Step != i%3 {
			t.Fatalf("event %d: step %d, want %d", i, ev.Step, i%3)
		}
		offset := []time.Duration{0, 10, 25}[i%3] * time.Millisecond
		if want := start + time.Duration(i/3)*40*time.Millisecond + offset; ev.Due != want {
			t.Fatalf("event %d: due %v, want %v", i, ev.Due-start, want-start)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sc := d.sch.byName["s"]; sc.switches != 30 || sc.skipped != 0 {
		t.Errorf("switches %d skipped %d, want 30 0", sc.switches, sc.skipped)
	}
}
