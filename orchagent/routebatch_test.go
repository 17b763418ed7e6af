package orchagent

import (
	"errors"
	"fmt"
	"net/netip"
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
	r, rr := newRouteRaceRig(t, true)
	const n = 212
	dst := func(i int) string { return fmt.Sprintf("20.0.%d.0/24", i) }
	key := func(i int) string { return "STATIC_ROUTE|" + dst(i) }
	const moved = 100 // its distance changes: a delete (act) mid-batch
	r.set("STATIC_ROUTE", dst(moved), "nexthop", "10.0.0.2", "ifname", "Ethernet0", "distance", "10")
	r.settle()
	r.want(key(moved), schema.StateOK, "")
	r.k.ClearOps()

	raced, failedEarly, failedLate := 5, 30, n-3
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
	r.k.FailNext("route replace "+dst(failedEarly), errors.New("no buffer space available"))
	r.k.FailNext("route replace "+dst(failedLate), errors.New("no buffer space available"))
	rr.race = deleteBehind(r, dst(raced), false) // once keys 0-99 are written
	r.reconcile(keys)
	if rr.race != nil {
		t.Fatal("no route write raced")
	}
	for i := 0; i < n; i++ {
		switch i {
		case raced:
			r.want(key(i), schema.StateError, "deleted while being written")
		case failedEarly, failedLate:
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
	// ReplaceBatch before it.
	var ops, want []string
	for _, op := range r.k.Ops() {
		if strings.HasPrefix(op, "route") {
			ops = append(ops, op)
		}
	}
	for i := 0; i < n; i++ {
		switch i {
		case failedEarly, failedLate:
			continue
		case moved:
			want = append(want, "route del "+dst(i))
		}
		want = append(want, "route replace "+dst(i))
		if i == moved-1 {
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
	r.reconcile([]string{key(raced), key(failedEarly), key(failedLate)})
	for i := 0; i < n; i++ {
		r.want(key(i), schema.StateOK, "")
	}
}
