package orchagent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// memSink records results as STATE_DB would hold them.
type memSink struct {
	mu sync.Mutex
	m  map[string]schema.Result
	n  int // writes
}

func (s *memSink) SetResult(table, key string, r schema.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[schema.ResultKey(table, key)] = r
	s.n++
}

func (s *memSink) DeleteResult(table, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, schema.ResultKey(table, key))
	s.n++
}

// rig drives an Orch over a Fake by hand: set/del config, settle runs the
// queued keys until nothing is left (the workqueue's job in the daemon).
type rig struct {
	t    *testing.T
	k    *netlinkmgr.Fake
	o    *Orch
	sink *memSink
	errs map[string]error // last transient error per key
	// batched (the default): settle reconciles each round with
	// ReconcileBatch, as the daemon's worker does; false = Reconcile key
	// by key.
	batched bool
}

func newRig(t *testing.T, k *netlinkmgr.Fake) *rig {
	t.Helper()
	r := &rig{t: t, k: k, sink: &memSink{m: map[string]schema.Result{}}, errs: map[string]error{}, batched: true}
	r.o = New(Options{Kernel: k, Results: r.sink})
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	return r
}

func fields(kv ...string) schema.Fields {
	f := schema.Fields{}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	return f
}

func (r *rig) set(table, key string, kv ...string) { r.o.SetConfig(table, key, fields(kv...)) }
func (r *rig) del(table, key string)               { r.o.DeleteConfig(table, key) }

// settle reconciles queued keys until the queue is empty.
func (r *rig) settle() {
	r.t.Helper()
	for i := 0; i < 100; i++ {
		r.linkEchoes()
		keys := r.o.Drain()
		if len(keys) == 0 {
			// As if the echoes of our writes had been consumed.
			if err := r.o.Prime(); err != nil {
				r.t.Fatal(err)
			}
			return
		}
		r.reconcile(keys)
	}
	r.t.Fatalf("reconcile does not settle: keys keep re-enqueuing each other: %v", r.o.Drain())
}

// reconcile reconciles keys once each (duplicates dropped), in one batch
// or one by one as r.batched says, and records their errors in r.errs.
func (r *rig) reconcile(keys []string) {
	seen := map[string]bool{}
	var batch []string
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		batch = append(batch, k)
	}
	var errs []error
	if r.batched {
		errs = r.o.ReconcileBatch(context.Background(), batch)
	} else {
		for _, k := range batch {
			errs = append(errs, r.o.Reconcile(context.Background(), k))
		}
	}
	for i, k := range batch {
		if errs[i] != nil {
			r.errs[k] = errs[i]
		} else {
			delete(r.errs, k)
		}
	}
}

// linkEchoes feeds the link events the real kernel would have sent for
// links that appeared, vanished or changed master since the view last
// looked.
func (r *rig) linkEchoes() {
	ls, err := r.k.Links().List()
	if err != nil {
		r.t.Fatal(err)
	}
	have := map[string]bool{}
	for i := range ls {
		have[ls[i].Name] = true
		r.o.view.mu.Lock()
		snap, known := r.o.view.links[ls[i].Name]
		r.o.view.mu.Unlock()
		if !known || snap.masterIdx != ls[i].MasterIdx { // appeared, or changed master (a VRF)
			r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &ls[i]})
		}
	}
	r.o.view.mu.Lock()
	var gone []string
	for n := range r.o.view.links {
		if !have[n] {
			gone = append(gone, n)
		}
	}
	r.o.view.mu.Unlock()
	for _, n := range gone {
		r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Deleted: true, Link: &netlinkmgr.LinkInfo{Name: n}})
	}
}

// linkEvent feeds the Fake's current view of name as a netlink event.
func (r *rig) linkEvent(name string, deleted bool) {
	l, err := r.k.Links().Get(name)
	if err != nil {
		l = netlinkmgr.LinkInfo{Name: name}
	}
	r.o.HandleEvent(netlinkmgr.Event{Kind: netlinkmgr.EventLink, Link: &l, Deleted: deleted})
}

