package netlinkmgr

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// handlerWatch is Watch with a Handler that checks the Handler's
// contract (never two calls at once, none after the channel closed) and
// forwards every event to the returned channel, which closes with the
// watch's. pause, held by the test, blocks the Handler.
func handlerWatch(t *testing.T, ctx context.Context, k Kernel, opts WatchOptions, pause *sync.Mutex) <-chan Event {
	t.Helper()
	out := make(chan Event, 1<<17)
	var inCall, ended atomic.Bool
	opts.Handler = func(ev Event) {
		if !inCall.CompareAndSwap(false, true) {
			t.Error("two Handler calls at once")
		}
		if ended.Load() {
			t.Errorf("Handler called after the watch's channel closed: %+v", ev)
		}
		pause.Lock()
		pause.Unlock()
		out <- ev
		inCall.Store(false)
	}
	ch, err := k.Watch(ctx, opts)
	must(t, err)
	go func() {
		for ev := range ch {
			t.Errorf("event on the channel with a Handler: %+v", ev)
		}
		ended.Store(true)
		close(out)
	}()
	return out
}

// TestRealWatchHandler: with a Handler, the events Watch's channel would
// carry arrive through it — link and neighbour events from their
// readers' own goroutines, the others from the watcher's — one call at a
// time. A
// Handler that blocks while 5,000 routes appear makes the sockets
// overflow: EventResync, the relisting, EventSynced, and the view rebuilt
// from the calls equals "ip -j route"; a link made meanwhile is heard.
func TestRealWatchHandler(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Ethernet1", Kind: "veth", Veth: &VethOptions{PeerName: "peer1"}, AdminUp: ptr(true)}))
	must(t, k.Links().Set(LinkInfo{Name: "peer1", AdminUp: ptr(true)}))
	must(t, k.Addrs().Add(AddrInfo{Link: "Ethernet1", Prefix: pfx("10.255.0.1/16")}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pause sync.Mutex
	ch := handlerWatch(t, ctx, k, WatchOptions{ListExisting: true, RecvBuffer: 4096}, &pause)
	view := routeView{}
	waitEvent(t, ch, "initial sync", func(ev Event) bool { view.apply(ev); return ev.Kind == EventSynced })

	ns.IP("link", "add", "Bridge", "type", "bridge")
	waitEvent(t, ch, "link add", func(ev Event) bool {
		view.apply(ev)
		return ev.Kind == EventLink && ev.Link.Name == "Bridge" && ev.Link.Kind == "bridge" && !ev.Deleted
	})
	ns.IP("link", "set", "peer1", "master", "Bridge")
	waitEvent(t, ch, "enslave", func(ev Event) bool {
		view.apply(ev)
		return ev.Kind == EventLink && ev.Link.Name == "peer1" && ev.Link.Master != nil && *ev.Link.Master == "Bridge"
	})

	ns.IP("neigh", "add", "10.255.0.9", "lladdr", "02:00:00:00:00:09", "dev", "Ethernet1", "nud", "permanent")
	waitEvent(t, ch, "neigh", func(ev Event) bool {
		return ev.Kind == EventNeigh && ev.Neigh.IP == ip("10.255.0.9") && ev.Neigh.Link == "Ethernet1"
	})

	// The Handler blocked: the readers' queues fill, then the sockets.
	pause.Lock()
	var add []string
	for i := 0; i < 5000; i++ {
		add = append(add, fmt.Sprintf("route add 10.%d.%d.0/24 via 10.255.0.2 proto 201", i/256, i%256))
	}
	add = append(add, "link add Bridge2 type bridge")
	ns.IP("-batch", writeBatch(t, add))
	pause.Unlock()

	resynced, bridge2 := false, false
	waitEvent(t, ch, "resync after overflow", func(ev Event) bool {
		view.apply(ev)
		resynced = resynced || ev.Kind == EventResync
		bridge2 = bridge2 || ev.Kind == EventLink && ev.Link.Name == "Bridge2"
		return resynced && ev.Kind == EventSynced
	})
	if !bridge2 {
		t.Error("the relisting did not name Bridge2")
	}
	converge(t, ch, view, func() []string { return judgeRouteKeys(t, ns) })
	if len(view) < 5000 {
		t.Fatalf("view has %d routes, want >= 5000", len(view))
	}
	ns.IP("link", "del", "Bridge2")
	waitEvent(t, ch, "link del", func(ev Event) bool {
		return ev.Kind == EventLink && ev.Link.Name == "Bridge2" && ev.Deleted
	})
	cancel()
	for range ch {
	}
}

// TestFakeWatchHandler: the Fake calls a Handler with what its channel
// would carry, in order.
func TestFakeWatchHandler(t *testing.T) {
	f := NewFake()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pause sync.Mutex
	ch := handlerWatch(t, ctx, f, WatchOptions{ListExisting: true}, &pause)
	waitEvent(t, ch, "initial sync", func(ev Event) bool { return ev.Kind == EventSynced })
	must(t, f.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge"}))
	waitEvent(t, ch, "link add", func(ev Event) bool { return ev.Kind == EventLink && ev.Link.Name == "Bridge" })
	cancel()
	for range ch {
	}
}
