package schema

import (
	"slices"
	"testing"
)

// The PORT_TUNING cases join the table-driven parse and error tests (and
// so the fuzz corpus).
func init() {
	okCases = append(okCases,
		okCase{TablePortTuning, "Ethernet0", nil, "Ethernet0", null},
		okCase{TablePortTuning, "e0", Fields{"rps_cpus": "3,0-1,1", "irq_cpus": "0-7:2", "rfs_flow_cnt": "0032768",
			"rps_sock_flow_entries": "32768", "napi_defer_hard_irqs": "2", "gro_flush_timeout": "200000"},
			"e0", Fields{"rps_cpus": "0-1,3", "irq_cpus": "0,2,4,6", "rfs_flow_cnt": "32768",
				"rps_sock_flow_entries": "32768", "napi_defer_hard_irqs": "2", "gro_flush_timeout": "200000"}},
		okCase{TablePortTuning, "e0", Fields{"rfs_flow_cnt": "0", "rps_sock_flow_entries": "1", "gro_flush_timeout": "1000000000",
			"napi_defer_hard_irqs": "2147483647"},
			"e0", Fields{"rfs_flow_cnt": "0", "rps_sock_flow_entries": "1", "gro_flush_timeout": "1000000000",
				"napi_defer_hard_irqs": "2147483647"}},
		okCase{TablePortTuning, "e0", Fields{"rps_cpus": "8191"}, "e0", Fields{"rps_cpus": "8191"}},
	)
	errCases = append(errCases,
		errCase{TablePortTuning, "Vlan100", nil, []string{"PORT_TUNING|Vlan100: key", "VLAN device, not a port"}},
		errCase{TablePortTuning, "e0", Fields{"rps_cpus": ""}, []string{`field "rps_cpus"`, "the CPU list is empty", "taskset -c"}},
		errCase{TablePortTuning, "e0", Fields{"rps_cpus": "1-0"}, []string{`range "1-0" ends before it starts`}},
		errCase{TablePortTuning, "e0", Fields{"rps_cpus": "0,x"}, []string{`"x" is not a CPU number or range`}},
		errCase{TablePortTuning, "e0", Fields{"irq_cpus": "8192"}, []string{`field "irq_cpus"`, "CPU 8192 is beyond the kernel's limit of 8191"}},
		errCase{TablePortTuning, "e0", Fields{"irq_cpus": "3:2"}, []string{"has a stride but is not a range"}},
		errCase{TablePortTuning, "e0", Fields{"irq_cpus": "0-3:0"}, []string{"the stride must be a positive integer"}},
		errCase{TablePortTuning, "e0", Fields{"rfs_flow_cnt": "1000"}, []string{`field "rfs_flow_cnt": "1000" is not valid`, "0 or a power of two up to 16777216"}},
		errCase{TablePortTuning, "e0", Fields{"rps_sock_flow_entries": "1073741824"}, []string{"up to 536870912"}},
		errCase{TablePortTuning, "e0", Fields{"gro_flush_timeout": "-1"}, []string{`field "gro_flush_timeout"`, "an integer 0-1000000000"}},
		errCase{TablePortTuning, "e0", Fields{"napi_defer_hard_irqs": "2147483648"}, []string{"an integer 0-2147483647"}},
	)
}

func TestCPUList(t *testing.T) {
	for _, c := range []struct {
		in, canon, mask string
	}{
		{"0", "0", "1"},
		{"0-1,3", "0-1,3", "b"},
		{"3,1,0,1", "0-1,3", "b"},
		{"0-7:2", "0,2,4,6", "55"},
		{"31", "31", "80000000"},
		{"0,32", "0,32", "1,00000001"},
		{"0-1,64", "0-1,64", "1,00000000,00000003"},
	} {
		cpus, problem := ParseCPUList(c.in)
		if problem != "" {
			t.Fatalf("ParseCPUList(%q): %s", c.in, problem)
		}
		if got := FormatCPUList(cpus); got != c.canon {
			t.Errorf("FormatCPUList(%q) = %q, want %q", c.in, got, c.canon)
		}
		if got := CPUMask(cpus); got != c.mask {
			t.Errorf("CPUMask(%q) = %q, want %q", c.in, got, c.mask)
		}
		back, err := ParseCPUMask(c.mask)
		if err != nil || !slices.Equal(back, cpus) {
			t.Errorf("ParseCPUMask(%q) = %v, %v; want %v", c.mask, back, err, cpus)
		}
	}
	// The kernel pads its read-back form.
	if cpus, err := ParseCPUMask("00000000,00000003\n"); err != nil || !slices.Equal(cpus, []int{0, 1}) {
		t.Fatalf("ParseCPUMask(padded) = %v, %v", cpus, err)
	}
	if _, err := ParseCPUMask("zz"); err == nil {
		t.Fatal("ParseCPUMask(zz) succeeded")
	}
}

func TestPortTuningKnownFields(t *testing.T) {
	if u := UnknownFields(TablePortTuning, Fields{"rps_cpu": "0"}); !slices.Equal(u, []string{"rps_cpu"}) {
		t.Fatalf("UnknownFields = %v", u)
	}
	w := FieldsWarning(TablePortTuning, Fields{"rps_cpu": "0"})
	if want := `unknown field "rps_cpu" ignored (did you mean "rps_cpus"?)`; len(w) < len(want) || w[:len(want)] != want {
		t.Fatalf("warning = %q", w)
	}
}

// FuzzParseCPUList: whatever parses renders canonically, and the
// canonical form and the kernel mask both give the same CPUs back.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0", "0-1,3", "0-7:2", "8191", "1-0", ",", "0-", "0-3:0", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, problem := ParseCPUList(s)
		if problem != "" {
			return
		}
		canon := FormatCPUList(cpus)
		again, p2 := ParseCPUList(canon)
		if p2 != "" || !slices.Equal(again, cpus) {
			t.Fatalf("%q -> %q -> %v %q", s, canon, again, p2)
		}
		back, err := ParseCPUMask(CPUMask(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("%q: mask %q gives %v, %v", s, CPUMask(cpus), back, err)
		}
	})
}

func FuzzParsePortTuning(f *testing.F) { fuzzTable(f, TablePortTuning) }
