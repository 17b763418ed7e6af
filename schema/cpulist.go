package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number a CPU list may name: the kernel's
// largest NR_CPUS (8192 CPUs). Whether a CPU exists is the daemon's check.
const MaxCPU = 8191

// cpuListAllowed describes a CPU list.
const cpuListAllowed = "a CPU list as taskset -c takes it, e.g. 0-1,3 or 0-7:2 (CPUs 0-8191)"

// ParseCPUList parses a CPU list as taskset -c and the kernel's
// *_list files write it: comma-separated CPUs N and ranges N-M, a range
// optionally with a stride N-M:S. It returns the CPUs sorted and
// deduplicated, or a problem ("" when fine). An empty list is a problem:
// a mask with no CPU is no setting.
func ParseCPUList(s string) ([]int, string) {
	if s == "" {
		return nil, "the CPU list is empty"
	}
	var cpus []int
	for _, item := range strings.Split(s, ",") {
		rng, stride, hasStride := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, ok := parseDigits(lo)
		if !ok {
			return nil, fmt.Sprintf("%q is not a CPU number or range", Clip(item))
		}
		b, step := a, 1
		if isRange {
			if b, ok = parseDigits(hi); !ok {
				return nil, fmt.Sprintf("%q is not a CPU number or range", Clip(item))
			}
			if b < a {
				return nil, fmt.Sprintf("range %q ends before it starts", Clip(item))
			}
		}
		if hasStride {
			if !isRange {
				return nil, fmt.Sprintf("%q has a stride but is not a range", Clip(item))
			}
			if step, ok = parseDigits(stride); !ok || step == 0 {
				return nil, fmt.Sprintf("%q: the stride must be a positive integer", Clip(item))
			}
		}
		if b > MaxCPU {
			return nil, fmt.Sprintf("CPU %d is beyond the kernel's limit of %d", b, MaxCPU)
		}
		for c := a; c <= b; c += step {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), ""
}

// FormatCPUList renders sorted, deduplicated CPUs in the canonical list
// form (ranges of consecutive CPUs merged): [0 1 3] → "0-1,3".
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// CPUMask renders CPUs as the hex bitmap the kernel's rps_cpus and
// smp_affinity files take: 32-bit words, most significant first, joined
// by commas; [0 1 3] → "b", [0 33] → "2,00000001".
func CPUMask(cpus []int) string {
	if len(cpus) == 0 {
		return "0"
	}
	words := make([]uint32, cpus[len(cpus)-1]/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if i == len(words)-1 {
			fmt.Fprintf(&b, "%x", words[i])
		} else {
			fmt.Fprintf(&b, ",%08x", words[i])
		}
	}
	return b.String()
}

// ParseCPUMask parses the kernel's hex bitmap form (as rps_cpus reads
// back: "00000003", "0,00000003") into sorted CPUs.
func ParseCPUMask(s string) ([]int, error) {
	words := strings.Split(strings.TrimSpace(s), ",")
	var cpus []int
	for i := range words {
		w := words[len(words)-1-i]
		n, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %q: %q is not a 32-bit hex word", Clip(s), Clip(w))
		}
		for bit := 0; bit < 32; bit++ {
			if n&(1<<bit) != 0 {
				cpus = append(cpus, i*32+bit)
			}
		}
	}
	slices.Sort(cpus)
	return cpus, nil
}
