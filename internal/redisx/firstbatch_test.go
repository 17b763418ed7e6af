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
		items, waited, ok := co.takeAfterWait(ctx, nil, 512, 8)
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
	rest, waited, ok := co.takeAfterWait(ctx, nil, 512, 8)
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
	synced := make(chan struct{}, 1)
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: func(context.Context) {
		select {
		case synced <- struct{}{}:
		default:
		}
	}})
	ch := w.EventBatches(ctx)
	select {
	case <-synced:
	case <-time.After(waitFor):
		t.Fatal("no sync")
	}
	const n = 1500
	pipe := db.Pipeline()
	for i := 0; i < n; i++ {
		pipe.HSet(ctx, fmt.Sprintf("PORT|p%d", i), "v", strconv.Itoa(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
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
