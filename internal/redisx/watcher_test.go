package redisx

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestWatcherInitialScanAndUpdates(t *testing.T) {
	srv, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	db.HSet(ctx, "PORT|Ethernet0", "mtu", "9100")
	db.HSet(ctx, "PORT|Ethernet4", "NULL", "NULL")
	db.HSet(ctx, "VLAN|Vlan100", "vlanid", "100")
	db.HSet(ctx, "VLAN_MEMBER|Vlan100|Ethernet0", "tagging_mode", "untagged") // other table
	db.Set(ctx, "CONFIG_DB_INITIALIZED", "1", 0)
	_ = srv

	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT", "VLAN"}, Keys: []string{"CONFIG_DB_INITIALIZED"}, OnSync: s.onSync, OnError: s.onError})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })

	ev, _ := s.get("PORT|Ethernet0")
	if ev.Fields["mtu"] != "9100" || ev.Deleted {
		t.Fatalf("PORT|Ethernet0 = %+v", ev)
	}
	ev, _ = s.get("PORT|Ethernet4")
	if ev.Deleted || len(ev.Fields) != 0 || ev.Fields == nil {
		t.Fatalf("NULL-only key: want existing with empty Fields, got %+v", ev)
	}
	ev, _ = s.get("|CONFIG_DB_INITIALIZED")
	if ev.Value != "1" || ev.Deleted {
		t.Fatalf("plain key: %+v", ev)
	}
	if _, n := s.get("VLAN_MEMBER|Vlan100|Ethernet0"); n != 0 {
		t.Fatal("got an event of an unwatched table")
	}
	if _, n := s.get("VLAN|Vlan100_MEMBER|Vlan100|Ethernet0"); n != 0 {
		t.Fatal("VLAN_MEMBER key reported as VLAN")
	}

	// Updates, a key with ':' and '|' in it, deletion, plain key change.
	db.HSet(ctx, "PORT|Ethernet0", "mtu", "1500")
	db.HSet(ctx, "VLAN|a:b|c:d", "v", "1")
	db.Del(ctx, "PORT|Ethernet4")
	db.Set(ctx, "CONFIG_DB_INITIALIZED", "0", 0)
	eventually(t, "updates", func() bool {
		a, _ := s.get("PORT|Ethernet0")
		b, _ := s.get("VLAN|a:b|c:d")
		d, _ := s.get("PORT|Ethernet4")
		e, _ := s.get("|CONFIG_DB_INITIALIZED")
		return a.Fields["mtu"] == "1500" && b.Fields["v"] == "1" && b.Key == "a:b|c:d" && d.Deleted && d.Fields == nil && e.Value == "0"
	})
	db.Del(ctx, "CONFIG_DB_INITIALIZED")
	eventually(t, "plain key deleted", func() bool {
		e, _ := s.get("|CONFIG_DB_INITIALIZED")
		return e.Deleted
	})
	// A table key that is not a hash is reported with Err.
	db.Set(ctx, "PORT|bogus", "x", 0)
	eventually(t, "wrongtype error", func() bool {
		e, _ := s.get("PORT|bogus")
		return e.Err != nil
	})
}

// Events written while the watcher subscribes and scans are not lost.
func TestWatcherNoLossDuringInitialScan(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	const n = 5000
	want := map[string]string{}
	for i := 0; i < n; i++ {
		want[fmt.Sprintf("PORT|k%d", i)] = fmt.Sprintf("final%d", i)
	}
	// Half exist before the watcher starts.
	pipe := db.Pipeline()
	for i := 0; i < n/2; i++ {
		pipe.HSet(ctx, fmt.Sprintf("PORT|k%d", i), "v", "old")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // races with the subscribe and the scan
		defer wg.Done()
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("PORT|k%d", i)
			db.HSet(ctx, k, "v", "mid")
			db.HSet(ctx, k, "v", want[k])
		}
	}()
	runEvents(t, w, s)
	wg.Wait()
	s.waitState(t, want)
}

func TestWatcherAPPLDBSeparator(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(0)
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 0, Tables: []string{"ROUTE_TABLE"}, Separator: ":"})
	runEvents(t, w, s)
	db.HSet(context.Background(), "ROUTE_TABLE:10.0.0.0/24", "v", "x")
	s.waitState(t, map[string]string{"ROUTE_TABLE|10.0.0.0/24": "x"}) // sink joins with "|"
}

func TestWatcherNothingToWatch(t *testing.T) {
	_, c := startRedis(t)
	w := NewWatcher(c.DB(4), WatchOptions{DB: 4})
	if err := w.Run(context.Background(), func(Change) {}); err == nil {
		t.Fatal("Run with no tables and no keys: want an error")
	}
}

