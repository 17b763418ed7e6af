package redisx

import (
	"context"
	"fmt"
	"testing"
)

// (s *sink) known is a consumer's WatchOptions.Known: the table keys
// whose last event says they exist, or that are not hashes.
func (s *sink) known(yield func(table, key string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.last {
		if ev.Table != "" && !ev.Deleted {
			yield(ev.Table, ev.Key)
		}
	}
}

// With WatchOptions.Known the watcher keeps no map of the keys it saw,
// and a rescan still reports the keys the consumer holds that are gone:
// a Redis restart (a fresh, empty server) deletes 100 keys and a
// wrong-type key, 100 new keys come, and the consumer ends with exactly
// Redis's keys; a key the consumer holds that is still there is not
// reported deleted.
func TestWatcherKnownFromConsumer(t *testing.T) {
	srv, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	want := map[string]string{}
	for i := 0; i < 100; i++ {
		k := fmt.Sprintf("PORT|old%d", i)
		db.HSet(ctx, k, "v", "1")
		want[k] = "1"
	}
	db.Set(ctx, "PORT|bogus", "x", 0)
	s := newSink()
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync, OnError: s.onError, Known: s.known})
	runEvents(t, w, s)
	s.waitState(t, want)
	eventually(t, "the wrong-type key's error", func() bool { ev, _ := s.get("PORT|bogus"); return ev.Err != nil })
	db.HSet(ctx, "PORT|live", "v", "0")
	want["PORT|live"] = "0"
	s.waitState(t, want)
	w.mu.Lock()
	n := len(w.known)
	w.mu.Unlock()
	if n != 0 {
		t.Fatalf("the watcher keeps %d known keys with WatchOptions.Known", n)
	}
	syncs := s.syncCount()

	srv.Restart()
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
	eventually(t, "the wrong-type key gone", func() bool { ev, _ := s.get("PORT|bogus"); return ev.Deleted })

	// A rescan with nothing gone reports no deletion.
	syncs = s.syncCount()
	db.HSet(ctx, "PORT|live", "v", "3")
	want["PORT|live"] = "3"
	s.waitState(t, want)
	w.requestRescan()
	eventually(t, "a rescan", func() bool { return s.syncCount() > syncs })
	s.waitState(t, want)
}
