package edte2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-net/switchyard/impaird/edt"
)

// TestMeasureEDTvsNetem is the measurement behind docs/edt.md, not a
// pass/fail test: it asserts nothing about the figures it prints (the
// VM's timing decides them; TestEDTDelay asserts the delay bounds), only
// that the measurement runs. 50 ms delay with
// EDT and with netem in the same VM, at increasing packet rates, the
// delay error's median and p99 for each. Opt in with
// SWITCHYARD_EDT_MEASURE=1:
//
//	go test -c -o /tmp/edte2e.test ./tests/edte2e
//	SWITCHYARD_EDT_MEASURE=1 tests/vm/vmexec --timeout 600 /tmp/edte2e.test -test.run TestMeasureEDTvsNetem -test.v
func TestMeasureEDTvsNetem(t *testing.T) {
	if os.Getenv("SWITCHYARD_EDT_MEASURE") != "1" {
		t.Skip("a measurement for docs/edt.md: set SWITCHYARD_EDT_MEASURE=1 (in the VM)")
	}
	requireKernel(t)
	const delay = 50 * time.Millisecond
	p := newPair(t)
	in := installer(t, p)
	var rows []string
	for _, c := range []struct{ n, pps int }{{10000, 2000}, {10000, 5000}, {10000, 10000}, {20000, 20000}, {20000, 40000}} {
		for _, kind := range []string{"edt", "netem"} {
			if kind == "edt" {
				if err := in.Apply("a0", edt.Profile{Delay: delay}); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := in.Remove("a0"); err != nil {
					t.Fatal(err)
				}
				p.A.Run("tc", "-n", p.A.Name, "qdisc", "replace", "dev", "a0", "root", "netem", "delay", "50ms", "limit", "1000000")
			}
			start := time.Now()
			got := measure(t, p, c.n, c.pps, 2*time.Second)
			sendRate := float64(c.n) / time.Since(start).Seconds()
			e := summarize(got)
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %d | %.3f | %.3f | %.3f |", kind, c.pps, sendRate, e.n,
				ms(e.median-delay), ms(e.p99-delay), ms(e.max-delay)))
			if kind == "netem" {
				p.A.Run("tc", "-n", p.A.Name, "qdisc", "del", "dev", "a0", "root")
			}
		}
	}
	t.Logf("\n| qdisc | target pps | achieved (incl. drain) | received | median error ms | p99 error ms | max error ms |\n|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}
