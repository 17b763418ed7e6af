package rxtune

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-net/switchyard/internal/nsfs"
)

// fakeTree writes files (path → content; "->target" makes a symlink)
// under a temp root and returns an FS over it.
func fakeTree(t *testing.T, files map[string]string) *nsfs.FS {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		var err error
		if target, ok := strings.CutPrefix(c, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(c), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fs, err := nsfs.Open(nsfs.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

const procInterrupts = `           CPU0       CPU1
 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0       8347 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:       7198          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 40:          0          0 PCI-MSIX-0000:00:04.0   1-edge      virtio21-input.0
 50:          1          0 IR-PCI-MSI 1-edge      eth1-TxRx-0
 51:          1          0 IR-PCI-MSI 2-edge      eth1-TxRx-1
 52:          1          0 IR-PCI-MSI 3-edge      eth10-TxRx-0
NMI:          0          0   Non-maskable Interrupts
`

func TestPortIRQs(t *testing.T) {
	fs := fakeTree(t, map[string]string{
		"/sys/class/net/veth0/mtu":                  "1500",
		"/sys/class/net/nic0/device/msi_irqs/120":   "msix",
		"/sys/class/net/nic0/device/msi_irqs/121":   "msix",
		"/sys/class/net/eth0/device":                "->../../../devices/virtio2",
		"/sys/devices/virtio2/vendor":               "0x1af4",
		"/sys/class/net/eth1/device/vendor":         "0x8086",
		"/sys/class/net/lonely/device/vendor":       "0x8086",
		"/proc/Interrupts":                          procInterrupts,
		"/sys/devices/system/cpu/online":            "0-1,4\n",
		"/sys/class/net/veth0/queues/rx-0/rps_cpus": "0",
		"/sys/class/net/veth0/queues/rx-1/rps_cpus": "0",
		"/sys/class/net/veth0/queues/tx-0/xps_cpus": "0",
	})
	for _, c := range []struct {
		port string
		irqs []int
		why  string
	}{
		{"veth0", nil, "veth0 is a virtual device without IRQs of its own"},
		{"nic0", []int{120, 121}, ""}, // MSI vectors of the device
		{"eth0", []int{38, 39}, ""},   // virtio: by the device's name, not -config, not virtio21
		{"eth1", []int{50, 51}, ""},   // by the port's name, not eth10
		{"lonely", nil, "found no IRQs of lonely"},
	} {
		irqs, why, err := PortIRQs(fs, c.port)
		if err != nil || !slices.Equal(irqs, c.irqs) || !strings.Contains(why, c.why) || (c.why == "") != (why == "") {
			t.Errorf("PortIRQs(%s) = %v, %q, %v; want %v, %q", c.port, irqs, why, err, c.irqs, c.why)
		}
	}
	if cpus, err := OnlineCPUs(fs); err != nil || !slices.Equal(cpus, []int{0, 1, 4}) {
		t.Errorf("OnlineCPUs = %v, %v", cpus, err)
	}
	if qs, err := RxQueues(fs, "veth0"); err != nil || !slices.Equal(qs, []string{"rx-0", "rx-1"}) {
		t.Errorf("RxQueues = %v, %v", qs, err)
	}
}

func TestSameValue(t *testing.T) {
	for _, c := range []struct {
		path, cur, want string
		same            bool
	}{
		{"/x/rps_cpus", "00000000,00000003", "3", true},
		{"/x/rps_cpus", "00000001", "3", false},
		{"/proc/irq/5/smp_affinity_list", "0-1", "0,1", true},
		{"/x/rps_flow_cnt", "2048", "2048", true},
		{"/x/gro_flush_timeout", "0", "1000", false},
	} {
		if got := SameValue(c.path, c.cur, c.want); got != c.same {
			t.Errorf("SameValue(%s, %q, %q) = %v", c.path, c.cur, c.want, got)
		}
	}
}

func TestRead(t *testing.T) {
	fs := fakeTree(t, map[string]string{
		"/sys/class/net/p/queues/rx-0/rps_cpus":     "00000003\n",
		"/sys/class/net/p/queues/rx-0/rps_flow_cnt": "2048\n",
		"/sys/class/net/p/queues/rx-1/rps_cpus":     "00000000,00000003\n",
		"/sys/class/net/p/queues/rx-1/rps_flow_cnt": "0\n",
		"/sys/class/net/p/napi_defer_hard_irqs":     "2\n",
		"/sys/class/net/p/gro_flush_timeout":        "0\n",
		"/sys/class/net/p/device/msi_irqs/7":        "msix",
		"/proc/irq/7/smp_affinity_list":             "1\n",
		"/sys/class/net/q/queues/rx-0/rps_cpus":     "0\n",
		"/proc/sys/net/core/rps_sock_flow_entries":  "32768\n",
	})
	f, ok := Read(fs, fs, "p")
	want := map[string]string{"rx_queues": "2", "rps_cpus": "0-1", "rfs_flow_cnt": "rx-0:2048 rx-1:0", "irq_cpus": "1",
		"napi_defer_hard_irqs": "2", "gro_flush_timeout": "0", "rps_sock_flow_entries": "32768"}
	if !ok || !maps.Equal(f, want) {
		t.Fatalf("Read(p) = %v, %v\nwant %v", f, ok, want)
	}
	if f, _ := Read(fs, nil, "q"); f["rps_cpus"] != NoCPUs || f["rx_queues"] != "1" {
		t.Fatalf("Read(q) = %v", f)
	}
	if _, ok := Read(fs, nil, "gone"); ok {
		t.Fatal("Read of a missing port succeeded")
	}
}
