package redisx

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func TestReadHash(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	db.HSet(ctx, "INTERFACE|Ethernet0|10.0.0.1/24", "NULL", "NULL")
	db.HSet(ctx, "PORT|Ethernet0", "mtu", "1500", "NULL", "NULL")
	if h, ok, err := ReadHash(ctx, db, "INTERFACE|Ethernet0|10.0.0.1/24"); err != nil || !ok || len(h) != 0 {
		t.Fatalf("NULL-only key = %v %v %v, want empty map, ok", h, ok, err)
	}
	if h, ok, err := ReadHash(ctx, db, "PORT|Ethernet0"); err != nil || !ok || !reflect.DeepEqual(h, map[string]string{"mtu": "1500"}) {
		t.Fatalf("PORT|Ethernet0 = %v %v %v", h, ok, err)
	}
	if h, ok, err := ReadHash(ctx, db, "PORT|none"); err != nil || ok || h != nil {
		t.Fatalf("absent key = %v %v %v", h, ok, err)
	}
	db.Set(ctx, "PORT|str", "x", 0)
	if _, _, err := ReadHash(ctx, db, "PORT|str"); err == nil {
		t.Fatal("string key: want WRONGTYPE error")
	}
}

func takeAll(t *testing.T, co *coalescer) []item {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	items, ok := co.take(ctx, 100)
	if !ok {
		t.Fatal("take: nothing")
	}
	return items
}

func TestCoalescer(t *testing.T) {
	co := newCoalescer([]string{"T"}, "|")
	a, b, x := Change{"T", "a"}, Change{"T", "b"}, Change{"T", "x"}
	ia, ib, ix := item{full: "T|a", table: 1}, item{full: "T|b", table: 1}, item{full: "T|x", table: 1}
	co.mark(a, "")
	co.mark(b, "")
	co.mark(a, "")
	co.barrier()
	co.mark(x, "")
	got := takeAll(t, co)
	want := []item{ia, ib, {sync: true}, ix}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("take = %v, want %v", got, want)
	}
	// After a failed read the items go back in front; b, marked again
	// meanwhile, moves up instead of staying behind the barrier.
	co.mark(b, "")
	co.mark(Change{"T", "later"}, "")
	co.requeue(got)
	got = takeAll(t, co)
	want = []item{ia, ib, {sync: true}, ix, {full: "T|later", table: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after requeue = %v, want %v", got, want)
	}
	// take honours max and blocks until something is there.
	for i := 0; i < 10; i++ {
		co.mark(Change{"T", string(rune('a' + i))}, "")
	}
	items, _ := co.take(context.Background(), 4)
	if len(items) != 4 {
		t.Fatalf("take(4) = %d items", len(items))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	takeAll(t, co)
	if _, ok := co.take(ctx, 10); ok {
		t.Fatal("take on empty coalescer returned items")
	}
	co.close()
	if _, ok := co.take(context.Background(), 10); ok {
		t.Fatal("take after close returned items")
	}
}

func TestEscapeGlob(t *testing.T) {
	if got := escapeGlob(`A*B?[x]\|`); got != `A\*B\?\[x\]\\|` {
		t.Fatalf("escapeGlob = %q", got)
	}
}

// A table name with glob characters matches only itself.
func TestWatcherGlobTableName(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	db.HSet(ctx, "AxB|pre", "v", "no")
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"A*B"}, OnSync: s.onSync})
	runEvents(t, w, s)
	eventually(t, "sync", func() bool { return s.syncCount() >= 1 })
	db.HSet(ctx, "AyB|k", "v", "no")
	db.HSet(ctx, "A*B|k", "v", "yes")
	s.waitState(t, map[string]string{"A*B|k": "yes"})
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.last) != 1 {
		t.Fatalf("events for other tables: %v", s.last)
	}
}

// EventBatches: the scan's keys come in batches of at most one read
// (512), each key once; a consumer that handles a batch whole before
// taking OnSync's signal (as the engine does) has every scanned key by
// then; a later change comes after it.
func TestEventBatchesSyncFollowsScan(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 1300; i++ {
		db.HSet(ctx, fmt.Sprintf("PORT|p%d", i), "v", "1")
	}
	syncCh := make(chan struct{})
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: func(ctx context.Context) {
		select {
		case syncCh <- struct{}{}:
		case <-ctx.Done():
		}
	}})
	ch := w.EventBatches(ctx)
	seen := map[string]bool{}
	synced := false
	deadline := time.After(waitFor)
	for !seen["late"] {
		select {
		case batch := <-ch:
			if len(batch) == 0 || len(batch) > readBatch {
				t.Fatalf("a batch of %d events", len(batch))
			}
			for _, ev := range batch {
				if ev.Table != "PORT" || ev.Fields["v"] != "1" || seen[ev.Key] {
					t.Fatalf("event %+v (seen before: %v)", ev, seen[ev.Key])
				}
				seen[ev.Key] = true
			}
		case <-syncCh:
			if synced {
				continue
			}
			synced = true
			if len(seen) != 1300 {
				t.Fatalf("OnSync after %d keys received, want all 1300 first", len(seen))
			}
			db.HSet(ctx, "PORT|late", "v", "1")
		case <-deadline:
			t.Fatalf("timeout: synced %v, %d keys", synced, len(seen))
		}
	}
}

