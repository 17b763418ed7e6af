#!/bin/bash
# Runs inside the VM (started by run-suite.sh through vmexec): runs each
# test binary listed in MANIFEST in turn and fails if any failed.
#
# MANIFEST lines are tab-separated: binary, package directory, package
# name, flags (space-separated). Each run is limited to
# SWITCHYARD_VM_TEST_TIMEOUT seconds (default 300).
set -u
manifest=${1:?usage: guest-suite.sh MANIFEST}
per=${SWITCHYARD_VM_TEST_TIMEOUT:-300}
failed=()
summary=()
while IFS=$'\t' read -r bin dir pkg flags; do
	read -ra args <<<"$flags"
	echo "=== VM SUITE: $pkg ${args[*]}"
	start=$(date +%s)
	(cd "$dir" && timeout -k 10 "$per" "$bin" -test.v -test.timeout="$((per - 5))s" "${args[@]}")
	rc=$?
	secs=$(($(date +%s) - start))
	if [ $rc = 0 ]; then
		status=ok
	elif [ $rc = 124 ] || [ $rc = 137 ]; then
		status="FAIL (killed after ${per}s: SWITCHYARD_VM_TEST_TIMEOUT)"
	else
		status="FAIL (exit $rc)"
	fi
	[ $rc = 0 ] || failed+=("$pkg ${args[*]}")
	summary+=("$(printf '%-40s %-28s %4ss  %s' "$pkg" "${args[*]}" "$secs" "$status")")
	echo "=== VM SUITE: $pkg ${args[*]}: $status in ${secs}s"
done <"$manifest"
echo
echo "=== VM SUITE SUMMARY (kernel $(uname -r))"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "=== VM SUITE: ${#failed[@]} failed"
	exit 1
fi
echo "=== VM SUITE: all passed"
