#!/bin/sh
# Runs every fuzz target for FUZZTIME (default 30s) each.
set -eu
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for t in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "== $pkg $t"
		go test -run '^$' -fuzz "^$t\$" -fuzztime "${FUZZTIME:-30s}" "$pkg"
	done
done
