package redisx

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestWatcherReadErrors: the Watcher's own read connection keeps read's
// error behaviour: a refused key (NOPERM) is that key's Event.Err,
// explained; a plain key holding a hash falls back to ReadHash; a
// killed read connection retries the batch on a new one; a key holding a
// string is a WRONGTYPE Event.Err, and nothing else of the batch changes.
func TestWatcherReadErrors(t *testing.T) {
	srv, admin := startRedis(t)
	ctx := context.Background()
	if err := admin.DB(0).Do(ctx, "ACL", "SETUSER", "w", "on", ">pw", "+@all", "~PORT|*", "~INIT", "&*").Err(); err != nil {
		t.Fatal(err)
	}
	adb := admin.DB(4)
	for _, kv := range [][2]string{{"PORT|ok", "9100"}, {"SECRET|x", "1"}} {
		if err := adb.HSet(ctx, kv[0], "mtu", kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := adb.HSet(ctx, "INIT", "a", "b").Err(); err != nil { // a plain key holding a hash
		t.Fatal(err)
	}
	if err := adb.Set(ctx, "PORT|str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(srv.URL() + "?user=w&password=pw")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := newSink()
	w := NewWatcher(c.DB(0), WatchOptions{DB: 4, Tables: []string{"PORT", "SECRET"}, Keys: []string{"INIT"}, OnSync: s.onSync, OnError: s.onError})
	runEvents(t, w, s)
	eventually(t, "first sync", func() bool { return s.syncCount() >= 1 })

	ev, _ := s.get("SECRET|x")
	var pe *PermissionError
	if !errors.As(ev.Err, &pe) || !IsPermission(ev.Err) || !strings.HasPrefix(ev.Err.Error(), `hgetall SECRET|x: redis user may not access key SECRET|x (HGETALL): add "~SECRET|*"`) {
		t.Errorf("refused key: %+v, want an explained NOPERM", ev)
	}
	ev, _ = s.get("|INIT")
	if ev.Err != nil || ev.Deleted || ev.Fields["a"] != "b" {
		t.Errorf("plain key holding a hash: %+v", ev)
	}
	ev, _ = s.get("PORT|str")
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "hgetall PORT|str: WRONGTYPE") || !isServerError(ev.Err) {
		t.Errorf("string key: %+v, want WRONGTYPE", ev)
	}
	ev, _ = s.get("PORT|ok")
	if ev.Err != nil || ev.Fields["mtu"] != "9100" {
		t.Errorf("readable key: %+v", ev)
	}

	// The read connection (and go-redis' pool) killed between batches:
	// the next batch is read again on a new connection.
	if err := admin.DB(0).Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if err := adb.HSet(ctx, "PORT|ok", "mtu", "1500").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the change read after the kill", func() bool {
		ev, _ := s.get("PORT|ok")
		return ev.Fields["mtu"] == "1500"
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	var retried bool
	for _, err := range s.errors {
		retried = retried || strings.HasPrefix(err.Error(), "read changed keys of db 4: ")
	}
	if !retried {
		t.Errorf("no failed read reported after the kill: %v", s.errors)
	}
}
