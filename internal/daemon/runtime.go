package daemon

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// DefaultGCPercent is the collector's target every daemon runs with unless
// $GOGC or --gc-percent says otherwise: the heap may grow this much
// (percent) above the live data before the next collection. Go's default,
// 100, lets a 100k-route burst grow the heap to twice its live size, and
// the runtime's metadata sized by that peak (GC bitmaps, span structures)
// stays after the routes are deleted; docs/performance.md has the
// measurements of each value.
const DefaultGCPercent = 100

// runtimeFlags are the Go runtime settings every daemon takes. Register
// applies their defaults at once (so a daemon started without them runs
// with them) and each flag re-applies its value when parsed.
type runtimeFlags struct {
	memProfileRate intFlag
	gcPercent      intFlag
	heapHeadroom   intFlag
	heapMin        intFlag
}

// intFlag is an int flag whose Set also applies it.
type intFlag struct {
	v     int
	apply func(int)
}

func (f *intFlag) String() string {
	if f == nil {
		return "0"
	}
	return strconv.Itoa(f.v)
}

func (f *intFlag) Set(s string) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want an integer")
	}
	f.v = v
	f.apply(v)
	return nil
}

func (r *runtimeFlags) register(fs *flag.FlagSet, heapFloor bool) {
	r.memProfileRate = intFlag{v: 0, apply: setMemProfileRate}
	r.gcPercent = intFlag{v: defaultGCPercent(), apply: setGCBase}
	r.heapHeadroom = intFlag{v: DefaultHeapHeadroomMiB, apply: setHeapHeadroom}
	r.heapMin = intFlag{v: 0, apply: setHeapMin}
	if heapFloor {
		r.heapMin.v = DefaultHeapMinMiB
	}
	r.memProfileRate.apply(r.memProfileRate.v)
	r.gcPercent.apply(r.gcPercent.v)
	r.heapHeadroom.apply(r.heapHeadroom.v)
	r.heapMin.apply(r.heapMin.v)
	fs.Var(&r.memProfileRate, "mem-profile-rate",
		"sample one allocation per this many bytes for /debug/pprof/heap (Go's default is 524288); "+
			"0 = off: the profiler's records of every allocation site stay for good (~1.5 MB after a burst)")
	fs.Var(&r.gcPercent, "gc-percent",
		"collect once the heap has grown this many percent above the live data (as GOGC, which sets the default; -1 = off)")
	fs.Var(&r.heapHeadroom, "heap-headroom-mib",
		"also collect once the heap has grown max(live/2, this many MiB) above the live data, a soft memory limit "+
			"following the live heap: a burst's peak, whose runtime metadata stays for good, stays near the live heap; "+
			"0 = off (GOGC alone; the default: at 16, ~6% more CPU in a 100k-route load); $GOMEMLIMIT, when set, wins")
	fs.Var(&r.heapMin, "heap-min-mib",
		"collect no sooner than the heap reaches this many MiB: a floor under --gc-percent's goal for a small live heap, "+
			"so a burst of a few thousand keys over it runs without collections (a live heap above it runs under "+
			"--gc-percent alone; the free memory goes back to the system within seconds of a burst); 0 = off "+
			"(the default but in orchagent, whose default is 32)")
}

// setMemProfileRate sets runtime.MemProfileRate (negative = 0).
func setMemProfileRate(v int) { runtime.MemProfileRate = max(v, 0) }

// defaultGCPercent is $GOGC when it holds a number or "off", else
// DefaultGCPercent.
func defaultGCPercent() int {
	switch s := os.Getenv("GOGC"); s {
	case "":
		return DefaultGCPercent
	case "off":
		return -1
	default:
		if v, err := strconv.Atoi(s); err == nil {
			return v
		}
		return DefaultGCPercent
	}
}
