package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// fakeCtrl reconciles table "ROUTE" into an in-memory "kernel": a key is
// applied when its hash has no field "bad"; an invalid update keeps the
// last applied value (as orchagent and impaird do).
type fakeCtrl struct {
	h *Handle

	mu     sync.Mutex
	kernel map[string]string // key -> applied "via" value
	sweeps int
}

const tRoute = "ROUTE"

func (c *fakeCtrl) Tables() []string              { return []string{tRoute, schema.TableFDB} }
func (c *fakeCtrl) Item(table, key string) string { return table + "|" + key }

func (c *fakeCtrl) Reconcile(ctx context.Context, item string) error {
	table, key := splitConfigKey(item)
	e, ok := c.h.Cache.Get(table, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		delete(c.kernel, item)
		c.h.DeleteResult(table, key)
		return nil
	}
	if v, bad := e.Fields["bad"]; bad {
		c.h.SetResult(table, key, e.Stamp(schema.Error("field bad: "+schema.Clip(v)+" is not valid")), nil)
		return nil
	}
	c.kernel[item] = e.Fields["via"]
	c.h.SetResult(table, key, e.Stamp(schema.OK()), nil)
	return nil
}

func (c *fakeCtrl) Sweep(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweeps++
	for item := range c.kernel {
		t, k := splitConfigKey(item)
		if !c.h.Configured(ctx, t, k) {
			delete(c.kernel, item)
		}
	}
	return nil
}

func (c *fakeCtrl) applied(item string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.kernel[item]
	return v, ok
}

// syncBuf is a log sink tests can read while the engine writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type env struct {
	t      *testing.T
	srv    *testredis.Server
	cfg    *redis.Client
	state  *redis.Client
	ctrl   *fakeCtrl
	logs   *syncBuf
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, url string, srv *testredis.Server) *env {
	t.Helper()
	e := &env{t: t, srv: srv, ctrl: &fakeCtrl{kernel: map[string]string{}}, logs: &syncBuf{}, done: make(chan error, 1)}
	if srv != nil {
		e.cfg, e.state = srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	}
	l := logrus.New()
	l.SetOutput(e.logs)
	l.SetLevel(logrus.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() {
		e.done <- Run(ctx, Config{Name: "test", RedisURL: url, Log: logrus.NewEntry(l), LostInterval: 100 * time.Millisecond},
			func(h *Handle) (Controller, error) { e.ctrl.h = h; return e.ctrl, nil })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			t.Error("engine did not stop")
		}
	})
	return e
}

func newEnv(t *testing.T) *env {
	srv := testredis.Start(t)
	return start(t, srv.URL(), srv)
}

func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, s := cond()
		if ok {
			return
		}
		last = s
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("%s: not true after 10s: %s\n--- engine log ---\n%s", what, last, e.logs.String())
}

func (e *env) result(table, key string) map[string]string {
	h, _ := e.state.HGetAll(context.Background(), schema.ResultKey(table, key)).Result()
	return h
}

func (e *env) waitResult(table, key, state, reasonPart string) map[string]string {
	e.t.Helper()
	var got map[string]string
	e.eventually(fmt.Sprintf("%s|%s is %s (%q)", table, key, state, reasonPart), func() (bool, string) {
		got = e.result(table, key)
		return got["state"] == state && strings.Contains(got["reason"], reasonPart), fmt.Sprint(got)
	})
	return got
}

func (e *env) waitNoResult(table, key string) {
	e.t.Helper()
	e.eventually(table+"|"+key+" has no result", func() (bool, string) {
		got := e.result(table, key)
		return len(got) == 0, fmt.Sprint(got)
	})
}

func (e *env) hset(key string, kv ...string) {
	e.t.Helper()
	args := make([]any, len(kv))
	for i, s := range kv {
		args[i] = s
	}
	if err := e.cfg.HSet(context.Background(), key, args...).Err(); err != nil {
		e.t.Fatal(err)
	}
}

func TestResultsCarryGeneration(t *testing.T) {
	e := newEnv(t)
	e.hset("ROUTE|a", "via", "1")
	r := e.waitResult(tRoute, "a", "ok", "")
	if want := schema.Generation(schema.Fields{"via": "1"}); r["generation"] != want {
		t.Fatalf("generation %q, want %q", r["generation"], want)
	}
	e.hset("ROUTE|a", "via", "2")
	want := schema.Generation(schema.Fields{"via": "2"})
	e.eventually("generation follows the change", func() (bool, string) {
		r := e.result(tRoute, "a")
		return r["generation"] == want, fmt.Sprint(r)
	})
	if v, _ := e.ctrl.applied("ROUTE|a"); v != "2" {
		t.Fatalf("applied %q", v)
	}
}

