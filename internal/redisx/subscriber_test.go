package redisx

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// pushText is a push as text, for comparisons with go-redis' messages.
func pushText(kind, pattern, channel, payload string, count int64) string {
	return fmt.Sprintf("%s pattern=%q channel=%q payload=%q count=%d", kind, pattern, channel, payload, count)
}

// The push reader and go-redis' PubSub, subscribed alike on one server,
// read the same messages: confirmations, keyspace notifications of odd
// keys (CRLF, binary, empty, 100 KB, UTF-8), a PUBLISH, a pong.
func TestSubscriberDifferential(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(4)
	ctx := context.Background()
	channels := []string{"__keyspace@4__:plain", "chat"}
	patterns := []string{"__keyspace@4__:*", `__keyspace@4__:T\|*`}

	ps := db.Subscribe(ctx, channels...)
	defer ps.Close()
	if err := ps.PSubscribe(ctx, patterns...); err != nil {
		t.Fatal(err)
	}
	sub, err := newSubscriber(db.Options(), channels, patterns)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()

	var ours []string
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := sub.receive(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			ours = append(ours, pushText(string(m.kind), string(m.pattern), string(m.channel), string(m.payload), m.count))
			mu.Unlock()
		}
	}()
	// Both have all four subscriptions before anything is written.
	var theirs []string
	for len(theirs) < 4 {
		msg, err := ps.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := msg.(*redis.Subscription)
		theirs = append(theirs, pushText(s.Kind, "", s.Channel, "", int64(s.Count)))
	}
	eventually(t, "our confirmations", func() bool { mu.Lock(); defer mu.Unlock(); return len(ours) >= 4 })

	keys := []string{"T|a", "plain", "T|crlf\r\nx", "T|\x00\xff\x80", "", "T|" + strings.Repeat("k", 100<<10), "T|ünï", "other"}
	for _, k := range keys {
		if err := db.HSet(ctx, k, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		db.Del(ctx, k)
	}
	db.Publish(ctx, "chat", "hello\r\n$3\r\nfoo")
	sub.ping(time.Minute)
	if err := ps.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// Each side's pong comes in its own connection's order, so the fence
	// is written only once both pongs are in.
	fenced, fences := false, 0
	for fences < 2 {
		msg, err := ps.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s string
		switch m := msg.(type) {
		case *redis.Message:
			kind := "message"
			if m.Pattern != "" {
				kind = "pmessage"
			}
			s = pushText(kind, m.Pattern, m.Channel, m.Payload, 0)
		case *redis.Pong: // go-redis speaks RESP3: "+PONG"; we RESP2: ["pong", ""]
			s = pushText("pong", "", "", strings.ToLower(strings.TrimPrefix(m.Payload, "PONG")), 0)
		default:
			t.Fatalf("unexpected %T %v", msg, msg)
		}
		theirs = append(theirs, s)
		if strings.Contains(s, "T|fence") {
			fences++ // both patterns match the fence
		}
		if strings.HasPrefix(s, "pong") && !fenced {
			eventually(t, "our pong", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(ours) > 0 && strings.HasPrefix(ours[len(ours)-1], "pong")
			})
			db.Set(ctx, "T|fence", "1", 0)
			fenced = true
		}
	}
	// Redis sends a key's pattern messages in its own order; ours must
	// match message for message.
	eventually(t, "the same number of messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(ours) >= len(theirs) })
	sub.close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(ours) != len(theirs) {
		t.Fatalf("%d messages, go-redis %d", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Fatalf("message %d:\n ours    %.300s\n go-redis %.300s", i, ours[i], theirs[i])
		}
	}
}

// A watcher over TCP with a password, and as an ACL user; a wrong password
// is reported (WRONGPASS) and never printed, and retried until ctx ends.
func TestWatcherAuthOverTCP(t *testing.T) {
	srv := testredis.Start(t, "--requirepass", "s3cret")
	ctx := context.Background()
	admin := srv.Client(0)
	if err := EnsureKeyspaceEvents(ctx, admin, WatchClasses); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", "alice", "on", ">a1ice", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{
		fmt.Sprintf("redis://:s3cret@127.0.0.1:%d", srv.Port),
		fmt.Sprintf("redis://alice:a1ice@127.0.0.1:%d", srv.Port),
	} {
		conn, err := Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s := newSink()
		w := NewWatcher(conn.DB(4), WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: s.onSync, OnError: s.onError})
		runEvents(t, w, s)
		eventually(t, "first sync", func() bool { return s.syncCount() > 0 })
		k := fmt.Sprintf("PORT|%d", len(url))
		conn.DB(4).HSet(ctx, k, "v", "x")
		s.waitState(t, map[string]string{k: "x"})
	}

	conn, _ := Connect(fmt.Sprintf("redis://alice:wrongpw@127.0.0.1:%d", srv.Port))
	defer conn.Close()
	s := newSink()
	w := NewWatcher(conn.DB(4), WatchOptions{DB: 4, Tables: []string{"PORT"}, OnError: s.onError})
	runEvents(t, w, s)
	eventually(t, "a subscription error", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, err := range s.errors {
			if strings.Contains(err.Error(), "keyspace subscription") && strings.Contains(err.Error(), "WRONGPASS") {
				return true
			}
		}
		return false
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errors {
		if strings.Contains(err.Error(), "wrongpw") {
			t.Fatalf("error shows the password: %v", err)
		}
	}
}

