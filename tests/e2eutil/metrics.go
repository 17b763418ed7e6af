package e2eutil

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Metric reads one unlabelled sample, name, from the /metrics page of the
// daemon serving them at addr (its --metrics-addr, host:port).
func Metric(t testing.TB, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s: not in %s/metrics", name, addr)
	return 0
}

// LiveHeap is the Go heap's live bytes of the daemon serving metrics at
// addr, after a full collection: what it still references, free of the
// runtime's sizing (heap goal, spans, metadata) that RSS also holds. The
// collection is pprof's (/debug/pprof/heap?gc=1); go_gc_heap_live_bytes is
// the heap marked live by the last one (docs/metrics.md).
func LiveHeap(t testing.TB, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("collect: %s", resp.Status)
	}
	return int(Metric(t, addr, "go_gc_heap_live_bytes"))
}
