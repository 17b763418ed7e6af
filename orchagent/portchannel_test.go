package orchagent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

func pcConfig(r *rig) {
	r.set("PORTCHANNEL_INTERFACE", "PortChannel01|10.0.0.56/31")
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet4")
	r.set("PORTCHANNEL_INTERFACE", "PortChannel01")
	r.set("PORTCHANNEL", "PortChannel01", "admin_status", "up", "mtu", "9100", "min_links", "1", "lacp_key", "auto")
}

var pcKeys = []string{"PORTCHANNEL|PortChannel01", "PORTCHANNEL_MEMBER|PortChannel01|Ethernet0",
	"PORTCHANNEL_MEMBER|PortChannel01|Ethernet4", "PORTCHANNEL_INTERFACE|PortChannel01", "PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.56/31"}

func TestPortChannel(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4", "Ethernet8")
	r := newRig(t, k)
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	r.settle()
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	pcConfig(r)
	r.set("PORT", "Ethernet0", "admin_status", "up")
	r.settle()
	for _, key := range pcKeys {
		r.want(key, schema.StateOK, "")
	}
	b := r.link("PortChannel01")
	if b.Kind != "bond" || b.Bond.Mode != "802.3ad" || *b.Bond.MinLinks != 1 || *b.Bond.LacpRate != "slow" ||
		*b.Bond.Miimon != bondMiimon || *b.MTU != 9100 || !*b.AdminUp || *b.Alias != ownerAlias {
		t.Fatalf("PortChannel01: %+v %+v", b, b.Bond)
	}
	for _, p := range []string{"Ethernet0", "Ethernet4"} {
		if l := r.link(p); *l.Master != "PortChannel01" || *l.MTU != 9100 {
			t.Fatalf("%s: master %q mtu %d", p, *l.Master, *l.MTU)
		}
	}
	if !r.hasAddr("PortChannel01", "10.0.0.56/31") {
		t.Fatal("no address on PortChannel01")
	}
	r.noWrites()

	// fast_rate and min_links change; the bond comes back up.
	r.set("PORTCHANNEL", "PortChannel01", "admin_status", "up", "mtu", "9100", "min_links", "2", "fast_rate", "true")
	r.settle()
	b = r.link("PortChannel01")
	if *b.Bond.MinLinks != 2 || *b.Bond.LacpRate != "fast" || !*b.AdminUp {
		t.Fatalf("after change: %+v %+v", b, b.Bond)
	}
	r.noWrites()

	// Drift: a member released by hand comes back.
	none := ""
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet4", Master: &none}); err != nil {
		t.Fatal(err)
	}
	k.ClearOps()
	r.linkEvent("Ethernet4", false)
	r.settle()
	if *r.link("Ethernet4").Master != "PortChannel01" {
		t.Fatal("member drift not repaired")
	}
	// The enslave is one request: down and master together.
	if ops := k.Ops(); len(ops) != 1 || ops[0] != "link set Ethernet4 down master=PortChannel01" {
		t.Fatalf("member repair ops %q, want one down+master set", ops)
	}

	// A PortChannel as a VLAN member is in VLAN_MEMBER's hands; a port of
	// a bridge cannot join.
	br := "Bridge0"
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: br, Kind: "bridge"}); err != nil {
		t.Fatal(err)
	}
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet8", Master: &br}); err != nil {
		t.Fatal(err)
	}
	r.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet8")
	r.settle()
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet8", schema.StateError, "Ethernet8 is enslaved to another master (Bridge0), not PortChannel01")
	r.del("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet8")

	// Member deleted: released, and its PORT key brings it back up.
	r.del("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	r.settle()
	if l := r.link("Ethernet0"); *l.Master != "" || !*l.AdminUp {
		t.Fatalf("released member: master %q up %v", *l.Master, *l.AdminUp)
	}
	// The PortChannel goes: its members wait.
	r.del("PORTCHANNEL", "PortChannel01")
	r.settle()
	if _, err := k.Links().Get("PortChannel01"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("bond not deleted")
	}
	r.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet4", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	r.want("PORTCHANNEL_INTERFACE|PortChannel01|10.0.0.56/31", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	if *r.link("Ethernet4").Master != "" {
		t.Fatal("port of a deleted bond still enslaved")
	}
}

