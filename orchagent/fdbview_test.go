package orchagent

import (
	"fmt"
	"net"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// fdbEchoKernel is a Fake whose static FDB writes produce their events:
// delivered during AddBatch, before the keys are finished and noted (now),
// or held until the pass is over. between runs after the batch is written
// and before any echo is delivered (a foreign change in between).
type fdbEchoKernel struct {
	*netlinkmgr.Fake
	o       *Orch
	now     bool
	between func()
	pending []netlinkmgr.Event
}

func (k *fdbEchoKernel) Fdbs() netlinkmgr.Fdbs { return fdbEchoes{k.Fake.Fdbs(), k} }

type fdbEchoes struct {
	netlinkmgr.Fdbs
	k *fdbEchoKernel
}

func (x fdbEchoes) AddBatch(fs []netlinkmgr.FdbInfo) []error {
	errs := x.Fdbs.AddBatch(fs)
	for i, f := range fs {
		if errs[i] == nil {
			e := f
			e.Master = BridgeName
			x.k.pending = append(x.k.pending, netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Fdb: &e})
		}
	}
	if x.k.between != nil {
		x.k.between()
		x.k.between = nil
	}
	if x.k.now {
		x.k.release()
	}
	return errs
}

func (k *fdbEchoKernel) release() {
	p := k.pending
	k.pending = nil
	for _, ev := range p {
		k.o.HandleEvent(ev)
	}
}

// run reconciles until nothing is queued and returns the FDB reconciles.
func (k *fdbEchoKernel) run(r *rig) int {
	n := 0
	for round := 0; round < 50; round++ {
		keys := r.o.Drain()
		if len(keys) == 0 && len(k.pending) == 0 {
			return n
		}
		seen := map[string]bool{}
		for _, key := range keys {
			if tableOf(key) == schema.TableFDB && !seen[key] {
				seen[key] = true
				n++
			}
		}
		r.reconcile(keys)
		k.release()
	}
	r.t.Fatalf("does not settle: %v", r.o.Drain())
	return n
}

func newFdbEchoRig(t *testing.T, now bool) (*rig, *fdbEchoKernel) {
	t.Helper()
	f := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, f)
	k := &fdbEchoKernel{Fake: f, now: now}
	r.o = New(Options{Kernel: k, Results: r.sink})
	k.o = r.o
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.o.enqueue("VLAN|Vlan100")
	r.o.enqueue("VLAN_MEMBER|Vlan100|Ethernet0")
	k.run(r)
	r.want("VLAN_MEMBER|Vlan100|Ethernet0", schema.StateOK, "")
	return r, k
}

func fdbMAC(i int) string { return fmt.Sprintf("02:00:00:00:00:%02x", i) }

func (r *rig) fdbBulk(n int) {
	for i := 0; i < n; i++ {
		r.set("FDB", "Vlan100|"+fdbMAC(i), "port", "Ethernet0")
		r.o.enqueue("FDB|Vlan100|" + fdbMAC(i))
	}
}

func (r *rig) inKernel(mac string) bool {
	fs, err := r.k.Fdbs().List(BridgeName)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, f := range fs {
		if f.MAC.String() == mac && f.Static && f.Link == "Ethernet0" && f.Vlan == 100 {
			return true
		}
	}
	return false
}

// Each FDB key is reconciled once whether the echo of its write arrives
// before the key is finished (derived from the event, it would be
// re-enqueued) or after; the key is not in the index under its entry.
func TestFdbEchoReconcilesOnce(t *testing.T) {
	for _, now := range []bool{true, false} {
		t.Run(fmt.Sprintf("echo-before-note=%v", now), func(t *testing.T) {
			r, k := newFdbEchoRig(t, now)
			r.fdbBulk(20)
			if n := k.run(r); n != 20 {
				t.Fatalf("%d FDB reconciles for 20 keys", n)
			}
			for i := 0; i < 20; i++ {
				if !r.inKernel(fdbMAC(i)) {
					t.Fatalf("%s not in the kernel", fdbMAC(i))
				}
			}
			if ks := r.o.idx.keys(resFdb(100, fdbMAC(3))); len(ks) != 0 {
				t.Fatalf("FDB key in the index under its entry: %v", ks)
			}
			// Removed behind our back: the event names the key, which
			// writes it again.
			mac, _ := net.ParseMAC(fdbMAC(3))
			e := netlinkmgr.FdbInfo{MAC: mac, Link: "Ethernet0", Master: BridgeName, Vlan: 100, Static: true}
			if err := k.Fake.Fdbs().Del(e); err != nil {
				t.Fatal(err)
			}
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Deleted: true, Fdb: &e})
			if n := k.run(r); n != 1 || !r.inKernel(fdbMAC(3)) {
				t.Fatalf("foreign delete: %d reconciles, in kernel %v", n, r.inKernel(fdbMAC(3)))
			}
		})
	}
}

// A foreign delete between our write and its note (heard before the key
// is finished): the key is not ok on a view that lost it, it writes again.
func TestFdbDeletedWhileWriting(t *testing.T) {
	for _, now := range []bool{true, false} {
		t.Run(fmt.Sprintf("echo-before-note=%v", now), func(t *testing.T) {
			r, k := newFdbEchoRig(t, now)
			r.fdbBulk(5)
			mac, _ := net.ParseMAC(fdbMAC(2))
			e := netlinkmgr.FdbInfo{MAC: mac, Link: "Ethernet0", Master: BridgeName, Vlan: 100, Static: true}
			k.between = func() {
				if err := k.Fake.Fdbs().Del(e); err != nil {
					t.Fatal(err)
				}
				d := e
				// Its add echo first, then the delete, as the kernel sends
				// them; heard now, before the note.
				k.pending = append(k.pending, netlinkmgr.Event{Kind: netlinkmgr.EventFdb, Deleted: true, Fdb: &d})
				k.release()
			}
			k.run(r)
			if !r.inKernel(fdbMAC(2)) {
				t.Fatal("entry deleted while being written not written again")
			}
			if _, ok := r.o.view.fdb(100, fdbMAC(2)); !ok {
				t.Fatal("view lost the entry written again")
			}
			r.want("FDB|Vlan100|"+fdbMAC(2), schema.StateOK, "")
		})
	}
}
