package orchagent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/schema"
)

// The kernel files behind PORT_TUNING (read and written through nsfs, in
// the port's namespace; no shell, no ip/tc).
const (
	sysNet        = "/sys/class/net/"
	cpuOnlinePath = "/sys/devices/system/cpu/online"
	sockFlowPath  = "/proc/sys/net/core/rps_sock_flow_entries"
	interrupts    = "/proc/interrupts"
)

// tuneFile is one kernel file a field sets and the value it wants.
type tuneFile struct {
	field string
	path  string
	want  string
}

// fieldOfPath names the PORT_TUNING field a written file belongs to.
func fieldOfPath(path string) string {
	switch {
	case strings.HasSuffix(path, "/rps_cpus"):
		return schema.FieldRPSCPUs
	case strings.HasSuffix(path, "/rps_flow_cnt"):
		return schema.FieldRFSFlowCnt
	case strings.HasSuffix(path, "/smp_affinity_list"):
		return schema.FieldIRQCPUs
	case strings.HasSuffix(path, "/napi_defer_hard_irqs"):
		return schema.FieldNapiDeferHardIRQs
	case strings.HasSuffix(path, "/gro_flush_timeout"):
		return schema.FieldGROFlushTimeout
	}
	return ""
}

// sameValue compares a file's content with the wanted value the way the
// kernel renders it (masks padded to 32-bit words, lists canonical).
func sameValue(path, cur, want string) bool {
	switch fieldOfPath(path) {
	case schema.FieldRPSCPUs:
		a, err1 := schema.ParseCPUMask(cur)
		b, err2 := schema.ParseCPUMask(want)
		return err1 == nil && err2 == nil && fmt.Sprint(a) == fmt.Sprint(b)
	case schema.FieldIRQCPUs:
		a, p1 := schema.ParseCPUList(cur)
		b, p2 := schema.ParseCPUList(want)
		return p1 == "" && p2 == "" && fmt.Sprint(a) == fmt.Sprint(b)
	}
	return strings.TrimSpace(cur) == want
}

// rxQueues lists the port's receive queues (rx-0, rx-1, ...).
// Equivalent to: ls /sys/class/net/PORT/queues.
func rxQueues(fs *nsfs.FS, port string) ([]string, error) {
	names, err := fs.ReadDir(sysNet + port + "/queues")
	if err != nil {
		return nil, err
	}
	var rx []string
	for _, n := range names {
		if strings.HasPrefix(n, "rx-") {
			rx = append(rx, n)
		}
	}
	return rx, nil
}

// portIRQs finds the port's interrupts: the MSI vectors of its device
// (/sys/class/net/PORT/device/msi_irqs), else the /proc/interrupts lines
// named after the port or its device (virtio2-input.0). A port without a
// device (veth, bridge, bond...) has none; why is the second result.
func portIRQs(fs *nsfs.FS, port string) ([]int, string, error) {
	dev := sysNet + port + "/device"
	if !fs.Exists(dev) {
		return nil, port + " is a virtual device without IRQs of its own (veth: the receive work runs in the sender's softirq)", nil
	}
	if names, err := fs.ReadDir(dev + "/msi_irqs"); err == nil && len(names) > 0 {
		var irqs []int
		for _, n := range names {
			if v, err := strconv.Atoi(n); err == nil {
				irqs = append(irqs, v)
			}
		}
		return irqs, "", nil
	}
	devName, _ := fs.Readlink(dev)
	if i := strings.LastIndexByte(devName, '/'); i >= 0 {
		devName = devName[i+1:]
	}
	text, err := fs.ReadFile(interrupts)
	if err != nil {
		return nil, "", err
	}
	var irqs []int
	for _, line := range strings.Split(text, "\n") {
		num, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		name := f[len(f)-1]
		if irqNamed(name, port) || (devName != "" && irqNamed(name, devName) && !strings.HasSuffix(name, "-config")) {
			irqs = append(irqs, n)
		}
	}
	if len(irqs) == 0 {
		return nil, "found no IRQs of " + port + " (no msi_irqs, no line of /proc/interrupts names it)", nil
	}
	return irqs, "", nil
}

// irqNamed: an interrupt name is the device's own (eth0, eth0-rx-0,
// eth0-TxRx-3, virtio2-input.0) — not a longer name sharing its prefix.
func irqNamed(name, dev string) bool {
	if !strings.HasPrefix(name, dev) {
		return false
	}
	rest := name[len(dev):]
	return rest == "" || rest[0] == '-' || rest[0] == '@' || rest[0] == ':'
}

// onlineCPUs reads the CPUs that exist and run.
// Equivalent to: cat /sys/devices/system/cpu/online.
func onlineCPUs(fs *nsfs.FS) ([]int, error) {
	s, err := fs.ReadFile(cpuOnlinePath)
	if err != nil {
		return nil, err
	}
	cpus, problem := schema.ParseCPUList(strings.TrimSpace(s))
	if problem != "" {
		return nil, fmt.Errorf("%s: %s", cpuOnlinePath, problem)
	}
	return cpus, nil
}
