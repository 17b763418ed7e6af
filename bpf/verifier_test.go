package bpf

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
)

// TestVerifierStats loads the program with the verifier's statistics,
// logs them, and fails when verifying it takes more than a quarter of the
// kernel's 1M-instruction budget: older verifiers prune worse than the
// one on the build host (a program at 421k here was over 1M on Debian's
// 6.1), so headroom here is what keeps it loadable there.
func TestVerifierStats(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs")
	}
	spec, err := loadImpair()
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats},
	})
	if ve := (*ebpf.VerifierError)(nil); errors.As(err, &ve) {
		t.Fatalf("%+v", ve)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	m := regexp.MustCompile(`processed (\d+) insns.*`).FindStringSubmatch(coll.Programs["impair"].VerifierLog)
	if m == nil {
		t.Fatalf("no statistics in the verifier log:\n%s", coll.Programs["impair"].VerifierLog)
	}
	t.Logf("impair: %s", m[0])
	if n, _ := strconv.Atoi(m[1]); n > 250000 {
		t.Errorf("the verifier walked %d instructions, more than a quarter of its 1M limit: older kernels (Debian's 6.1) will likely reject the program", n)
	}
}
