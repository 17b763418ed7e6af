package redisx

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/tests/testredis"
)

func TestMergeClasses(t *testing.T) {
	tests := []struct{ have, need, want string }{
		{"", "Kg$hxe", "Kg$hxe"},
		{"Kg$hxe", "Kg$hxe", "Kg$hxe"},
		{"AKE", "Kg$hxe", "AKE"},          // A covers g$hxe, K present
		{"AE", "Kg$hxe", "AEK"},           // K is not part of A
		{"KA", "E", "KAE"},                // nor is E
		{"Elg", "Kg$hxe", "ElgK$hxe"},     // keep what is there, add the rest
		{"g$lshzxetK", "A", "g$lshzxetK"}, // all letters of A count as A
		{"Kl", "A", "KlA"},
		{"AKm", "Kh", "AKm"},
	}
	for _, tt := range tests {
		if got := mergeClasses(tt.have, tt.need); got != tt.want {
			t.Errorf("mergeClasses(%q, %q) = %q, want %q", tt.have, tt.need, got, tt.want)
		}
	}
}

func classes(t *testing.T, srv *testredis.Server) string {
	t.Helper()
	return srv.Client(0).ConfigGet(context.Background(), "notify-keyspace-events").Val()["notify-keyspace-events"]
}

func TestEnsureKeyspaceEvents(t *testing.T) {
	srv := testredis.Start(t, "--notify-keyspace-events", "El")
	c := srv.Client(4)
	ctx := context.Background()
	before := commandCount(t, c, "config|set")
	if err := EnsureKeyspaceEvents(ctx, c, WatchClasses); err != nil {
		t.Fatal(err)
	}
	got := classes(t, srv)
	for _, r := range "ElKg$hxe" {
		if !strings.ContainsRune(got, r) {
			t.Fatalf("notify-keyspace-events = %q lacks %q", got, r)
		}
	}
	if n := commandCount(t, c, "config|set"); n != before+1 {
		t.Fatalf("%d CONFIG SETs, want 1", n-before)
	}
	// Already right: no CONFIG SET.
	if err := EnsureKeyspaceEvents(ctx, c, "Kh"); err != nil {
		t.Fatal(err)
	}
	if n := commandCount(t, c, "config|set"); n != before+1 {
		t.Fatal("CONFIG SET although nothing was missing")
	}
	if err := EnsureKeyspaceEvents(ctx, c, "Kq"); err == nil {
		t.Fatal("invalid class letter accepted")
	}
}

func TestEnsureKeyspaceEventsAlias(t *testing.T) {
	srv := testredis.Start(t, "--notify-keyspace-events", "AE")
	if err := EnsureKeyspaceEvents(context.Background(), srv.Client(0), WatchClasses); err != nil {
		t.Fatal(err)
	}
	if got := classes(t, srv); !strings.Contains(got, "A") || !strings.Contains(got, "K") || !strings.Contains(got, "E") {
		t.Fatalf("notify-keyspace-events = %q, want A, K and E", got)
	}
}

func TestEnsureKeyspaceEventsConfigRenamed(t *testing.T) {
	srv := testredis.Start(t, "--rename-command", "CONFIG", "")
	err := EnsureKeyspaceEvents(context.Background(), srv.Client(0), WatchClasses)
	var nce *NotifyConfigError
	if !errors.As(err, &nce) {
		t.Fatalf("err = %v (%T), want *NotifyConfigError", err, err)
	}
	want := "add `notify-keyspace-events " + WatchClasses + "` to redis.conf"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q does not say %q", err, want)
	}
}

func TestEnsureKeyspaceEventsConfigSetDenied(t *testing.T) {
	// CONFIG GET allowed, CONFIG SET not: the advice has the merged value.
	srv := testredis.Start(t, "--notify-keyspace-events", "El")
	ctx := context.Background()
	if err := srv.Client(0).Do(ctx, "ACL", "SETUSER", "ro", "on", ">ro", "~*", "&*", "+@all", "-config|set").Err(); err != nil {
		t.Fatal(err)
	}
	c, err := Connect("unix://ro:ro@" + srv.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	have := classes(t, srv) // Redis normalizes the order: "lE"
	err = EnsureKeyspaceEvents(ctx, c.DB(0), WatchClasses)
	var nce *NotifyConfigError
	merged := have + "Kg$shzxet" // WatchClasses but the l already there
	if !errors.As(err, &nce) || nce.Classes != merged {
		t.Fatalf("err = %v, want *NotifyConfigError with classes %s", err, merged)
	}
	if !strings.Contains(err.Error(), "add `notify-keyspace-events "+merged+"` to redis.conf") {
		t.Fatalf("message: %v", err)
	}
}

func TestEnsureKeyspaceEventsConnectionError(t *testing.T) {
	c, err := Connect("unix:///nonexistent/redis.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = EnsureKeyspaceEvents(context.Background(), c.DB(0), WatchClasses)
	var nce *NotifyConfigError
	if err == nil || errors.As(err, &nce) {
		t.Fatalf("err = %v, want a plain connection error", err)
	}
}

// CONFIG refused but the classes are in redis.conf (as our advice says):
// the probe sees the notifications arrive, so no error.
func TestEnsureKeyspaceEventsConfigRenamedButConfigured(t *testing.T) {
	srv := testredis.Start(t, "--rename-command", "CONFIG", "", "--notify-keyspace-events", WatchClasses)
	if err := EnsureKeyspaceEvents(context.Background(), srv.Client(4), WatchClasses); err != nil {
		t.Fatalf("notifications configured in redis.conf: %v", err)
	}
	srv2 := testredis.Start(t, "--rename-command", "CONFIG", "", "--notify-keyspace-events", "AK")
	if err := EnsureKeyspaceEvents(context.Background(), srv2.Client(0), WatchClasses); err != nil {
		t.Fatalf("notify-keyspace-events AK: %v", err)
	}
	// Only some classes configured: still the advice.
	srv3 := testredis.Start(t, "--rename-command", "CONFIG", "", "--notify-keyspace-events", "Kh")
	var nce *NotifyConfigError
	if err := EnsureKeyspaceEvents(context.Background(), srv3.Client(0), WatchClasses); !errors.As(err, &nce) {
		t.Fatalf("notify-keyspace-events Kh: err = %v, want *NotifyConfigError", err)
	}
	if n := srv3.Client(0).DBSize(context.Background()).Val(); n != 0 {
		t.Fatalf("the probe left %d keys behind", n)
	}
}
