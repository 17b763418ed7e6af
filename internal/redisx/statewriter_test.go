package redisx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func hash(t *testing.T, w *StateWriter, key string) map[string]string {
	t.Helper()
	h, err := w.c.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// writes counts the hash-writing commands the server ran.
func writes(t *testing.T, w *StateWriter) int {
	return commandCount(t, w.c, "hset") + commandCount(t, w.c, "hdel") + commandCount(t, w.c, "del")
}

func TestStateWriterOwnership(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	orch := NewStateWriter(db, []string{"state", "reason"})
	syncd := NewStateWriter(db, []string{"oper_status", "mtu"})
	const key = "PORT_TABLE|Ethernet0"

	if err := syncd.Set(ctx, key, map[string]string{"oper_status": "up", "mtu": "9100"}); err != nil {
		t.Fatal(err)
	}
	if err := orch.Set(ctx, key, map[string]string{"state": "error", "reason": "bad mtu"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"oper_status": "up", "mtu": "9100", "state": "error", "reason": "bad mtu"}
	if h := hash(t, orch, key); !reflect.DeepEqual(h, want) {
		t.Fatalf("hash = %v, want %v", h, want)
	}
	// Dropping reason removes only that field.
	if err := orch.Set(ctx, key, map[string]string{"state": "ok"}); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"oper_status": "up", "mtu": "9100", "state": "ok"}
	if h := hash(t, orch, key); !reflect.DeepEqual(h, want) {
		t.Fatalf("hash = %v, want %v", h, want)
	}
	// Delete removes only orchagent's fields.
	if err := orch.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"oper_status": "up", "mtu": "9100"}
	if h := hash(t, orch, key); !reflect.DeepEqual(h, want) {
		t.Fatalf("after Delete: hash = %v, want %v", h, want)
	}
	// The last owner's Delete makes the key disappear.
	if err := syncd.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if n := db.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("key still exists: %v", hash(t, orch, key))
	}
	// A field someone else owns is refused, nothing written.
	err := orch.Set(ctx, key, map[string]string{"state": "ok", "oper_status": "down"})
	if err == nil || !strings.Contains(err.Error(), "oper_status") {
		t.Fatalf("Set of a foreign field = %v, want an error naming it", err)
	}
	if n := db.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("refused Set wrote something")
	}
	if got := orch.Keys(); len(got) != 0 {
		t.Fatalf("Keys = %v, want none", got)
	}
}

func TestStateWriterWritesOnlyChanges(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	w := NewStateWriter(c.DB(6), []string{"state", "reason"})
	const key = "VLAN_TABLE|Vlan100"
	set := func(f map[string]string) {
		t.Helper()
		if err := w.Set(ctx, key, f); err != nil {
			t.Fatal(err)
		}
	}
	set(map[string]string{"state": "pending", "reason": "waiting for VLAN|Vlan100"})
	n := writes(t, w)
	set(map[string]string{"state": "pending", "reason": "waiting for VLAN|Vlan100"})
	set(map[string]string{"reason": "waiting for VLAN|Vlan100", "state": "pending"})
	if d := writes(t, w) - n; d != 0 {
		t.Fatalf("%d writes for an unchanged Set, want 0", d)
	}
	hsetBefore := commandCount(t, w.c, "hset")
	set(map[string]string{"state": "ok"})
	if d := commandCount(t, w.c, "hset") - hsetBefore; d != 1 {
		t.Fatalf("%d HSETs for one changed field, want 1", d)
	}
	n = writes(t, w)
	set(map[string]string{"state": "ok"})
	if d := writes(t, w) - n; d != 0 {
		t.Fatalf("%d writes for an unchanged Set, want 0", d)
	}
	if h := hash(t, w, key); !reflect.DeepEqual(h, map[string]string{"state": "ok"}) {
		t.Fatalf("hash = %v", h)
	}
	// The caller's map may be changed afterwards without effect.
	f := map[string]string{"state": "error", "reason": "x"}
	set(f)
	f["state"] = "mutated"
	n = writes(t, w)
	set(map[string]string{"state": "error", "reason": "x"})
	if d := writes(t, w) - n; d != 0 {
		t.Fatal("the writer's cache aliases the caller's map")
	}
}

