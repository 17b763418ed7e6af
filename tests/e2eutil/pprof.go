package e2eutil

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// CPUProfile fetches the CPU profile of the daemon serving pprof at addr
// (its --metrics-addr) over the next $SWITCHYARD_BENCH_PROFILE_SECONDS
// (default 2) into file, in the background; the channel closes when the
// file is written. Benchmarks use it around a burst.
func CPUProfile(tb testing.TB, addr, file string) chan struct{} {
	return fetchProfile(tb, "cpu profile", addr, "/debug/pprof/profile", file)
}

// ExecTrace fetches the Go execution trace of the daemon serving pprof at
// addr over the next $SWITCHYARD_BENCH_PROFILE_SECONDS (default 2) into
// file, as CPUProfile does: when each goroutine ran, waited for a CPU,
// sat in a system call or blocked (go tool trace FILE).
func ExecTrace(tb testing.TB, addr, file string) chan struct{} {
	return fetchProfile(tb, "execution trace", addr, "/debug/pprof/trace", file)
}

// fetchProfile saves http://addr+path?seconds=N into file in the
// background; the channel closes when the file is written.
func fetchProfile(tb testing.TB, what, addr, path, file string) chan struct{} {
	secs := cmp.Or(os.Getenv("SWITCHYARD_BENCH_PROFILE_SECONDS"), "2")
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get("http://" + addr + path + "?seconds=" + secs)
		if err != nil {
			tb.Errorf("%s: %v", what, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			tb.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(body)))
			return
		}
		out, err := os.Create(file)
		if err == nil {
			_, err = io.Copy(out, resp.Body)
			out.Close()
		}
		if err != nil {
			tb.Errorf("%s: %v", what, err)
		}
	}()
	return done
}

// ProcCPU is the user+system CPU time of every thread of process pid,
// exited ones included: the process's CPU-time clock (clock_gettime of
// clock_getcpuclockid(pid), nanoseconds), else /proc/PID/stat
// utime+stime (clock ticks: 10 ms, too coarse for a 1k-object burst).
func ProcCPU(tb testing.TB, pid int) time.Duration {
	// CPUCLOCK_SCHED of the whole process: ((~pid) << 3) | 2.
	var ts unix.Timespec
	if err := unix.ClockGettime(int32((^pid)<<3|2), &ts); err == nil {
		return time.Duration(ts.Nano())
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the parenthesised command name: utime is the 12th.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// RedisCPU is the user+system CPU time of the redis-server c talks to
// (INFO cpu).
func RedisCPU(tb testing.TB, c *redis.Client) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total float64
	for _, l := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			x, _ := strconv.ParseFloat(v, 64)
			total += x
		}
	}
	return time.Duration(total * float64(time.Second))
}

// NetnsCleanupIdle waits (up to max) until the kernel is not tearing
// down network namespaces: no "kworker/…+netns" thread in five polls
// 20 ms apart. Deleting a namespace that held 100k addresses or routes
// costs the kernel seconds of CPU after "ip netns del" returned; a bulk
// benchmark waits for it so that the previous run's teardown (or another
// test's) does not land on only one side of a comparison. Returns how long
// it waited.
func NetnsCleanupIdle(max time.Duration) time.Duration {
	start := time.Now()
	for quiet := 0; quiet < 5 && time.Since(start) < max; {
		if netnsWorkerBusy() {
			quiet = 0
		} else {
			quiet++
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// netnsWorkerBusy reports whether a kernel worker runs the netns
// workqueue now (its comm then ends in "+netns").
func netnsWorkerBusy() bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.HasPrefix(string(b), "kworker/") && strings.Contains(string(b), "+netns") {
			return true
		}
	}
	return false
}

// RedisCommandStats is the calls per command of the redis-server c talks
// to (INFO commandstats: "cmdstat_hset:calls=N,usec=U,..."), with each
// command's microseconds under "NAME usec". Benchmarks log the difference
// over a burst (CommandStatsDiff): what redis-server ran for it.
func RedisCommandStats(tb testing.TB, c *redis.Client) map[string]int64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]int64{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				m[name] = n
			case "usec":
				m[name+" usec"] = n
			}
		}
	}
	return m
}

// CommandStatsDiff is "cmd calls (usec µs)" for every command whose calls
// grew from before to after, most calls first.
func CommandStatsDiff(before, after map[string]int64) []string {
	type row struct {
		name        string
		calls, usec int64
	}
	var rows []row
	for k, v := range after {
		if strings.HasSuffix(k, " usec") || v <= before[k] {
			continue
		}
		rows = append(rows, row{k, v - before[k], after[k+" usec"] - before[k+" usec"]})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.calls, a.calls) })
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.name + " " + strconv.FormatInt(r.calls, 10) + " (" + strconv.FormatInt(r.usec, 10) + " µs)"
	}
	return out
}
