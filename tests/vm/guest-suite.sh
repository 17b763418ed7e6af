#!/bin/bash
# Runs inside the VM (started by run-suite.sh through vmexec): runs each
# test binary listed in MANIFEST in turn and fails if any failed.
#
# MANIFEST lines are tab-separated: binary, package directory, package
# name, flags (space-separated). Each run is limited to
# SWITCHYARD_VM_TEST_TIMEOUT seconds (default 300). A line that passes no
# test at all fails: a renamed test must not silently drop out of the
# suite, and a line of skips must not pass for one that ran. A skip is a
# failure unless the test is listed in allowed-skips.txt beside this
# script (the VM exists to run what the host cannot).
set -u
manifest=${1:?usage: guest-suite.sh MANIFEST}
allowed=${SWITCHYARD_VM_ALLOWED_SKIPS:-$(dirname "$(readlink -f "$0")")/allowed-skips.txt}
[ -r "$allowed" ] || { echo "guest-suite: cannot read $allowed" >&2; exit 1; }
# The allowed names, one anchored regexp per line, in a file: the VM's
# initramfs has no /dev/fd, so no process substitution anywhere here.
allowfile=$(mktemp)
grep -v -E '^[[:space:]]*(#|$)' "$allowed" | cut -f1 | sed 's/^/^(/; s/$/)$/' >"$allowfile"

# skipped_names LOG: the name of every skipped test (and subtest).
skipped_names() { sed -n -E 's/^ *--- SKIP: ([^ ]+) .*/\1/p' "$1"; }

# disallowed NAMES...: the names no line of allowed-skips.txt matches.
disallowed() {
	local n
	for n in "$@"; do
		if [ ! -s "$allowfile" ] || ! printf '%s\n' "$n" | grep -q -E -f "$allowfile"; then
			echo "$n"
		fi
	done
}
per=${SWITCHYARD_VM_TEST_TIMEOUT:-300}
failed=()
summary=()
while IFS=$'\t' read -r bin dir pkg flags; do
	read -ra args <<<"$flags"
	echo "=== VM SUITE: $pkg${args[*]:+ ${args[*]}}"
	start=$(date +%s)
	log=$(mktemp)
	(cd "$dir" && timeout -k 10 "$per" "$bin" -test.v -test.timeout="$((per - 5))s" "${args[@]}" 2>&1) | tee "$log"
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	pass=$(grep -c -E '^ *--- PASS' "$log")
	skip=$(grep -c -E '^ *--- SKIP' "$log")
	bad=()
	for n in $(disallowed $(skipped_names "$log")); do
		bad+=("$n")
	done
	rm -f "$log"
	counts="$pass passed, $skip skipped"
	if [ $rc = 0 ] && [ $((pass + skip)) = 0 ]; then
		rc=1
		status="FAIL (no test matched: check tests/vm/suite.txt)"
	elif [ $rc = 0 ] && [ "$pass" = 0 ]; then
		rc=1
		status="FAIL (every test skipped: $counts)"
	elif [ $rc = 0 ] && [ ${#bad[@]} -gt 0 ]; then
		rc=1
		status="FAIL (skipped in the VM, not in tests/vm/allowed-skips.txt: ${bad[*]})"
	elif [ $rc = 0 ]; then
		status="ok ($counts)"
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		status="FAIL (killed after ${per}s: SWITCHYARD_VM_TEST_TIMEOUT)"
	else
		status="FAIL (exit $rc; $counts)"
	fi
	[ $rc = 0 ] || failed+=("$pkg${args[*]:+ ${args[*]}}")
	summary+=("$(printf '%-24s %-32s %4ss  %s' "$pkg" "${args[*]}" "$secs" "$status")")
	echo "=== VM SUITE: $pkg${args[*]:+ ${args[*]}}: $status in ${secs}s"
done <"$manifest"
rm -f "$allowfile"
echo
echo "=== VM SUITE SUMMARY (kernel $(uname -r))"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== VM SUITE: ${#failed[@]} failed"
	exit 1
fi
# Every manifest line must have run to its status line: a script error
# that ends the loop early must not read as "all passed".
total=$(grep -c . "$manifest")
if [ ${#summary[@]} != "$total" ]; then
	echo "=== VM SUITE: only ${#summary[@]} of $total lines ran: guest-suite.sh failed"
	exit 1
fi
echo "=== VM SUITE: all passed"
