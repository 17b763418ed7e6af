package orchagent

import (
	"context"
	"net/netip"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// vrfConfig is a VRF with a loopback and a routed port in it, and a
// loopback in the default VRF, set children first.
func vrfConfig(r *rig) {
	r.set("INTERFACE", "Ethernet0|10.0.0.1/24")
	r.set("LOOPBACK_INTERFACE", "Loopback1|10.1.0.2/32")
	r.set("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32")
	r.set("INTERFACE", "Ethernet0", "vrf_name", "Vrf_blue")
	r.set("LOOPBACK_INTERFACE", "Loopback1", "vrf_name", "Vrf_blue")
	r.set("LOOPBACK_INTERFACE", "Loopback0")
	r.set("VRF", "Vrf_blue", "vni", "0")
}

var vrfKeys = []string{
	"VRF|Vrf_blue", "LOOPBACK_INTERFACE|Loopback0", "LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32",
	"LOOPBACK_INTERFACE|Loopback1", "LOOPBACK_INTERFACE|Loopback1|10.1.0.2/32",
	"INTERFACE|Ethernet0", "INTERFACE|Ethernet0|10.0.0.1/24",
}

func (r *rig) master(name string) string {
	r.t.Helper()
	return *r.link(name).Master
}

func (r *rig) hasAddr(link, p string) bool {
	r.t.Helper()
	as, err := r.k.Addrs().List(link)
	if err != nil {
		return false
	}
	for _, a := range as {
		if a.Prefix == netip.MustParsePrefix(p) && a.Protocol == netlinkmgr.ProtoSwitchyard {
			return true
		}
	}
	return false
}

func TestLoopbackAndVrf(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0")
	r := newRig(t, k)
	vrfConfig(r)
	r.settle()
	for _, key := range vrfKeys {
		r.want(key, schema.StateOK, "")
	}
	vrf := r.link("Vrf_blue")
	if vrf.Kind != "vrf" || vrf.Vrf == nil || vrf.Vrf.Table < vrfTableMin || vrf.Vrf.Table > vrfTableMax ||
		!*vrf.AdminUp || *vrf.Alias != ownerAlias {
		t.Fatalf("Vrf_blue: %+v", vrf)
	}
	for name, master := range map[string]string{"Loopback0": "", "Loopback1": "Vrf_blue", "Ethernet0": "Vrf_blue"} {
		if got := r.master(name); got != master {
			t.Errorf("%s: master %q, want %q", name, got, master)
		}
	}
	lo := r.link("Loopback0")
	if lo.Kind != "dummy" || !*lo.AdminUp || *lo.Alias != ownerAlias {
		t.Fatalf("Loopback0: %+v", lo)
	}
	if !r.hasAddr("Loopback0", "10.1.0.1/32") || !r.hasAddr("Loopback1", "10.1.0.2/32") || !r.hasAddr("Ethernet0", "10.0.0.1/24") {
		t.Fatal("addresses missing")
	}
	r.noWrites()

	// Drift: the port leaves the VRF, the loopback goes down.
	none, down := "", false
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", Master: &none}); err != nil {
		t.Fatal(err)
	}
	if err := k.Links().Set(netlinkmgr.LinkInfo{Name: "Loopback0", AdminUp: &down}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet0", false)
	r.linkEvent("Loopback0", false)
	r.settle()
	if r.master("Ethernet0") != "Vrf_blue" || !*r.link("Loopback0").AdminUp {
		t.Fatal("drift not repaired")
	}

	// admin_status down on the bare key.
	r.set("LOOPBACK_INTERFACE", "Loopback0", "admin_status", "down")
	r.settle()
	if *r.link("Loopback0").AdminUp {
		t.Fatal("Loopback0 admin_status down not applied")
	}

	// The VRF goes: its interfaces wait for it; it comes back with the
	// same table.
	table := vrf.Vrf.Table
	r.del("VRF", "Vrf_blue")
	r.settle()
	if _, err := k.Links().Get("Vrf_blue"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("Vrf_blue not deleted")
	}
	r.noResult("VRF|Vrf_blue")
	r.want("INTERFACE|Ethernet0", schema.StatePending, "waiting for VRF|Vrf_blue")
	r.want("LOOPBACK_INTERFACE|Loopback1", schema.StatePending, "waiting for VRF|Vrf_blue")
	r.set("VRF", "Vrf_blue")
	r.settle()
	for _, key := range vrfKeys {
		r.want(key, schema.StateOK, "")
	}
	if got := r.link("Vrf_blue").Vrf.Table; got != table {
		t.Fatalf("Vrf_blue table %d after re-create, want %d", got, table)
	}

	// vrf_name removed: the port leaves the VRF, keeps its address.
	r.set("INTERFACE", "Ethernet0")
	r.settle()
	if r.master("Ethernet0") != "" || !r.hasAddr("Ethernet0", "10.0.0.1/24") {
		t.Fatal("port not released from the VRF")
	}

	// Everything deleted: the kernel is as it was.
	for _, key := range vrfKeys {
		table, k, _ := cut(key)
		r.del(table, k)
	}
	r.settle()
	for _, n := range []string{"Vrf_blue", "Loopback0", "Loopback1"} {
		if _, err := k.Links().Get(n); !netlinkmgr.IsNotFound(err) {
			t.Errorf("%s still there", n)
		}
	}
	if r.master("Ethernet0") != "" || r.hasAddr("Ethernet0", "10.0.0.1/24") {
		t.Fatal("Ethernet0 not back to how it was")
	}
}

func cut(key string) (string, string, bool) {
	table, k, ok := schema.SplitTableKey(key)
	return table, k, ok
}

// Older SONiC configs list only a loopback's addresses: the first key
// creates the dummy, the last one deletes it.
func TestLoopbackAddressesOnly(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake())
	r.set("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32")
	r.set("LOOPBACK_INTERFACE", "Loopback0|fc00:1::1/128")
	r.settle()
	r.want("LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32", schema.StateOK, "")
	r.want("LOOPBACK_INTERFACE|Loopback0|fc00:1::1/128", schema.StateOK, "")
	if !*r.link("Loopback0").AdminUp || !r.hasAddr("Loopback0", "fc00:1::1/128") {
		t.Fatal("loopback not up with its addresses")
	}
	r.del("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32")
	r.settle()
	if r.hasAddr("Loopback0", "10.1.0.1/32") || !r.hasAddr("Loopback0", "fc00:1::1/128") {
		t.Fatal("wrong address removed")
	}
	r.del("LOOPBACK_INTERFACE", "Loopback0|fc00:1::1/128")
	r.settle()
	if _, err := r.k.Links().Get("Loopback0"); !netlinkmgr.IsNotFound(err) {
		t.Fatal("Loopback0 outlived its last key")
	}
}

