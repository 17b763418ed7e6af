package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestStateWriterConnectionKilled: the writer's own connection killed
// between flushes costs nothing but a redial: the next flush is written
// whole, once.
func TestStateWriterConnectionKilled(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	w := NewStateWriter(db, []string{"state", "reason"})
	if err := w.Set(ctx, "K|a", map[string]string{"state": "error", "reason": "r"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Set(ctx, "K|a", map[string]string{"state": "ok"}); err != nil {
		t.Fatalf("Set after the connection was killed: %v", err)
	}
	h := db.HGetAll(ctx, "K|a").Val()
	if len(h) != 1 || h["state"] != "ok" {
		t.Fatalf("K|a = %v, want state ok and no reason", h)
	}
}

// TestStateWriterCancelled: a flush whose context is done fails, and the
// keys it may or may not have written are written in full by the next.
func TestStateWriterCancelled(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(6)
	w := NewStateWriter(db, []string{"state", "reason"})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	err := w.Set(done, "K|a", map[string]string{"state": "error", "reason": "r"})
	if err == nil || !strings.Contains(err.Error(), "write 1 state keys") {
		t.Fatalf("Set with a cancelled context = %v, want an error", err)
	}
	ctx := context.Background()
	db.HSet(ctx, "K|a", "state", "stale", "reason", "stale")
	if err := w.Set(ctx, "K|a", map[string]string{"state": "ok"}); err != nil {
		t.Fatal(err)
	}
	h := db.HGetAll(ctx, "K|a").Val()
	if len(h) != 1 || h["state"] != "ok" {
		t.Fatalf("K|a = %v, want state ok and no reason (written in full)", h)
	}
}

// TestStateWriterOddValues: values with CRLF, RESP markers, binary and
// empty strings, and a 1 MB value, are written as given.
func TestStateWriterOddValues(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	w := NewStateWriter(db, []string{AllFields})
	for k, h := range oddHashes() {
		if k == "T|many" {
			continue // one MULTI of 5,000 fields: fine, but slow under -race
		}
		if err := w.Set(ctx, k, h); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		got := db.HGetAll(ctx, k).Val()
		if len(got) != len(h) {
			t.Fatalf("%s: %d fields, want %d", k, len(got), len(h))
		}
		for f, v := range h {
			if got[f] != v {
				t.Fatalf("%s field %q: %d bytes, want %d", k, f, len(got[f]), len(v))
			}
		}
	}
}

// TestTxStatusReplies: the transaction's replies that are not QUEUED or
// OK are read without losing the connection's place; a reply that is not
// RESP is a protocol error.
func TestTxStatusReplies(t *testing.T) {
	rd := newPushReader(strings.NewReader("+OK\r\n:3\r\n$3\r\nabc\r\n$-1\r\n-ERR x\r\n*1\r\n"))
	for i := 0; i < 4; i++ {
		if reply, err := rd.status(); reply != nil || err != nil {
			t.Fatalf("reply %d: %v, %v", i, reply, err)
		}
	}
	if reply, err := rd.status(); err != nil || !isServerError(reply) || reply.Error() != "ERR x" {
		t.Fatalf("error reply: %v, %v", reply, err)
	}
	if _, err := rd.status(); !errors.Is(err, errProtocol) {
		t.Fatalf("array as a status: %v, want a protocol error", err)
	}
}

// TestStateWriterOnConnectRefused: a client whose OnConnect hook a
// connection of redisx's own would skip is an error, not a silent skip.
func TestStateWriterOnConnectRefused(t *testing.T) {
	_, c := startRedis(t)
	o := *c.DB(6).Options()
	o.OnConnect = func(context.Context, *redis.Conn) error { return nil }
	db := redis.NewClient(&o)
	defer db.Close()
	err := NewStateWriter(db, []string{"state"}).Set(context.Background(), "K|a", map[string]string{"state": "ok"})
	if err == nil || !strings.Contains(err.Error(), "OnConnect") {
		t.Fatalf("Set through a client with OnConnect = %v, want an error naming it", err)
	}
}

// TestStateWriterBigTransaction: a flush bigger than keepBuf is streamed
// while queued and is still one transaction: every key written, a key
// Redis refuses named alone (KeyErrors).
func TestStateWriterBigTransaction(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	db.Set(ctx, "K|str", "not a hash", 0)
	w := NewStateWriter(db, []string{"state", "reason"})
	b := w.Batch()
	const n = 5000
	for i := 0; i < n; i++ {
		b.Set(fmt.Sprintf("K|%d", i), map[string]string{"state": "error", "reason": strings.Repeat("r", 40)})
		if i == n/2 {
			b.Set("K|str", map[string]string{"state": "ok"})
		}
	}
	err := b.Flush(ctx)
	var refused KeyErrors
	if !errors.As(err, &refused) || len(refused) != 1 || refused["K|str"] == nil {
		t.Fatalf("big flush onto a string key = %v, want KeyErrors for K|str only", err)
	}
	if !w.tx.spilled {
		t.Fatal("the big transaction was not streamed (the test no longer covers it)")
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if v := db.HGet(ctx, fmt.Sprintf("K|%d", i), "state").Val(); v != "error" {
			t.Fatalf("K|%d state = %q", i, v)
		}
	}
	if got := db.DBSize(ctx).Val(); got != n+1 {
		t.Fatalf("%d keys, want %d", got, n+1)
	}
}
