package netlinkmgr

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// routeView is what a consumer of Watch rebuilds: main-table IPv4 routes
// keyed "dst metric".
type routeView map[string]bool

func routeKey(dst string, metric int) string {
	if dst == "default" {
		dst = "0.0.0.0/0"
	}
	if !strings.Contains(dst, "/") {
		dst += "/32"
	}
	return fmt.Sprintf("%s %d", dst, metric)
}

// apply updates v from ev; it reports whether ev was EventResync/Synced.
func (v routeView) apply(ev Event) {
	switch ev.Kind {
	case EventResync:
		for k := range v {
			delete(v, k)
		}
	case EventRoute:
		r := ev.Route
		if r.Table != MainTable || !r.Dst.Addr().Is4() {
			return
		}
		if ev.Deleted {
			delete(v, routeKey(r.Dst.String(), r.Metric))
		} else {
			v[routeKey(r.Dst.String(), r.Metric)] = true
		}
	}
}

func (v routeView) keys() []string {
	var ks []string
	for k := range v {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func judgeRouteKeys(t *testing.T, ns interface{ JSON(any, ...string) }) []string {
	var rs []ipRoute
	ns.JSON(&rs, "-4", "route", "show", "table", "main")
	var ks []string
	for _, r := range rs {
		ks = append(ks, routeKey(r.Dst, r.Metric))
	}
	sort.Strings(ks)
	return ks
}

// converge applies events until v equals what ip(8) shows. The bound only
// turns a lost event into a failure instead of a hang.
func converge(t *testing.T, ch <-chan Event, v routeView, judge func() []string) {
	t.Helper()
	deadline := time.After(180 * time.Second)
	for {
		want := judge()
		if strings.Join(v.keys(), ",") == strings.Join(want, ",") {
			return
		}
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch channel closed")
			}
			v.apply(ev)
			// Take what keeps coming before asking ip again (a dump of
			// 5,000 routes is slow under emulation); the pause only saves
			// work, equality alone decides.
			for idle := false; !idle; {
				select {
				case ev, ok := <-ch:
					if !ok {
						t.Fatal("watch channel closed")
					}
					v.apply(ev)
				case <-time.After(100 * time.Millisecond):
					idle = true
				}
			}
		case <-deadline:
			t.Fatalf("view never matched ip route: have %d routes, ip has %d", len(v), len(want))
		}
	}
}

