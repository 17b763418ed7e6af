package orchagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/netlinkmgr"
	"github.com/switchyard-net/switchyard/schema"
)

// tuneRig is a rig whose Orch has PORT_TUNING over a fake sysfs/procfs
// tree (nsfs Root) with port e0 (2 RX queues, one MSI IRQ) in the fake
// kernel, and a state dir.
type tuneRig struct {
	*rig
	root, state string
}

func newTuneRig(t *testing.T) *tuneRig {
	t.Helper()
	root, state := t.TempDir(), t.TempDir()
	for p, c := range map[string]string{
		"/sys/devices/system/cpu/online":             "0-3\n",
		"/sys/class/net/e0/queues/rx-0/rps_cpus":     "0\n",
		"/sys/class/net/e0/queues/rx-1/rps_cpus":     "0\n",
		"/sys/class/net/e0/queues/rx-0/rps_flow_cnt": "0\n",
		"/sys/class/net/e0/queues/rx-1/rps_flow_cnt": "0\n",
		"/sys/class/net/e0/gro_flush_timeout":        "0\n",
		"/sys/class/net/e0/device/msi_irqs/40":       "msix",
		"/proc/irq/40/smp_affinity_list":             "0-3\n",
		"/proc/sys/net/core/rps_sock_flow_entries":   "0\n",
	} {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k := netlinkmgr.NewFake()
	if err := k.Links().Add(netlinkmgr.LinkInfo{Name: "e0", Kind: "dummy"}); err != nil {
		t.Fatal(err)
	}
	r := &tuneRig{root: root, state: state}
	r.rig = newTuningRig(t, k, root, state)
	return r
}

// newTuningRig is newRig with a Tuning over the tree at root.
func newTuningRig(t *testing.T, k *netlinkmgr.Fake, root, state string) *rig {
	t.Helper()
	fs, err := nsfs.Open(nsfs.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	tu, err := NewTuning(fs, fs, state, "")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, k: k, sink: &memSink{m: map[string]schema.Result{}}, errs: map[string]error{}, batched: true}
	r.o = New(Options{Kernel: k, Results: r.sink, Tuning: tu})
	if err := r.o.Prime(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *tuneRig) file(p string) string {
	b, err := os.ReadFile(filepath.Join(r.root, p))
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (r *tuneRig) result() schema.Result {
	return r.sink.m[schema.ResultKey(schema.TablePortTuning, "e0")]
}

func TestTuningApplyRestoreRestart(t *testing.T) {
	r := newTuneRig(t)
	r.set(schema.TablePortTuning, "e0", "rps_cpus", "1-2", "rfs_flow_cnt", "256", "irq_cpus", "3",
		"rps_sock_flow_entries", "1024", "gro_flush_timeout", "5000")
	r.settle()
	if res := r.result(); res.State != schema.StateOK || res.Warning != "" {
		t.Fatalf("result = %+v", res)
	}
	for p, want := range map[string]string{
		"/sys/class/net/e0/queues/rx-0/rps_cpus": "6", "/sys/class/net/e0/queues/rx-1/rps_cpus": "6",
		"/sys/class/net/e0/queues/rx-1/rps_flow_cnt": "256", "/proc/irq/40/smp_affinity_list": "3",
		"/proc/sys/net/core/rps_sock_flow_entries": "1024", "/sys/class/net/e0/gro_flush_timeout": "5000",
	} {
		if got := r.file(p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}

	// Level-triggered: reconciling again writes nothing (the fake tree's
	// files would be rewritten with the same content; compare mtimes).
	st, _ := os.Stat(filepath.Join(r.root, "/proc/irq/40/smp_affinity_list"))
	r.o.enqueue(schema.ConfigKey(schema.TablePortTuning, "e0"))
	r.settle()
	if st2, _ := os.Stat(filepath.Join(r.root, "/proc/irq/40/smp_affinity_list")); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("a second reconcile rewrote an unchanged file")
	}

	// A restart: a new Orch over the same state dir restores what the
	// first one replaced.
	r2 := newTuningRig(t, r.k, r.root, r.state)
	r2.set(schema.TablePortTuning, "e0", "rps_cpus", "1-2")
	r2.settle()
	for p, want := range map[string]string{
		"/sys/class/net/e0/queues/rx-0/rps_cpus": "6", "/sys/class/net/e0/queues/rx-1/rps_flow_cnt": "0",
		"/proc/irq/40/smp_affinity_list": "0-3", "/proc/sys/net/core/rps_sock_flow_entries": "0",
		"/sys/class/net/e0/gro_flush_timeout": "0",
	} {
		if got := (&tuneRig{rig: r2, root: r.root}).file(p); got != want {
			t.Errorf("after restart with fewer fields: %s = %q, want %q", p, got, want)
		}
	}
	r2.del(schema.TablePortTuning, "e0")
	r2.settle()
	if got := r.file("/sys/class/net/e0/queues/rx-0/rps_cpus"); got != "0" {
		t.Errorf("after DEL rps_cpus = %q, want the original 0", got)
	}
	if _, err := os.Stat(filepath.Join(r.state, "orchagent", "port_tuning-default.json")); !os.IsNotExist(err) {
		t.Errorf("state file left after DEL: %v", err)
	}
}

func TestTuningErrors(t *testing.T) {
	r := newTuneRig(t)
	// A missing CPU: error naming it, nothing written.
	r.set(schema.TablePortTuning, "e0", "rps_cpus", "1", "irq_cpus", "0,9")
	r.settle()
	if res := r.result(); res.State != schema.StateError ||
		!strings.Contains(res.Reason, `field "irq_cpus": CPU 9 does not exist: this host's CPUs are 0-3`) {
		t.Fatalf("result = %+v", res)
	}
	if got := r.file("/sys/class/net/e0/queues/rx-0/rps_cpus"); got != "0" {
		t.Errorf("rejected entry wrote rps_cpus %q", got)
	}
	// A kernel without napi_defer_hard_irqs: terminal error naming the
	// file, and the entry's other fields (the host-wide one too) unwritten.
	r.set(schema.TablePortTuning, "e0", "napi_defer_hard_irqs", "2", "rps_cpus", "1", "rps_sock_flow_entries", "4096")
	r.settle()
	if res := r.result(); res.State != schema.StateError || !strings.Contains(res.Reason, "napi_defer_hard_irqs") {
		t.Fatalf("result = %+v", res)
	}
	if a, b := r.file("/sys/class/net/e0/queues/rx-0/rps_cpus"), r.file("/proc/sys/net/core/rps_sock_flow_entries"); a != "0" || b != "0" {
		t.Errorf("entry with a missing file wrote rps_cpus %q, rps_sock_flow_entries %q", a, b)
	}
	// A port that does not exist waits for it.
	r.set(schema.TablePortTuning, "e9", "rps_cpus", "1")
	r.settle()
	if res := r.sink.m[schema.ResultKey(schema.TablePortTuning, "e9")]; res.State != schema.StatePending ||
		res.Reason != "waiting for netdev e9" {
		t.Fatalf("e9 result = %+v", res)
	}
	// Without sysfs access every key says why.
	o := New(Options{Kernel: r.k, Results: r.sink, Tuning: &Tuning{unavailable: os.ErrPermission}})
	o.SetConfig(schema.TablePortTuning, "e0", fields("rps_cpus", "1"))
	if out := o.applyTuning("e0", fields("rps_cpus", "1")); out.res.State != schema.StateError ||
		!strings.Contains(out.res.Reason, "not available in this orchagent: permission denied") {
		t.Fatalf("unavailable: %+v", out.res)
	}
}

// TestTuningStoreOtherBoot: originals saved in another boot are ignored
// (the devices and values they describe are gone).
func TestTuningStoreOtherBoot(t *testing.T) {
	dir := t.TempDir()
	st, err := openTuningStore(dir, "ns1")
	if err != nil {
		t.Fatal(err)
	}
	st.data.Ports["e0"] = &savedPort{Ifindex: 3, Files: map[string]string{"/sys/class/net/e0/gro_flush_timeout": "0"}}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}
	again, err := openTuningStore(dir, "ns1")
	if err != nil || len(again.data.Ports) != 1 {
		t.Fatalf("same boot: %v, %v", again.data.Ports, err)
	}
	b, _ := os.ReadFile(st.path)
	os.WriteFile(st.path, []byte(strings.Replace(string(b), bootID(), "another-boot", 1)), 0o644)
	other, err := openTuningStore(dir, "ns1")
	if err != nil || len(other.data.Ports) != 0 {
		t.Fatalf("another boot's originals kept: %v, %v", other.data.Ports, err)
	}
}
