package orchagent

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// A long batch of routes (a pass of the engine is up to 256 keys): the
// kernel sees every write in key order, a changed distance's delete (done
// at once, act) among them, which first sends and finishes the routes
// deferred before it; each key's result is its own route's answer
// (failures before and after that flush, a route deleted by someone
// between the kernel's write and the note of it), and nothing is ok
// before its write is answered.
func TestReconcileBatchRoutesLong(t *testing.T) {
	testReconcileBatchRoutesLong(t, 212, 100, nil)
}

// The same with flushes of more than routeChunk routes (both of them: 600
// before the moved route's delete, 600 after), sent chunk by chunk while
// the chunk before is finished: the race comes after the first chunk's
// write, and failures in the first, a middle and the last chunk are each
// their own key's.
func TestReconcileBatchRoutesChunked(t *testing.T) {
	testReconcileBatchRoutesLong(t, 1200, 600, []int{600 + routeChunk + 10})
}

// testReconcileBatchRoutesLong runs n routes in one batch; key moved's
// distance changes (a delete mid-batch); keys 30, n-3 and failed fail.
func testReconcileBatchRoutesLong(t *testing.T, n, moved int, failed []int) {
	r, rr := newRouteRaceRig(t, true)
	dst := func(i int) string { return fmt.Sprintf("20.%d.%d.0/24", i/256, i%256) }
	key := func(i int) string { return "STATIC_ROUTE|" + dst(i) }
	r.set("STATIC_ROUTE", dst(moved), "nexthop", "10.0.0.2", "ifname", "Ethernet0", "distance", "10")
	r.settle()
	r.want(key(moved), schema.StateOK, "")
	r.k.ClearOps()

	raced := 5
	failed = append([]int{30, n - 3}, failed...)
	isFailed := func(i int) bool { return slices.Contains(failed, i) }
	var keys []string
	for i := 0; i < n; i++ {
		kv := []string{"nexthop", "10.0.0.2", "ifname", "Ethernet0"}
		if i == moved {
			kv = append(kv, "distance", "20")
		}
		r.set("STATIC_ROUTE", dst(i), kv...)
		keys = append(keys, key(i))
	}
	r.o.Drain()
	for _, i := range failed {
		r.k.FailNext("route replace "+dst(i), errors.New("no buffer space available"))
	}
	rr.race = deleteBehind(r, dst(raced), false) // once the first ReplaceBatch is written
	r.reconcile(keys)
	if rr.race != nil {
		t.Fatal("no route write raced")
	}
	for i := 0; i < n; i++ {
		switch {
		case i == raced:
			r.want(key(i), schema.StateError, "deleted while being written")
		case isFailed(i):
			r.want(key(i), schema.StateError, "no buffer space")
		default:
			r.want(key(i), schema.StateOK, "")
			if r.errs[key(i)] != nil {
				t.Fatalf("%s: %v", key(i), r.errs[key(i)])
			}
		}
	}
	if rs := r.o.view.routesFor(0, netip.MustParsePrefix(dst(raced))); len(rs) != 0 {
		t.Fatalf("the view holds %v, a route the kernel deleted", rs)
	}
	// The kernel's writes in key order: the moved route's old metric
	// deleted just before its new one is written, keys 0-99 in one
	// ReplaceBatch before it (its first routeChunk in the first call).
	var ops, want []string
	for _, op := range r.k.Ops() {
		if strings.HasPrefix(op, "route") {
			ops = append(ops, op)
		}
	}
	for i := 0; i < n; i++ {
		switch {
		case isFailed(i):
			continue
		case i == moved:
			want = append(want, "route del "+dst(i))
		}
		want = append(want, "route replace "+dst(i))
		if i == min(moved, routeChunk)-1 {
			// deleteBehind's, once the first ReplaceBatch is answered.
			want = append(want, "route del "+dst(raced))
		}
	}
	if len(ops) != len(want) {
		t.Fatalf("%d route ops, want %d:\n%q", len(ops), len(want), ops)
	}
	for i := range want {
		if !strings.HasPrefix(ops[i], want[i]+" ") {
			t.Fatalf("op %d = %q, want %q...", i, ops[i], want[i])
		}
	}
	rs := r.o.view.routesFor(0, netip.MustParsePrefix(dst(moved)))
	if len(rs) != 1 || rs[0].Metric != 20 {
		t.Fatalf("the view holds %v for the moved route, want metric 20 only", rs)
	}
	// The engine's retries (the keys with an error) write the three again.
	retry := []string{key(raced)}
	for _, i := range failed {
		retry = append(retry, key(i))
	}
	r.reconcile(retry)
	for i := 0; i < n; i++ {
		r.want(key(i), schema.StateOK, "")
	}
}