func TestStateWriterBatchAndLoad(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	w := NewStateWriter(db, []string{"oper_status", "mtu"})
	db.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // orchagent's field
	b := w.Batch()
	for i := 0; i < 1000; i++ {
		b.Set(fmt.Sprintf("PORT_TABLE|Ethernet%d", i), map[string]string{"oper_status": "up", "mtu": "1500"})
	}
	b.Delete("PORT_TABLE|Ethernet999")
	b.Set("PORT_TABLE|Ethernet998", map[string]string{"oper_status": "down"})
	if b.Len() != 1002 {
		t.Fatalf("Len = %d", b.Len())
	}
	execBefore := commandCount(t, db, "exec")
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := commandCount(t, db, "exec") - execBefore; d != 1 {
		t.Fatalf("%d transactions for one batch, want 1", d)
	}
	if b.Len() != 0 {
		t.Fatal("Flush did not empty the batch")
	}
	if h := hash(t, w, "PORT_TABLE|Ethernet0"); !reflect.DeepEqual(h, map[string]string{"state": "ok", "oper_status": "up", "mtu": "1500"}) {
		t.Fatalf("Ethernet0 = %v", h)
	}
	if h := hash(t, w, "PORT_TABLE|Ethernet998"); !reflect.DeepEqual(h, map[string]string{"oper_status": "down"}) {
		t.Fatalf("Ethernet998 = %v", h)
	}
	if db.Exists(ctx, "PORT_TABLE|Ethernet999").Val() != 0 {
		t.Fatal("Ethernet999 not deleted")
	}
	if n := len(w.Keys()); n != 999 {
		t.Fatalf("Keys: %d, want 999", n)
	}

	// A restarted daemon: a new writer adopts what is there and writes
	// only differences; Keys lists what it may need to remove.
	w2 := NewStateWriter(db, []string{"oper_status", "mtu"})
	db.HSet(ctx, "OTHER|x", "oper_status", "up") // outside the pattern
	db.Set(ctx, "PORT_TABLE|string", "x", 0)     // not a hash
	if err := w2.Load(ctx, "PORT_TABLE|*"); err != nil {
		t.Fatal(err)
	}
	if n := len(w2.Keys()); n != 999 {
		t.Fatalf("Keys after Load: %d, want 999", n)
	}
	n := writes(t, w2)
	b = w2.Batch()
	for i := 0; i < 998; i++ {
		b.Set(fmt.Sprintf("PORT_TABLE|Ethernet%d", i), map[string]string{"oper_status": "up", "mtu": "1500"})
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d := writes(t, w2) - n; d != 0 {
		t.Fatalf("%d writes after Load for unchanged state, want 0", d)
	}
	// Stale: Ethernet998 (still known, not refreshed by the daemon).
	if err := w2.Delete(ctx, "PORT_TABLE|Ethernet998"); err != nil {
		t.Fatal(err)
	}
	if db.Exists(ctx, "PORT_TABLE|Ethernet998").Val() != 0 {
		t.Fatal("stale key not removed")
	}

	// Forget: the next Set writes in full (Redis lost its data).
	db.FlushDB(ctx)
	w2.Forget()
	if len(w2.Keys()) != 0 {
		t.Fatal("Keys after Forget")
	}
	if err := w2.Set(ctx, "PORT_TABLE|Ethernet0", map[string]string{"oper_status": "up", "mtu": "1500"}); err != nil {
		t.Fatal(err)
	}
	if h := hash(t, w2, "PORT_TABLE|Ethernet0"); len(h) != 2 {
		t.Fatalf("after Forget: %v", h)
	}
}

func TestStateWriterCheckRestart(t *testing.T) {
	srv, c := startRedis(t)
	ctx := context.Background()
	w := NewStateWriter(c.DB(6), []string{"v"})
	if err := w.Set(ctx, "K|a", map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if r, err := w.CheckRestart(ctx); err != nil || r {
		t.Fatalf("first CheckRestart = %v, %v", r, err)
	}
	srv.Restart()
	var restarted bool
	eventually(t, "CheckRestart after restart", func() bool {
		r, err := w.CheckRestart(ctx)
		restarted = restarted || r
		return err == nil
	})
	if !restarted {
		t.Fatal("restart not noticed")
	}
	if err := w.Set(ctx, "K|a", map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if v := c.DB(6).HGet(ctx, "K|a", "v").Val(); v != "1" {
		t.Fatal("Set after restart did not rewrite")
	}
}

func TestStateWriterAllFields(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(2)
	w := NewStateWriter(db, []string{AllFields})
	const key = "COUNTERS:Ethernet0"
	if err := w.Set(ctx, key, map[string]string{"rx_packets": "1", "tx_packets": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Set(ctx, key, map[string]string{"rx_packets": "3"}); err != nil {
		t.Fatal(err)
	}
	if h := hash(t, w, key); !reflect.DeepEqual(h, map[string]string{"rx_packets": "3"}) {
		t.Fatalf("hash = %v", h)
	}
	w2 := NewStateWriter(db, []string{AllFields})
	if err := w2.Load(ctx, "COUNTERS:*"); err != nil {
		t.Fatal(err)
	}
	if got := w2.Keys(); !reflect.DeepEqual(got, []string{key}) {
		t.Fatalf("Keys = %v", got)
	}
	if err := w2.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if db.Exists(ctx, key).Val() != 0 {
		t.Fatal("Delete left the key")
	}
}

func TestStateWriterRefusedKeyDropsItsCache(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	db := c.DB(6)
	w := NewStateWriter(db, []string{"v"})
	db.Set(ctx, "K|str", "not a hash", 0)
	b := w.Batch()
	b.Set("K|a", map[string]string{"v": "1"})
	b.Set("K|str", map[string]string{"v": "1"})
	err := b.Flush(ctx)
	var refused KeyErrors
	if !errors.As(err, &refused) || len(refused) != 1 || !strings.Contains(fmt.Sprint(refused["K|str"]), "WRONGTYPE") {
		t.Fatalf("Flush onto a string key = %v, want KeyErrors with WRONGTYPE for K|str only", err)
	}
	if v := db.HGet(ctx, "K|a", "v").Val(); v != "1" {
		t.Fatal("the rest of the transaction was not written")
	}
	if got := w.Keys(); !reflect.DeepEqual(got, []string{"K|a"}) {
		t.Fatalf("Keys after a refused key = %v, want [K|a]", got)
	}
	// The refused key is written in full once it can be.
	db.Del(ctx, "K|str")
	if err := w.Set(ctx, "K|str", map[string]string{"v": "1"}); err != nil {
		t.Fatal(err)
	}
	if v := db.HGet(ctx, "K|str", "v").Val(); v != "1" {
		t.Fatal("cache kept the value of a refused key")
	}
}

func TestStateWriterConcurrent(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	w := NewStateWriter(c.DB(6), []string{"v"})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := fmt.Sprintf("K|%d", i%20)
				if i%7 == 0 {
					w.Delete(ctx, k)
				} else {
					w.Set(ctx, k, map[string]string{"v": fmt.Sprint(g)})
				}
				w.Keys()
			}
		}()
	}
	wg.Wait()
	// Whatever the interleaving, the cache agrees with Redis.
	for _, k := range w.Keys() {
		if c.DB(6).Exists(ctx, k).Val() != 1 {
			t.Fatalf("Keys lists %s, which does not exist", k)
		}
	}
}

// connectionsReceived is the server's count of connections accepted so far.
func connectionsReceived(t *testing.T, w *StateWriter) int {
	t.Helper()
	info, err := w.c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range splitLines(info) {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			var n int
			fmt.Sscanf(v, "%d", &n)
			return n
		}
	}
	t.Fatal("no total_connections_received in INFO stats")
	return 0
}

// Dial opens the writer's connection ahead of the first flush, which then
// dials nothing; a second Dial keeps the open connection.
func TestStateWriterDial(t *testing.T) {
	_, c := startRedis(t)
	ctx := context.Background()
	w := NewStateWriter(c.DB(6), []string{"state"})
	if err := w.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	dialled := connectionsReceived(t, w)
	if err := w.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Set(ctx, "PORT_TABLE|Ethernet0", map[string]string{"state": "ok"}); err != nil {
		t.Fatal(err)
	}
	if n := connectionsReceived(t, w); n != dialled {
		t.Errorf("a second Dial and a flush after Dial opened %d connections, want none", n-dialled)
	}
	if h := hash(t, w, "PORT_TABLE|Ethernet0"); h["state"] != "ok" {
		t.Errorf("hash = %v, want state ok", h)
	}
}
