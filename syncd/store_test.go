package syncd

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

func TestStoreOwnsOnlyItsFields(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(schema.StateDB)
	ctx := context.Background()
	s := NewStore(c, StateOwned)

	// orchagent's result is already there.
	c.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok")
	s.Set(ctx, "PORT_TABLE|Ethernet0", schema.Fields{"oper_status": "up", "mtu": "1500", "state": "bogus"})
	s.Set(ctx, "NEIGH_TABLE|e0|10.0.0.2", schema.Fields{"neigh": "02:00:00:00:00:02", "family": "IPv4", "state": "reachable"})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rt := s.RoundTrips(); rt != 1 {
		t.Errorf("round trips = %d, want 1 pipeline", rt)
	}
	got := c.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val()
	want := map[string]string{"state": "ok", "oper_status": "up", "mtu": "1500"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PORT_TABLE|Ethernet0 = %v, want %v", got, want)
	}

	// Unchanged values are not written again.
	s.Set(ctx, "PORT_TABLE|Ethernet0", schema.Fields{"oper_status": "up", "mtu": "1500"})
	if n := s.Staged(); n != 0 {
		t.Errorf("unchanged Set staged %d commands", n)
	}
	// An owned field that disappears is removed; orchagent's stays.
	s.Set(ctx, "PORT_TABLE|Ethernet0", schema.Fields{"oper_status": "down"})
	s.Delete(ctx, "NEIGH_TABLE|e0|10.0.0.2")
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got = c.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val()
	want = map[string]string{"state": "ok", "oper_status": "down"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PORT_TABLE|Ethernet0 = %v, want %v", got, want)
	}
	if n := c.Exists(ctx, "NEIGH_TABLE|e0|10.0.0.2").Val(); n != 0 {
		t.Error("deleted neighbour key still exists")
	}
	s.Delete(ctx, "PORT_TABLE|Ethernet0")
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got = c.HGetAll(ctx, "PORT_TABLE|Ethernet0").Val()
	if !reflect.DeepEqual(got, map[string]string{"state": "ok"}) {
		t.Fatalf("after Delete PORT_TABLE|Ethernet0 = %v, want only orchagent's state", got)
	}
}

func TestStoreLoadAdoptsAndForget(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(schema.StateDB)
	ctx := context.Background()
	for i := 0; i < 2500; i++ {
		c.HSet(ctx, "ROUTE_TABLE|10.0."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+"/32", "protocol", "static", "foreign", "x")
	}
	c.HSet(ctx, "PORT_TABLE|Ethernet0", "state", "ok") // nothing of ours
	s := NewStore(c, StateOwned)
	for _, tbl := range StateTables {
		if err := s.Load(ctx, tbl+"|*"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.Keys()); n != 2500 {
		t.Fatalf("Load adopted %d keys, want 2500", n)
	}
	if s.Has("PORT_TABLE|Ethernet0") {
		t.Error("adopted a key holding none of syncd's fields")
	}
	for _, k := range s.Keys() {
		s.Delete(ctx, k)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.HGetAll(ctx, "ROUTE_TABLE|10.0.0.1/32").Val(); !reflect.DeepEqual(got, map[string]string{"foreign": "x"}) {
		t.Errorf("after Delete = %v, want the foreign field only", got)
	}
	// After Forget the next Set rewrites every field.
	s.Set(ctx, "PORT_TABLE|Ethernet0", schema.Fields{"mtu": "1500"})
	s.Flush(ctx)
	c.FlushDB(ctx) // as a Redis restart would
	s.Forget()
	s.Set(ctx, "PORT_TABLE|Ethernet0", schema.Fields{"mtu": "1500"})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.HGet(ctx, "PORT_TABLE|Ethernet0", "mtu").Val(); got != "1500" {
		t.Errorf("after Forget mtu = %q, want rewritten 1500", got)
	}
}

func TestStoreSurvivesAKeyThatIsNotAHash(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(schema.StateDB)
	ctx := context.Background()
	c.Set(ctx, "ROUTE_TABLE|10.0.0.0/8", "a string", 0) // another writer's mistake
	s := NewStore(c, StateOwned)
	if err := s.Load(ctx, "ROUTE_TABLE|*"); err != nil {
		t.Fatalf("Load with a string key: %v", err)
	}
	s.Set(ctx, "ROUTE_TABLE|10.0.0.0/8", schema.Fields{"protocol": "kernel"})
	s.Set(ctx, "ROUTE_TABLE|10.1.0.0/16", schema.Fields{"protocol": "static"})
	err := s.Flush(ctx)
	var refused KeyErrors
	if !errors.As(err, &refused) || len(refused) != 1 || refused["ROUTE_TABLE|10.0.0.0/8"] == nil {
		t.Fatalf("Flush = %v, want KeyErrors for the string key only", err)
	}
	if got := c.HGet(ctx, "ROUTE_TABLE|10.1.0.0/16", "protocol").Val(); got != "static" {
		t.Errorf("the rest of the pipeline was not written: protocol %q", got)
	}
	if !s.Has("ROUTE_TABLE|10.1.0.0/16") || s.Has("ROUTE_TABLE|10.0.0.0/8") {
		t.Errorf("cache after partial failure: keys %v", s.Keys())
	}
}
