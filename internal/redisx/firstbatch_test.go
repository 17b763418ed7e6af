package redisx

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// A take that waited for the first key takes at most idleMax, the next
// one (not waiting) up to max; the order is the order of marking.
func TestCoalescerTakeAfterWait(t *testing.T) {
	co := newCoalescer([]string{"T"}, "|")
	waiting := make(chan struct{}, 1)
	co.testWaiting = func() { waiting <- struct{}{} }
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	type took struct {
		items  []item
		waited bool
	}
	res := make(chan took, 1)
	go func() {
		items, waited, ok := co.takeAfterWait(ctx, nil, 512, 8, time.Time{})
		if !ok {
			t.Error("take: nothing")
		}
		res <- took{items, waited}
	}()
	<-waiting // parked: every key below comes while it waits
	for i := 0; i < 100; i++ {
		co.mark(Change{Table: "T", Key: strconv.Itoa(i)}, "")
	}
	first := <-res
	if !first.waited || len(first.items) == 0 || len(first.items) > 8 {
		t.Fatalf("first take: waited %v, %d items; want waited, 1-8", first.waited, len(first.items))
	}
	rest, waited, ok := co.takeAfterWait(ctx, nil, 512, 8, time.Time{})
	if !ok || waited {
		t.Fatalf("second take: ok %v waited %v", ok, waited)
	}
	all := append(first.items, rest...)
	if len(all) != 100 {
		t.Fatalf("%d items in all, want 100", len(all))
	}
	for i, it := range all {
		if it.full != "T|"+strconv.Itoa(i) {
			t.Fatalf("item %d = %q, want T|%d", i, it.full, i)
		}
	}
}

// A burst after the scan reaches EventBatches' consumer in the order its
// keys first became dirty, each key once per batch with its latest value,
// however the deliverer sized its reads (a small first one, then up to
// readBatch).
func TestEventBatchesBurstOrderAndContent(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, synced := portWatcher(db)
	ch := w.EventBatches(ctx)
	select {
	case <-synced:
	case <-time.After(waitFor):
		t.Fatal("no sync")
	}
	const n = 1500
	hsetPorts(t, db, n)
	var got []Event
	batches := 0
	deadline := time.After(waitFor)
	for len(got) < n {
		select {
		case batch := <-ch:
			if len(batch) == 0 || len(batch) > readBatch {
				t.Fatalf("a batch of %d events", len(batch))
			}
			batches++
			got = append(got, batch...)
		case <-deadline:
			t.Fatalf("timeout: %d of %d keys", len(got), n)
		}
	}
	if len(got) != n {
		t.Fatalf("%d events, want %d", len(got), n)
	}
	for i, ev := range got {
		key := fmt.Sprintf("p%d", i)
		if ev.Table != "PORT" || ev.Key != key || ev.Name != "PORT|"+key || ev.Deleted || ev.Err != nil ||
			len(ev.Fields) != 1 || ev.Fields["v"] != strconv.Itoa(i) {
			t.Fatalf("event %d = %+v, want PORT|%s v=%d", i, ev, key, i)
		}
	}
	t.Logf("%d keys in %d batches", n, batches)
}

// A take that waited inside a burst (capFrom still ahead: the deliverer
// handed a batch over less than burstGap ago) is not capped: it takes
// what has come, up to max.
func TestCoalescerTakeAfterWaitInBurst(t *testing.T) {
	co := newCoalescer([]string{"T"}, "|")
	waiting := make(chan struct{}, 1)
	co.testWaiting = func() { waiting <- struct{}{} }
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res := make(chan []item, 1)
	go func() {
		items, waited, ok := co.takeAfterWait(ctx, nil, 512, 8, time.Now().Add(time.Hour))
		if !ok || !waited {
			t.Errorf("take: ok %v waited %v", ok, waited)
		}
		res <- items
	}()
	<-waiting
	co.mu.Lock() // the take wakes to all 100 queued
	for i := 0; i < 100; i++ {
		it := co.itemOf(Change{Table: "T", Key: strconv.Itoa(i)}, "")
		co.dirty[it.full] = struct{}{}
		co.fifo.push(it)
	}
	co.signal()
	co.mu.Unlock()
	if got := <-res; len(got) != 100 {
		t.Fatalf("took %d items, want all 100", len(got))
	}
	if len(co.dirty) != 0 || co.fifo.n != 0 {
		t.Fatalf("left %d dirty, %d queued", len(co.dirty), co.fifo.n)
	}
}

