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
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	// Plain text: a gzipped page leaves the handler's compressor (~0.8 MB)
	// in a sync.Pool, which LiveHeap would count.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
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
// addr, after full collections: what it still references, free of the
// runtime's sizing (heap goal, spans, metadata) that RSS also holds.
// go_gc_heap_live_bytes (docs/metrics.md) is the heap the last collection
// marked; the collections are pprof's (/debug/pprof/heap?gc=1), two of
// them: sync.Pool's contents survive one (its victim cache), and a pool's
// buffers are no leak.
func LiveHeap(t testing.TB, addr string) int {
	t.Helper()
	for range 2 {
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
		if err != nil {
			t.Fatalf("collect: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("collect: %s", resp.Status)
		}
	}
	return int(Metric(t, addr, "go_gc_heap_live_bytes"))
}
