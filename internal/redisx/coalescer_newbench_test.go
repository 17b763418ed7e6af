package redisx

// newCoalescerForBench builds BenchmarkCoalescer100k's coalescer (a file of
// its own, so the benchmark runs unchanged against an older coalescer).
func newCoalescerForBench(tables []string) *coalescer { return newCoalescer(tables, "|") }