// Keys that are not hashes get a `state error` naming the type; a working
// key replaced by a string keeps what it applied; DEL removes both.
func TestWrongTypeKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.cfg.Set(ctx, "ROUTE|str", "x", 0)
	e.cfg.RPush(ctx, "ROUTE|list", "mtu")
	e.cfg.SAdd(ctx, "ROUTE|set", "a")
	e.cfg.ZAdd(ctx, "ROUTE|zset", redis.Z{Score: 1, Member: "a"})
	e.cfg.XAdd(ctx, &redis.XAddArgs{Stream: "ROUTE|stream", Values: []string{"a", "b"}})
	for key, typ := range map[string]string{"str": "string", "list": "list", "set": "set", "zset": "zset", "stream": "stream"} {
		e.waitResult(tRoute, key, "error", "is a Redis "+typ+", not a hash")
	}

	e.hset("ROUTE|good", "via", "1")
	e.waitResult(tRoute, "good", "ok", "")
	pipe := e.cfg.TxPipeline()
	pipe.Del(ctx, "ROUTE|good")
	pipe.Set(ctx, "ROUTE|good", "oops", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitResult(tRoute, "good", "error", "previous configuration of this key stays applied")
	if v, ok := e.ctrl.applied("ROUTE|good"); !ok || v != "1" {
		t.Fatalf("the last good config was removed: %q %v", v, ok)
	}
	e.hset2("ROUTE|good", "via", "3") // a hash again: applied
	e.waitResult(tRoute, "good", "ok", "")
	for _, k := range []string{"str", "list", "good"} {
		e.cfg.Del(ctx, "ROUTE|"+k)
		e.waitNoResult(tRoute, k)
	}
	e.eventually("deleted key removed from the kernel", func() (bool, string) {
		_, ok := e.ctrl.applied("ROUTE|good")
		return !ok, ""
	})
}

// hset2 replaces whatever key holds by a hash.
func (e *env) hset2(key string, kv ...string) {
	e.cfg.Del(context.Background(), key)
	e.hset(key, kv...)
}

// An FDB key with the wrong separator has a result key of its own: it never
// overwrites or deletes the valid key's result.
func TestFDBSeparatorDoesNotShareResult(t *testing.T) {
	e := newEnv(t)
	e.hset("FDB|Vlan6|02:00:00:00:00:06", "via", "p")
	e.waitResult(schema.TableFDB, "Vlan6|02:00:00:00:00:06", "ok", "")
	e.hset("FDB|Vlan6:02:00:00:00:00:06", "bad", "separator")
	e.waitResult(schema.TableFDB, "Vlan6:02:00:00:00:00:06", "error", "separator")
	if r := e.result(schema.TableFDB, "Vlan6|02:00:00:00:00:06"); r["state"] != "ok" {
		t.Fatalf("valid key's result overwritten: %v", r)
	}
	e.cfg.Del(context.Background(), "FDB|Vlan6:02:00:00:00:00:06")
	e.waitNoResult(schema.TableFDB, "Vlan6:02:00:00:00:00:06")
	if r := e.result(schema.TableFDB, "Vlan6|02:00:00:00:00:06"); r["state"] != "ok" {
		t.Fatalf("valid key's result deleted: %v", r)
	}
}

// A 1 MB value is refused before it reaches the controller; the reason
// quotes little of it.
func TestOversizedValue(t *testing.T) {
	e := newEnv(t)
	e.hset("ROUTE|big", "via", strings.Repeat("x", 1<<20))
	r := e.waitResult(tRoute, "big", "error", "at most")
	if len(r["reason"]) > 400 {
		t.Fatalf("reason is %d bytes", len(r["reason"]))
	}
	if _, ok := e.ctrl.h.Cache.Get(tRoute, "big"); ok {
		t.Fatal("oversized hash cached")
	}
	if strings.Contains(e.logs.String(), strings.Repeat("x", 300)) {
		t.Fatal("log quotes the whole value")
	}
}

