#!/bin/bash
# run-suite.sh — the full-kernel VM suite (make test-vm).
#
# Builds bin/ (the e2e tests run the daemons from there), compiles on the
# host the test binaries of the packages listed in tests/vm/suite.txt, boots
# one VM (tests/vm/vmexec) and runs them all in it, in order, printing each
# test's output; fails if any fails. Skips (exit 0) where no VM can be had,
# except in CI (CI=true), where that is a failure.
#
#   tests/vm/run-suite.sh [REGEXP]   run only the suite.txt lines matching
#
# Environment: SWITCHYARD_VM_SUITE_TIMEOUT (whole VM, seconds, default 1200),
# SWITCHYARD_VM_TEST_TIMEOUT (one line, default 300), and vmexec's.
set -u
cd "$(dirname "$(readlink -f "$0")")/../.."
repo=$(pwd -P)
export PATH=/usr/local/go/bin:$PATH
GO=${GO:-go}
filter=${1:-}
vmexec=$repo/tests/vm/vmexec
t0=$(date +%s)

say() { echo "run-suite: $*" >&2; }

"$vmexec" --check
case $? in
0) ;;
3) say "SKIP: the VM suite did not run (see above)"; exit 0 ;;
*) say "FAIL: no VM"; exit 1 ;;
esac

make -s build || { say "FAIL: make build"; exit 1; }

# The binaries must be visible in the VM: not under /tmp (tmpfs there).
cache=$("$vmexec" --cache-dir)
if ! { mkdir -p "$cache" && work=$(mktemp -d "$cache/suite.XXXXXX"); }; then
	if [ "${CI:-}" = true ] || [ "${SWITCHYARD_VM_REQUIRE:-}" = 1 ]; then
		say "FAIL: cannot create a work directory under $cache (set SWITCHYARD_VM_CACHE)"
		exit 1
	fi
	say "SKIP: cannot create a work directory under $cache (set SWITCHYARD_VM_CACHE)"
	exit 0
fi
trap 'rm -rf "$work"' EXIT
manifest=$work/manifest
: >"$manifest"

# One go invocation compiles every package's test binary in parallel.
pkgs=()
lines=0
while read -r pkg flags; do
	case $pkg in '' | '#'*) continue ;; esac
	if [ -n "$filter" ] && ! grep -qE -- "$filter" <<<"$pkg $flags"; then
		continue
	fi
	dir=$(cd "$pkg" 2>/dev/null && pwd -P) || { say "FAIL: no package directory $pkg (tests/vm/suite.txt)"; exit 1; }
	[[ " ${pkgs[*]} " == *" $pkg "* ]] || pkgs+=("$pkg")
	printf '%s\t%s\t%s\t%s\n' "$work/${dir##*/}.test" "$dir" "${pkg#./}" "$flags" >>"$manifest"
	lines=$((lines + 1))
done <tests/vm/suite.txt
if [ $lines -gt 0 ]; then
	say "go test -c ${pkgs[*]}"
	CGO_ENABLED=0 $GO test -c -o "$work/" "${pkgs[@]}" || { say "FAIL: cannot compile the VM suite's tests"; exit 1; }
	while IFS=$'\t' read -r bin dir pkg _; do
		[ -x "$bin" ] || { say "FAIL: $pkg has no test files (tests/vm/suite.txt)"; exit 1; }
	done <"$manifest"
fi

if [ $lines = 0 ]; then
	say "nothing in tests/vm/suite.txt matches '${filter}'"
	exit 0
fi
t1=$(date +%s)
say "compiled in $((t1 - t0))s; running $lines line(s) in one VM"
SWITCHYARD_VM_VERBOSE=1 "$vmexec" --timeout "${SWITCHYARD_VM_SUITE_TIMEOUT:-1200}" \
	bash "$repo/tests/vm/guest-suite.sh" "$manifest"
rc=$?
say "VM suite $([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)") in $(($(date +%s) - t0))s wall (VM part $(($(date +%s) - t1))s)"
exit $rc
