package redisx

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStateWriterTrim: Trim lets go of the arrays a flush kept for the
// next one; the next flush makes them again and writes what it should
// (a changed field written, an unchanged key not sent again).
func TestStateWriterTrim(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	w := NewStateWriter(db, []string{"state", "reason"})
	b := w.Batch()
	const n = 300
	for i := 0; i < n; i++ {
		b.Set(fmt.Sprintf("K|%d", i), map[string]string{"state": "ok"})
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if cap(w.args) == 0 || cap(w.tx.buf) == 0 {
		t.Fatal("the flush kept no arrays: nothing to trim")
	}
	w.Trim()
	if cap(w.args) != 0 || cap(w.tx.buf) != 0 || cap(w.tx.cmds) != 0 {
		t.Fatalf("after Trim: args %d, buf %d, cmds %d bytes/entries kept", cap(w.args), cap(w.tx.buf), cap(w.tx.cmds))
	}
	sent := w.Commands()
	for i := 0; i < n; i++ {
		st := "ok"
		if i%2 == 0 {
			st = "error"
		}
		b.Set(fmt.Sprintf("K|%d", i), map[string]string{"state": st})
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.Commands() - sent; got != n/2 {
		t.Fatalf("after Trim the flush sent %d commands, want %d (the changed keys)", got, n/2)
	}
	for _, i := range []int{0, 1, n - 2, n - 1} {
		want := "ok"
		if i%2 == 0 {
			want = "error"
		}
		if v := db.HGet(ctx, fmt.Sprintf("K|%d", i), "state").Val(); v != want {
			t.Fatalf("K|%d state = %q, want %q", i, v, want)
		}
	}
}

// TestWatcherTrim: Trim empties the lists of released event arrays and
// maps; the next batches are made afresh.
func TestWatcherTrim(t *testing.T) {
	// Never connected: Release and Trim talk to no server.
	w := NewWatcher(redis.NewClient(&redis.Options{DB: 4}), WatchOptions{DB: 4, Tables: []string{"PORT"}})
	batch := w.eventArray(10)
	for i := range batch {
		batch[i].Fields = map[string]string{"a": "b"}
	}
	w.Release(batch)
	if len(w.reuseEvents) == 0 || len(w.reuse) == 0 {
		t.Fatalf("Release kept %d arrays, %d maps: nothing to trim", len(w.reuseEvents), len(w.reuse))
	}
	w.Trim()
	if w.reuseEvents != nil || w.reuse != nil {
		t.Fatalf("after Trim: %d arrays, %d maps kept", len(w.reuseEvents), len(w.reuse))
	}
	if got := w.eventArray(10); len(got) != 10 {
		t.Fatalf("eventArray after Trim: %d events, want 10", len(got))
	}
}