func (r *rig) want(key string, state schema.State, reason string) {
	r.t.Helper()
	table, k, _ := strings.Cut(key, "|")
	got, ok := r.sink.m[schema.ResultKey(table, k)]
	if !ok {
		r.t.Fatalf("%s: no result in STATE_DB, want %s", key, state)
	}
	if got.State != state || !strings.Contains(got.Reason, reason) {
		r.t.Fatalf("%s: result %s %q, want %s with reason containing %q", key, got.State, got.Reason, state, reason)
	}
}

func (r *rig) noResult(key string) {
	r.t.Helper()
	table, k, _ := strings.Cut(key, "|")
	if got, ok := r.sink.m[schema.ResultKey(table, k)]; ok {
		r.t.Fatalf("%s: result %+v still in STATE_DB", key, got)
	}
}

// noWrites re-runs every configured key and fails on any kernel write.
func (r *rig) noWrites() {
	r.t.Helper()
	before := r.k.Writes()
	r.k.ClearOps()
	for _, k := range r.o.ConfigKeys() {
		r.o.enqueue(k)
	}
	r.settle()
	if n := r.k.Writes() - before; n != 0 {
		r.t.Fatalf("%d kernel writes when already right: %v", n, r.k.Ops())
	}
}

func (r *rig) link(name string) netlinkmgr.LinkInfo {
	r.t.Helper()
	l, err := r.k.Links().Get(name)
	if err != nil {
		r.t.Fatalf("get %s: %v", name, err)
	}
	return l
}

func (r *rig) vids(port string) map[uint16]netlinkmgr.BridgeVlanInfo {
	r.t.Helper()
	vl, err := r.k.BridgeVlans().List(port)
	if err != nil {
		r.t.Fatalf("bridge vlan list %s: %v", port, err)
	}
	out := map[uint16]netlinkmgr.BridgeVlanInfo{}
	for _, v := range vl {
		if v.Link == port {
			out[v.VID] = v
		}
	}
	return out
}

func (r *rig) routes(dst string) []netlinkmgr.RouteInfo {
	r.t.Helper()
	rs, err := r.k.Routes().List(netlinkmgr.RouteFilter{})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []netlinkmgr.RouteInfo
	for _, x := range rs {
		if x.Dst.String() == dst {
			out = append(out, x)
		}
	}
	return out
}

func TestPortAppliesAndNoWritesWhenRight(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("PORT", "Ethernet0", "admin_status", "up", "mtu", "9100", "mac", "02:00:00:00:00:01", "description", "uplink")
	r.settle()
	r.want("PORT|Ethernet0", schema.StateOK, "")
	l := r.link("Ethernet0")
	if !*l.AdminUp || *l.MTU != 9100 || l.MAC.String() != "02:00:00:00:00:01" || *l.Alias != "uplink" {
		t.Fatalf("port not applied: %+v", l)
	}
	if ops := r.k.Ops(); len(ops) != 1 || !strings.HasPrefix(ops[0], "link set Ethernet0") {
		t.Fatalf("ops = %v, want one link set", ops)
	}
	r.noWrites()
	// Absent fields are not managed: removing mtu leaves it as it is.
	r.set("PORT", "Ethernet0", "admin_status", "up")
	r.settle()
	r.noWrites()
	if *r.link("Ethernet0").MTU != 9100 {
		t.Fatal("mtu changed after the field was removed from config")
	}
	r.del("PORT", "Ethernet0")
	r.settle()
	r.noResult("PORT|Ethernet0")
	if _, err := r.k.Links().Get("Ethernet0"); err != nil {
		t.Fatal("port deleted with its PORT key")
	}
}

func TestPortPendingUntilHotplug(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake())
	r.set("PORT", "Ethernet4", "admin_status", "up", "mtu", "1400")
	r.settle()
	r.want("PORT|Ethernet4", schema.StatePending, "waiting for netdev Ethernet4")
	r.k.AddPort("Ethernet4")
	r.linkEvent("Ethernet4", false)
	r.settle()
	r.want("PORT|Ethernet4", schema.StateOK, "")
	if l := r.link("Ethernet4"); !*l.AdminUp || *l.MTU != 1400 {
		t.Fatalf("hot-plugged port not applied: %+v", l)
	}
}

