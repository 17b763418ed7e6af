package schema

import (
	"math/bits"
	"strconv"
)

// TablePortTuning is switchyard's own receive-path tuning table (SONiC has
// none: docs/tuning.md says why).
const TablePortTuning = "PORT_TUNING"

// StatePortTuningTable is the STATE_DB table of PORT_TUNING results
// (orchagent) and of the values read back from the kernel (syncd).
const StatePortTuningTable = "PORT_TUNING_TABLE"

// PORT_TUNING field names (the kernel's file names where there is one).
const (
	FieldRPSCPUs            = "rps_cpus"              // every RX queue's rps_cpus, as a CPU list
	FieldRFSFlowCnt         = "rfs_flow_cnt"          // every RX queue's rps_flow_cnt
	FieldRPSSockFlowEntries = "rps_sock_flow_entries" // net.core.rps_sock_flow_entries (host-wide)
	FieldIRQCPUs            = "irq_cpus"              // smp_affinity_list of the port's IRQs
	FieldNapiDeferHardIRQs  = "napi_defer_hard_irqs"  // /sys/class/net/<port>/napi_defer_hard_irqs
	FieldGROFlushTimeout    = "gro_flush_timeout"     // /sys/class/net/<port>/gro_flush_timeout, ns
)

// PortTuningFields lists the PORT_TUNING fields in the order they are
// applied and shown.
var PortTuningFields = []string{FieldRPSCPUs, FieldRFSFlowCnt, FieldRPSSockFlowEntries, FieldIRQCPUs,
	FieldNapiDeferHardIRQs, FieldGROFlushTimeout}

// Limits of the PORT_TUNING numbers. The kernel rounds the two flow
// table sizes up to a power of two; switchyard asks for one, so what is
// read back is what was configured.
const (
	MaxRFSFlowCnt         = 1 << 24 // per RX queue: 128 MiB of flow table
	MaxRPSSockFlowEntries = 1 << 29 // the kernel's own limit
	MaxNapiDeferHardIRQs  = 1<<31 - 1
	MaxGROFlushTimeout    = 1_000_000_000 // 1 s in ns; longer would stall the queue
)

// PortTuning is a PORT_TUNING entry. nil fields are not managed (the
// kernel's value stays, or the original comes back when a field goes).
type PortTuning struct {
	Port               string
	RPSCPUs            []int // sorted CPUs
	RFSFlowCnt         *int
	RPSSockFlowEntries *int
	IRQCPUs            []int // sorted CPUs
	NapiDeferHardIRQs  *int
	GROFlushTimeout    *int
}

func init() {
	RegisterTable(TablePortTuning, func(k string, f Fields) (Record, error) { return wrap(ParsePortTuning(k, f)) })
}

// ParsePortTuning parses a PORT_TUNING entry: key a port name, fields
// rps_cpus and irq_cpus (CPU lists, ParseCPUList), rfs_flow_cnt and
// rps_sock_flow_entries (0 or a power of two), napi_defer_hard_irqs and
// gro_flush_timeout (ns). Whether the CPUs exist is checked where they
// are applied.
func ParsePortTuning(key string, f Fields) (PortTuning, error) {
	const t = TablePortTuning
	if p := portProblem(key); p != "" {
		return PortTuning{}, keyError(t, key, p, ifnameAllowed)
	}
	pt := PortTuning{Port: key}
	var err error
	if pt.RPSCPUs, err = optCPUList(key, f, FieldRPSCPUs); err != nil {
		return PortTuning{}, err
	}
	if pt.IRQCPUs, err = optCPUList(key, f, FieldIRQCPUs); err != nil {
		return PortTuning{}, err
	}
	if pt.RFSFlowCnt, err = optPow2(key, f, FieldRFSFlowCnt, MaxRFSFlowCnt); err != nil {
		return PortTuning{}, err
	}
	if pt.RPSSockFlowEntries, err = optPow2(key, f, FieldRPSSockFlowEntries, MaxRPSSockFlowEntries); err != nil {
		return PortTuning{}, err
	}
	if pt.NapiDeferHardIRQs, err = optBig(key, f, FieldNapiDeferHardIRQs, MaxNapiDeferHardIRQs); err != nil {
		return PortTuning{}, err
	}
	if pt.GROFlushTimeout, err = optBig(key, f, FieldGROFlushTimeout, MaxGROFlushTimeout); err != nil {
		return PortTuning{}, err
	}
	return pt, nil
}

func optCPUList(key string, f Fields, field string) ([]int, error) {
	v, ok := f[field]
	if !ok {
		return nil, nil
	}
	cpus, problem := ParseCPUList(v)
	if problem != "" {
		return nil, fieldError(TablePortTuning, key, field, v, problem, cpuListAllowed)
	}
	return cpus, nil
}

// optPow2 parses 0 or a power of two up to hi.
func optPow2(key string, f Fields, field string, hi int) (*int, error) {
	v, ok := f[field]
	if !ok {
		return nil, nil
	}
	allowed := "0 or a power of two up to " + strconv.Itoa(hi) + " (the kernel rounds up to one)"
	n, ok := parseDigits(v)
	if !ok || n > hi || (n != 0 && bits.OnesCount(uint(n)) != 1) {
		return nil, valueError(TablePortTuning, key, field, v, allowed)
	}
	return &n, nil
}

// optBig parses an integer 0-hi (up to 10 digits).
func optBig(key string, f Fields, field string, hi int) (*int, error) {
	v, ok := f[field]
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil || n > uint64(hi) || v[0] == '+' {
		return nil, valueError(TablePortTuning, key, field, v, "an integer 0-"+strconv.Itoa(hi))
	}
	m := int(n)
	return &m, nil
}

// Table returns "PORT_TUNING".
func (p PortTuning) Table() string { return TablePortTuning }

// Key returns the port name.
func (p PortTuning) Key() string { return p.Port }

// Fields renders the managed fields; CPU lists in canonical form.
func (p PortTuning) Fields() Fields {
	f := Fields{}
	if p.RPSCPUs != nil {
		f[FieldRPSCPUs] = FormatCPUList(p.RPSCPUs)
	}
	if p.IRQCPUs != nil {
		f[FieldIRQCPUs] = FormatCPUList(p.IRQCPUs)
	}
	putInt(f, FieldRFSFlowCnt, p.RFSFlowCnt)
	putInt(f, FieldRPSSockFlowEntries, p.RPSSockFlowEntries)
	putInt(f, FieldNapiDeferHardIRQs, p.NapiDeferHardIRQs)
	putInt(f, FieldGROFlushTimeout, p.GROFlushTimeout)
	return orNull(f)
}