// FLUSHDB of STATE_DB: every result is back within 2 s.
func TestStateFlushRewritesResults(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pipe := e.cfg.Pipeline()
	const n = 2000
	for i := 0; i < n; i++ {
		pipe.HSet(ctx, fmt.Sprintf("ROUTE|r%d", i), "via", "1")
	}
	pipe.HSet(ctx, "ROUTE|bad", "bad", "x")
	pipe.Set(ctx, "ROUTE|str", "x", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		keys, _ := e.state.Keys(ctx, "ROUTE_TABLE|*").Result()
		return len(keys)
	}
	e.eventually("all results", func() (bool, string) { c := count(); return c == n+2, fmt.Sprint(c) })
	if err := e.state.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	e.eventually("results back after FLUSHDB", func() (bool, string) { c := count(); return c == n+2, fmt.Sprint(c) })
	if took := time.Since(flushed); took > 2*time.Second {
		t.Fatalf("results back after %v: want within 2s", took)
	}
	if r := e.result(tRoute, "str"); r["state"] != "error" {
		t.Fatalf("bad key's result not rewritten: %v", r)
	}
}

// Deletions seen while CONFIG_DB_INITIALIZED is not 1 (after it was) are
// held; the sweep waits for it.
func TestInitializedGate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.cfg.Set(ctx, schema.KeyConfigDBInitialized, "1", 0)
	e.hset("ROUTE|a", "via", "1")
	e.waitResult(tRoute, "a", "ok", "")
	e.cfg.Set(ctx, schema.KeyConfigDBInitialized, "0", 0)
	e.cfg.Del(ctx, "ROUTE|a")
	e.eventually("hold logged", func() (bool, string) {
		return strings.Contains(e.logs.String(), "key gone while CONFIG_DB_INITIALIZED is not 1"), ""
	})
	if _, ok := e.ctrl.applied("ROUTE|a"); !ok {
		t.Fatal("held key removed from the kernel")
	}
	e.cfg.Set(ctx, schema.KeyConfigDBInitialized, "1", 0)
	e.eventually("released", func() (bool, string) { _, ok := e.ctrl.applied("ROUTE|a"); return !ok, "" })
	e.waitNoResult(tRoute, "a")
}

func TestRedisDownAtStartWaits(t *testing.T) {
	srv := testredis.Start(t)
	srv.Stop()
	e := start(t, srv.URL(), nil)
	e.eventually("waiting logged", func() (bool, string) {
		return strings.Contains(e.logs.String(), "waiting for redis"), e.logs.String()
	})
	srv.Restart()
	e.cfg, e.state = srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	e.hset("ROUTE|a", "via", "1")
	e.waitResult(tRoute, "a", "ok", "")
}

func TestWrongPasswordExitsClearly(t *testing.T) {
	srv := testredis.Start(t, "--requirepass", "right")
	url := strings.Replace(srv.TCPURL(), "redis://", "redis://:SECRET@", 1)
	e := start(t, url, nil)
	select {
	case err := <-e.done:
		e.done <- err // for the cleanup
		if err == nil || !strings.Contains(err.Error(), "authentication failed") {
			t.Fatalf("error %v: want authentication failed", err)
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(e.logs.String(), "SECRET") {
			t.Fatalf("password printed: %v\n%s", err, e.logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("engine did not exit on a wrong password")
	}
}

// An ACL user whose channel rules forbid __keyspace@* cannot watch: the
// engine exits saying so instead of sitting idle.
func TestACLNoKeyspaceChannels(t *testing.T) {
	srv := testredis.Start(t, "--notify-keyspace-events", "Kg$hxe")
	admin := srv.Client(0)
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "sw", "on", ">pw", "~*", "+@all", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(srv.TCPURL(), "redis://", "redis://sw:pw@", 1)
	e := start(t, url, nil)
	select {
	case err := <-e.done:
		e.done <- err
		if err == nil || !strings.Contains(err.Error(), "__keyspace@4__") || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("error %v: want the refused keyspace channel named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("engine did not exit; log:\n%s", e.logs.String())
	}
}

// A user that may not write the daemon's STATE_DB keys gets the
// permission error at start, not "EXECABORT Transaction discarded".
func TestACLNoStateAccess(t *testing.T) {
	srv := testredis.Start(t, "--notify-keyspace-events", "Kg$hxe")
	admin := srv.Client(0)
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "sw", "on", ">pw", "~ROUTE|*", "~FDB|*",
		"~CONFIG_DB_INITIALIZED", "+@all", "allchannels").Err(); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(srv.TCPURL(), "redis://", "redis://sw:pw@", 1)
	e := start(t, url, nil)
	select {
	case err := <-e.done:
		e.done <- err
		if err == nil || !strings.Contains(err.Error(), "NOPERM") || !strings.Contains(err.Error(), "SWITCHYARD_DAEMON|test") {
			t.Fatalf("error %v: want the permission error naming the key", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("engine did not exit; log:\n%s", e.logs.String())
	}
}