// A Redis restart (data gone, new run_id): old keys are reported deleted,
// keys written after the restart are delivered.
func TestWatcherRedisRestart(t *testing.T) {
	srv, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	want := map[string]string{}
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("PORT|old%d", i)
		db.HSet(ctx, k, "v", "1")
		want[k] = "1"
	}
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync, OnError: s.onError})
	runEvents(t, w, s)
	s.waitState(t, want)
	syncs := s.syncCount()

	srv.Restart()
	// The fresh server has keyspace notifications off, as a restarted
	// Redis without the redis.conf line would: the watcher turns them on
	// again before its rescan, so nothing written after it is missed.
	for k := range want {
		want[k] = "" // deleted
	}
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("PORT|new%d", i)
		if err := db.HSet(ctx, k, "v", "2").Err(); err != nil {
			t.Fatal(err)
		}
		want[k] = "2"
	}
	s.waitState(t, want)
	eventually(t, "a resync after the restart", func() bool { return s.syncCount() > syncs })
	if v := c.DB(0).ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; v == "" {
		t.Fatal("watcher did not turn keyspace notifications on again after the restart")
	}

	// And notifications flow again after the resubscribe.
	db.HSet(ctx, "PORT|after", "v", "3")
	want["PORT|after"] = "3"
	s.waitState(t, want)
}

// CLIENT KILL of the subscription connection: writes made while it is
// down are picked up by the rescan; nothing is lost.
func TestWatcherConnectionKill(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })
	want := map[string]string{}
	for round := 0; round < 5; round++ {
		syncs := s.syncCount()
		if err := db.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			k := fmt.Sprintf("PORT|r%d-%d", round, i)
			db.HSet(ctx, k, "v", "x")
			want[k] = "x"
		}
		// Delete one key of the previous round while disconnected.
		if round > 0 {
			k := fmt.Sprintf("PORT|r%d-0", round-1)
			db.Del(ctx, k)
			want[k] = ""
		}
		eventually(t, "resync after kill", func() bool { return s.syncCount() > syncs })
	}
	s.waitState(t, want)
}

// 10,000 keys written in one pipeline are all delivered.
func TestWatcher10kPipeline(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"FDB"}, OnSync: s.onSync})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })
	want := map[string]string{}
	pipe := db.Pipeline()
	for i := 0; i < 10000; i++ {
		k := fmt.Sprintf("FDB|Vlan100|00:00:00:00:%02x:%02x", i/256, i%256)
		pipe.HSet(ctx, k, "v", "p")
		want[k] = "p"
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitState(t, want)
	s.mu.Lock()
	n := len(s.last)
	s.mu.Unlock()
	if n != 10000 {
		t.Fatalf("%d distinct keys delivered, want 10000", n)
	}
}

// A burst of writes to one key while the consumer is busy gives one event
// with the last value.
func TestEventsCoalesceBurst(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, synced := portWatcher(db)
	markerSeen := make(chan struct{})
	var once sync.Once
	w.testMarked = func(ch Change) {
		if ch.Key == "marker" {
			once.Do(func() { close(markerSeen) })
		}
	}
	ch := w.Events(ctx)
	select { // empty table: nothing to deliver
	case <-synced:
	case <-time.After(waitFor):
		t.Fatal("no first sync")
	}
	db.HSet(ctx, "PORT|gate", "v", "0")
	first := recv(t, ch) // the consumer now "works" on PORT|gate; meanwhile:
	if first.Key != "gate" {
		t.Fatalf("first event %+v", first)
	}
	// While the consumer does not read, the deliverer blocks on the
	// channel with at most one event read ahead; everything else on
	// PORT|burst coalesces in the dirty set.
	db.HSet(ctx, "PORT|block", "v", "0")
	pipe := db.Pipeline()
	for i := 1; i <= 1000; i++ {
		pipe.HSet(ctx, "PORT|burst", "v", fmt.Sprint(i))
	}
	pipe.Exec(ctx)
	// Wait until the watcher has seen the last write: a marker key after it.
	db.HSet(ctx, "PORT|marker", "v", "1")
	select {
	case <-markerSeen:
	case <-time.After(waitFor):
		t.Fatal("marker not noticed")
	}
	var burst []Event
	for {
		ev := recv(t, ch)
		if ev.Key == "burst" {
			burst = append(burst, ev)
		}
		if ev.Key == "marker" {
			break
		}
	}
	if len(burst) == 0 || burst[len(burst)-1].Fields["v"] != "1000" {
		t.Fatalf("burst events %+v: want the last with v=1000", burst)
	}
	if len(burst) > 2 {
		t.Fatalf("%d events for a burst of 1000 writes, want 1 (2 if one read raced the burst)", len(burst))
	}
}

// The watcher may start before Redis; it catches up once Redis is there.
func TestWatcherStartsBeforeRedis(t *testing.T) {
	srv, c := startRedis(t)
	srv.Stop()
	db := c.DB(4)
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT", "PORT"}, Keys: []string{"INIT", "INIT"}, OnSync: s.onSync, OnError: s.onError})
	runEvents(t, w, s)
	eventually(t, "an error reported while Redis is down", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.errors) > 0
	})
	srv.Restart()
	ctx := context.Background()
	db.HSet(ctx, "PORT|Ethernet0", "v", "1")
	s.waitState(t, map[string]string{"PORT|Ethernet0": "1"})
	eventually(t, "sync", func() bool { return s.syncCount() >= 1 })
	db.HSet(ctx, "PORT|Ethernet4", "v", "2")
	db.Set(ctx, "INIT", "1", 0)
	s.waitState(t, map[string]string{"PORT|Ethernet4": "2"})
	eventually(t, "plain key", func() bool {
		ev, _ := s.get("|INIT")
		return ev.Value == "1"
	})
}

