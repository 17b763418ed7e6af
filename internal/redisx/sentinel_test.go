package redisx

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/schema"
)

// lostWithin waits up to 2 s (the deadline for a repair) for the
// count of losses to pass n.
func lostWithin(t *testing.T, lost *atomic.Int32, n int32, what string) {
	t.Helper()
	end := time.Now().Add(2 * time.Second)
	for lost.Load() <= n {
		if time.Now().After(end) {
			t.Fatalf("%s: onLost not called within 2 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSentinel(t *testing.T) {
	srv, c := startRedis(t)
	db := c.DB(6)
	key := SentinelKey(schema.StateDB, "testd")
	if key != "SWITCHYARD_DAEMON|testd" || SentinelKey(schema.CountersDB, "testd") != "SWITCHYARD_DAEMON"+schema.CountersSep+"testd" {
		t.Fatalf("SentinelKey = %q", key)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var lost, errs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewSentinel(db, key, SentinelFields()).Run(ctx, 100*time.Millisecond,
			func(context.Context) { lost.Add(1) }, func(error) { errs.Add(1) })
	}()
	defer func() { cancel(); <-done }()
	bg := context.Background()
	eventually(t, "sentinel written", func() bool { return srv.Client(6).Exists(bg, key).Val() == 1 })
	f := srv.Client(6).HGetAll(bg, key).Val()
	if _, err := time.Parse(time.RFC3339, f["started"]); err != nil || f["pid"] == "" {
		t.Errorf("sentinel fields %v, want pid and started (RFC 3339)", f)
	}
	if lost.Load() != 0 {
		t.Fatal("onLost called at start")
	}

	srv.Client(6).FlushDB(bg)
	lostWithin(t, &lost, 0, "FLUSHDB")
	if srv.Client(6).Exists(bg, key).Val() != 1 {
		t.Error("sentinel not written again before onLost")
	}
	srv.Client(0).FlushDB(bg) // another DB: not a loss
	srv.Client(6).Del(bg, key)
	lostWithin(t, &lost, 1, "DEL")
	srv.Restart()
	lostWithin(t, &lost, 2, "Redis restart")
	time.Sleep(300 * time.Millisecond)
	if n := lost.Load(); n != 3 {
		t.Errorf("onLost called %d times for 3 losses", n)
	}
	if errs.Load() == 0 {
		t.Log("no error seen across the restart (it was quick)")
	}
}
