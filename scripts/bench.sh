#!/bin/sh
# Runs every benchmark suite and prints its table. Most need root (netns,
# netlink writes, BPF); they skip with a reason otherwise.
# Each suite's numbers, with how they were measured, are recorded in docs/.
set -u
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."
make -s build >/dev/null
status=0
# Every package with a Benchmark function. The VM-only benchmarks (4,094
# VLANs, 10k static FDB, EDT vs netem) skip here; docs/orchagent.md and
# docs/edt.md say how to run them in the VM.
for pkg in $(grep -rl '^func Benchmark' --include='*_test.go' . | xargs -n1 dirname | sort -u); do
	echo "== $pkg"
	go test -run '^$' -bench . ${BENCHTIME:+-benchtime "$BENCHTIME"} -timeout 30m "$pkg" || status=1
done
exit $status
