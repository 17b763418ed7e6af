package orchagent

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// opsWith is the Fake's write log restricted to ops starting with prefix.
func opsWith(k *netlinkmgr.Fake, prefix string) []string {
	var out []string
	for _, op := range k.Ops() {
		if strings.HasPrefix(op, prefix) {
			out = append(out, op)
		}
	}
	return out
}

func wantOps(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ops %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("ops %q, want %q", got, want)
		}
	}
}

// ReconcileBatch with INTERFACE address keys: the adds go out together
// (Addrs().AddBatch), each key gets its own outcome at its own position:
// a hand-made equal address is a conflict (never overwritten), a failed
// add does not stop the others, and a bare key in between is applied in
// its place.
func TestReconcileBatchAddrs(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	must(t, k.Addrs().Add(netlinkmgr.AddrInfo{Link: "Ethernet0", Prefix: netip.MustParsePrefix("10.0.2.1/24")}))
	r := newRig(t, k)
	keys := []string{"INTERFACE|Ethernet0|10.0.1.1/24", "INTERFACE|Ethernet0|10.0.2.1/24",
		"INTERFACE|Ethernet0|10.0.3.1/24", "INTERFACE|Ethernet4", "INTERFACE|Ethernet0|10.0.4.1/24",
		"INTERFACE|Ethernet9|10.0.5.1/24"}
	for _, key := range keys {
		_, k, _ := strings.Cut(key, "|")
		r.set("INTERFACE", k)
	}
	r.o.Drain()
	k.FailNext("addr add 10.0.3.1/24", errors.New("no buffer space available"))
	errs := r.o.ReconcileBatch(context.Background(), keys)
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Fatalf("errs[%d] (%s) = %v; want an error only for the failed write", i, keys[i], err)
		}
	}
	r.want(keys[0], schema.StateOK, "")
	r.want(keys[1], schema.StateError, "not added by switchyard")
	r.want(keys[2], schema.StateError, "no buffer space")
	r.want(keys[3], schema.StateOK, "")
	r.want(keys[4], schema.StateOK, "")
	r.want(keys[5], schema.StatePending, "waiting for netdev Ethernet9")
	wantOps(t, opsWith(k, "addr add"), "addr add 10.0.2.1/24", "addr add 10.0.1.1/24", "addr add 10.0.4.1/24")
	as, err := k.Addrs().List("Ethernet0")
	must(t, err)
	for _, a := range as {
		if a.Prefix.String() == "10.0.2.1/24" && a.Protocol != 0 {
			t.Fatalf("hand-made address remarked: %+v", a)
		}
	}
	r.o.enqueue(keys[2])
	r.settle()
	r.want(keys[2], schema.StateOK, "")
	r.noWrites()
}

