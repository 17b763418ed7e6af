package redisx

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// syncdLike is an ownership per table as syncd's: PORT_TABLE's state is
// orchagent's, NEIGH_TABLE's is the writer's.
var syncdLike = OwnTables("|", map[string][]string{
	"PORT_TABLE":  {"oper_status", "mtu"},
	"NEIGH_TABLE": {"neigh", "state"},
	"ROUTE_TABLE": {"protocol", "nexthop"},
	"COUNTERS":    {AllFields},
})

func TestOwnedWriterPerTable(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(6)
	ctx := context.Background()
	w := NewOwnedWriter(db, syncdLike)

	db.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // orchagent's
	b := w.Batch()
	b.Set("PORT_TABLE|Ethernet0", map[string]string{"oper_status": "up", "mtu": "1500"})
	b.Set("NEIGH_TABLE|e0|10.0.0.2", map[string]string{"neigh": "02:00:00:00:00:02", "state": "reachable"})
	b.Set("COUNTERS|e0", map[string]string{"rx": "1", "tx": "2"})
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rt, n := w.RoundTrips(), w.Commands(); rt != 1 || n != 3 {
		t.Errorf("round trips %d, commands %d; want 1 transaction of 3 HSETs", rt, n)
	}
	if got, want := db.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val(), map[string]string{"state": "ok", "oper_status": "up", "mtu": "1500"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PORT_TABLE|Ethernet0 = %v, want %v", got, want)
	}
	// A field the table's owner list lacks fails the flush, nothing written.
	b.Set("PORT_TABLE|Ethernet0", map[string]string{"state": "bogus"})
	b.Set("NEIGH_TABLE|e0|10.0.0.3", map[string]string{"state": "stale"})
	if err := b.Flush(ctx); err == nil || !strings.Contains(err.Error(), `field "state" of PORT_TABLE|Ethernet0`) {
		t.Errorf("Set of an unowned field = %v", err)
	}
	if db.Exists(ctx, "NEIGH_TABLE|e0|10.0.0.3").Val() != 0 {
		t.Error("a failed flush wrote part of the batch")
	}
	// Unchanged values are not sent again; an owned field that disappears
	// is removed; orchagent's stays; AllFields deletes the key.
	rt := w.RoundTrips()
	w.Set(ctx, "PORT_TABLE|Ethernet0", map[string]string{"oper_status": "up", "mtu": "1500"})
	if w.RoundTrips() != rt {
		t.Error("an unchanged Set made a round trip")
	}
	b.Set("PORT_TABLE|Ethernet0", map[string]string{"oper_status": "down"})
	b.Delete("NEIGH_TABLE|e0|10.0.0.2")
	b.Delete("COUNTERS|e0")
	b.Delete("OTHER|x") // not ours: nothing sent
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := db.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val(), map[string]string{"state": "ok", "oper_status": "down"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PORT_TABLE|Ethernet0 = %v, want %v", got, want)
	}
	if n := db.Exists(ctx, "NEIGH_TABLE|e0|10.0.0.2", "COUNTERS|e0").Val(); n != 0 {
		t.Errorf("%d deleted keys still exist", n)
	}
	w.Delete(ctx, "PORT_TABLE|Ethernet0")
	if got := db.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val(); !reflect.DeepEqual(got, map[string]string{"state": "ok"}) {
		t.Fatalf("after Delete PORT_TABLE|Ethernet0 = %v, want only orchagent's state", got)
	}
}

func TestOwnedWriterLoadAndForget(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(6)
	ctx := context.Background()
	for i := 0; i < 2500; i++ {
		db.HSet(ctx, "ROUTE_TABLE|10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+"/32", "protocol", "static", "foreign", "x")
	}
	db.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // nothing of ours
	db.HSet(ctx, "OTHER|x", "protocol", "x")            // not our table
	db.Set(ctx, "ROUTE_TABLE|10.9.0.0/16", "a string", 0)
	w := NewOwnedWriter(db, syncdLike)
	if err := w.Load(ctx, "*"); err != nil {
		t.Fatal(err)
	}
	if n := len(w.Keys()); n != 2500 {
		t.Fatalf("Load adopted %d keys, want 2500", n)
	}
	for _, k := range w.Keys() {
		if !strings.HasPrefix(k, "ROUTE_TABLE|") {
			t.Fatalf("adopted %s", k)
		}
	}
	b := w.Batch()
	for _, k := range w.Keys() {
		b.Delete(k)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := db.HGetAll(ctx, "ROUTE_TABLE|10.0.0.1/32").Val(); !reflect.DeepEqual(got, map[string]string{"foreign": "x"}) {
		t.Errorf("after Delete = %v, want the foreign field only", got)
	}
	// After the DB is emptied and Forget, the next Set rewrites every field.
	w.Set(ctx, "PORT_TABLE|Ethernet0", map[string]string{"mtu": "1500"})
	db.FlushDB(ctx)
	w.Forget()
	if err := w.Set(ctx, "PORT_TABLE|Ethernet0", map[string]string{"mtu": "1500"}); err != nil {
		t.Fatal(err)
	}
	if got := db.HGet(ctx, "PORT_TABLE|Ethernet0", "mtu").Val(); got != "1500" {
		t.Errorf("after Forget mtu = %q, want rewritten 1500", got)
	}
}

// TestOwnedWriterLoadedPrefixNeedsNoHDEL: after Load("ROUTE_TABLE|*") a new
// key is known to hold none of the writer's fields, so a Set leaving some
// out is one HSET; without Load (or after Forget) the writer cannot know
// and also removes the fields left out.
func TestOwnedWriterLoadedPrefixNeedsNoHDEL(t *testing.T) {
	_, c := startRedis(t)
	db := c.DB(6)
	ctx := context.Background()
	db.HSet(ctx, "ROUTE_TABLE|10.0.0.0/8", "protocol", "static", "nexthop", "10.0.0.1")
	w := NewOwnedWriter(db, syncdLike)
	set := func(key string) uint64 {
		t.Helper()
		before := w.Commands()
		if err := w.Set(ctx, key, map[string]string{"protocol": "kernel"}); err != nil {
			t.Fatal(err)
		}
		return w.Commands() - before
	}
	if n := set("ROUTE_TABLE|10.1.0.0/16"); n != 2 {
		t.Errorf("before Load: %d commands, want HSET and HDEL", n)
	}
	if err := w.Load(ctx, "ROUTE_TABLE|*"); err != nil {
		t.Fatal(err)
	}
	if n := set("ROUTE_TABLE|10.2.0.0/16"); n != 1 {
		t.Errorf("after Load: %d commands, want one HSET", n)
	}
	// A loaded key keeps being corrected: its stale nexthop goes.
	if n := set("ROUTE_TABLE|10.0.0.0/8"); n != 2 {
		t.Errorf("loaded key: %d commands, want HSET and HDEL", n)
	}
	if got := db.HGetAll(ctx, "ROUTE_TABLE|10.0.0.0/8").Val(); !reflect.DeepEqual(got, map[string]string{"protocol": "kernel"}) {
		t.Errorf("loaded key = %v", got)
	}
	w.Forget()
	if n := set("ROUTE_TABLE|10.3.0.0/16"); n != 2 {
		t.Errorf("after Forget: %d commands, want HSET and HDEL", n)
	}
}
