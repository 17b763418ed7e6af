package redisx

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

const waitFor = 20 * time.Second

// eventually polls cond until it holds or waitFor passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startRedis starts a private server with keyspace notifications on.
func startRedis(t testing.TB, extra ...string) (*testredis.Server, *Conn) {
	t.Helper()
	srv := testredis.Start(t, extra...)
	c, err := Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := EnsureKeyspaceEvents(context.Background(), c.DB(0), WatchClasses); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// portWatcher is a watcher of table PORT in DB 4 and a channel that
// gets a value at each of its syncs (OnSync; one is kept when unread).
func portWatcher(db *redis.Client) (*Watcher, <-chan struct{}) {
	synced := make(chan struct{}, 1)
	w := NewWatcher(db, WatchOptions{DB: 4, Tables: []string{"PORT"}, OnSync: func(context.Context) {
		select {
		case synced <- struct{}{}:
		default:
		}
	}})
	return w, synced
}

// hsetPorts writes PORT|p0 ... PORT|p<n-1> (field v = i) in one pipeline.
func hsetPorts(t testing.TB, db *redis.Client, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := db.Pipeline()
	for i := 0; i < n; i++ {
		pipe.HSet(ctx, fmt.Sprintf("PORT|p%d", i), "v", strconv.Itoa(i))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// sink collects the Events of a watcher: the last event per key and the
// number of events per key.
type sink struct {
	mu     sync.Mutex
	last   map[string]Event
	count  map[string]int
	total  int
	syncs  int
	errors []error
}

func newSink() *sink { return &sink{last: map[string]Event{}, count: map[string]int{}} }

func (s *sink) add(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ev.Table + "|" + ev.Key
	s.last[k] = ev
	s.count[k]++
	s.total++
}

func (s *sink) onSync(context.Context) {
	s.mu.Lock()
	s.syncs++
	s.mu.Unlock()
}

func (s *sink) onError(err error) {
	s.mu.Lock()
	s.errors = append(s.errors, err)
	s.mu.Unlock()
}

func (s *sink) get(k string) (Event, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[k], s.count[k]
}

func (s *sink) syncCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncs
}

// check reports whether every key of want has its last event with the
// wanted field "v" (or Deleted when the wanted value is "").
func (s *sink) check(want map[string]string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range want {
		ev, ok := s.last[k]
		switch {
		case !ok:
			return false, fmt.Sprintf("%s: no event", k)
		case v == "" && !ev.Deleted:
			return false, fmt.Sprintf("%s: want deleted, have %v", k, ev.Fields)
		case v != "" && (ev.Deleted || ev.Fields["v"] != v):
			return false, fmt.Sprintf("%s: want v=%s, have deleted=%v %v", k, v, ev.Deleted, ev.Fields)
		}
	}
	return true, ""
}

// waitState waits until the sink's view equals want.
func (s *sink) waitState(t testing.TB, want map[string]string) {
	t.Helper()
	var why string
	end := time.Now().Add(waitFor)
	for {
		ok, w := s.check(want)
		if ok {
			return
		}
		why = w
		if time.Now().After(end) {
			t.Fatalf("timed out after %v; first difference: %s", waitFor, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runEvents starts w.Events and feeds s until the test ends.
func runEvents(t testing.TB, w *Watcher, s *sink) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := w.Events(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			s.add(ev)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// commandCount returns how often cmd ran, from INFO commandstats.
func commandCount(t testing.TB, c *redis.Client, cmd string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	prefix := "cmdstat_" + cmd + ":calls="
	for _, line := range splitLines(info) {
		if len(line) > len(prefix) && line[:len(prefix)] == prefix {
			fmt.Sscanf(line[len(prefix):], "%d", &n)
		}
	}
	return n
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			line := s[start:i]
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			out = append(out, line)
			start = i + 1
		}
	}
	return append(out, s[start:])
}
