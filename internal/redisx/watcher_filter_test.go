package redisx

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// changeLog records the Changes of Watcher.Run (the notifications
// themselves, before any coalescing or read).
type changeLog struct {
	mu    sync.Mutex
	seen  []Change
	syncs int
}

func (l *changeLog) add(ch Change) {
	l.mu.Lock()
	l.seen = append(l.seen, ch)
	l.mu.Unlock()
}

func (l *changeLog) onSync(context.Context) {
	l.mu.Lock()
	l.syncs++
	l.mu.Unlock()
}

// take returns and clears what was recorded.
func (l *changeLog) take() []Change {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	l.seen = nil
	return s
}

func (l *changeLog) has(ch Change) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.seen, ch)
}

// runChanges runs w.Run into a changeLog until the test ends and waits for
// the first scan; what the scan reported is cleared.
func runChanges(t *testing.T, w *Watcher, l *changeLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, l.add)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	eventually(t, "first scan", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.syncs > 0
	})
	l.take()
}

// numPat is PUBSUB NUMPAT: the patterns subscribed on the server.
func numPat(t *testing.T, c *Conn) int64 {
	t.Helper()
	n, err := c.DB(0).PubSubNumPat(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A watcher of WholeDBTables tables or more subscribes one pattern for its
// DB and filters by table in Go: keys of unwatched tables in the same DB
// (a watched table's name as their prefix, no separator, the escaped glob
// characters matched loosely) and of the same table in another DB give
// nothing; watched tables whose names prefix each other are told apart; a
// plain key subscribed by channel is reported once, not again through the
// pattern.
func TestWatcherWholeDBFilter(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	glob := `T*[?]\`
	tables := []string{"VLAN", "VLAN_MEMBER", "PORT", glob}
	var l changeLog
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: tables, Keys: []string{"CONFIG_DB_INITIALIZED"}, OnSync: l.onSync})
	runChanges(t, w, &l)
	if n := numPat(t, c); n != 1 {
		t.Fatalf("PUBSUB NUMPAT = %d, want 1 (one pattern for the whole DB)", n)
	}
	for _, k := range []string{
		"VLANX|a", "VLAN", "VLAN_MEMBERS|Vlan1|Ethernet0", "PORTCHANNEL|PortChannel1", "PORT:Ethernet0",
		`TX[?]\|k`, `T*[?]|k`, "STATIC_ROUTE|10.0.0.0/8",
	} {
		if err := db.HSet(ctx, k, "v", "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.DB(6).HSet(ctx, "VLAN|Vlan1", "v", "x") // another DB
	db.HSet(ctx, "VLAN|Vlan1", "v", "x")
	db.HSet(ctx, "VLAN_MEMBER|Vlan1|Ethernet0", "v", "x")
	db.HSet(ctx, glob+"|k", "v", "x")
	db.HSet(ctx, "PORT|Ethernet0|x", "v", "x")
	db.Set(ctx, "CONFIG_DB_INITIALIZED", "1", 0)
	db.Del(ctx, "VLAN|Vlan1")
	db.HSet(ctx, "PORT|fence", "v", "x")
	// Notifications of one connection arrive in order: once the fence is
	// in, everything written before it has been handled.
	eventually(t, "the fence", func() bool { return l.has(Change{Table: "PORT", Key: "fence"}) })
	want := []Change{
		{Table: "VLAN", Key: "Vlan1"},
		{Table: "VLAN_MEMBER", Key: "Vlan1|Ethernet0"},
		{Table: glob, Key: "k"},
		{Table: "PORT", Key: "Ethernet0|x"},
		{Key: "CONFIG_DB_INITIALIZED"},
		{Table: "VLAN", Key: "Vlan1"}, // the del
		{Table: "PORT", Key: "fence"},
	}
	if got := l.take(); !slices.Equal(got, want) {
		t.Fatalf("changes\n got %v\nwant %v", got, want)
	}
	// The one pattern covers the watched tables after a reconnect too.
	if err := db.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "resubscribed", func() bool { return numPat(t, c) == 1 })
	eventually(t, "notifications after the reconnect", func() bool {
		db.HSet(ctx, "VLAN_MEMBER|Vlan2|Ethernet4", "v", "x")
		return l.has(Change{Table: "VLAN_MEMBER", Key: "Vlan2|Ethernet4"})
	})
}

// The whole-DB pattern with APPL_DB's separator: IPv6 keys hold the
// separator again after the table.
func TestWatcherWholeDBColonSeparator(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(0)
	ctx := context.Background()
	var l changeLog
	w := NewWatcher(db, WatchOptions{DB: 0, Separator: ":", OnSync: l.onSync,
		Tables: []string{"ROUTE_TABLE", "NEIGH_TABLE", "INTF_TABLE", "LAG_TABLE"}})
	runChanges(t, w, &l)
	if n := numPat(t, c); n != 1 {
		t.Fatalf("PUBSUB NUMPAT = %d, want 1", n)
	}
	db.HSet(ctx, "ROUTE_TABLE|10.0.0.0/8", "v", "x") // CONFIG_DB's separator: another table
	db.HSet(ctx, "ROUTE_TABLEX:10.0.0.0/8", "v", "x")
	db.HSet(ctx, "ROUTE_TABLE:fe80::/64", "v", "x")
	db.HSet(ctx, "NEIGH_TABLE:Ethernet0:fe80::1", "v", "x")
	eventually(t, "the last key", func() bool { return l.has(Change{Table: "NEIGH_TABLE", Key: "Ethernet0:fe80::1"}) })
	want := []Change{{Table: "ROUTE_TABLE", Key: "fe80::/64"}, {Table: "NEIGH_TABLE", Key: "Ethernet0:fe80::1"}}
	if got := l.take(); !slices.Equal(got, want) {
		t.Fatalf("changes\n got %v\nwant %v", got, want)
	}
}

// Fewer tables than WholeDBTables, or a table name holding the separator,
// keep one pattern per table (and deliver the same changes).
func TestWatcherPatternPerTable(t *testing.T) {
	for _, tables := range [][]string{{"PORT", "PORT_TUNING"}, {"A|B", "A", "C", "D"}} {
		t.Run(fmt.Sprint(len(tables)), func(t *testing.T) {
			_, c := startRedis(t)
			db := c.DB(4)
			ctx := context.Background()
			var l changeLog
			w := NewWatcher(db, WatchOptions{DB: 4, Tables: tables, OnSync: l.onSync})
			runChanges(t, w, &l)
			if n := numPat(t, c); n != int64(len(tables)) {
				t.Fatalf("PUBSUB NUMPAT = %d, want %d", n, len(tables))
			}
			db.HSet(ctx, "STATIC_ROUTE|10.0.0.0/8", "v", "x")
			db.HSet(ctx, tables[0]+"|k", "v", "x")
			db.HSet(ctx, tables[1]+"|fence", "v", "x")
			eventually(t, "the fence", func() bool { return l.has(Change{Table: tables[1], Key: "fence"}) })
			want := []Change{{Table: tables[0], Key: "k"}, {Table: tables[1], Key: "fence"}}
			if tables[0] == "A|B" { // "A|B|k" is also a key "B|k" of table A
				want = []Change{{Table: "A|B", Key: "k"}, {Table: "A", Key: "B|k"}, {Table: "A", Key: "fence"}}
			}
			got := l.take()
			slices.SortFunc(got[:len(got)-1], func(a, b Change) int { return cmpChange(b, a) })
			if !slices.Equal(got, want) {
				t.Fatalf("changes\n got %v\nwant %v", got, want)
			}
		})
	}
}

func cmpChange(a, b Change) int {
	if a.Table != b.Table {
		if a.Table < b.Table {
			return -1
		}
		return 1
	}
	if a.Key < b.Key {
		return -1
	}
	if a.Key > b.Key {
		return 1
	}
	return 0
}

// An ACL user allowed exactly the whole-DB pattern can run a large watcher;
// one allowed nothing is told that literal rule.
func TestWatcherWholeDBACL(t *testing.T) {
	srv, _ := startRedis(t)
	ctx := context.Background()
	admin := srv.Client(0)
	for user, channels := range map[string]string{"ok": "&__keyspace@4__:*", "no": "resetchannels"} {
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "resetchannels", channels).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tables := []string{"VLAN", "VLAN_MEMBER", "PORT", "FDB"}
	ok, err := Connect(srv.URL() + "?user=ok&password=pw")
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	var l changeLog
	runChanges(t, NewWatcher(ok.DB(4), WatchOptions{DB: 4, Tables: tables, OnSync: l.onSync}), &l)
	ok.DB(4).HSet(ctx, "FDB|Vlan1|00:00:00:00:00:01", "port", "Ethernet0")
	eventually(t, "the FDB key", func() bool { return l.has(Change{Table: "FDB", Key: "Vlan1|00:00:00:00:00:01"}) })

	no, err := Connect(srv.URL() + "?user=no&password=pw")
	if err != nil {
		t.Fatal(err)
	}
	defer no.Close()
	errs := make(chan error, 100)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewWatcher(no.DB(4), WatchOptions{DB: 4, Tables: tables, OnError: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}}).Run(wctx, func(Change) {})
	}()
	defer func() { cancel(); <-done }()
	want := `redis user may not subscribe to __keyspace@4__:*: add "&__keyspace@4__:*" (or allchannels) to its ACL`
	end := time.After(waitFor)
	for {
		select {
		case err := <-errs:
			if !IsPermission(err) {
				continue
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("refused subscription: %v\nwant ...%s", err, want)
			}
			return
		case <-end:
			t.Fatal("no permission error from the refused subscription")
		}
	}
}
