package netlinkmgr

import (
	"context"
	"strings"
	"testing"
	"time"
)

// fdbEvents reads ch until it has n FDB events of the MACs in macs
// without a VLAN, each as "[del ]MAC dev LINK". Where the bridge knows
// VLANs (a kernel with VLAN filtering, even off: every port has VLAN 1),
// an add without a VLAN also adds the entry on each of the port's VLANs;
// those copies, never recorded, are heard, and left out here.
func fdbEvents(t *testing.T, ch <-chan Event, macs map[string]bool, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case ev := <-ch:
			if ev.Kind != EventFdb || ev.Fdb.Local || ev.Fdb.Vlan != 0 || !macs[ev.Fdb.MAC.String()] {
				continue
			}
			s := ev.Fdb.MAC.String() + " dev " + ev.Fdb.Link
			if ev.Deleted {
				s = "del " + s
			}
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("FDB events %v, still waiting for %d", got, n-len(got))
		}
	}
	return got
}

// TestRealWatchOmitOwnFdbWrites: a watch with OmitOwnFdbWrites does not
// hear the echoes of AddBatch's entries, and hears everything else: a
// single Add, an entry of ours moved to another port by someone else, a
// delete. A watch without it, on the same Kernel at the same time, hears
// every echo (the records are taken by the omitting watch's reader only).
func TestRealWatchOmitOwnFdbWrites(t *testing.T) {
	ns, k := openReal(t)
	must(t, k.Links().Add(LinkInfo{Name: "Bridge", Kind: "bridge", AdminUp: ptr(true)}))
	for _, p := range []string{"Ethernet0", "Ethernet1"} {
		must(t, k.Links().Add(LinkInfo{Name: p, Kind: "veth", Veth: &VethOptions{PeerName: p + "p"}, Master: ptr("Bridge")}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet, err := k.Watch(ctx, WatchOptions{OmitOwnFdbWrites: true})
	must(t, err)
	all, err := k.Watch(ctx, WatchOptions{})
	must(t, err)

	a, b, c, d := "02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c", "02:00:00:00:00:0d"
	macs := map[string]bool{a: true, b: true, c: true, d: true}
	F := k.Fdbs()
	errs := F.AddBatch([]FdbInfo{
		{MAC: mac(a), Link: "Ethernet0", Master: "Bridge", Static: true},
		{MAC: mac(b), Link: "Ethernet0", Master: "Bridge", Static: true},
		{MAC: mac(c), Link: "nope", Master: "Bridge", Static: true}, // never sent
	})
	must(t, errs[0])
	must(t, errs[1])
	mustNotFound(t, "AddBatch on an absent port", errs[2])
	must(t, F.Add(FdbInfo{MAC: mac(c), Link: "Ethernet1", Master: "Bridge", Static: true}))
	ns.Bridge("fdb", "replace", a, "dev", "Ethernet1", "master", "static")
	must(t, F.Del(FdbInfo{MAC: mac(b), Link: "Ethernet0", Master: "Bridge", Static: true}))
	for _, err := range F.AddBatch([]FdbInfo{{MAC: mac(a), Link: "Ethernet0", Master: "Bridge", Static: true}}) {
		must(t, err)
	}
	must(t, F.Add(FdbInfo{MAC: mac(d), Link: "Ethernet1", Master: "Bridge", Static: true})) // the last event

	got := fdbEvents(t, quiet, macs, 4)
	want := []string{c + " dev Ethernet1", a + " dev Ethernet1", "del " + b + " dev Ethernet0", d + " dev Ethernet1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("with OmitOwnFdbWrites: FDB events %v, want %v", got, want)
	}
	got = fdbEvents(t, all, macs, 7)
	want = []string{a + " dev Ethernet0", b + " dev Ethernet0", c + " dev Ethernet1", a + " dev Ethernet1",
		"del " + b + " dev Ethernet0", a + " dev Ethernet0", d + " dev Ethernet1"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("without it: FDB events %v, want %v", got, want)
	}
	var fs []bridgeFdb
	ns.JSON(&fs, "bridge", "fdb", "show", "br", "Bridge")
	for _, f := range fs {
		if f.Mac == a && (f.Ifname != "Ethernet0" || f.State != "static") {
			t.Errorf("bridge fdb says %+v, want %s on Ethernet0, static", f, a)
		}
	}
}

// TestFdbEchoesTake: what take matches (a static AF_BRIDGE add with a
// record: once), and the sweep of records older than fdbEchoTTL.
func TestFdbEchoesTake(t *testing.T) {
	var f fdbEchoes
	es := []FdbInfo{{MAC: mac("02:00:00:00:00:01"), Vlan: 100}, {MAC: mac("02:00:00:00:00:02"), Vlan: 100}}
	f.expect(es, []int{0, 1}, []int{7, 7})
	if len(f.m) != 0 {
		t.Fatalf("recorded %d entries with no watch asking", len(f.m))
	}
	f.on.Store(true)
	f.expect(es, []int{0, 1}, []int{7, 7})
	echo := wireNeigh{family: 7 /* AF_BRIDGE */, index: 7, state: 0x40 /* NUD_NOARP */, vlan: 100, mac: es[0].MAC}
	for _, c := range []struct {
		name string
		edit func(w *wireNeigh)
	}{
		{"a delete", func(w *wireNeigh) { w.deleted = true }},
		{"another port", func(w *wireNeigh) { w.index = 8 }},
		{"another VLAN", func(w *wireNeigh) { w.vlan = 101 }},
		{"a local entry", func(w *wireNeigh) { w.state = 0x80 }},
		{"a learned entry", func(w *wireNeigh) { w.state = 0x02 }},
		{"an IPv4 neighbour", func(w *wireNeigh) { w.family = 2 }},
		{"a short MAC", func(w *wireNeigh) { w.mac = w.mac[:4] }},
	} {
		w := echo
		c.edit(&w)
		if f.take(&w) {
			t.Errorf("take matched %s", c.name)
		}
	}
	if !f.take(&echo) || f.take(&echo) {
		t.Fatal("the echo was not taken exactly once")
	}
	// Written twice before the first echo was read: two echoes dropped.
	f.expect(es[:1], []int{0}, []int{7})
	f.expect(es[:1], []int{0}, []int{7})
	if !f.take(&echo) || !f.take(&echo) || f.take(&echo) {
		t.Fatal("an entry written twice: its two echoes were not taken, or a third was")
	}
	f.failed(7, &es[1])
	if len(f.m) != 0 {
		t.Fatalf("records left after the echo and the failure: %v", f.m)
	}
	f.expect(es[:1], []int{0}, []int{7})
	f.m[fdbEchoKey{index: 9}] = fdbEchoRec{n: 1, at: time.Now().Add(-2 * fdbEchoTTL).UnixNano()}
	f.swept = 0
	f.expect(es[1:], []int{0}, []int{7})
	if _, old := f.m[fdbEchoKey{index: 9}]; old || len(f.m) != 2 {
		t.Fatalf("after the sweep: %v, want the two fresh records", f.m)
	}
}