func TestPortDriftReverted(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.set("PORT", "Ethernet0", "admin_status", "up", "mtu", "9000")
	r.settle()
	down, mtu := false, 1500
	if err := r.k.Links().Set(netlinkmgr.LinkInfo{Name: "Ethernet0", AdminUp: &down, MTU: &mtu}); err != nil {
		t.Fatal(err)
	}
	r.linkEvent("Ethernet0", false)
	r.settle()
	if l := r.link("Ethernet0"); !*l.AdminUp || *l.MTU != 9000 {
		t.Fatalf("drift not reverted: %+v", l)
	}
	// The echo of our own revert re-runs the key, which writes nothing.
	before := r.k.Writes()
	r.linkEvent("Ethernet0", false)
	r.settle()
	if n := r.k.Writes() - before; n != 0 {
		t.Fatalf("echo of the revert made %d writes: %v", n, r.k.Ops())
	}
}

func TestBadInputIsErrorAndChangesNothing(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	cases := []struct {
		table, key string
		kv         []string
		reason     string
	}{
		{"PORT", "Ethernet0", []string{"mtu", "banana"}, "mtu"},
		{"VLAN", "Vlan100", []string{"vlanid", "5000"}, "vlanid"},
		{"VLAN", "Vlan200", []string{"vlanid", "201"}, "vlanid"},
		{"VLAN_MEMBER", "Vlan100|Ethernet0", []string{"tagging_mode", "sideways"}, "tagging_mode"},
		{"INTERFACE", "Ethernet0|10.0.0.300/24", nil, "10.0.0.300"},
		{"STATIC_ROUTE", "10.1.2.3/16", []string{"nexthop", "10.0.0.2"}, "10.1.0.0/16"},
		{"STATIC_ROUTE", "10.9.0.0/16", []string{"nexthop", "10.0.0.2", "blackhole", "maybe"}, "blackhole"},
		{"FDB", "Vlan100|00:11:22:33:44:55", []string{"port", "Ethernet0", "type", "dynamic"}, "static"},
	}
	before := r.k.Writes()
	for _, c := range cases {
		r.set(c.table, c.key, c.kv...)
	}
	r.settle()
	for _, c := range cases {
		r.want(c.table+"|"+c.key, schema.StateError, c.reason)
	}
	if n := r.k.Writes() - before; n != 0 {
		t.Fatalf("bad input made %d kernel writes: %v", n, r.k.Ops())
	}
	// Fixing the hash fixes the state.
	r.set("PORT", "Ethernet0", "mtu", "1400")
	r.settle()
	r.want("PORT|Ethernet0", schema.StateOK, "")
}

func TestMissingKernelFeatureIsErrorRestKeepsWorking(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().HostKernel().AddPort("Ethernet0", "Ethernet4"))
	r.set("VLAN", "Vlan100", "vlanid", "100")
	r.set("VLAN_MEMBER", "Vlan100|Ethernet0", "tagging_mode", "untagged")
	r.set("PORT", "Ethernet4", "admin_status", "up")
	r.set("INTERFACE", "Ethernet4|10.0.0.1/24")
	r.settle()
	r.want("VLAN|Vlan100", schema.StateError, "kernel lacks")
	r.want("VLAN_MEMBER|Vlan100|Ethernet0", schema.StatePending, "waiting for VLAN|Vlan100")
	r.want("PORT|Ethernet4", schema.StateOK, "")
	r.want("INTERFACE|Ethernet4|10.0.0.1/24", schema.StateOK, "")
	if len(r.errs) != 0 {
		t.Fatalf("missing feature retried as transient: %v", r.errs)
	}
}

func TestKernelErrorRetriedWithReason(t *testing.T) {
	r := newRig(t, netlinkmgr.NewFake().AddPort("Ethernet0"))
	r.k.FailNext("link set Ethernet0", errors.New("device or resource busy"))
	r.set("PORT", "Ethernet0", "mtu", "9000")
	r.settle()
	r.want("PORT|Ethernet0", schema.StateError, "busy")
	if r.errs["PORT|Ethernet0"] == nil {
		t.Fatal("kernel error not returned for a retry")
	}
	// The workqueue's backoff retry is one more Reconcile.
	if err := r.o.Reconcile(context.Background(), "PORT|Ethernet0"); err != nil {
		t.Fatal(err)
	}
	r.settle()
	r.want("PORT|Ethernet0", schema.StateOK, "")
	if *r.link("Ethernet0").MTU != 9000 {
		t.Fatal("retry did not apply the mtu")
	}
}