// Devices of our names made by someone else are conflicts, left alone
// also when their keys go.
func TestLoopbackVrfConflicts(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4", "Ethernet8")
	for _, l := range []netlinkmgr.LinkInfo{
		{Name: "Loopback7", Kind: "dummy"},
		{Name: "Vrf_red", Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: 10}},
		{Name: "br0", Kind: "bridge"},
	} {
		if err := k.Links().Add(l); err != nil {
			t.Fatal(err)
		}
	}
	br := "br0"
	for _, p := range []string{"Ethernet4", "Ethernet8"} {
		if err := k.Links().Set(netlinkmgr.LinkInfo{Name: p, Master: &br}); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, k)
	r.set("LOOPBACK_INTERFACE", "Loopback7|10.1.0.7/32")
	r.set("VRF", "Vrf_red")
	r.set("VRF", "Vrf_blue")
	r.set("INTERFACE", "Ethernet4", "vrf_name", "Vrf_blue")
	r.set("INTERFACE", "Ethernet0", "vrf_name", "Vrf_red")
	r.set("INTERFACE", "Ethernet8") // default VRF: its bridge stays its master
	r.settle()
	r.want("LOOPBACK_INTERFACE|Loopback7|10.1.0.7/32", schema.StateError, "netdev Loopback7 exists (kind dummy) and is not a dummy device created by switchyard")
	r.want("VRF|Vrf_red", schema.StateError, "netdev Vrf_red exists (kind vrf) and is not a vrf device created by switchyard")
	r.want("VRF|Vrf_blue", schema.StateOK, "")
	r.want("INTERFACE|Ethernet4", schema.StateError, "Ethernet4 has master br0, which is not a VRF of switchyard: not moving it")
	r.want("INTERFACE|Ethernet0", schema.StatePending, "waiting for VRF|Vrf_red")
	r.want("INTERFACE|Ethernet8", schema.StateOK, "")
	if r.hasAddr("Loopback7", "10.1.0.7/32") || r.master("Ethernet4") != "br0" || r.master("Ethernet8") != "br0" {
		t.Fatal("a conflict changed the kernel")
	}
	before := k.Writes()
	for _, key := range []string{"LOOPBACK_INTERFACE|Loopback7|10.1.0.7/32", "VRF|Vrf_red", "INTERFACE|Ethernet4", "INTERFACE|Ethernet0", "INTERFACE|Ethernet8"} {
		table, key, _ := cut(key)
		r.del(table, key)
	}
	r.settle()
	if n := k.Writes() - before; n != 0 {
		t.Fatalf("deleting keys that never applied wrote: %v", k.Ops())
	}
	for _, n := range []string{"Loopback7", "Vrf_red"} {
		if _, err := k.Links().Get(n); err != nil {
			t.Fatalf("foreign %s gone", n)
		}
	}
}