func TestPortChannelConflictsAndHostKernel(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "PortChannel09", Kind: "bond"}); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, k)
	r.set("PORTCHANNEL", "PortChannel09", "admin_status", "up")
	r.set("PORTCHANNEL", "PortChannel02", "fallback", "true")
	r.settle()
	r.want("PORTCHANNEL|PortChannel09", schema.StateError, "netdev PortChannel09 exists (kind bond) and is not a bond device created by switchyard")
	r.want("PORTCHANNEL|PortChannel02", schema.StateError, "LACP fallback is not supported")
	before := k.Writes()
	r.del("PORTCHANNEL", "PortChannel09")
	r.settle()
	if k.Writes() != before {
		t.Fatalf("deleting a conflicting key wrote: %v", k.Ops())
	}

	h := newRig(t, netlinkmgr.NewFake().HostKernel().AddPort("Ethernet0"))
	h.set("PORTCHANNEL", "PortChannel01", "admin_status", "up")
	h.set("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet0")
	h.settle()
	h.want("PORTCHANNEL|PortChannel01", schema.StateError, "kernel lacks bonding")
	h.want("PORTCHANNEL_MEMBER|PortChannel01|Ethernet0", schema.StatePending, "waiting for PORTCHANNEL|PortChannel01")
	if len(h.errs) != 0 {
		t.Fatalf("missing feature retried as transient: %v", h.errs)
	}
}

func TestPortChannelRestartAndSweep(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4", "Ethernet8")
	first := newRig(t, k)
	pcConfig(first)
	first.set("PORTCHANNEL", "PortChannel02", "admin_status", "up")
	first.set("PORTCHANNEL_MEMBER", "PortChannel02|Ethernet8")
	first.settle()
	before := k.Writes()
	second := newRig(t, k)
	pcConfig(second)
	second.del("PORTCHANNEL_MEMBER", "PortChannel01|Ethernet4")
	second.settle()
	for _, key := range []string{"PORTCHANNEL|PortChannel01", "PORTCHANNEL_MEMBER|PortChannel01|Ethernet0"} {
		second.want(key, schema.StateOK, "")
	}
	if n := k.Writes() - before; n != 1 { // releasing Ethernet4
		t.Fatalf("restart made %d writes, want 1: %v", n, k.Ops())
	}
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Links().Get("PortChannel02"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("stale PortChannel02 not swept")
	}
	if *second.link("Ethernet0").Master != "PortChannel01" || *second.link("Ethernet8").Master != "" {
		t.Fatal("sweep: wrong members")
	}
}

// The view behind the kernel: a bond the view has not heard of is created
// without a read; the kernel's EEXIST makes the key read it and report
// the conflict, and the member key reads the kernel before enslaving.
func TestPortChannelViewBehind(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, k)
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "PortChannel07", Kind: "bond"}); err != nil {
		t.Fatal(err)
	}
	r.set("PORTCHANNEL", "PortChannel07", "admin_status", "up")
	r.reconcile([]string{"PORTCHANNEL|PortChannel07"})
	r.want("PORTCHANNEL|PortChannel07", schema.StateError, "netdev PortChannel07 exists (kind bond) and is not a bond device created by switchyard")
	if b := r.link("PortChannel07"); b.Alias != nil && *b.Alias == ownerAlias {
		t.Fatal("a foreign bond was marked ours")
	}
}

// BenchmarkReconcilePortChannelBatch is orchagent's own part of the VM
// row's burst, on the host: 32 PortChannels with 2 members each (96 keys,
// the bench's order) reconciled by one ReconcileBatch over a Fake (its
// writes cost next to nothing: what is measured is parse, view, echo
// expectations, results and the Fake's bookkeeping), a fresh Orch per
// round. ns/op and allocs/op are per round of 96 keys, ns/key per key;
// writes/key counts the Fake's kernel writes (a bond is one, a member one:
// down and master together).
//
//	go test -run '^$' -bench ReconcilePortChannelBatch -benchmem ./orchagent
func BenchmarkReconcilePortChannelBatch(b *testing.B) {
	const pcs = 32
	var ports, keys []string
	for p := 0; p < pcs; p++ {
		pc := fmt.Sprintf("PortChannel%02d", p+1)
		keys = append(keys, "PORTCHANNEL|"+pc)
		for m := 0; m < 2; m++ {
			eth := fmt.Sprintf("Ethernet%d", 4*(2*p+m))
			ports = append(ports, eth)
			keys = append(keys, "PORTCHANNEL_MEMBER|"+pc+"|"+eth)
		}
	}
	ctx := context.Background()
	var writes uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := netlinkmgr.NewFake().AddPort(ports...)
		o := New(Options{Kernel: f, Enqueue: func(string) {}})
		if err := o.Prime(); err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			table, key, _ := strings.Cut(k, schema.ConfigSep)
			if table == schema.TablePortChannel {
				o.cfg.Set(table, key, fields("admin_status", "up", "min_links", "1"))
			} else {
				o.cfg.Set(table, key, fields("NULL", "NULL"))
			}
		}
		w0 := f.Writes()
		b.StartTimer()
		for j, err := range o.ReconcileBatch(ctx, keys) {
			if err != nil || !o.resultOK(keys[j]) {
				b.Fatalf("%s: %v", keys[j], err)
			}
		}
		b.StopTimer()
		writes += f.Writes() - w0
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	b.ReportMetric(float64(writes)/float64(b.N*len(keys)), "writes/key")
}
