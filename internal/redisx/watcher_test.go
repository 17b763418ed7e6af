package redisx

import (
	"context"
	"fmt"
	"sync"
	"testing"
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
