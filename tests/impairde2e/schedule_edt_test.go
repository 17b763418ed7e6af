package impairde2e

import (
	"testing"
	"time"
)

// TestEDTScheduleDelay (VM: needs fq): a looping schedule changes the
// delay of what arrives on Ethernet0 (10 ms / 80 ms steps of 3 s): the
// step goes through the EDT class (syncEDT), seen in the ping RTT of each
// step. Only the minimum RTT is judged (the delay is a floor fq keeps even
// on a stalling VM): at least the step's delay, and below the other
// step's when that one is larger.
func TestEDTScheduleDelay(t *testing.T) {
	e := newRoutedEnv(t, "10.0.1.1/24")
	e.start()
	e.HSet("IMPAIRMENT_SCHEDULE|wave", "steps", "0s delay 10ms; 3s delay 80ms; 6s end", "loop", "true")
	// Ethernet4 is managed (an empty profile) so the requests leaving by
	// it are timed by its fq.
	e.HSet("IMPAIRMENT|Ethernet4", "NULL", "NULL")
	e.HSet("IMPAIRMENT|Ethernet0", "schedule", "wave", "delay", "10ms")
	e.WaitOK("IMPAIRMENT_SCHEDULE|wave", "IMPAIRMENT|Ethernet0", "IMPAIRMENT|Ethernet4")
	seen := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < 2 && time.Now().Before(deadline) {
		step, since := e.step("wave")
		st, err := time.Parse(time.RFC3339Nano, since)
		if err != nil || seen[step] || time.Since(st) < 200*time.Millisecond || time.Since(st) > 1500*time.Millisecond {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		d := pingRTTs(t, e.h1, "10.0.1.1", 4)
		if step2, since2 := e.step("wave"); step2 != step || since2 != since {
			continue // the pings crossed a boundary
		}
		t.Logf("step %s: RTT ms min %.3f median %.3f max %.3f", step, d[0], median(d), d[len(d)-1])
		switch step {
		case "0":
			if d[0] < 10 || d[0] >= 80 {
				t.Fatalf("step 0 (delay 10ms): min RTT %.3f ms, want 10-80", d[0])
			}
		case "1":
			if d[0] < 80 {
				t.Fatalf("step 1 (delay 80ms): min RTT %.3f ms, want at least 80", d[0])
			}
		default:
			t.Fatalf("schedule reports step %q", step)
		}
		seen[step] = true
	}
	if len(seen) < 2 {
		t.Fatalf("saw steps %v within 60 s, want 0 and 1", seen)
	}
}