func writeBatch(t *testing.T, lines []string) string {
	p := filepath.Join(t.TempDir(), "batch")
	must(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// TestRealWatchOverflow: with a tiny receive buffer and a consumer that
// stops reading while 5,000 routes appear, the socket must overflow; Watch
// must say so (EventResync), relist, and the view rebuilt from the events
// must equal "ip -j route".
func TestRealWatchOverflow(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet1", Kind: "veth", Veth: &VethOptions{PeerName: "peer1"}, AdminUp: ptr(true)}))
	must(t, k.Links().Set(LinkInfo{Name: "peer1", AdminUp: ptr(true)}))
	must(t, k.Addrs().Add(AddrInfo{Link: "Ethernet1", Prefix: pfx("10.255.0.1/16")}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{ListExisting: true, RecvBuffer: 4096})
	must(t, err)
	view := routeView{}
	waitEvent(t, ch, "initial sync", func(ev Event) bool { view.apply(ev); return ev.Kind == EventSynced })

	// Not reading ch now: the watcher's queues fill, then the socket.
	var add []string
	for i := 0; i < 5000; i++ {
		add = append(add, fmt.Sprintf("route add 10.%d.%d.0/24 via 10.255.0.2 proto 201", i/256, i%256))
	}
	ns.IP("-batch", writeBatch(t, add))

	resynced := false
	waitEvent(t, ch, "resync after overflow", func(ev Event) bool {
		view.apply(ev)
		resynced = resynced || ev.Kind == EventResync
		return resynced && ev.Kind == EventSynced
	})
	judge := func() []string { return judgeRouteKeys(t, ns) }
	converge(t, ch, view, judge)
	if len(view) < 5000 {
		t.Fatalf("view has %d routes, want >= 5000", len(view))
	}

	// Deletions arrive as Deleted events and the view follows.
	var del []string
	for i := 0; i < 300; i++ {
		del = append(del, fmt.Sprintf("route del 10.%d.%d.0/24", i/256, i%256))
	}
	ns.IP("-batch", writeBatch(t, del))
	converge(t, ch, view, judge)
	cancel()
	for range ch {
	}
}

// TestRealWatchNoListing: without ListExisting nothing is sent until the
// kernel changes, and no EventSynced comes first.
func TestRealWatchNoListing(t *testing.T) {
	ns, k := openReal(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{})
	must(t, err)
	ns.IP("link", "add", "Bridge", "type", "bridge")
	waitEvent(t, ch, "link add", func(ev Event) bool {
		if ev.Kind == EventSynced || (ev.Kind == EventLink && ev.Link.Name == "lo") {
			t.Fatalf("got %+v without ListExisting", ev)
		}
		return ev.Kind == EventLink && ev.Link.Name == "Bridge" && ev.Link.Kind == "bridge" && !ev.Deleted
	})
	ns.IP("addr", "add", "2001:db8::1/64", "dev", "Bridge")
	waitEvent(t, ch, "v6 addr", func(ev Event) bool {
		return ev.Kind == EventAddr && ev.Addr.Prefix == pfx("2001:db8::1/64") && ev.Addr.Link == "Bridge"
	})
	ns.IP("link", "set", "Bridge", "up")
	ns.IP("neigh", "add", "10.0.0.9", "lladdr", "02:00:00:00:00:09", "dev", "Bridge", "nud", "permanent")
	waitEvent(t, ch, "neigh", func(ev Event) bool {
		return ev.Kind == EventNeigh && ev.Neigh.IP == ip("10.0.0.9") && ev.Neigh.State == "permanent" && ev.Neigh.Link == "Bridge"
	})
	ns.IP("route", "add", "blackhole", "10.7.0.0/16", "proto", "201")
	waitEvent(t, ch, "route", func(ev Event) bool {
		return ev.Kind == EventRoute && ev.Route.Blackhole && ev.Route.Dst == pfx("10.7.0.0/16") && ev.Route.Protocol == 201
	})
	ns.IP("route", "del", "blackhole", "10.7.0.0/16")
	waitEvent(t, ch, "route del", func(ev Event) bool {
		return ev.Kind == EventRoute && ev.Deleted && ev.Route.Dst == pfx("10.7.0.0/16")
	})
	cancel()
	for range ch {
	}
}

// TestRealWatchOmitOwnRouteWrites: with OmitOwnRouteWrites the events of
// our own writes the kernel stores as asked never arrive; a gateway-only
// next hop's (the kernel picks the link), our deletes and everyone
// else's changes do, in kernel order.
func TestRealWatchOmitOwnRouteWrites(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{OmitOwnRouteWrites: true})
	must(t, err)
	quiet := []RouteInfo{
		{Dst: pfx("10.50.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.1.2"), Link: "Ethernet1"}}},
		{Dst: pfx("10.51.0.0/16"), Protocol: ProtoSwitchyard, Blackhole: true},
		{Dst: pfx("2001:db8:50::/48"), Protocol: ProtoSwitchyard, Metric: 1024, NextHops: []NextHop{{Link: "Ethernet2"}}},
	}
	heard := RouteInfo{Dst: pfx("10.52.0.0/16"), Protocol: ProtoSwitchyard, NextHops: []NextHop{{Gateway: ip("10.0.2.2")}}}
	for _, err := range k.Routes().ReplaceBatch(append(quiet, heard)) {
		must(t, err)
	}
	must(t, k.Routes().Replace(RouteInfo{Dst: pfx("10.53.0.0/16"), Protocol: ProtoSwitchyard, Blackhole: true}))
	ns.IP("route", "add", "10.54.0.0/16", "via", "10.0.1.2", "proto", "201")
	must(t, k.Routes().Del(quiet[0]))
	// Kernel order on one socket: the first route events are the heard
	// write, someone else's add, and our delete.
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-ch:
			if ev.Kind != EventRoute || ev.Route.Table != MainTable || ev.Route.Protocol != ProtoSwitchyard {
				continue
			}
			s := ev.Route.Dst.String()
			if ev.Deleted {
				s = "del " + s
			} else if len(ev.Route.NextHops) == 1 {
				s += " dev " + ev.Route.NextHops[0].Link
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("route events %v, still waiting", got)
		}
	}
	want := []string{"10.52.0.0/16 dev Ethernet2", "10.54.0.0/16 dev Ethernet1", "del 10.50.0.0/16"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("route events %v, want %v", got, want)
	}
	// The quiet writes are in the kernel all the same.
	rs := env.routes(t, "route", "show", "table", "main")
	for _, d := range []string{"10.51.0.0/16", "10.53.0.0/16", "10.52.0.0/16"} {
		if _, ok := rs[d]; !ok {
			t.Errorf("%s not in the kernel: %v", d, rs)
		}
	}
}

