package swctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScheduleVerbs: add, load (a trace split over several fields), the
// schedule flag, show, del, and precise errors that write nothing.
func TestScheduleVerbs(t *testing.T) {
	h := newHarness(t)
	h.ok("config", "impairment", "schedule", "add", "leo", "--steps", "0s delay 30ms; 15s loss 2; 30s end", "--loop")
	h.wantHash("IMPAIRMENT_SCHEDULE|leo", map[string]string{"steps": "0s delay 30ms; 15s loss 2; 30s end", "loop": "true"})
	h.ok("config", "impairment", "set", "Ethernet0", "--schedule", "leo", "--loss", "1")
	h.wantHash("IMPAIRMENT|Ethernet0", map[string]string{"schedule": "leo", "loss": "1"})

	errs := h.fails(1, "config", "impairment", "schedule", "add", "bad", "--steps", "0s; 1s los 2")
	if !strings.Contains(errs, `step 1: unknown field "los"`) || len(h.hash("IMPAIRMENT_SCHEDULE|bad")) != 0 {
		t.Errorf("bad step: %q", errs)
	}

	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("time,delay,loss,rate\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "%.2f,%d,%.1f,%dmbit\n", float64(i)*0.02, 30+i%20, float64(i%5)/10, 5+i%3)
	}
	b.WriteString("100,,,\n")
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(trace, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h.ok("config", "impairment", "schedule", "load", "sat", trace, "--loop")
	got := h.hash("IMPAIRMENT_SCHEDULE|sat")
	if got["steps_1"] == "" || got["loop"] != "true" || !strings.HasSuffix(got[fmt.Sprintf("steps_%d", len(got)-2)], "100s end") {
		t.Errorf("loaded trace: %d fields, loop %q", len(got), got["loop"])
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("time,loss\n0,1\n0.5,200\n"), 0o600)
	if errs := h.fails(1, "config", "impairment", "schedule", "load", "x", bad); !strings.Contains(errs, "line 3: column loss") {
		t.Errorf("bad trace: %q", errs)
	}

	h.setState("IMPAIRMENT_SCHEDULE_TABLE|leo", "state", "ok", "step", "1", "switches", "7", "skipped", "0")
	out := h.ok("show", "impairment", "schedule")
	if !strings.Contains(out, "leo") || !strings.Contains(out, "5001") && !strings.Contains(out, "sat") {
		t.Errorf("show impairment schedule:\n%s", out)
	}
	if lines := strings.Split(out, "\n"); !strings.Contains(out, "30s") || len(lines) < 4 {
		t.Errorf("show impairment schedule:\n%s", out)
	}
	for _, words := range [][]string{{"config", "impairment", "schedule", "del", ""}, {"config", "impairment", "set", "Ethernet0", "--schedule", ""}} {
		var out bytes.Buffer
		Run(context.Background(), append([]string{completeVerb, "--redis", h.srv.URL()}, words...), &out, os.Stderr)
		if !strings.Contains(out.String(), "leo\n") || !strings.Contains(out.String(), "sat\n") {
			t.Errorf("completion of %q: %q", words, out.String())
		}
	}
	h.ok("config", "impairment", "schedule", "del", "leo")
	if len(h.hash("IMPAIRMENT_SCHEDULE|leo")) != 0 {
		t.Error("del left the schedule")
	}
}
