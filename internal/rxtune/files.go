// Package rxtune knows the kernel files behind PORT_TUNING: a port's RX
// queues, its IRQs, the CPUs that exist, how a value reads back. orchagent
// writes them (PORT_TUNING), syncd reads them (PORT_TUNING_TABLE); the
// files are reached through internal/nsfs, in the port's namespace.
package rxtune

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/schema"
)

// The kernel files behind PORT_TUNING (read and written through nsfs, in
// the port's namespace; no shell, no ip/tc). SockFlowPath is host-wide.
const (
	SysNet        = "/sys/class/net/"
	CPUOnlinePath = "/sys/devices/system/cpu/online"
	SockFlowPath  = "/proc/sys/net/core/rps_sock_flow_entries"
	Interrupts    = "/proc/Interrupts"
)

// File is one kernel file a field sets and the value it wants.
type File struct {
	Field string
	Path  string
	Want  string
}

// FieldOfPath names the PORT_TUNING field a written file belongs to.
func FieldOfPath(path string) string {
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

// SameValue compares a file's content with the wanted value the way the
// kernel renders it (masks padded to 32-bit words, lists canonical).
func SameValue(path, cur, want string) bool {
	switch FieldOfPath(path) {
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

// RxQueues lists the port's receive queues (rx-0, rx-1, ...).
// Equivalent to: ls /sys/class/net/PORT/queues.
func RxQueues(fs *nsfs.FS, port string) ([]string, error) {
	names, err := fs.ReadDir(SysNet + port + "/queues")
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

// PortIRQs finds the port's Interrupts: the MSI vectors of its device
// (/sys/class/net/PORT/device/msi_irqs), else the /proc/Interrupts lines
// named after the port or its device (virtio2-input.0). A port without a
// device (veth, bridge, bond...) has none; why is the second result.
func PortIRQs(fs *nsfs.FS, port string) ([]int, string, error) {
	dev := SysNet + port + "/device"
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
	text, err := fs.ReadFile(Interrupts)
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
		return nil, "found no IRQs of " + port + " (no msi_irqs, no line of /proc/Interrupts names it)", nil
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

// OnlineCPUs reads the CPUs that exist and run.
// Equivalent to: cat /sys/devices/system/cpu/online.
func OnlineCPUs(fs *nsfs.FS) ([]int, error) {
	s, err := fs.ReadFile(CPUOnlinePath)
	if err != nil {
		return nil, err
	}
	cpus, problem := schema.ParseCPUList(strings.TrimSpace(s))
	if problem != "" {
		return nil, fmt.Errorf("%s: %s", CPUOnlinePath, problem)
	}
	return cpus, nil
}

// Targets lists the files the entry sets and their values, and a
// warning when irq_cpus finds no IRQ to set.
func Targets(fs *nsfs.FS, p schema.PortTuning) ([]File, string, error) {
	var files []File
	dir := SysNet + p.Port
	if p.RPSCPUs != nil || p.RFSFlowCnt != nil {
		qs, err := RxQueues(fs, p.Port)
		if err != nil {
			return nil, "", err
		}
		for _, q := range qs {
			if p.RPSCPUs != nil {
				files = append(files, File{Field: schema.FieldRPSCPUs, Path: dir + "/queues/" + q + "/rps_cpus", Want: schema.CPUMask(p.RPSCPUs)})
			}
			if p.RFSFlowCnt != nil {
				files = append(files, File{Field: schema.FieldRFSFlowCnt, Path: dir + "/queues/" + q + "/rps_flow_cnt", Want: strconv.Itoa(*p.RFSFlowCnt)})
			}
		}
	}
	var warning string
	if p.IRQCPUs != nil {
		irqs, why, err := PortIRQs(fs, p.Port)
		if err != nil {
			return nil, "", err
		}
		if len(irqs) == 0 {
			warning = "irq_cpus not applied: " + why
		}
		for _, n := range irqs {
			files = append(files, File{Field: schema.FieldIRQCPUs, Path: IRQAffinityPath(n), Want: schema.FormatCPUList(p.IRQCPUs)})
		}
	}
	for _, d := range []struct {
		field string
		v     *int
	}{{schema.FieldNapiDeferHardIRQs, p.NapiDeferHardIRQs}, {schema.FieldGROFlushTimeout, p.GROFlushTimeout}} {
		if d.v == nil {
			continue
		}
		path := dir + "/" + d.field
		if !fs.Exists(path) {
			return nil, "", fmt.Errorf("field %q: the kernel has no %s (Linux 5.10 or later has it)", d.field, path)
		}
		files = append(files, File{Field: d.field, Path: path, Want: strconv.Itoa(*d.v)})
	}
	return files, warning, nil
}

// IRQAffinityPath is the affinity file of IRQ n (host-wide: /proc/irq is
// not per namespace).
func IRQAffinityPath(n int) string { return "/proc/irq/" + strconv.Itoa(n) + "/smp_affinity_list" }
