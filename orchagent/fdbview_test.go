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

// TestFdbFollowsItsMember: an ok FDB key is not in the dependency index
// (enqueueFdbKeys derives it); when its VLAN member goes, its entry goes
// and it waits, the VLAN's entries behind another port stay; when the
// member comes back, the entry is written again.
func TestFdbFollowsItsMember(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "tagged")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet4", "tagging_mode", "tagged")
	r.set("FDB", "Vlan100|02:00:00:00:00:01", "port", "Ethernet0")
	r.set("FDB", "Vlan100|02:00:00:00:00:02", "port", "Ethernet4")
	r.settle()
	has := func(mac, port string) bool {
		fs, err := k.Fdbs().List(BridgeName)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.MAC.String() == mac && f.Link == port && f.Static && f.Vlan == 100 {
				return true
			}
		}
		return false
	}
	for _, key := range []string{"FDB|Vlan100|02:00:00:00:00:01", "FDB|Vlan100|02:00:00:00:00:02"} {
		r.want(key, schema.StateOK, "")
		r.o.idx.mu.Lock()
		refs, in := r.o.idx.byKey[key]
		r.o.idx.mu.Unlock()
		if in {
			t.Fatalf("%s: ok, and in the index under %v", key, refs)
		}
	}
	if !has("02:00:00:00:00:01", "Ethernet0") || !has("02:00:00:00:00:02", "Ethernet4") {
		t.Fatal("entries not written")
	}

	r.del("VLAN_MEMBER", "Vlan100|Ethernet0")
	r.settle()
	r.want("FDB|Vlan100|02:00:00:00:00:01", schema.StatePending, "VLAN_MEMBER|Vlan100|Ethernet0")
	r.want("FDB|Vlan100|02:00:00:00:00:02", schema.StateOK, "")
	if has("02:00:00:00:00:01", "Ethernet0") || !has("02:00:00:00:00:02", "Ethernet4") {
		t.Fatal("after the member's delete: want the Ethernet0 entry gone, the Ethernet4 one kept")
	}

	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "tagged")
	r.settle()
	r.want("FDB|Vlan100|02:00:00:00:00:01", schema.StateOK, "")
	if !has("02:00:00:00:00:01", "Ethernet0") {
		t.Fatal("entry not written again when its member came back")
	}
}
