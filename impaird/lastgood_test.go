package impaird

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/switchyard-net/switchyard/bpf"
	"github.com/switchyard-net/switchyard/internal/redisx"
	"github.com/switchyard-net/switchyard/schema"
	"github.com/switchyard-net/switchyard/tests/testns"
)

// kernelDaemon is a daemon without Redis on a fresh namespace with a
// private bpffs; reconcile results are read from its outcome.
type kernelDaemon struct {
	t  *testing.T
	d  *daemon
	ns *testns.NS
}

func newKernelDaemon(t *testing.T) *kernelDaemon {
	t.Helper()
	testns.RequireRoot(t)
	ns := testns.New(t)
	mnt := filepath.Join(t.TempDir(), "bpffs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("cannot mount a private bpffs (needed for pinning): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	k, err := openKernel(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(testWriter{t})
	d := newDaemon(Config{BPFFS: filepath.Join(mnt, "switchyard"), Mode: bpf.ModeAuto, Log: logrus.NewEntry(log)}, k)
	t.Cleanup(func() {
		d.mu.Lock()
		for port, p := range d.ports {
			p.Remove()
			delete(d.ports, port)
		}
		d.mu.Unlock()
		k.Close()
	})
	return &kernelDaemon{t: t, d: d, ns: ns}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// set records a CONFIG_DB hash (fields as name, value pairs; none = delete).
func (k *kernelDaemon) set(table, key string, kv ...string) {
	ev := redisx.Event{Table: table, Key: key, Deleted: len(kv) == 0, Fields: schema.Fields{}}
	for i := 0; i+1 < len(kv); i += 2 {
		ev.Fields[kv[i]] = kv[i+1]
	}
	k.d.setConfig(ev)
}

// reconcile reconciles port and returns its results by STATE_DB key.
func (k *kernelDaemon) reconcile(port string) map[string]schema.Fields {
	k.t.Helper()
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	out := &outcome{results: map[string]schema.Fields{}}
	if _, err := k.d.reconcileLocked(port, out); err != nil {
		k.t.Logf("reconcile %s: %v", port, err)
	}
	return out.results
}

// xdp is the program id iproute2 reports on dev (0: none).
func (k *kernelDaemon) xdp(dev string) int {
	k.t.Helper()
	var links []struct {
		Xdp *struct {
			Prog *struct {
				ID int `json:"id"`
			} `json:"prog"`
		} `json:"xdp"`
	}
	k.ns.JSON(&links, "-d", "link", "show", "dev", dev)
	if len(links) == 0 || links[0].Xdp == nil || links[0].Xdp.Prog == nil {
		return 0
	}
	return links[0].Xdp.Prog.ID
}

// profiles are the profiles port's maps hold ("" = the port's).
func (k *kernelDaemon) profiles(port string) map[string]bpf.Profile {
	k.t.Helper()
	k.d.mu.Lock()
	defer k.d.mu.Unlock()
	p := k.d.ports[port]
	if p == nil {
		k.t.Fatalf("%s has no program loaded", port)
	}
	m, err := p.Profiles()
	if err != nil {
		k.t.Fatal(err)
	}
	return m
}

func impResult(port string) string { return schema.ResultKey(schema.TableImpairment, port) }
func flowResult(key string) string { return schema.ResultKey(schema.TableImpairmentFlow, key) }

// wantOK checks that results[key] is ok.
func wantOK(t *testing.T, results map[string]schema.Fields, key string) {
	t.Helper()
	if r := results[key]; r[schema.FieldState] != string(schema.StateOK) {
		t.Fatalf("%s: %v, want ok (all: %v)", key, r, results)
	}
}

// wantError checks that results[key] is an error whose reason has every
// one of parts and ends with keptSuffix when kept.
func wantError(t *testing.T, results map[string]schema.Fields, key string, kept bool, parts ...string) {
	t.Helper()
	r := results[key]
	if r[schema.FieldState] != string(schema.StateError) {
		t.Fatalf("%s: %v, want state error", key, r)
	}
	for _, p := range parts {
		if !strings.Contains(r[schema.FieldReason], p) {
			t.Errorf("%s: reason %q lacks %q", key, r[schema.FieldReason], p)
		}
	}
	if got := strings.HasSuffix(r[schema.FieldReason], keptSuffix); got != kept {
		t.Errorf("%s: reason %q: ends with %q: %v, want %v", key, r[schema.FieldReason], keptSuffix, got, kept)
	}
}

// TestInvalidUpdateKeepsLastGood (issue 12): loss 5 applied, then the
// typo loss 101: state error naming the field and saying the previous
// configuration stays; same program id, same profile (generation
// included: the maps were not written). A valid update applies again;
// deleting the bad key removes the impairment; a key that never parsed
// changes nothing.
func TestInvalidUpdateKeepsLastGood(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5")
	wantOK(t, k.reconcile("Ethernet0"), impResult("Ethernet0"))
	id := k.xdp("Ethernet0")
	before := k.profiles("Ethernet0")
	if id == 0 || before[""].Loss == 0 {
		t.Fatalf("loss 5: prog %d, profiles %+v", id, before)
	}

	k.set(schema.TableImpairment, "Ethernet0", "loss", "101")
	res := k.reconcile("Ethernet0")
	wantError(t, res, impResult("Ethernet0"), true, `field "loss"`, `"101"`)
	if got := res[impResult("Ethernet0")][FieldProgID]; got != fmt.Sprint(id) {
		t.Errorf("kept result: prog_id %q, want %d", got, id)
	}
	if got := k.xdp("Ethernet0"); got != id {
		t.Fatalf("after the invalid update the program is %d, want %d", got, id)
	}
	if after := k.profiles("Ethernet0"); after[""] != before[""] {
		t.Fatalf("after the invalid update the port profile is %+v, want %+v", after[""], before[""])
	}
	// Reconciled again (a resync) nothing changes either.
	wantError(t, k.reconcile("Ethernet0"), impResult("Ethernet0"), true)
	if after := k.profiles("Ethernet0"); after[""] != before[""] || k.xdp("Ethernet0") != id {
		t.Fatalf("resync changed the kept configuration: %+v", after[""])
	}

	k.set(schema.TableImpairment, "Ethernet0", "loss", "7")
	wantOK(t, k.reconcile("Ethernet0"), impResult("Ethernet0"))
	seven := k.profiles("Ethernet0")[""]
	if seven.Loss == before[""].Loss || k.xdp("Ethernet0") != id {
		t.Fatalf("loss 7 not applied in place: %+v, prog %d", seven, k.xdp("Ethernet0"))
	}
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5", "ge_p", "1")
	wantError(t, k.reconcile("Ethernet0"), impResult("Ethernet0"), true, `field "ge_p"`)
	if got := k.profiles("Ethernet0")[""]; got != seven {
		t.Fatalf("ge_p without gilbert: profile %+v, want loss 7 kept (%+v)", got, seven)
	}

	// Deleting the bad key removes the impairment.
	k.set(schema.TableImpairment, "Ethernet0")
	if res := k.reconcile("Ethernet0"); len(res) != 0 {
		t.Fatalf("after delete: results %v", res)
	}
	if got := k.xdp("Ethernet0"); got != 0 {
		t.Fatalf("after delete: program %d still attached", got)
	}
	if _, err := os.Stat(k.d.dir("Ethernet0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after delete: pin directory: %v", err)
	}
	if len(k.d.goodImp) != 0 {
		t.Fatalf("last good fields of a deleted key kept: %v", k.d.goodImp)
	}

	// Never valid: an error with nothing kept, and nothing attached.
	k.set(schema.TableImpairment, "Ethernet0", "loss", "101")
	wantError(t, k.reconcile("Ethernet0"), impResult("Ethernet0"), false, `field "loss"`)
	if got := k.xdp("Ethernet0"); got != 0 {
		t.Fatalf("a key that never parsed attached program %d", got)
	}
}

// TestInvalidFlowUpdateKeepsRule: an applied IMPAIRMENT_FLOW rule updated
// with an invalid field keeps running as it was (slot, profile), its
// result an error saying so; the port's own result stays ok; a rule that
// never parsed is left out; deleting the bad rule removes it.
func TestInvalidFlowUpdateKeepsRule(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5")
	k.set(schema.TableImpairmentFlow, "Ethernet0|a", "proto", "udp", "dport", "53", "loss", "10")
	res := k.reconcile("Ethernet0")
	wantOK(t, res, impResult("Ethernet0"))
	wantOK(t, res, flowResult("Ethernet0|a"))
	id := k.xdp("Ethernet0")
	before := k.profiles("Ethernet0")

	k.set(schema.TableImpairmentFlow, "Ethernet0|a", "proto", "udp", "dport", "99999", "loss", "10")
	k.set(schema.TableImpairmentFlow, "Ethernet0|b", "proto", "udp", "loss", "1000")
	res = k.reconcile("Ethernet0")
	wantOK(t, res, impResult("Ethernet0"))
	wantError(t, res, flowResult("Ethernet0|a"), true, `field "dport"`, `"99999"`)
	wantError(t, res, flowResult("Ethernet0|b"), false, `field "loss"`)
	after := k.profiles("Ethernet0")
	if len(after) != 2 || after["a"] != before["a"] || after[""] != before[""] || k.xdp("Ethernet0") != id {
		t.Fatalf("after invalid updates: profiles %+v prog %d, want %+v prog %d", after, k.xdp("Ethernet0"), before, id)
	}

	k.set(schema.TableImpairmentFlow, "Ethernet0|a")
	res = k.reconcile("Ethernet0")
	wantOK(t, res, impResult("Ethernet0"))
	if _, ok := res[flowResult("Ethernet0|a")]; ok {
		t.Errorf("deleted rule still has a result: %v", res)
	}
	if after := k.profiles("Ethernet0"); len(after) != 1 || after[""] != before[""] {
		t.Fatalf("after deleting the bad rule: profiles %+v", after)
	}
}

// TestFailedPlanKeepsPrevious: a port whose new plan does not compile
// (33 match shapes) keeps its maps; one whose new plan fails to apply
// gets the last plan applied back. Results: error + "the previous
// configuration stays applied".
func TestFailedPlanKeepsPrevious(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("Ethernet0", nil, "peer0")
	k.set(schema.TableImpairment, "Ethernet0", "loss", "5")
	k.set(schema.TableImpairmentFlow, "Ethernet0|a", "proto", "udp", "loss", "10")
	res := k.reconcile("Ethernet0")
	wantOK(t, res, flowResult("Ethernet0|a"))
	id := k.xdp("Ethernet0")
	before := k.profiles("Ethernet0")

	// Compile failure: 33 shapes (dst /1 .. /32, plus proto only).
	for bits := 1; bits <= 32; bits++ {
		k.set(schema.TableImpairmentFlow, fmt.Sprintf("Ethernet0|s%d", bits), "dst", fmt.Sprintf("128.0.0.0/%d", bits), "loss", "1")
	}
	res = k.reconcile("Ethernet0")
	wantError(t, res, impResult("Ethernet0"), true, "distinct match shapes")
	wantError(t, res, flowResult("Ethernet0|s7"), true, "distinct match shapes")
	if after := k.profiles("Ethernet0"); len(after) != 2 || after["a"] != before["a"] || after[""] != before[""] || k.xdp("Ethernet0") != id {
		t.Fatalf("after a plan that does not compile: profiles %+v, prog %d", after, k.xdp("Ethernet0"))
	}
	for bits := 1; bits <= 32; bits++ {
		k.set(schema.TableImpairmentFlow, fmt.Sprintf("Ethernet0|s%d", bits))
	}

	// Apply failure (injected after the new plan was written): the last
	// plan is put back.
	k.d.applyPlan = func(p *bpf.Port, plan *bpf.Plan) error {
		if err := p.Apply(plan); err != nil {
			return err
		}
		for _, r := range plan.Rules {
			if r.Name == "boom" {
				return errors.New("injected apply failure")
			}
		}
		return nil
	}
	k.set(schema.TableImpairment, "Ethernet0", "loss", "50")
	k.set(schema.TableImpairmentFlow, "Ethernet0|boom", "proto", "tcp", "loss", "20")
	res = k.reconcile("Ethernet0")
	wantError(t, res, impResult("Ethernet0"), true, "injected apply failure")
	wantError(t, res, flowResult("Ethernet0|boom"), true, "injected apply failure")
	after := k.profiles("Ethernet0")
	if len(after) != 2 || after["a"].Loss != before["a"].Loss || after[""].Loss != before[""].Loss || k.xdp("Ethernet0") != id {
		t.Fatalf("after a failed apply: profiles %+v, want loss of %+v; prog %d", after, before, k.xdp("Ethernet0"))
	}
}

// TestPinDirWithDot: a port named like a VLAN subinterface (eth1.100)
// gets its program, pinned under the encoded name; delete removes it.
func TestPinDirWithDot(t *testing.T) {
	k := newKernelDaemon(t)
	k.ns.Veth("eth1.100", nil, "peer0")
	k.set(schema.TableImpairment, "eth1.100", "loss", "5")
	wantOK(t, k.reconcile("eth1.100"), impResult("eth1.100"))
	dir := filepath.Join(k.d.cfg.BPFFS, "eth1:2e100")
	if k.d.dir("eth1.100") != dir {
		t.Fatalf("pin directory %s, want %s", k.d.dir("eth1.100"), dir)
	}
	id := k.xdp("eth1.100")
	if id == 0 || bpf.PinnedProgramID(dir) != uint32(id) {
		t.Fatalf("eth1.100: program %d, pinned link's program %d", id, bpf.PinnedProgramID(dir))
	}
	k.set(schema.TableImpairment, "eth1.100")
	if res := k.reconcile("eth1.100"); len(res) != 0 {
		t.Fatalf("after delete: results %v", res)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) || k.xdp("eth1.100") != 0 {
		t.Fatalf("after delete: pin directory %v, program %d", err, k.xdp("eth1.100"))
	}
}