// Run mode: notify is never called concurrently, OnSync follows the scan.
func TestWatcherRunNotifySerialized(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx, cancel := context.WithCancel(context.Background())
	for i := 0; i < 3000; i++ {
		db.HSet(ctx, fmt.Sprintf("PORT|p%d", i), "v", "1")
	}
	var (
		mu      sync.Mutex
		inside  bool
		overlap bool
		seen    = map[Change]bool{}
		synced  = make(chan int, 10)
	)
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: func(context.Context) {
		mu.Lock()
		select {
		case synced <- len(seen):
		default:
		}
		mu.Unlock()
	}})
	done := make(chan error)
	go func() {
		done <- w.Run(ctx, func(ch Change) {
			mu.Lock()
			if inside {
				overlap = true
			}
			inside = true
			seen[ch] = true
			mu.Unlock()
			time.Sleep(time.Microsecond)
			mu.Lock()
			inside = false
			mu.Unlock()
		})
	}()
	go func() { // notifications race with the scan
		for i := 0; i < 3000; i++ {
			db.HSet(ctx, fmt.Sprintf("PORT|q%d", i), "v", "1")
		}
	}()
	select {
	case n := <-synced:
		if n < 3000 {
			t.Fatalf("OnSync after %d keys, want all 3000 existing ones first", n)
		}
	case <-time.After(waitFor):
		t.Fatal("no OnSync")
	}
	eventually(t, "all q keys", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 6000
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil on cancel", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Run did not return after cancel")
	}
	if overlap {
		t.Fatal("notify called concurrently")
	}
}

// A run_id other than the last scan's (Redis restarted) triggers a rescan
// even when the subscription itself looks fine.
func TestWatcherRunIDChangeRescans(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync, RunIDInterval: 20 * time.Millisecond})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })
	n := s.syncCount()
	w.mu.Lock()
	w.runID = "0000000000000000000000000000000000000000" // as if the last scan read another server
	w.mu.Unlock()
	eventually(t, "rescan after run_id change", func() bool { return s.syncCount() > n })
}

// Random writes and deletes while the subscription is killed again and
// again: in the end the consumer's view equals what Redis holds.
func TestWatcherChaosConverges(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync})
	runEvents(t, w, s)
	const keys = 200
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("PORT|k%d", (i*7919)%keys)
			if i%5 == 0 {
				db.Del(ctx, k)
			} else {
				db.HSet(ctx, k, "v", fmt.Sprint(i))
			}
		}
	}()
	for round := 0; round < 10; round++ {
		syncs := s.syncCount()
		db.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub")
		eventually(t, "resync after kill", func() bool { return s.syncCount() > syncs })
	}
	close(stop)
	<-writerDone
	want := map[string]string{}
	for i := 0; i < keys; i++ {
		k := fmt.Sprintf("PORT|k%d", i)
		want[k] = db.HGet(ctx, k, "v").Val() // "" when deleted
	}
	// Keys never written have no event; only check the ones that exist
	// or that the consumer has seen.
	for k, v := range want {
		if _, n := s.get(k); v == "" && n == 0 {
			delete(want, k)
		}
	}
	s.waitState(t, want)
}

// recv returns the next event, failing the test after waitFor.
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("events channel closed")
		}
		return ev
	case <-time.After(waitFor):
		t.Fatalf("no event within %v", waitFor)
	}
	return Event{}
}

// Redis restarts twice while a writer keeps going: the consumer's view
// ends up equal to what the last server holds (keys of the old servers
// reported deleted).
func TestWatcherRestartMidStream(t *testing.T) {
	srv, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })
	const keys = 300
	var (
		mu      sync.Mutex
		written = map[string]bool{}
	)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("PORT|k%d", (i*7919)%keys)
			if db.HSet(ctx, k, "v", fmt.Sprint(i)).Err() == nil {
				mu.Lock()
				written[k] = true
				mu.Unlock()
			} else {
				time.Sleep(time.Millisecond) // server down
			}
		}
	}()
	for round := 0; round < 2; round++ {
		eventually(t, "some writes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(written) > 20
		})
		srv.Restart()
		mu.Lock()
		written = map[string]bool{}
		mu.Unlock()
	}
	eventually(t, "writes after the last restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(written) > 20
	})
	close(stop)
	<-writerDone
	want := map[string]string{}
	for i := 0; i < keys; i++ {
		k := fmt.Sprintf("PORT|k%d", i)
		v := db.HGet(ctx, k, "v").Val()
		if _, n := s.get(k); v != "" || n > 0 {
			want[k] = v // "" = must be seen as deleted
		}
	}
	s.waitState(t, want)
}
