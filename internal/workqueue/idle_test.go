package workqueue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestSetIdleOncePerGet: a Get with nothing to hand out calls SetIdle's
// function once after the delay, on its own goroutine, and goes on
// waiting: a key added later is still handed out, and the next Get calls
// the function again once idle.
func TestSetIdleOncePerGet(t *testing.T) {
	q := New(Options{})
	defer q.ShutDown()
	var calls atomic.Int32
	q.SetIdle(5*time.Millisecond, func() { calls.Add(1) })
	got := make(chan string)
	go func() {
		for {
			k, ok := q.Get(context.Background())
			if !ok {
				return
			}
			got <- k
			q.Done(k)
		}
	}()
	waitUntil(t, func() bool { return calls.Load() == 1 })
	time.Sleep(50 * time.Millisecond) // ten delays: still one call
	if n := calls.Load(); n != 1 {
		t.Fatalf("idle calls while one Get waited: %d, want 1", n)
	}
	q.Add("a")
	if k := <-got; k != "a" {
		t.Fatalf("Get after idle = %q, want a", k)
	}
	waitUntil(t, func() bool { return calls.Load() == 2 })
}

// TestSetIdleNotWhileBusy: keys added faster than the delay never leave
// a Get idle.
func TestSetIdleNotWhileBusy(t *testing.T) {
	q := New(Options{})
	defer q.ShutDown()
	var calls atomic.Int32
	q.SetIdle(time.Hour, func() { calls.Add(1) })
	for i := 0; i < 100; i++ {
		q.Add(fmt.Sprint("k", i))
		k, _ := q.Get(context.Background())
		q.Done(k)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("idle calls: %d, want 0", n)
	}
}

// TestTrimLetsGoAndQueueWorks: after a burst, Trim drops the FIFO it
// grew; the queue then works as before (dedupe, re-add while
// processing).
func TestTrimLetsGoAndQueueWorks(t *testing.T) {
	q := New(Options{})
	defer q.ShutDown()
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprint("T|k", i)
	}
	q.AddAll(keys)
	got, _ := q.GetBatch(context.Background(), nil, len(keys))
	q.DoneAll(got)
	if cap(q.queue) == 0 {
		t.Fatal("the burst left no FIFO array: nothing to trim")
	}
	q.Trim()
	if cap(q.queue) != 0 {
		t.Fatalf("after Trim: FIFO cap %d, want 0", cap(q.queue))
	}
	q.AddAll([]string{"a", "b", "a"})
	if q.Len() != 2 {
		t.Fatalf("Len after Trim and adds = %d, want 2", q.Len())
	}
	a, _ := q.Get(context.Background())
	q.Add(a) // while processing: queued again at Done
	b, _ := q.Get(context.Background())
	q.Done(b)
	q.Done(a)
	if k, _ := q.Get(context.Background()); k != a {
		t.Fatalf("re-added key = %q, want %q", k, a)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
