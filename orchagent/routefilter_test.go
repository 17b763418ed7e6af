package orchagent

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
)

// TestRouteFilterDifferential is a differential random-step test of the
// routeTable's filter: one table with it, one without (bits nil: every
// place "may hold"), the same random puts (compact and not, several
// metrics at a place), deletes, dropped tables, purges and compactions,
// through growth past several rebuilds and shrinking back. Every answer
// (put, del, at, withMetric) and the routes held must be equal, and no
// place that holds a route may read as surely empty.
func TestRouteFilterDifferential(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		var names linkNames
		a := newRouteTable()
		b := newRouteTable()
		b.filter = routeFilter{} // the reference: no filter
		span := 200 + rng.IntN(3000)
		place := func() (int, string) {
			i := rng.IntN(span)
			return []int{254, 1001}[rng.IntN(2)], fmt.Sprintf("%d.%d.%d.0/24", 10+i/65536, i/256%256, i%256)
		}
		route := func() netlinkmgr.RouteInfo {
			tb, p := place()
			r := rt(p, tb, []int{201, 201, 2}[rng.IntN(3)], []int{0, 0, 20}[rng.IntN(3)], hop("10.0.0.2", "Ethernet0", 0))
			if rng.IntN(8) == 0 {
				r.NextHops = append(r.NextHops, hop("10.0.0.3", "Ethernet1", 1)) // not compact
			}
			return r
		}
		for step := 0; step < 6000; step++ {
			switch op := rng.IntN(100); {
			case op < 55 || (step < 3000 && op < 80): // grow first, then churn
				r := route()
				if ga, gb := a.put(&r, &names), b.put(&r, &names); ga != gb {
					t.Fatalf("seed %d step %d: put %v: %v, reference %v", seed, step, r, ga, gb)
				}
			case op < 90:
				tb, p := place()
				r := rt(p, tb, 0, []int{0, 20}[rng.IntN(2)])
				proto := []int{-1, 201}[rng.IntN(2)]
				if ga, gb := a.del(r.Table, r.Dst, r.Metric, proto), b.del(r.Table, r.Dst, r.Metric, proto); ga != gb {
					t.Fatalf("seed %d step %d: del %v: %v, reference %v", seed, step, r, ga, gb)
				}
			case op < 92:
				tb := []int{254, 1001}[rng.IntN(2)]
				a.dropTable(tb)
				b.dropTable(tb)
			case op < 94:
				link := []string{"Ethernet0", "Ethernet1"}[rng.IntN(2)]
				id := names.lookup(link)
				drop := func(r *netlinkmgr.RouteInfo) bool { return len(r.NextHops) > 1 && r.NextHops[1].Link == link }
				dropOne := func(c *vroute) bool { return c.usesLink(id) }
				ra, rb := a.purge(nil, &names, drop, dropOne), b.purge(nil, &names, drop, dropOne)
				slices.Sort(ra)
				slices.Sort(rb)
				if !slices.Equal(ra, rb) {
					t.Fatalf("seed %d step %d: purge %v, reference %v", seed, step, ra, rb)
				}
			default:
				a.compact()
				b.compact()
			}
			for k := 0; k < 4; k++ {
				tb, p := place()
				d := rdstOf(tb, rt(p, tb, 0, 0).Dst)
				if ga, gb := a.at(d, &names), b.at(d, &names); !reflect.DeepEqual(ga, gb) {
					t.Fatalf("seed %d step %d: at %v: %v, reference %v", seed, step, p, ga, gb)
				}
				m := []int{0, 20}[rng.IntN(2)]
				ra, oka := a.withMetric(d, m, &names)
				rb, okb := b.withMetric(d, m, &names)
				if oka != okb || !reflect.DeepEqual(ra, rb) {
					t.Fatalf("seed %d step %d: withMetric %v %d: %v %v, reference %v %v", seed, step, p, m, ra, oka, rb, okb)
				}
			}
			if step%500 == 0 || step == 5999 {
				for _, d := range a.dsts(nil) {
					if !a.filter.mayHold(d) {
						t.Fatalf("seed %d step %d: %v holds a route, the filter says empty", seed, step, d.dst())
					}
				}
				ga, gb := routeStrings(a.all(nil, &names)), routeStrings(b.all(nil, &names))
				if !slices.Equal(ga, gb) {
					t.Fatalf("seed %d step %d: %d routes, reference %d", seed, step, len(ga), len(gb))
				}
			}
		}
	}
}

func routeStrings(rs []netlinkmgr.RouteInfo) []string {
	out := make([]string, len(rs))
	for i := range rs {
		out[i] = fmt.Sprintf("%+v", rs[i])
	}
	slices.Sort(out)
	return out
}
