package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testredis"
)

// keyItemsCtrl is a KeyItems controller that keeps every item it was
// given and reports through SetResultOf, as orchagent does.
type keyItemsCtrl struct {
	benchCtrl
	mu    sync.Mutex
	items []string
}

func (c *keyItemsCtrl) ItemsAreKeys() {}

func (c *keyItemsCtrl) ReconcileBatch(ctx context.Context, items []string) []error {
	c.mu.Lock()
	c.items = append(c.items, items...)
	c.mu.Unlock()
	into := schema.Fields{}
	for _, it := range items {
		table, key := splitConfigKey(it)
		if e, ok := c.h.Cache.GetInto(table, key, into); ok {
			c.h.SetResultOf(it, e, e.Stamp(schema.OK()), nil)
		} else {
			c.h.DeleteResult(table, key)
		}
		c.done.Add(1)
	}
	return make([]error, len(items))
}

// A KeyItems controller's items are the keys' whole names as the watcher
// read them (no string built per key): each is exactly "TABLE|key", and
// every key gets its ok result with the generation of its hash.
func TestKeyItemsAreConfigKeys(t *testing.T) {
	srv := testredis.Start(t)
	ctrl := &keyItemsCtrl{}
	ctx := context.Background()
	h := runStarted(t, srv, "keyitems", func(h *Handle) Controller { ctrl.h = h; return ctrl })
	cfg, state := srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	const n = 1200
	p := cfg.Pipeline()
	for i := 0; i < n; i++ {
		p.HSet(ctx, fmt.Sprintf("%s|10.%d.%d.0/24", tRoute, i/256, i%256), "nexthop", "192.168.0.1", "ifname", "eth0")
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(15 * time.Second)
	for (ctrl.done.Load() < n || !h.e.res.flushed()) && time.Now().Before(end) {
		time.Sleep(5 * time.Millisecond)
	}
	ctrl.mu.Lock()
	items := append([]string(nil), ctrl.items...)
	ctrl.mu.Unlock()
	if len(items) != n {
		t.Fatalf("%d items reconciled, want %d", len(items), n)
	}
	gen := schema.Generation(schema.Fields{"nexthop": "192.168.0.1", "ifname": "eth0"})
	for _, it := range items {
		table, key := splitConfigKey(it)
		if table != tRoute || it != schema.ConfigKey(table, key) {
			t.Fatalf("item %q is not a ROUTE key", it)
		}
		r, err := state.HGetAll(ctx, schema.ResultKey(table, key)).Result()
		if err != nil || r["state"] != "ok" || r["generation"] != gen {
			t.Fatalf("result of %s: %v %v, want ok with generation %s", it, r, err, gen)
		}
	}
}

// refItemsCtrl is a RefBatchController: it checks that each item's Ref
// reads the same entry as a look-up by name, and counts the refs that
// named the key (no look-up needed).
type refItemsCtrl struct {
	keyItemsCtrl
	direct, zero, wrong atomic.Int64
}

func (c *refItemsCtrl) ReconcileBatchRefs(ctx context.Context, items []string, refs []Ref) []error {
	into := schema.Fields{}
	for i, it := range items {
		table, key := splitConfigKey(it)
		want, wok := c.h.Cache.Get(table, key)
		got, ok := c.h.Cache.GetIntoRef(refs[i], table, key, into)
		switch {
		case ok != wok || ok && (got.Gen != want.Gen || got.id != want.id || got.Fields["nexthop"] != want.Fields["nexthop"]):
			c.wrong.Add(1)
		case refs[i] == Ref{}:
			c.zero.Add(1)
		case ok && refs[i] == refOf(want.id):
			c.direct.Add(1)
		}
		if ok {
			c.h.SetResultOf(it, got, got.Stamp(schema.OK()), nil)
		} else {
			c.h.DeleteResult(table, key)
		}
		c.done.Add(1)
	}
	return make([]error, len(items))
}

// A RefBatchController gets each changed key's Ref with its item: in a
// burst of new keys every ref names its key; after a burst that deletes
// half the keys and changes the rest, every read by ref is the read by
// name (a deleted key's item has the zero ref) and every result is right.
func TestRefItemsReadByID(t *testing.T) {
	srv := testredis.Start(t)
	ctrl := &refItemsCtrl{}
	ctx := context.Background()
	h := runStarted(t, srv, "refitems", func(h *Handle) Controller { ctrl.h = h; return ctrl })
	cfg, state := srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	const n = 1200
	key := func(i int) string { return fmt.Sprintf("%s|10.%d.%d.0/24", tRoute, i/256, i%256) }
	wait := func(want int64) {
		end := time.Now().Add(15 * time.Second)
		for (ctrl.done.Load() < want || !h.e.res.flushed()) && time.Now().Before(end) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	p := cfg.Pipeline()
	for i := 0; i < n; i++ {
		p.HSet(ctx, key(i), "nexthop", "192.168.0.1", "ifname", "eth0")
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	wait(n)
	if d := ctrl.direct.Load(); d != n || ctrl.wrong.Load() != 0 {
		t.Fatalf("first burst: %d of %d items read by their ref, %d wrong", d, n, ctrl.wrong.Load())
	}
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			p.Del(ctx, key(i))
		} else {
			p.HSet(ctx, key(i), "nexthop", "192.168.0.2")
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	wait(2 * n)
	if w := ctrl.wrong.Load(); w != 0 || ctrl.zero.Load() < n/2 {
		t.Fatalf("second burst: %d reads by ref differ from the read by name; %d zero refs, want >= %d", w, ctrl.zero.Load(), n/2)
	}
	for i := 0; i < n; i++ {
		r, err := state.HGetAll(ctx, schema.ResultKey(splitConfigKey(key(i)))).Result()
		gen := schema.Generation(schema.Fields{"nexthop": "192.168.0.2", "ifname": "eth0"})
		if err != nil || i%2 == 0 && len(r) != 0 || i%2 == 1 && (r["state"] != "ok" || r["generation"] != gen) {
			t.Fatalf("result of %s: %v %v", key(i), r, err)
		}
	}
}

// runStarted runs an engine named name over srv with the controller made
// by mk until the test ends, and returns its Handle once it has started.
func runStarted(t *testing.T, srv *testredis.Server, name string, mk func(*Handle) Controller) *Handle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	handle := make(chan *Handle, 1)
	go func() {
		done <- Run(ctx, Config{Name: name, RedisURL: srv.URL(), Log: logrus.NewEntry(l)},
			func(h *Handle) (Controller, error) { c := mk(h); handle <- h; return c, nil })
	}()
	t.Cleanup(func() { cancel(); <-done })
	h := <-handle
	for !h.e.started.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// A burst of more results than one flush writes (maxResultWrites) is
// written in turns, and a key set again while the rest waits for its
// turn ends with its newest result: 5,000 keys, then every other one
// changed and the rest deleted while the first results are written.
func TestResultsWrittenInTurns(t *testing.T) {
	srv := testredis.Start(t)
	ctrl := &refItemsCtrl{}
	ctx := context.Background()
	h := runStarted(t, srv, "turns", func(h *Handle) Controller { ctrl.h = h; return ctrl })
	cfg, state := srv.Client(schema.ConfigDB), srv.Client(schema.StateDB)
	const n = 5000 // over two flushes' worth
	key := func(i int) string { return fmt.Sprintf("%s|10.%d.%d.0/24", tRoute, i/256, i%256) }
	p := cfg.Pipeline()
	for i := 0; i < n; i++ {
		p.HSet(ctx, key(i), "nexthop", "192.168.0.1", "ifname", "eth0")
	}
	for i := 0; i < n; i++ { // in the same pipeline: mostly before the first results are out
		if i%3 == 0 {
			p.Del(ctx, key(i))
		} else if i%3 == 1 {
			p.HSet(ctx, key(i), "nexthop", "192.168.0.2")
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(30 * time.Second)
	for (h.Cache.Len(tRoute) != n-(n+2)/3 || !h.e.res.flushed() || ctrl.done.Load() < n) && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	if w := ctrl.wrong.Load(); w != 0 {
		t.Fatalf("%d reads by ref differ from the read by name", w)
	}
	gen1 := schema.Generation(schema.Fields{"nexthop": "192.168.0.1", "ifname": "eth0"})
	gen2 := schema.Generation(schema.Fields{"nexthop": "192.168.0.2", "ifname": "eth0"})
	for i := 0; i < n; i++ {
		r, err := state.HGetAll(ctx, schema.ResultKey(splitConfigKey(key(i)))).Result()
		want := map[int]string{0: "", 1: gen2, 2: gen1}[i%3]
		if err != nil || want == "" && len(r) != 0 || want != "" && (r["state"] != "ok" || r["generation"] != want) {
			t.Fatalf("result of %s: %v %v, want generation %q", key(i), r, err, want)
		}
	}
}
