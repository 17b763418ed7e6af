package orchagent

import (
	"fmt"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// echoKernel is a Fake whose link writes produce the events the kernel
// sends: after each write, the written link (and a new master) as it is
// right then. now: delivered at once, before the writing key is finished
// (the echo beats our note); otherwise held until release.
type echoKernel struct {
	*netlinkmgr.Fake
	o       *Orch
	now     bool
	pending []netlinkmgr.LinkInfo
}

func (k *echoKernel) Links() netlinkmgr.Links { return echoLinks{k.Fake.Links(), k} }

type echoLinks struct {
	netlinkmgr.Links
	k *echoKernel
}

func (l echoLinks) Add(x netlinkmgr.LinkInfo) error {
	err := l.Links.Add(x)
	l.k.echo(x.Name)
	return err
}

func (l echoLinks) Set(x netlinkmgr.LinkInfo) error {
	err := l.Links.Set(x)
	l.k.echo(x.Name)
	if x.Master != nil && *x.Master != "" {
		l.k.echo(*x.Master) // a bond's MAC follows its first port
	}
	return err
}

// echo snapshots name as its event would carry it.
func (k *echoKernel) echo(name string) {
	l, err := k.Fake.Links().Get(name)
	if err != nil {
		return
	}
	if k.now {
		k.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &l})
		return
	}
	k.pending = append(k.pending, l)
}

func (k *echoKernel) release() {
	p := k.pending
	k.pending = nil
	for i := range p {
		k.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &p[i]})
	}
}

// foreign changes a link behind orchagent's back; its event is queued
// after the echoes not yet delivered.
func (k *echoKernel) foreign(t *testing.T, l netlinkmgr.LinkInfo) {
	t.Helper()
	if err := k.Fake.Links().Set(l); err != nil {
		t.Fatal(err)
	}
	was := k.now
	k.now = false
	k.echo(l.Name)
	k.now = was
}

func newEchoRig(t *testing.T, ports int, now bool) (*rig, *echoKernel) {
	t.Helper()
	f := netlinkmgr.NewFake()
	for i := 0; i < ports; i++ {
		f.AddPort(fmt.Sprintf("Ethernet%d", 4*i))
	}
	r := newRig(t, f)
	k := &echoKernel{Fake: f, now: now}
	r.o = New(Options{Kernel: k, Results: r.sink})
	k.o = r.o
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	return r, k
}

// run reconciles until nothing is queued, delivering held echoes after
// each pass, and returns the reconciles per table.
func (k *echoKernel) run(r *rig) map[string]int {
	n := map[string]int{}
	for round := 0; round < 50; round++ {
		keys := r.o.Drain()
		seen := map[string]bool{}
		for _, key := range keys {
			if !seen[key] {
				seen[key] = true
				n[tableOf(key)]++
			}
		}
		if len(keys) == 0 && len(k.pending) == 0 {
			return n
		}
		r.reconcile(keys)
		k.release()
	}
	r.t.Fatalf("does not settle: %v", r.o.Drain())
	return n
}

func pcBulk(r *rig, pcs int) []string {
	var keys []string
	for p := 0; p < pcs; p++ {
		pc := fmt.Sprintf("PortChannel%02d", p+1)
		r.set("PORTCHANNEL", pc, "admin_status", "up", "min_links", "1", "mtu", "9100")
		keys = append(keys, "PORTCHANNEL|"+pc)
		for m := 0; m < 2; m++ {
			mk := fmt.Sprintf("%s|Ethernet%d", pc, 4*(2*p+m))
			r.set("PORTCHANNEL_MEMBER", mk)
			keys = append(keys, "PORTCHANNEL_MEMBER|"+mk)
		}
	}
	return keys
}

// A bulk of PortChannels reconciles each key once, whether the echoes of
// its writes arrive before the key is finished or after.
func TestPortChannelBulkReconcilesOnce(t *testing.T) {
	for _, now := range []bool{true, false} {
		t.Run(fmt.Sprintf("echo-before-note=%v", now), func(t *testing.T) {
			r, k := newEchoRig(t, 8, now)
			keys := pcBulk(r, 4)
			n := k.run(r)
			if n["PORTCHANNEL"] != 4 || n["PORTCHANNEL_MEMBER"] != 8 {
				t.Fatalf("reconciles %v, want PORTCHANNEL 4, PORTCHANNEL_MEMBER 8", n)
			}
			for _, key := range keys {
				r.want(key, schema.StateOK, "")
			}
			for i := 0; i < 8; i++ {
				p := fmt.Sprintf("Ethernet%d", 4*i)
				if want := fmt.Sprintf("PortChannel%02d", i/2+1); *r.link(p).Master != want {
					t.Fatalf("%s: master %q, want %s", p, *r.link(p).Master, want)
				}
			}
		})
	}
}

