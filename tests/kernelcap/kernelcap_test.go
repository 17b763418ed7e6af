package kernelcap

import (
	"os"
	"testing"
)

// TestProbe runs every probe; on any kernel it must answer without
// panicking, and a "no" must carry a reason. Inside the VM every feature
// must be present: that is what the VM exists for.
func TestProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (probes create devices in a throwaway network namespace)")
	}
	for _, f := range All {
		ok, reason := Has(f)
		t.Logf("%s: ok=%v reason=%q", f, ok, reason)
		if !ok && reason == "" {
			t.Errorf("%s: missing without a reason", f)
		}
		if InVM() && !ok {
			t.Errorf("%s missing inside the VM: %s", f, reason)
		}
		ok2, reason2 := Has(f)
		if ok2 != ok || reason2 != reason {
			t.Errorf("%s: second answer (%v, %q) differs from cached first (%v, %q)", f, ok2, reason2, ok, reason)
		}
	}
}

// TestProbeLeavesNoTrace checks the probes do not create devices in the
// caller's namespace.
func TestProbeLeavesNoTrace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, f := range All {
		Has(f)
	}
	for _, name := range []string{"kcap0", "kcapv0", "kcapv1", "kcapbr0"} {
		if _, err := os.Stat("/sys/class/net/" + name); err == nil {
			t.Errorf("probe device %s leaked into the test's namespace", name)
		}
	}
}

func TestUnknownFeature(t *testing.T) {
	if ok, reason := Has(Feature("warp drive")); ok || reason == "" {
		t.Errorf("unknown feature: got (%v, %q), want false with a reason", ok, reason)
	}
}
