package orchagent

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// fakeEvents delivers the Fake's own events (every mutation's, in order)
// to an Orch: deliver hands over everything emitted so far, up to a
// sentinel link it adds, so no event is waited for by time.
type fakeEvents struct {
	o    *Orch
	f    *netlinkmgr.Fake
	ch   <-chan netlinkmgr.Event
	sent int
}

func newFakeEvents(tb testing.TB, o *Orch, f *netlinkmgr.Fake) *fakeEvents {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	ch, err := f.Watch(ctx, netlinkmgr.WatchOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return &fakeEvents{o: o, f: f, ch: ch}
}

func (e *fakeEvents) deliver() {
	e.sent++
	mark := fmt.Sprintf("sentinel%d", e.sent)
	e.f.AddPort(mark)
	for ev := range e.ch {
		if ev.Kind == netlinkmgr.EventLink && ev.Link != nil && strings.HasPrefix(ev.Link.Name, "sentinel") {
			if ev.Link.Name == mark {
				return
			}
			continue
		}
		e.o.HandleEvent(ev)
	}
}

// run reconciles until nothing is queued (reconcile: one pass), delivering
// the events of each pass after it, and returns the reconciles per table.
func (e *fakeEvents) run(tb testing.TB, reconcile func(keys []string)) map[string]int {
	n := map[string]int{}
	for round := 0; round < 50; round++ {
		e.deliver()
		keys := e.o.Drain()
		if len(keys) == 0 {
			return n
		}
		seen := map[string]bool{}
		var pass []string
		for _, key := range keys {
			if !seen[key] {
				seen[key] = true
				n[tableOf(key)]++
				pass = append(pass, key)
			}
		}
		reconcile(pass)
	}
	tb.Fatalf("does not settle: %v", e.o.Drain())
	return n
}

// TestVlanBulkReconcilesOnce: a bulk of VLANs with two tagged members
// each reconciles every key once; the events of the VLAN devices it made
// are echoes, not news. A foreign change of a device or of Bridge still
// re-enqueues the keys, which repair it.
func TestVlanBulkReconcilesOnce(t *testing.T) {
	const vlans = 40
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4"))
	ev := newFakeEvents(t, r.o, r.k)
	for i := 1; i <= vlans; i++ {
		name := fmt.Sprintf("Vlan%d", 100+i)
		r.set("VLAN", name, "vlanid", fmt.Sprint(100+i), "admin_status", "up")
		r.set("VLAN_MEMBER", name+"|Ethernet0", "tagging_mode", "tagged")
		r.set("VLAN_MEMBER", name+"|Ethernet4", "tagging_mode", "tagged")
	}
	n := ev.run(t, r.reconcile)
	// The members of a port run again once after its enslave's echo (the
	// index names them under the port's link): not changed here.
	if n[schema.TableVlan] != vlans {
		t.Errorf("reconciles %v, want %d VLAN", n, vlans)
	}
	t.Logf("reconciles %v for %d VLAN and %d VLAN_MEMBER keys", n, vlans, 2*vlans)
	for i := 1; i <= vlans; i++ {
		name := fmt.Sprintf("Vlan%d", 100+i)
		r.want("VLAN|"+name, schema.StateOK, "")
		r.want("VLAN_MEMBER|"+name+"|Ethernet4", schema.StateOK, "")
	}

	// A foreign change of one device: that key runs and repairs it.
	down := false
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Vlan105", AdminUp: &down}); err != nil {
		t.Fatal(err)
	}
	n = ev.run(t, r.reconcile)
	if n[schema.TableVlan] != 1 {
		t.Errorf("after Vlan105 was set down: reconciles %v, want VLAN 1", n)
	}
	if l, err := r.k.Links().Get("Vlan105"); err != nil || !*l.AdminUp {
		t.Fatalf("Vlan105 not set up again: %+v %v", l, err)
	}

	// Bridge set down: every VLAN key checks it; one sets it up again.
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: BridgeName, AdminUp: &down}); err != nil {
		t.Fatal(err)
	}
	n = ev.run(t, r.reconcile)
	if n[schema.TableVlan] != vlans {
		t.Errorf("after Bridge was set down: reconciles %v, want VLAN %d", n, vlans)
	}
	if l, err := r.k.Links().Get(BridgeName); err != nil || !*l.AdminUp {
		t.Fatalf("Bridge not set up again: %+v %v", l, err)
	}

	// A device deleted behind our back is made again.
	if err := r.k.Links().Del("Vlan110"); err != nil {
		t.Fatal(err)
	}
	ev.run(t, r.reconcile)
	if _, err := r.k.Links().Get("Vlan110"); err != nil {
		t.Fatalf("Vlan110 not made again: %v", err)
	}
	r.want("VLAN|Vlan110", schema.StateOK, "")
	r.want("VLAN_MEMBER|Vlan110|Ethernet0", schema.StateOK, "")

	// A VLAN deleted by its key: its expectation goes with it.
	r.del("VLAN", "Vlan120")
	r.del("VLAN_MEMBER", "Vlan120|Ethernet0")
	r.del("VLAN_MEMBER", "Vlan120|Ethernet4")
	ev.run(t, r.reconcile)
	if _, err := r.k.Links().Get("Vlan120"); err == nil {
		t.Fatal("Vlan120 still there after its key was deleted")
	}
	r.o.lag.mu.Lock()
	_, kept := r.o.lag.expect["VLAN|Vlan120"]
	r.o.lag.mu.Unlock()
	if kept {
		t.Error("the deleted VLAN key's expectation is kept")
	}
}

// BenchmarkVlanBulk is orchagent's work for a bulk of VLANs with two
// tagged members each on the Fake, the Fake's events delivered after each
// pass as the kernel's would be (the real kernel's cost left out: the
// Fake's is small). ns/op and allocs/op are per VLAN (3 keys):
// go test -run '^$' -bench VlanBulk -benchmem ./orchagent
func BenchmarkVlanBulk(b *testing.B) {
	vlans := benchVlans()
	ctx := context.Background()
	b.ReportAllocs()
	b.StopTimer()
	var reconciles map[string]int
	for i := 0; i < (b.N+vlans-1)/vlans; i++ {
		f := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
		o := New(Options{Kernel: f, Results: &memSink{m: map[string]schema.Result{}}})
		if err := o.Prime(); err != nil {
			b.Fatal(err)
		}
		ev := newFakeEvents(b, o, f)
		for v := 1; v <= vlans; v++ {
			name := fmt.Sprintf("Vlan%d", v)
			o.SetConfig("VLAN", name, fields("vlanid", fmt.Sprint(v)))
			o.SetConfig("VLAN_MEMBER", name+"|Ethernet0", fields("tagging_mode", "tagged"))
			o.SetConfig("VLAN_MEMBER", name+"|Ethernet4", fields("tagging_mode", "tagged"))
		}
		b.StartTimer()
		reconciles = ev.run(b, func(keys []string) {
			for start := 0; start < len(keys); start += maxBatch {
				o.ReconcileBatch(ctx, keys[start:min(start+maxBatch, len(keys))])
			}
		})
		b.StopTimer()
	}
	b.ReportMetric(float64(reconciles[schema.TableVlan])/float64(vlans), "vlan-reconciles/vlan")
}

// benchVlans is BenchmarkVlanBulk's VLAN count: SWITCHYARD_BENCH_VLANS
// (1-4094), default 1,000.
func benchVlans() int {
	if v, err := strconv.Atoi(os.Getenv("SWITCHYARD_BENCH_VLANS")); err == nil && v >= 1 && v <= 4094 {
		return v
	}
	return 1000
}
