package workqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const deadline = 15 * time.Second

func get(t *testing.T, q *Queue) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	k, ok := q.Get(ctx)
	if !ok {
		t.Fatalf("Get: no key within %v", deadline)
	}
	return k
}

func TestDedupe(t *testing.T) {
	q := New(Options{})
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if n := q.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	if k := get(t, q); k != "a" {
		t.Fatalf("first = %q, want a", k)
	}
	if k := get(t, q); k != "b" {
		t.Fatalf("second = %q, want b", k)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestReAddDuringProcessing(t *testing.T) {
	q := New(Options{})
	q.Add("a")
	k := get(t, q)
	q.Add("a")
	q.Add("a")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len while processing = %d, want 0 (queued only after Done)", n)
	}
	q.Done(k)
	if n := q.Len(); n != 1 {
		t.Fatalf("Len after Done = %d, want 1", n)
	}
	if k := get(t, q); k != "a" {
		t.Fatalf("got %q, want a", k)
	}
	q.Done("a")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestNoConcurrentProcessingOfOneKey(t *testing.T) {
	q := New(Options{})
	var (
		mu        sync.Mutex
		busy      = map[string]bool{}
		processed atomic.Int64
		overlap   atomic.Int64
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, ok := q.Get(ctx)
				if !ok {
					return
				}
				mu.Lock()
				if busy[k] {
					overlap.Add(1)
				}
				busy[k] = true
				mu.Unlock()
				for i := 0; i < 100; i++ { // let others race for the same key
					q.Add(k)
				}
				mu.Lock()
				busy[k] = false
				mu.Unlock()
				processed.Add(1)
				q.Done(k)
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		q.Add(fmt.Sprintf("k%d", i%5))
	}
	end := time.Now().Add(deadline)
	for processed.Load() < 500 && time.Now().Before(end) {
		time.Sleep(5 * time.Millisecond)
	}
	q.ShutDown()
	wg.Wait()
	if processed.Load() < 500 {
		t.Fatalf("only %d keys processed", processed.Load())
	}
	if n := overlap.Load(); n != 0 {
		t.Fatalf("a key was processed by two workers at once %d times", n)
	}
}

func TestBackoffGrowthAndCap(t *testing.T) {
	base, max := 5*time.Millisecond, 100*time.Millisecond
	want := []time.Duration{5, 10, 20, 40, 80, 100, 100}
	for n, w := range want {
		if got := backoff(base, max, n); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := backoff(time.Second, time.Hour, 1000); got != time.Hour {
		t.Errorf("backoff(1000) = %v, want cap (no overflow)", got)
	}
}

func TestAddRateLimitedRetriesAndForget(t *testing.T) {
	q := New(Options{BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond})
	for i := 1; i <= 4; i++ {
		q.AddRateLimited("a")
		if k := get(t, q); k != "a" {
			t.Fatalf("got %q", k)
		}
		q.Done("a")
		if r := q.Retries("a"); r != i {
			t.Fatalf("Retries = %d, want %d", r, i)
		}
	}
	q.Forget("a")
	if r := q.Retries("a"); r != 0 {
		t.Fatalf("Retries after Forget = %d, want 0", r)
	}
	if r := q.Retries("never"); r != 0 {
		t.Fatalf("Retries of unknown key = %d", r)
	}
}

func TestAddRateLimitedWaitsForBackoff(t *testing.T) {
	q := New(Options{BaseDelay: time.Hour, MaxDelay: time.Hour})
	q.AddRateLimited("a")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if k, ok := q.Get(ctx); ok {
		t.Fatalf("got %q before its backoff", k)
	}
	q.Add("a") // an explicit Add does not wait
	if k := get(t, q); k != "a" {
		t.Fatalf("got %q", k)
	}
}

func TestTokenBucket(t *testing.T) {
	b := tokenBucket{qps: 10, burst: 2, tokens: 2}
	now := time.Unix(1000, 0)
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond}
	for i, w := range want {
		if got := b.reserve(now); got != w {
			t.Errorf("reserve #%d = %v, want %v", i, got, w)
		}
	}
	// 100 ms later one token was refilled: -2+1-1 = -2 → wait 200 ms.
	if got := b.reserve(now.Add(100 * time.Millisecond)); got != 200*time.Millisecond {
		t.Errorf("after 100ms = %v, want 200ms", got)
	}
	// Much later the bucket is full again (capped at burst).
	if got := b.reserve(now.Add(time.Hour)); got != 0 {
		t.Errorf("after an hour = %v, want 0", got)
	}
	if b.tokens != 1 {
		t.Errorf("tokens = %v, want 1 (burst 2 minus 1)", b.tokens)
	}
}

func TestRateLimitAppliesAcrossKeys(t *testing.T) {
	q := New(Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, QPS: 0.001, Burst: 1})
	q.AddRateLimited("a") // takes the only token
	q.AddRateLimited("b") // waits ~1000 s for the next
	if k := get(t, q); k != "a" {
		t.Fatalf("got %q, want a", k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if k, ok := q.Get(ctx); ok {
		t.Fatalf("got %q despite the overall rate limit", k)
	}
}

func TestAddAfter(t *testing.T) {
	q := New(Options{})
	q.AddAfter("a", time.Hour)
	q.AddAfter("a", time.Millisecond) // sooner wins
	q.AddAfter("a", time.Hour)        // later is ignored
	if k := get(t, q); k != "a" {
		t.Fatalf("got %q", k)
	}
	q.Done("a")
	q.AddAfter("b", 0)
	if n := q.Len(); n != 1 {
		t.Fatalf("AddAfter(0): Len = %d, want 1", n)
	}
}

func TestGetContextCancel(t *testing.T) {
	q := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		_, ok := q.Get(ctx)
		done <- ok
	}()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Get returned ok after cancel")
		}
	case <-time.After(deadline):
		t.Fatal("Get did not return after cancel")
	}
}

func TestShutDown(t *testing.T) {
	q := New(Options{})
	q.AddAfter("later", time.Millisecond)
	done := make(chan bool)
	go func() {
		_, ok := q.Get(context.Background())
		done <- ok
	}()
	q.ShutDown()
	q.ShutDown() // idempotent
	select {
	case ok := <-done:
		if ok {
			// The AddAfter may have fired before ShutDown; then the
			// blocked Get legitimately got it. A second Get must fail.
			if _, ok := q.Get(context.Background()); ok {
				t.Fatal("Get after ShutDown returned ok")
			}
		}
	case <-time.After(deadline):
		t.Fatal("Get did not return after ShutDown")
	}
	q.Add("x")
	if _, ok := q.Get(context.Background()); ok {
		t.Fatal("Get after ShutDown returned ok")
	}
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown = false")
	}
}

// The FIFO keeps its order while its array is reused and compacted
// (keys handed out from the front while others are added), and AddAll
// is Add of each key.
func TestFIFOOrderAcrossReuse(t *testing.T) {
	q := New(Options{})
	defer q.ShutDown()
	ctx := context.Background()
	next, want := 0, 0
	add := func(n int) {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprint(next)
			next++
		}
		q.AddAll(keys)
	}
	get := func(n int) {
		for i := 0; i < n; i++ {
			k, ok := q.Get(ctx)
			if !ok || k != fmt.Sprint(want) {
				t.Fatalf("got %q, want %d", k, want)
			}
			want++
			q.Done(k)
		}
	}
	for round := 0; round < 50; round++ {
		add(37 + round)
		get(20 + round/2)
	}
	get(next - want)
	if q.Len() != 0 {
		t.Fatalf("len %d", q.Len())
	}
	add(5000)
	get(5000)
}
