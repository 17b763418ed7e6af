package orchagent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/schema"
)

// A batch of routes long enough to be written in chunks by writer
// goroutines (sendRoutes, routeChunk) while the worker reconciles the
// keys after them: the kernel still sees every write in key order (a
// changed distance's delete, done at once, among them), each key's
// result is its own route's answer (failures in a chunk written by a
// goroutine and in the rest written by the worker, a route deleted by
// someone while its chunk was being written), and nothing is ok before
// its write is answered. Run with -race.
func TestReconcileBatchRouteChunks(t *testing.T) {
	r, rr := newRouteRaceRig(t, true)
	const n = 3*routeChunk + 20
	dst := func(i int) string { return fmt.Sprintf("20.0.%d.0/24", i) }
	key := func(i int) string { return "STATIC_ROUTE|" + dst(i) }
	moved := routeChunk + 36 // its distance changes: a delete (act) mid-batch
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
	rr.race = deleteBehind(r, dst(raced), false) // fires in the first chunk's writer
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
	// deleted just before its new one is written, the first chunk
	// (routeChunk keys) in one ReplaceBatch.
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
		if i == routeChunk-1 {
			// deleteBehind's, once the first chunk is answered.
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
