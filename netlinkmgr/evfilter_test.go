package netlinkmgr

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealWatchOmitKernelLocalRoutes: with OmitKernelLocalRoutes (and
// OmitOwnRouteWrites, the two in one socket filter) an address added by
// hand is heard as its address and its prefix route in main, never as
// its local and broadcast routes in table local; a route someone adds to
// table local by hand (protocol static) is heard; our own quiet route
// write is not, our heard one is. A route added last to main marks the
// end of the events.
func TestRealWatchOmitKernelLocalRoutes(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{OmitKernelLocalRoutes: true, OmitOwnRouteWrites: true})
	must(t, err)
	ns.IP("addr", "add", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("addr", "add", "2001:db8:70::1/64", "dev", "Ethernet1", "nodad")
	ns.IP("route", "add", "local", "10.71.0.1", "dev", "Ethernet1", "table", "local", "proto", "static")
	quiet := RouteInfo{Dst: pfx("10.73.0.0/24"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}}}
	heard := RouteInfo{Dst: pfx("10.74.0.0/24"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.1.2")}}}
	for _, err := range k.Routes().ReplaceBatch([]RouteInfo{quiet, heard}) {
		must(t, err)
	}
	ns.IP("addr", "del", "10.70.0.1/24", "dev", "Ethernet1")
	ns.IP("route", "add", "10.72.0.0/24", "dev", "Ethernet2") // the end
	var got []string
	for !slices.Contains(got, "10.72.0.0/24 table 254 proto 3") {
		select {
		case ev := <-ch:
			if ev.Kind != EventRoute {
				continue
			}
			r := ev.Route
			s := fmt.Sprintf("%s table %d proto %d", r.Dst, r.Table, r.Protocol)
			if r.Type != "" {
				s = r.Type + " " + s
			}
			if ev.Deleted {
				s = "del " + s
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("route events %v, still waiting for 10.72.0.0/24", got)
		}
	}
	for _, want := range []string{
		"10.70.0.0/24 table 254 proto 2", "2001:db8:70::/64 table 254 proto 2",
		"local 10.71.0.1/32 table 255 proto 4", "10.74.0.0/24 table 254 proto 201",
		"del 10.70.0.0/24 table 254 proto 2",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("route events %v: %q missing", got, want)
		}
	}
	for _, s := range got {
		if strings.Contains(s, "table 255 proto 2") || strings.Contains(s, "10.73.0.0/24") {
			t.Errorf("route events %v: %q heard", got, s)
		}
	}
}