// Members waiting for their PortChannel, then reconciled in the pass
// after it (the daemon's worker takes every ready key): the PortChannel's
// result turning ok does not run them a second time.
func TestPortChannelMembersWaitingThenOnePass(t *testing.T) {
	r, k := newEchoRig(t, 2, false)
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet4")
	k.run(r)
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	r.set("PORTCHANNEL", "PortChannel01", "admin_status", "up")
	r.o.Drain()
	for _, key := range []string{"PORTCHANNEL|PortChannel01", "PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", "PORTCHANNEL_MEMBER|PortChannel01|Ethernet4"} {
		r.o.enqueue(key)
	}
	n := k.run(r)
	if n["PORTCHANNEL"] != 1 || n["PORTCHANNEL_MEMBER"] != 2 {
		t.Fatalf("reconciles %v, want PORTCHANNEL 1, PORTCHANNEL_MEMBER 2", n)
	}
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet4", schema.StateOK, "")
}

// A foreign change between our write and its echo, or after it, is not
// taken for an echo: the key looks again and repairs it.
func TestPortChannelEchoForeignChange(t *testing.T) {
	r, k := newEchoRig(t, 2, false)
	pcBulk(r, 1)
	r.reconcile(r.o.Drain())
	// Released by hand after our enslave, before its echo is heard.
	none := ""
	k.foreign(t, netlinkmgr.LinkInfo{Name: "Ethernet0", Master: &none})
	n := k.run(r)
	if n["PORTCHANNEL_MEMBER"] != 1 {
		t.Fatalf("reconciles after the foreign release %v, want PORTCHANNEL_MEMBER 1", n)
	}
	if *r.link("Ethernet0").Master != "PortChannel01" {
		t.Fatal("member released in between not repaired")
	}

	// After everything settled: the bond set down and its MTU changed by
	// hand, a member released.
	down, mtu := false, 1500
	k.foreign(t, netlinkmgr.LinkInfo{Name: "PortChannel01", AdminUp: &down})
	k.foreign(t, netlinkmgr.LinkInfo{Name: "PortChannel01", MTU: &mtu})
	k.foreign(t, netlinkmgr.LinkInfo{Name: "Ethernet4", Master: &none})
	n = k.run(r)
	if n["PORTCHANNEL"] != 1 || n["PORTCHANNEL_MEMBER"] != 1 {
		t.Fatalf("reconciles after drift %v, want PORTCHANNEL 1, PORTCHANNEL_MEMBER 1", n)
	}
	b := r.link("PortChannel01")
	if !*b.AdminUp || *b.MTU != 9100 || *r.link("Ethernet4").Master != "PortChannel01" {
		t.Fatalf("drift not repaired: up %v mtu %d Ethernet4 master %q", *b.AdminUp, *b.MTU, *r.link("Ethernet4").Master)
	}

	// The bond deleted by hand: made again, its members enslaved again.
	if err := k.Fake.Links().Del("PortChannel01"); err != nil {
		t.Fatal(err)
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Deleted: true, Link: &netlinkmgr.LinkInfo{Name: "PortChannel01"}})
	k.run(r)
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		if *r.link(p).Master != "PortChannel01" {
			t.Fatalf("%s not enslaved again after the bond was re-made", p)
		}
	}
}

// A key whose outcome is not ok expects nothing: events re-enqueue it.
func TestPortChannelEchoPendingKey(t *testing.T) {
	r, k := newEchoRig(t, 1, true)
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	k.run(r)
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	if r.o.hasExpectations() {
		t.Fatal("a pending key expects echoes")
	}
	r.set("PORTCHANNEL", "PortChannel01", "admin_status", "up")
	r.o.enqueue("PORTCHANNEL|PortChannel01")
	k.run(r)
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", schema.StateOK, "")
	r.del("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	r.del("PORTCHANNEL", "PortChannel01")
	k.run(r)
	if r.o.hasExpectations() {
		t.Fatal("deleted keys still expect echoes")
	}
}
