package rxtune

import (
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-net/switchyard/internal/nsfs"
	"github.com/switchyard-net/switchyard/schema"
)

// FieldRxQueues is the mirror's count of the port's RX queues.
const FieldRxQueues = "rx_queues"

// MirrorFields are the fields Read returns (syncd's in
// PORT_TUNING_TABLE).
var MirrorFields = []string{FieldRxQueues, schema.FieldRPSCPUs, schema.FieldRFSFlowCnt,
	schema.FieldRPSSockFlowEntries, schema.FieldIRQCPUs, schema.FieldNapiDeferHardIRQs, schema.FieldGROFlushTimeout}

// NoCPUs is how Read shows an empty CPU mask (RPS off).
const NoCPUs = "none"

// Read returns a port's receive-path settings as the kernel holds them,
// in PORT_TUNING's forms: rps_cpus and rfs_flow_cnt as one value when
// every RX queue agrees, else "rx-0:… rx-1:…"; irq_cpus likewise over the
// port's IRQs (absent without IRQs); rps_sock_flow_entries from host
// (absent where it cannot be read). ok is false when the port has no
// sysfs directory (gone).
func Read(fs, host *nsfs.FS, port string) (f schema.Fields, ok bool) {
	dir := SysNet + port
	qs, err := RxQueues(fs, port)
	if err != nil {
		return nil, false
	}
	f = schema.Fields{FieldRxQueues: strconv.Itoa(len(qs))}
	var rps, flow []string
	for _, q := range qs {
		if v, err := fs.ReadFile(dir + "/queues/" + q + "/rps_cpus"); err == nil {
			if cpus, err := schema.ParseCPUMask(v); err == nil {
				rps = append(rps, q+":"+cpuList(cpus))
			}
		}
		if v, err := fs.ReadFile(dir + "/queues/" + q + "/rps_flow_cnt"); err == nil {
			flow = append(flow, q+":"+strings.TrimSpace(v))
		}
	}
	put(f, schema.FieldRPSCPUs, rps)
	put(f, schema.FieldRFSFlowCnt, flow)
	if irqs, _, err := PortIRQs(fs, port); err == nil && len(irqs) > 0 {
		var aff []string
		for _, n := range irqs {
			if v, err := fs.ReadFile(IRQAffinityPath(n)); err == nil {
				aff = append(aff, strconv.Itoa(n)+":"+strings.TrimSpace(v))
			}
		}
		put(f, schema.FieldIRQCPUs, aff)
	}
	for _, name := range []string{schema.FieldNapiDeferHardIRQs, schema.FieldGROFlushTimeout} {
		if v, err := fs.ReadFile(dir + "/" + name); err == nil {
			f[name] = strings.TrimSpace(v)
		}
	}
	if host != nil {
		if v, err := host.ReadFile(SockFlowPath); err == nil {
			f[schema.FieldRPSSockFlowEntries] = strings.TrimSpace(v)
		}
	}
	return f, true
}

func cpuList(cpus []int) string {
	if len(cpus) == 0 {
		return NoCPUs
	}
	return schema.FormatCPUList(cpus)
}

// put stores "owner:value" items as one value when all agree, else as
// the items joined by spaces.
func put(f schema.Fields, field string, items []string) {
	if len(items) == 0 {
		return
	}
	vals := make([]string, len(items))
	for i, it := range items {
		_, vals[i], _ = strings.Cut(it, ":")
	}
	if len(slices.Compact(slices.Clone(vals))) == 1 {
		f[field] = vals[0]
		return
	}
	f[field] = strings.Join(items, " ")
}
