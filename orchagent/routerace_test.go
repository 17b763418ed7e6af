package orchagent

import (
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// racingRoutes runs race once, right after a successful Replace or
// ReplaceBatch and before it returns: events handed to the Orch there are
// heard between the kernel's write and routeWritten's note, as the event
// reader may hand them.
type racingRoutes struct {
	netlinkmgr.Routes
	race func(written []netlinkmgr.RouteInfo)
}

func (x *racingRoutes) ReplaceBatch(rs []netlinkmgr.RouteInfo) []error {
	errs := x.Routes.ReplaceBatch(rs)
	x.fire(rs)
	return errs
}

func (x *racingRoutes) Replace(r netlinkmgr.RouteInfo) error {
	err := x.Routes.Replace(r)
	if err == nil {
		x.fire([]netlinkmgr.RouteInfo{r})
	}
	return err
}

func (x *racingRoutes) fire(rs []netlinkmgr.RouteInfo) {
	if f := x.race; f != nil {
		x.race = nil
		f(rs)
	}
}

type routeRacingKernel struct {
	netlinkmgr.Kernel
	r *racingRoutes
}

func (k routeRacingKernel) Routes() netlinkmgr.Routes { return k.r }

// newRouteRaceRig is a rig whose route writes race (see racingRoutes).
func newRouteRaceRig(t *testing.T, batched bool) (*rig, *racingRoutes) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	up(t, k, "Ethernet0")
	rr := &racingRoutes{Routes: k.Routes()}
	r := &rig{t: t, k: k, sink: &memSink{m: map[string]schema.Result{}}, errs: map[string]error{}, batched: batched}
	r.o = New(Options{Kernel: routeRacingKernel{k, rr}, Results: r.sink})
	must(t, r.o.Prime())
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.settle()
	return r, rr
}

// kernelRoute is the Fake's route to dst, as its events tell it.
func kernelRoute(t *testing.T, k *netlinkmgr.Fake, dst string) (netlinkmgr.RouteInfo, bool) {
	t.Helper()
	rs, err := k.Routes().List(netlinkmgr.RouteFilter{})
	must(t, err)
	for _, c := range rs {
		if c.Dst.String() == dst {
			return c, true
		}
	}
	return netlinkmgr.RouteInfo{}, false
}

// deleteBehind deletes the route to dst from the kernel and hands the
// Orch its delete event; echo: its add event first (a watch without
// OmitOwnRouteWrites, or a write whose echo is not left out).
func deleteBehind(r *rig, dst string, echo bool) func([]netlinkmgr.RouteInfo) {
	return func([]netlinkmgr.RouteInfo) {
		c, ok := kernelRoute(r.t, r.k, dst)
		if !ok {
			r.t.Fatalf("route %s not written", dst)
		}
		if echo {
			add := c
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Route: &add})
		}
		must(r.t, r.k.Routes().Del(c))
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &c})
	}
}

// A route deleted by someone between its write and routeWritten's note
// of it — a new route, or a new version of one (the delete then removes
// the old version from the view) — is not recorded as present: the key
// is an error that is retried, and the retry writes it again. The other
// routes of the batch are not disturbed.
func TestRouteDeletedWhileBeingWritten(t *testing.T) {
	for _, tc := range []struct {
		name            string
		batched, update bool
		echo            bool
		ecmp            bool // no compact form (vrLoose)
	}{
		{name: "new-batched", batched: true},
		{name: "new-one-by-one"},
		{name: "new-echo-first", batched: true, echo: true},
		{name: "update-batched", batched: true, update: true},
		{name: "update-one-by-one", update: true},
		{name: "update-echo-first", batched: true, update: true, echo: true},
		{name: "new-ecmp", batched: true, ecmp: true},
		{name: "update-ecmp-one-by-one", update: true, ecmp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, rr := newRouteRaceRig(t, tc.batched)
			raced, other := "STATIC_ROUTE|10.2.0.0/16", "STATIC_ROUTE|10.3.0.0/16"
			if tc.update {
				r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0")
				r.settle()
				r.want(raced, schema.StateOK, "")
			}
			hops, links := "10.0.0.3", "Ethernet0"
			if tc.ecmp {
				hops, links = "10.0.0.3,10.0.0.5", "Ethernet0,Ethernet0"
			}
			r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", hops, "ifname", links)
			r.set("STATIC_ROUTE", "10.3.0.0/16", "nexthop", "10.0.0.4", "ifname", "Ethernet0")
			r.o.Drain()
			rr.race = deleteBehind(r, "10.2.0.0/16", tc.echo)
			r.reconcile([]string{raced, other})
			if rr.race != nil {
				t.Fatal("no route write raced")
			}
			if rs := r.o.view.routesFor(0, netip.MustParsePrefix("10.2.0.0/16")); len(rs) != 0 {
				t.Fatalf("the view holds %v, a route the kernel deleted", rs)
			}
			r.want(raced, schema.StateError, "deleted while being written")
			r.want(other, schema.StateOK, "")
			if r.errs[raced] == nil {
				t.Errorf("%s: no error to retry on", raced)
			}
			if keys := r.o.Drain(); !contains(keys, raced) {
				t.Errorf("the delete did not re-enqueue %s: queue %v", raced, keys)
			}
			r.reconcile([]string{raced})
			r.want(raced, schema.StateOK, "")
			c, ok := kernelRoute(t, r.k, "10.2.0.0/16")
			if !ok || len(c.NextHops) != 1+bool2int(tc.ecmp) || c.NextHops[0].Gateway != netip.MustParseAddr("10.0.0.3") {
				t.Fatalf("kernel route after the retry: %+v (present %v), want via 10.0.0.3", c, ok)
			}
			if rs := r.o.view.routesFor(0, c.Dst); len(rs) != 1 {
				t.Fatalf("the view holds %v after the retry", rs)
			}
			r.noWrites()
		})
	}
}

// Deletes that are not of the route being written leave its note alone:
// our own delete of the old metric's route (a changed distance), heard
// while the new metric's route is written, and someone else's route's
// delete at the same place.
func TestRouteWriteNotGoneByOtherDeletes(t *testing.T) {
	for _, batched := range []bool{true, false} {
		r, rr := newRouteRaceRig(t, batched)
		key := "STATIC_ROUTE|10.2.0.0/16"
		r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0", "distance", "10")
		r.settle()
		old, ok := kernelRoute(t, r.k, "10.2.0.0/16")
		if !ok {
			t.Fatal("route not written")
		}
		r.set("STATIC_ROUTE", "10.2.0.0/16", "nexthop", "10.0.0.2", "ifname", "Ethernet0", "distance", "20")
		r.o.Drain()
		rr.race = func([]netlinkmgr.RouteInfo) {
			// The echo of our delete of metric 10.
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &old})
			// A foreign route's delete at the new metric.
			f := old
			f.Protocol, f.Metric = 4, 20 // proto static
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventRoute, Deleted: true, Route: &f})
		}
		r.reconcile([]string{key})
		if rr.race != nil {
			t.Fatal("no route write raced")
		}
		r.want(key, schema.StateOK, "")
		rs := r.o.view.routesFor(0, old.Dst)
		if len(rs) != 1 || rs[0].Metric != 20 {
			t.Fatalf("batched %v: the view holds %v, want the metric 20 route", batched, rs)
		}
		if keys := r.o.Drain(); contains(keys, key) {
			t.Errorf("batched %v: %s re-enqueued by deletes not of its route: %v", batched, key, keys)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}