// On the CI host kernel: a clear error naming the missing feature,
// terminal (not retried); the rest keeps working.
func TestLoopbackVrfMissingKernelFeature(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().HostKernel().AddPort("Ethernet4"))
	r.set("VRF", "Vrf_blue")
	r.set("LOOPBACK_INTERFACE", "Loopback0")
	r.set("LOOPBACK_INTERFACE", "Loopback0|10.1.0.1/32")
	r.set("INTERFACE", "Ethernet4|10.0.0.1/24")
	r.settle()
	r.want("VRF|Vrf_blue", schema.StateError, "kernel lacks VRF devices")
	r.want("LOOPBACK_INTERFACE|Loopback0", schema.StateError, "kernel lacks dummy devices")
	r.want("LOOPBACK_INTERFACE|Loopback0|10.1.0.1/32", schema.StateError, "kernel lacks dummy devices")
	r.want("INTERFACE|Ethernet4|10.0.0.1/24", schema.StateOK, "")
	if len(r.errs) != 0 {
		t.Fatalf("missing feature retried as transient: %v", r.errs)
	}
}

// A restart over a right kernel writes nothing; the sweep removes only
// our stale devices and bindings.
func TestLoopbackVrfRestartAndSweep(t *testing.T) {
	k := netlinkmgr.NewFake().AddPort("Ethernet0", "Ethernet4")
	first := newRig(t, k)
	vrfConfig(first)
	first.set("VRF", "Vrf_old")
	first.set("INTERFACE", "Ethernet4", "vrf_name", "Vrf_old")
	first.set("LOOPBACK_INTERFACE", "Loopback9")
	first.settle()
	// Foreign objects of the same kinds.
	for _, l := range []netlinkmgr.LinkInfo{
		{Name: "Loopback5", Kind: "dummy"},
		{Name: "Vrf_x", Kind: "vrf", Vrf: &netlinkmgr.VrfOptions{Table: 10}},
	} {
		if err := k.Links().Add(l); err != nil {
			t.Fatal(err)
		}
	}
	table := first.link("Vrf_blue").Vrf.Table
	before := k.Writes()
	second := newRig(t, k)
	vrfConfig(second)
	second.settle()
	if n := k.Writes() - before; n != 0 {
		t.Fatalf("restart made %d writes: %v", n, k.Ops())
	}
	for _, key := range vrfKeys {
		second.want(key, schema.StateOK, "")
	}
	// Vrf_old, its binding of Ethernet4 and Loopback9 were deleted while
	// orchagent was down.
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"Vrf_old", "Loopback9"} {
		if _, err := k.Links().Get(n); !netlinkmgr.IsNotFound(err) {
			t.Errorf("stale %s not swept", n)
		}
	}
	if second.master("Ethernet4") != "" || second.master("Ethernet0") != "Vrf_blue" {
		t.Fatal("sweep: wrong bindings")
	}
	for _, n := range []string{"Loopback5", "Vrf_x", "Vrf_blue", "Loopback0", "Loopback1"} {
		if _, err := k.Links().Get(n); err != nil {
			t.Errorf("%s swept", n)
		}
	}
	if second.link("Vrf_blue").Vrf.Table != table {
		t.Fatal("VRF table changed across restart")
	}
	n := k.Writes()
	if err := second.o.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.Writes() != n {
		t.Fatalf("second sweep wrote: %v", k.Ops())
	}
}

// Table ids: a hash of the name, probing past tables in use, never outside
// the range.
func TestPickVrfTable(t *testing.T) {
	a, err := pickVrfTable("Vrf_blue", nil)
	if err != nil || a < vrfTableMin || a > vrfTableMax {
		t.Fatalf("pick = %d, %v", a, err)
	}
	if b, _ := pickVrfTable("Vrf_blue", map[uint32]bool{}); b != a {
		t.Fatalf("not deterministic: %d then %d", a, b)
	}
	b, _ := pickVrfTable("Vrf_blue", map[uint32]bool{a: true})
	if b == a || b < vrfTableMin || b > vrfTableMax {
		t.Fatalf("collision not probed past: %d", b)
	}
	all := map[uint32]bool{}
	for i := uint32(vrfTableMin); i <= vrfTableMax; i++ {
		all[i] = true
	}
	if _, err := pickVrfTable("Vrf_blue", all); err == nil {
		t.Fatal("a full range gave a table")
	}
	delete(all, vrfTableMin)
	if c, _ := pickVrfTable("Vrf_blue", all); c != vrfTableMin {
		t.Fatalf("wrap-around: %d", c)
	}
}
