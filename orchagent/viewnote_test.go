package orchagent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// TestNotedRoutesMatchesNotedRoute is a differential random-step test of
// notedRoutes (a batch's notes under one lock, the view's route filter
// telling the empty places): two views get the same random steps —
// events putting and deleting our routes, a table dropped, batches of
// routes looked up (routesAt), some deleted meanwhile (an old metric's),
// written (writingAll, duplicates included), some refused by the kernel,
// some heard deleted while written — and one notes each batch with
// notedRoutes, the other route by route with notedRoute. Their routes
// and answers must stay equal.
func TestNotedRoutesMatchesNotedRoute(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		a, b := newKernelView(), newKernelView()
		route := func() netlinkmgr.RouteInfo {
			r := rt(fmt.Sprintf("10.%d.0.0/16", rng.IntN(24)), []int{254, 1001}[rng.IntN(2)], 201, []int{0, 0, 20}[rng.IntN(3)],
				hop(fmt.Sprintf("10.0.0.%d", 2+rng.IntN(2)), "Ethernet0", 0))
			switch rng.IntN(8) {
			case 0: // ECMP: no compact form
				r.NextHops = append(r.NextHops, hop("10.0.0.9", "Ethernet1", 1))
			case 1:
				r.NextHops, r.Blackhole = nil, true
			}
			return r
		}
		both := func(f func(v *kernelView)) { f(a); f(b) }
		for step := 0; step < 300; step++ {
			switch op := rng.IntN(10); {
			case op < 3: // an event: our route added or changed
				r := route()
				both(func(v *kernelView) { v.mu.Lock(); v.routes.put(&r, &v.names); v.mu.Unlock() })
			case op < 5: // an event: our route deleted
				r := route()
				both(func(v *kernelView) { v.notedRouteDel(&r) })
			case op < 6:
				tb := []int{254, 1001}[rng.IntN(2)]
				both(func(v *kernelView) { v.mu.Lock(); v.routes.dropTable(tb); v.mu.Unlock() })
			default: // a batch
				n := 1 + rng.IntN(16)
				rs := make([]netlinkmgr.RouteInfo, n)
				errs := make([]error, n)
				for i := range rs {
					rs[i] = route()
					rs[i].Create = rng.IntN(2) == 0
					a.routesAt(rs[i].Table, rs[i].Dst, rs[i].Metric)
					b.routesAt(rs[i].Table, rs[i].Dst, rs[i].Metric)
					switch rng.IntN(8) { // something changes after the look-up
					case 0:
						old := route()
						both(func(v *kernelView) { v.notedRouteDel(&old) })
					case 1: // an event puts a route at the place, maybe at another metric
						ev := rs[i]
						ev.Create, ev.Metric = false, []int{0, 20}[rng.IntN(2)]
						both(func(v *kernelView) { v.mu.Lock(); v.routes.put(&ev, &v.names); v.mu.Unlock() })
					}
					if rng.IntN(8) == 0 {
						errs[i] = errors.New("refused")
					}
				}
				both(func(v *kernelView) { v.writingAll(rs) })
				if rng.IntN(4) == 0 { // a delete heard while writing
					g := rs[rng.IntN(n)]
					both(func(v *kernelView) { v.mu.Lock(); v.writeGoneLocked(&g); v.mu.Unlock() })
				}
				got := a.notedRoutes(rs, errs, nil)
				want := make([]bool, n)
				for i := range rs {
					want[i] = errs[i] == nil && b.notedRoute(&rs[i])
				}
				both(func(v *kernelView) { v.written() })
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: notedRoutes %v, notedRoute %v", seed, step, got, want)
				}
			}
			ra, rb := sortedRoutes(a), sortedRoutes(b)
			if !reflect.DeepEqual(ra, rb) {
				t.Fatalf("seed %d step %d: routes differ:\nnotedRoutes %v\nnotedRoute  %v", seed, step, ra, rb)
			}
		}
	}
}

func sortedRoutes(v *kernelView) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, r := range v.routes.all(nil, &v.names) {
		out = append(out, fmt.Sprintf("%+v", r))
	}
	slices.Sort(out)
	return out
}