// TestRealWatchOmitOwnAddrWrites: with OmitOwnAddrWrites the events of
// AddBatch's IPv4 creates never arrive; a replace's, our delete's and
// everyone else's do, in kernel order; the quiet addresses are in the
// kernel all the same.
func TestRealWatchOmitOwnAddrWrites(t *testing.T) {
	env, k := routedNS(t)
	ns := env.ns.(interface{ IP(...string) string })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := k.Watch(ctx, WatchOptions{OmitOwnAddrWrites: true})
	must(t, err)
	quiet := []AddrInfo{
		{Link: "Ethernet1", Prefix: pfx("10.60.0.1/24"), Protocol: ProtoSwitchyard, Create: true},
		{Link: "Ethernet2", Prefix: pfx("10.61.0.1/24"), Protocol: ProtoSwitchyard, Create: true},
	}
	heard := AddrInfo{Link: "Ethernet1", Prefix: pfx("10.62.0.1/24"), Protocol: ProtoSwitchyard}
	for _, err := range k.Addrs().AddBatch(append(quiet, heard)) {
		must(t, err)
	}
	ns.IP("addr", "add", "10.63.0.1/24", "dev", "Ethernet2")
	must(t, k.Addrs().Del(quiet[0]))
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-ch:
			if ev.Kind != EventAddr || !ev.Addr.Prefix.Addr().Is4() {
				continue
			}
			s := ev.Addr.Prefix.String() + " dev " + ev.Addr.Link
			if ev.Deleted {
				s = "del " + s
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("address events %v, still waiting", got)
		}
	}
	want := []string{"10.62.0.1/24 dev Ethernet1", "10.63.0.1/24 dev Ethernet2", "del 10.60.0.1/24 dev Ethernet1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("address events %v, want %v", got, want)
	}
	as, err := k.Addrs().List("Ethernet2")
	must(t, err)
	found := false
	for _, a := range as {
		found = found || (a.Prefix == quiet[1].Prefix && a.Protocol == ProtoSwitchyard)
	}
	if !found {
		t.Errorf("%s (proto 201) not in the kernel: %v", quiet[1].Prefix, as)
	}
}

// TestRealWatchEndsQuietly: cancelling a watch closes its sockets; the
// readers' last error (the library's EAGAIN of a closed socket) is the
// end of the subscription and does not reach ErrorCallback.
func TestRealWatchEndsQuietly(t *testing.T) {
	_, k := openReal(t)
	var mu sync.Mutex
	var errs []error
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := k.Watch(ctx, WatchOptions{ErrorCallback: func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}})
	must(t, err)
	time.Sleep(50 * time.Millisecond) // the readers are blocked in their receives
	cancel()
	for range ch {
	}
	time.Sleep(100 * time.Millisecond) // the readers' last errors, if any, come after ch closes
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("errors reported after the watch ended: %v", errs)
	}
}

// An ifindex the namespace does not have (a veth peer's, in another
// namespace) is asked of the kernel once, not on every event; a link
// created later with it is named by its own event.
func TestWatchNameRemembersUnknownIndex(t *testing.T) {
	_, k := openReal(t)
	w := &watcher{k: k.(*kernel), names: map[int]string{}}
	const idx = 1 << 30
	if n := w.name(idx); n != "" {
		t.Fatalf("name(%d) = %q, want none", idx, n)
	}
	if n, ok := w.names[idx]; !ok || n != "" {
		t.Fatalf("unknown index not remembered: %q %v", n, ok)
	}
	if n := w.name(1); n != "lo" {
		t.Fatalf("name(1) = %q, want lo", n)
	}
}