// Allocations per keyspace notification read and turned into a Change.
func BenchmarkWatcherHandle(b *testing.B) {
	_, c := startRedis(b)
	w := NewWatcher(c.DB(4), WatchOptions{DB: 4, Tables: []string{"PORT", "VLAN", "STATIC_ROUTE", "FDB"}})
	var msg []byte
	for i := 0; i < 1000; i++ {
		msg = appendCommand(msg, "pmessage", "__keyspace@4__:*", fmt.Sprintf("__keyspace@4__:STATIC_ROUTE|10.0.%d.%d/32", i/256, i%256), "hset")
	}
	emit := func(Change, string) {}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rd := newPushReader(bytes.NewReader(msg))
		for j := 0; j < 1000; j++ {
			m, err := rd.read()
			if err != nil {
				b.Fatal(err)
			}
			w.handle(m, emit)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(1000*b.N), "ns/msg")
}

// FuzzPushReader: any bytes give messages or an error, never a panic or an
// endless read; a message re-encoded reads back the same.
func FuzzPushReader(f *testing.F) {
	f.Add(appendCommand(nil, "pmessage", "__keyspace@4__:*", "__keyspace@4__:PORT|Ethernet0", "hset"))
	f.Add(appendCommand(nil, "message", "__keyspace@4__:CONFIG_DB_INITIALIZED", "set"))
	f.Add([]byte("*3\r\n$10\r\npsubscribe\r\n$16\r\n__keyspace@4__:*\r\n:2\r\n"))
	f.Add([]byte("*2\r\n$4\r\npong\r\n$0\r\n\r\n-NOPERM this user has no permissions\r\n"))
	f.Add([]byte(">4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$1\r\nc\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := newPushReader(bytes.NewReader(data))
		for i := 0; i < len(data)+1; i++ {
			m, err := rd.read()
			if err != nil {
				return
			}
			var enc []byte
			switch {
			case m.pattern != nil:
				enc = appendCommand(nil, string(m.kind), string(m.pattern), string(m.channel), string(m.payload))
			default:
				continue
			}
			back, err := newPushReader(bytes.NewReader(enc)).read()
			if err != nil || !bytes.Equal(back.kind, m.kind) || !bytes.Equal(back.pattern, m.pattern) ||
				!bytes.Equal(back.channel, m.channel) || !bytes.Equal(back.payload, m.payload) {
				t.Fatalf("%+v re-encoded as %q read back as %+v, %v", m, enc, back, err)
			}
		}
		t.Fatal("more messages than bytes")
	})
}

// BenchmarkSubscriptionRead: reading 10,000 keyspace notifications (already
// sent by the server) with go-redis' PubSub and with the push reader the
// watcher uses; cpu-ns/msg is this process's CPU (user+sys), which moves
// less with the host's load than the wall time.
func BenchmarkSubscriptionRead(b *testing.B) {
	for _, reader := range []string{"goredis", "push"} {
		b.Run(reader, func(b *testing.B) {
			_, c := startRedis(b)
			db := c.DB(4)
			ctx := context.Background()
			pattern := "__keyspace@4__:*"
			var recv func() error
			switch reader {
			case "goredis":
				ps := db.PSubscribe(ctx, pattern)
				defer ps.Close()
				recv = func() error { _, err := ps.Receive(ctx); return err }
			default:
				sub, _ := newSubscriber(db.Options(), nil, []string{pattern})
				defer sub.close()
				recv = func() error { _, err := sub.receive(ctx); return err }
			}
			if err := recv(); err != nil { // the confirmation
				b.Fatal(err)
			}
			const n = 10000
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				pipe := db.Pipeline()
				for j := 0; j < n; j++ {
					pipe.HSet(ctx, fmt.Sprintf("STATIC_ROUTE|10.%d.%d.0/24", j/256, j%256), "nexthop", "10.0.0.2")
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := processCPU()
				for j := 0; j < n; j++ {
					if err := recv(); err != nil {
						b.Fatal(err)
					}
				}
				cpu += processCPU() - t0
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/msg")
		})
	}
}

// processCPU is this process's user+sys CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
