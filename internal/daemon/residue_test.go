package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// BenchmarkResidueAfterPeak: what a Go process keeps for good after its
// heap has grown to a peak and everything was freed and returned
// (runtime.GC + debug.FreeOSMemory, as ReturnMemory does): the runtime's
// GC metadata (gc_sys: mark and allocation bitmaps on their free lists)
// and span structures (mspan_sys), which it never returns, and the
// anonymous RSS above the same process before the peak. Each peak runs in
// a fresh process (this test binary again): the residue is per process
// and only grows. The live set is 100k-style route entries (a key, a
// string, a pointer) built by two goroutines with some garbage, so the
// heap reaches about twice the live set under GOGC=100, as a restart or a
// delete burst does in orchagent. docs/performance.md ("Bulk paths and
// scale", afterdel4) uses it to say how far a peak must fall for a given
// after/idle ratio.
//
//	go test -run '^$' -bench ResidueAfterPeak -benchtime 1x -v ./internal/daemon
func BenchmarkResidueAfterPeak(b *testing.B) {
	for _, n := range []int{25000, 50000, 100000, 200000, 400000, 800000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "-test.run", "^TestResidueHelper$")
				cmd.Env = append(os.Environ(), "SWITCHYARD_RESIDUE_ENTRIES="+strconv.Itoa(n))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("helper: %v\n%s", err, out)
				}
				m := map[string]float64{}
				for _, f := range strings.Fields(string(bytes.TrimSpace(lastLine(out, "residue:")))) {
					if k, v, ok := strings.Cut(f, "="); ok {
						x, _ := strconv.ParseFloat(v, 64)
						m[k] = x
					}
				}
				if len(m) == 0 {
					b.Fatalf("helper said nothing:\n%s", out)
				}
				b.ReportMetric(m["peak"]/(1<<20), "peak-heap-sys-MB")
				b.ReportMetric(m["gcsys"]/(1<<20), "gc-sys-MB-added")
				b.ReportMetric(m["mspan"]/(1<<20), "mspan-sys-MB-added")
				b.ReportMetric(m["anon"]/1024, "anon-rss-MB-added")
			}
		})
	}
}

// lastLine is the last line of out starting with prefix, without it.
func lastLine(out []byte, prefix string) []byte {
	var got []byte
	for _, l := range bytes.Split(out, []byte("\n")) {
		if r, ok := bytes.CutPrefix(l, []byte(prefix)); ok {
			got = r
		}
	}
	return got
}

// TestResidueHelper is BenchmarkResidueAfterPeak's child process.
func TestResidueHelper(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SWITCHYARD_RESIDUE_ENTRIES"))
	if n == 0 {
		t.Skip("run by BenchmarkResidueAfterPeak")
	}
	var before, after runtime.MemStats
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&before)
	anon0 := rssAnonKiB(t)
	type entry struct {
		key, val string
		p        *int
	}
	maps := make([]map[string]*entry, 2)
	var sink [2][]byte
	var wg sync.WaitGroup
	for g := range maps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := map[string]*entry{}
			for i := 0; i < n/2; i++ {
				k := fmt.Sprintf("STATIC_ROUTE|%d.%d.%d.0/24", 30+2*g+i/65536, i/256%256, i%256)
				x := i
				m[k] = &entry{key: k[len("STATIC_ROUTE|"):], val: strings.Repeat("x", 20+i%30), p: &x}
				if i%4 == 0 {
					sink[g] = make([]byte, 100+i%400) // a burst's garbage
				}
			}
			maps[g] = m
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	peak := after.HeapSys
	maps = nil
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	fmt.Printf("residue: peak=%d gcsys=%d mspan=%d anon=%d\n", peak, after.GCSys-before.GCSys,
		after.MSpanSys-before.MSpanSys, rssAnonKiB(t)-anon0)
}

// rssAnonKiB is this process's anonymous resident memory.
func rssAnonKiB(t *testing.T) int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			k, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return k
		}
	}
	t.Skip("no RssAnon in /proc/self/status")
	return 0
}