// ReconcileBatch with VLAN_MEMBER keys: a member's VLAN add goes out with
// the next members' (BridgeVlans().AddBatch) when it is the key's last
// write (a port's first member, which also drops the default vid 1, is
// not deferred: the real kernel's e2e tests cover it).
func TestReconcileBatchMembers(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	for _, v := range []string{"100", "200", "300"} {
		r.set("VLAN", "Vlan"+v, "vlanid", v)
	}
	r.settle()
	keys := []string{"VLAN_MEMBER|Vlan100|Ethernet0", "VLAN_MEMBER|Vlan200|Ethernet0",
		"VLAN_MEMBER|Vlan300|Ethernet0", "VLAN_MEMBER|Vlan300|Ethernet4"}
	for _, key := range keys {
		_, k, _ := strings.Cut(key, "|")
		r.set("VLAN_MEMBER", k, "tagging_mode", "tagged")
	}
	r.o.Drain()
	k.FailNext("vlan add dev Ethernet0 vid 200", errors.New("no buffer space available"))
	errs := r.o.ReconcileBatch(context.Background(), keys)
	for i, err := range errs {
		if (err != nil) != (i == 1) {
			t.Fatalf("errs[%d] (%s) = %v; want an error only for the failed write", i, keys[i], err)
		}
	}
	r.want(keys[0], schema.StateOK, "")
	r.want(keys[1], schema.StateError, "no buffer space")
	r.want(keys[2], schema.StateOK, "")
	r.want(keys[3], schema.StateOK, "")
	var ops []string
	for _, op := range k.Ops() {
		if strings.HasPrefix(op, "vlan") && !strings.Contains(op, "self") {
			ops = append(ops, op)
		}
	}
	wantOps(t, ops, "vlan add dev Ethernet0 vid 100", "vlan add dev Ethernet0 vid 300", "vlan add dev Ethernet4 vid 300")
	r.o.enqueue(keys[1])
	r.settle()
	for _, key := range keys {
		r.want(key, schema.StateOK, "")
	}
	r.noWrites()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ReconcileBatch with VLAN and VLAN_MEMBER keys as a bulk writes them (a
// VLAN, then its members): one batch for both tables (vlanbatch.go). The
// VLANs' devices and self vids and the members' vids are deferred and
// sent together; a member relying on a VLAN key of the same batch goes
// ahead, and when that VLAN fails it waits and its vid is taken back off.
func TestReconcileBatchVlans(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	up(t, k, "Ethernet0", "Ethernet4")
	r := newRig(t, k)
	// The bridge and both ports enslaved first (not deferred: link sets).
	r.set("VLAN", "Vlan5", "vlanid", "5")
	r.set("VLAN_MEMBER", "Vlan5|Ethernet0", "tagging_mode", "tagged")
	r.set("VLAN_MEMBER", "Vlan5|Ethernet4", "tagging_mode", "tagged")
	r.settle()
	k.ClearOps()
	var keys []string
	for _, v := range []string{"10", "20", "30"} {
		r.set("VLAN", "Vlan"+v, "vlanid", v)
		r.set("VLAN_MEMBER", "Vlan"+v+"|Ethernet0", "tagging_mode", "tagged")
		r.set("VLAN_MEMBER", "Vlan"+v+"|Ethernet4", "tagging_mode", "tagged")
		keys = append(keys, "VLAN|Vlan"+v, "VLAN_MEMBER|Vlan"+v+"|Ethernet0", "VLAN_MEMBER|Vlan"+v+"|Ethernet4")
	}
	r.o.Drain()
	k.FailNext("link add Vlan20", errors.New("no buffer space available"))
	errs := r.o.ReconcileBatch(context.Background(), keys)
	for i, err := range errs {
		if (err != nil) != (i == 3) {
			t.Fatalf("errs[%d] (%s) = %v; want an error only for the failed VLAN", i, keys[i], err)
		}
	}
	r.want("VLAN|Vlan10", schema.StateOK, "")
	r.want("VLAN_MEMBER|Vlan10|Ethernet0", schema.StateOK, "")
	r.want("VLAN|Vlan20", schema.StateError, "no buffer space")
	r.want("VLAN_MEMBER|Vlan20|Ethernet0", schema.StatePending, "waiting for VLAN|Vlan20")
	r.want("VLAN_MEMBER|Vlan20|Ethernet4", schema.StatePending, "waiting for VLAN|Vlan20")
	r.want("VLAN|Vlan30", schema.StateOK, "")
	r.want("VLAN_MEMBER|Vlan30|Ethernet4", schema.StateOK, "")
	// All vid adds in key order, then the devices: nothing in between.
	wantOps(t, k.Ops(), "vlan add dev Bridge vid 10 self", "vlan add dev Ethernet0 vid 10", "vlan add dev Ethernet4 vid 10",
		"vlan add dev Bridge vid 20 self", "vlan add dev Ethernet0 vid 20", "vlan add dev Ethernet4 vid 20",
		"vlan add dev Bridge vid 30 self", "vlan add dev Ethernet0 vid 30", "vlan add dev Ethernet4 vid 30",
		"link add Vlan10", "link add Vlan30")
	// The members of the failed VLAN were enqueued again: their vid goes.
	r.settle()
	if _, ok := r.vids("Ethernet0")[20]; ok {
		t.Fatalf("vid 20 still on Ethernet0 while VLAN|Vlan20 failed: %v", k.Ops())
	}
	r.o.enqueue("VLAN|Vlan20")
	r.settle()
	for _, key := range keys {
		r.want(key, schema.StateOK, "")
	}
	if _, ok := r.vids("Ethernet4")[20]; !ok {
		t.Fatal("vid 20 not on Ethernet4 once VLAN|Vlan20 is ok")
	}
	r.noWrites()
}
