package impaird

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// clock is what a schedule runner reads and sleeps on: the monotonic
// clock, faked in unit tests.
type clock interface {
	// now reads the monotonic clock.
	now() time.Duration
	// wall is the wall clock (for the STATE_DB timestamps).
	wall() time.Time
	// newTimer returns a timer for one runner.
	newTimer() (timer, error)
}

// timer sleeps until an absolute monotonic time.
type timer interface {
	// sleepUntil blocks until the monotonic clock reads t or ctx ends
	// (then ctx.Err()).
	sleepUntil(ctx context.Context, t time.Duration) error
	close()
}

// monoClock is CLOCK_MONOTONIC with timerfd timers.
type monoClock struct{}

func (monoClock) now() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	return time.Duration(ts.Nano())
}

func (monoClock) wall() time.Time { return time.Now() }

// newTimer creates a timerfd (timerfd_create(CLOCK_MONOTONIC)). A
// blocking read of it wakes the reading thread at the hrtimer's
// expiry: tens of microseconds late, where Go's own timers round their
// epoll wait to whole milliseconds.
func (monoClock) newTimer() (timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	return &fdTimer{fd: fd}, nil
}

type fdTimer struct {
	mu     sync.Mutex // guards fd against a cancel racing close
	fd     int
	closed bool
}

func (t *fdTimer) arm(at time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(at))}
	return unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (t *fdTimer) sleepUntil(ctx context.Context, at time.Duration) error {
	if at <= 0 {
		at = 1 // 0 would disarm the timer
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.arm(at); err != nil {
			return fmt.Errorf("timerfd_settime: %w", err)
		}
		// Cancellation: expire the timer at once, so the read returns.
		stop := context.AfterFunc(ctx, func() { _ = t.arm(1) })
		var buf [8]byte
		_, err := unix.Read(t.fd, buf[:])
		stop()
		if err != nil && err != unix.EINTR {
			return fmt.Errorf("read timerfd: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if (monoClock{}).now() >= at {
			return nil
		}
	}
}

// realtimeThread pins the calling goroutine to its thread for good and
// makes that thread SCHED_FIFO priority 1 (sched_setattr(2); chrt -f 1):
// its timerfd wake-up then preempts ordinary tasks instead of waiting for
// a CFS slice on a busy host. The runner sleeps almost all the time and
// the kernel's RT throttling bounds it anyway. The thread ends with the
// goroutine (never unlocked), so no other goroutine inherits the policy.
func realtimeThread() error {
	runtime.LockOSThread()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("sched_setattr SCHED_FIFO: %w", err)
	}
	return nil
}

func (t *fdTimer) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		unix.Close(t.fd)
	}
}
