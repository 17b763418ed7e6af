package orchagent

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// An address of ours the view has not seen (its echo not consumed yet)
// fails its create with EEXIST and is then read: the key is ok, and the
// log says "there already, ours" at debug, not "kernel change failed" at
// warning. Batched and one by one.
func TestAddrBehindViewNoWarning(t *testing.T) {
	for _, batched := range []bool{true, false} {
		r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
		log, hook := test.NewNullLogger()
		log.SetLevel(logrus.DebugLevel)
		r.o.log = logrus.NewEntry(log)
		r.batched = batched
		r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
		r.settle()
		r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
		r.o.view.mu.Lock()
		delete(r.o.view.addrs["Ethernet0"], netip.MustParsePrefix("10.0.0.1/24"))
		r.o.view.mu.Unlock()
		hook.Reset()
		r.set("INTERFACE", "Ethernet0|10.0.0.1/24", "NULL", "NULL")
		r.reconcile(r.o.Drain())
		r.want("INTERFACE|Ethernet0|10.0.0.1/24", schema.StateOK, "")
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.WarnLevel {
				t.Errorf("batched %v: logged at %v: %s %v", batched, e.Level, e.Message, e.Data)
			}
		}
	}
}

// racingAddrs deletes the first address of an AddBatch right after the
// kernel added it and hands that delete's event to the Orch before
// AddBatch returns, as the event reader may: the create's own event is
// not heard (OmitOwnAddrWrites), the delete's is.
type racingAddrs struct {
	netlinkmgr.Addrs
	o  *Orch
	on bool
}

func (x *racingAddrs) AddBatch(as []netlinkmgr.AddrInfo) []error {
	errs := x.Addrs.AddBatch(as)
	if x.on && len(as) > 0 && errs[0] == nil {
		x.on = false
		a := as[0]
		if err := x.Addrs.Del(a); err != nil {
			panic(err)
		}
		x.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &a})
	}
	return errs
}

type racingKernel struct {
	netlinkmgr.Kernel
	a *racingAddrs
}

func (k racingKernel) Addrs() netlinkmgr.Addrs { return k.a }

// An address deleted between its create and addrWritten's note is not
// recorded as present: the key is an error that is retried, and the
// retry adds it again.
func TestAddrDeletedWhileBeingAdded(t *testing.T) {
	f := netlinkmgr.NewFake().AddPort("Ethernet0")
	ra := &racingAddrs{Addrs: f.Addrs(), on: true}
	r := &rig{t: t, k: f, sink: &memSink{m: map[string]schema.Result{}}, errs: map[string]error{}, batched: true}
	r.o = New(Options{Kernel: racingKernel{f, ra}, Results: r.sink})
	ra.o = r.o
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	raced, other := "INTERFACE|Ethernet0|10.0.0.1/24", "INTERFACE|Ethernet0|10.0.1.1/24"
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("INTERFACE", "Ethernet0|10.0.1.1/24")
	r.reconcile([]string{raced, other})
	r.want(raced, schema.StateError, "deleted while being added")
	r.want(other, schema.StateOK, "")
	if r.errs[raced] == nil {
		t.Errorf("%s: no error to retry on", raced)
	}
	if _, ok := r.o.view.addr("Ethernet0", netip.MustParsePrefix("10.0.0.1/24")); ok {
		t.Fatal("the view holds an address the kernel deleted")
	}
	r.reconcile([]string{raced})
	r.want(raced, schema.StateOK, "")
	as, err := f.Addrs().List("Ethernet0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range as {
		if a.Prefix.Addr().Is4() {
			n++
		}
	}
	if n != 2 {
		t.Errorf("kernel holds %d IPv4 addresses, want 2: %v", n, as)
	}
}

// A pass of INTERFACE keys reads their hashes ahead and unpacks each
// into the batch's reused map (readsAhead): a key sees its own fields
// only — not the field of the key before it — and a route after them in
// the same pass (read one by one) applies as it would alone.
func TestIntfPassReadAhead(t *testing.T) {
	f := netlinkmgr.NewFake().AddPort("Ethernet0").AddPort("Ethernet4")
	r := newRig(t, f)
	bad, good := "INTERFACE|Ethernet0|10.0.0.1/24", "INTERFACE|Ethernet0|10.0.1.1/24"
	fam := "INTERFACE|Ethernet4|10.0.4.1/24"
	route := "STATIC_ROUTE|10.9.0.0/16"
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24", "scope", "nowhere")
	r.set("INTERFACE", "Ethernet0|10.0.1.1/24")
	r.set("INTERFACE", "Ethernet4|10.0.4.1/24", "family", "IPv4")
	r.set("STATIC_ROUTE", "10.9.0.0/16", "blackhole", "true")
	if got := readAheadTable([]string{bad, route}); got != schema.TableInterface {
		t.Fatalf("readAheadTable = %s, want %s", got, schema.TableInterface)
	}
	r.reconcile([]string{bad, good, fam, route})
	r.want(bad, schema.StateError, "scope")
	r.want(good, schema.StateOK, "")
	r.want(fam, schema.StateOK, "")
	r.want(route, schema.StateOK, "")
	for _, a := range []string{"10.0.1.1/24", "10.0.4.1/24"} {
		link := "Ethernet0"
		if a == "10.0.4.1/24" {
			link = "Ethernet4"
		}
		if _, ok := r.o.view.addr(link, netip.MustParsePrefix(a)); !ok {
			t.Errorf("%s on %s: not in the view", a, link)
		}
	}
	if _, ok := r.o.view.addr("Ethernet0", netip.MustParsePrefix("10.0.0.1/24")); ok {
		t.Error("10.0.0.1/24: added despite its bad scope")
	}
}

// An address of ours removed by someone else is added back: its key is
// found by name from the delete event (enqueueAddrKeys), in its link's
// table, with no entry per address in the dependency index.
func TestAddrRemovedByHandReadded(t *testing.T) {
	f := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, f)
	keys := map[string]netlinkmgr.AddrInfo{
		"INTERFACE|Ethernet0|10.0.0.1/24":          {Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.0.1/24")},
		"INTERFACE|Ethernet0|2001:db8::1/64":       {Link: "Ethernet0", Prefix: netip.MustParsePrefix("2001:db8::1/64")},
		"LOOPBACK_INTERFACE|Loopback0|10.1.1.1/32": {Link: "Loopback0", Prefix: netip.MustParsePrefix("10.1.1.1/32")},
	}
	for k := range keys {
		table, key, _ := strings.Cut(k, "|")
		r.set(table, key)
	}
	r.settle()
	for k := range keys {
		r.want(k, schema.StateOK, "")
	}
	r.o.idx.mu.Lock()
	for res := range r.o.idx.byRes {
		if strings.HasPrefix(res, "addr:") {
			t.Errorf("dependency index holds %s", res)
		}
	}
	r.o.idx.mu.Unlock()
	for _, a := range keys {
		if err := f.Addrs().Del(a); err != nil {
			t.Fatal(err)
		}
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventAddr, Deleted: true, Addr: &a})
	}
	queued := map[string]bool{}
	drained := r.o.Drain()
	for _, k := range drained {
		queued[k] = true
	}
	for k := range keys {
		if !queued[k] {
			t.Errorf("%s: not enqueued by its address's delete (queued %v)", k, drained)
		}
	}
	r.reconcile(drained)
	r.settle()
	for k, a := range keys {
		r.want(k, schema.StateOK, "")
		if _, ok := r.o.view.addr(a.Link, a.Prefix); !ok {
			t.Errorf("%s: not added back", k)
		}
	}
}