// tryTake takes what is queued, up to max, in order, when at least least
// are, and never waits.
func TestCoalescerTryTake(t *testing.T) {
	co := newCoalescer([]string{"T"}, "|")
	if got := co.tryTake(nil, 10, 1); got != nil {
		t.Fatalf("empty: took %v", got)
	}
	for i := 0; i < 15; i++ {
		co.mark(Change{Table: "T", Key: strconv.Itoa(i)}, "")
	}
	if got := co.tryTake(nil, 10, 16); got != nil {
		t.Fatalf("15 queued, 16 at least: took %v", got)
	}
	a := co.tryTake(nil, 10, 15)
	b := co.tryTake(make([]item, 0, 2), 10, 1)
	if len(a) != 10 || len(b) != 5 || a[0].full != "T|0" || b[0].full != "T|10" || b[4].full != "T|14" {
		t.Fatalf("took %v then %v", a, b)
	}
	co.mark(Change{Table: "T", Key: "0"}, "") // taken: dirty again
	if got := co.tryTake(nil, 10, 1); len(got) != 1 || got[0].full != "T|0" {
		t.Fatalf("again: took %v", got)
	}
	co.close()
	co.mark(Change{Table: "T", Key: "1"}, "")
	if got := co.tryTake(nil, 10, 1); got != nil {
		t.Fatalf("closed: took %v", got)
	}
}

// With two batches in flight on the read connection (a burst's capped
// first batch, then the keys behind it written before the first is handed
// over), a connection lost after the first is handed over puts the second
// back: every key is delivered, in order, with its value, and the failure
// is reported.
func TestDeliverTwoInFlightConnectionLost(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	const n = readBatch + 300
	hsetPorts(t, db, n)
	var errs []error
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnError: func(err error) { errs = append(errs, err) }})
	co := newCoalescer([]string{"PORT"}, "|")
	waiting := make(chan struct{}, 1)
	co.testWaiting = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	var got []Event
	batches := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.deliver(ctx, co, func(_ context.Context, evs []Event) bool {
			batches++
			if batches == 1 {
				if len(evs) != firstBatch {
					t.Errorf("first batch: %d events, want %d", len(evs), firstBatch)
				}
				// The second batch was written on it; its replies may
				// already be buffered: drop the reader too.
				w.closeReadConn()
			}
			got = append(got, evs...)
			if len(got) >= n {
				cancel()
			}
			return true
		})
	}()
	<-waiting // the deliverer is idle: all n keys come at once
	co.mu.Lock()
	for i := 0; i < n; i++ {
		it := co.itemOf(Change{Table: "PORT", Key: fmt.Sprintf("p%d", i)}, "")
		co.dirty[it.full] = struct{}{}
		co.fifo.push(it)
	}
	co.signal()
	co.mu.Unlock()
	<-done
	if len(got) != n {
		t.Fatalf("%d events, want %d", len(got), n)
	}
	for i, ev := range got {
		if k := fmt.Sprintf("p%d", i); ev.Key != k || ev.Fields["v"] != strconv.Itoa(i) {
			t.Fatalf("event %d = %+v, want %s v=%d", i, ev, k, i)
		}
	}
	if len(errs) != 1 {
		t.Fatalf("errors reported: %v, want one", errs)
	}
	t.Logf("%d batches; reported: %v", batches, errs)
}
