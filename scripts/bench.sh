#!/bin/sh
# Runs every benchmark suite and prints its table. Most need root (netns,
# netlink writes, BPF); they skip with a reason otherwise.
# Each suite's numbers, with how they were measured, are recorded in docs/.
set -u
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."
make -s build >/dev/null
status=0
for pkg in ./netlinkmgr ./internal/redisx ./bpf ./orchagent ./tests/orchagente2e ./syncd ./tests/syncde2e; do
	[ -d "$pkg" ] || continue
	grep -ql '^func Benchmark' "$pkg"/*_test.go 2>/dev/null || continue
	echo "== $pkg"
	go test -run '^$' -bench . ${BENCHTIME:+-benchtime "$BENCHTIME"} -timeout 30m "$pkg" || status=1
done
exit $status