// The FIFO keeps its order across blocks and gives each block back once
// read.
func TestItemQueueBlocks(t *testing.T) {
	var q itemQueue
	var got []item
	for i := 0; i < 3*queueBlock+7; i++ {
		q.push(item{full: fmt.Sprint(i)})
		if i%100 == 99 {
			got = q.pop(got, len(got)+37)
		}
	}
	for q.n > 0 {
		got = q.pop(got, len(got)+queueBlock/3)
	}
	if len(got) != 3*queueBlock+7 || q.blocks != nil {
		t.Fatalf("popped %d, %d blocks left", len(got), len(q.blocks))
	}
	for i, it := range got {
		if it.full != fmt.Sprint(i) {
			t.Fatalf("item %d is %q", i, it.full)
		}
	}
}

// waitRoom returns once a take leaves fewer than limit items.
func TestCoalescerWaitRoom(t *testing.T) {
	co := newCoalescer([]string{"T"}, "|")
	for i := 0; i < 10; i++ {
		co.mark(Change{"T", fmt.Sprint(i)}, "")
	}
	done := make(chan struct{})
	go func() { co.waitRoom(context.Background(), 5); close(done) }()
	if _, ok := co.take(context.Background(), 3); !ok {
		t.Fatal("take: nothing")
	}
	select {
	case <-done:
		t.Fatal("waitRoom returned with 7 queued, limit 5")
	case <-time.After(20 * time.Millisecond):
	}
	co.take(context.Background(), 3)
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("waitRoom still waiting with 4 queued, limit 5")
	}
}

// A scan waits for a slow consumer: however far behind it is, the keys
// marked and not yet received stay within the scan's backlog, a page of
// SCAN and the deliverer's two batches — not the whole table — and every
// key still comes once, before OnSync.
func TestEventsScanPaced(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 20000
	for i := 0; i < n; i += 1000 {
		p := db.Pipeline()
		for j := i; j < i+1000; j++ {
			p.HSet(ctx, fmt.Sprintf("PORT|p%d", j), "v", "1")
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var marked atomic.Int64
	syncCh := make(chan struct{}, 1)
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: func(context.Context) {
		select {
		case syncCh <- struct{}{}:
		default:
		}
	}})
	w.testMarked = func(Change) { marked.Add(1) }
	ch := w.EventBatches(ctx)
	received, most := 0, int64(0)
	seen := map[string]bool{}
	deadline := time.After(waitFor)
	for received < n {
		select {
		case batch := <-ch:
			most = max(most, marked.Load()-int64(received))
			for _, ev := range batch {
				if seen[ev.Key] {
					t.Fatalf("%s twice", ev.Key)
				}
				seen[ev.Key] = true
			}
			received += len(batch)
			time.Sleep(time.Millisecond) // a slow consumer (no timing is asserted)
		case <-syncCh:
			t.Fatalf("OnSync after %d of %d keys", received, n)
		case <-deadline:
			t.Fatalf("timeout: %d of %d keys", received, n)
		}
	}
	if bound := int64(scanBacklog + 2*readBatch + 2000); most > bound {
		t.Fatalf("%d keys marked and not received at once, want at most %d", most, bound)
	}
	t.Logf("at most %d of %d keys queued", most, n)
}

// The coalescer keeps each key as its whole name and its table's number:
// the Change comes back as marked (Table one of the watcher's own
// strings), a plain key named like a table key is a key of its own, and a
// key marked without its name gets it joined.
func TestCoalescerCompactItems(t *testing.T) {
	tables := []string{"PORT", "STATIC_ROUTE"}
	co := newCoalescer(tables, "|")
	marks := []struct {
		ch   Change
		full string
	}{
		{Change{"STATIC_ROUTE", "10.0.0.0/24"}, "STATIC_ROUTE|10.0.0.0/24"},
		{Change{"PORT", "Ethernet0"}, ""},
		{Change{"", "PORT|Ethernet0"}, "PORT|Ethernet0"},
		{Change{"STATIC_ROUTE", "vrf|10.0.0.0/24"}, "STATIC_ROUTE|vrf|10.0.0.0/24"},
		{Change{"PORT", "Ethernet0"}, "PORT|Ethernet0"}, // queued already
	}
	for _, m := range marks {
		co.mark(m.ch, m.full)
	}
	got := takeAll(t, co)
	if len(got) != 4 {
		t.Fatalf("took %d items, want 4: %v", len(got), got)
	}
	for i, it := range got {
		ch := it.change(tables, 1)
		if ch != marks[i].ch {
			t.Fatalf("item %d = %+v, want %+v", i, ch, marks[i].ch)
		}
		if ch.Table != "" && unsafe.StringData(ch.Table) != unsafe.StringData(tables[it.table-1]) {
			t.Fatalf("item %d: table %q is not the watcher's string", i, ch.Table)
		}
		if want := marks[i].ch.Table + "|" + marks[i].ch.Key; ch.Table != "" && it.full != want {
			t.Fatalf("item %d: name %q, want %q", i, it.full, want)
		}
	}
	if len(co.dirty) != 0 || len(co.plain) != 0 {
		t.Fatalf("dirty sets not empty after take: %d, %d", len(co.dirty), len(co.plain))
	}
	if s := unsafe.Sizeof(item{}); s > 24 {
		t.Fatalf("item is %d bytes, want <= 24", s)
	}
}
